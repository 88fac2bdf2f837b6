"""A Kubernetes compute's pages: overview with its live checks, instance types, nodes; the attach wizard's context picker."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from compute import selectors, services
from compute.choices import ComputeType
from compute.models import ComputeTarget
from compute.serializers import SERIALIZERS
from controlplane.reconciling import ProvisioningState

from .. import attach_checks
from ..forms import compute as compute_form
from .common import USER_ERRORS, compute_of_type, error_rows, require, workspace_page

SECTIONS = (("overview", "Overview"), ("instance-types", "Instance types"), ("nodes", "Nodes"))
UNSETTLED = (ProvisioningState.CREATING, ProvisioningState.UPDATING, ProvisioningState.DELETING)
KUBECONFIG = next(spec for spec in compute_form.TYPE_FIELDS[ComputeType.KUBERNETES] if spec.name == "kubeconfig")


def kubernetes_compute(workspace, name: str) -> ComputeTarget:
    """A Kubernetes compute of the workspace, or 404: other types have no cluster pages."""
    return compute_of_type(workspace, name, ComputeType.KUBERNETES)


def cluster_context(context: dict, compute: ComputeTarget, section: str) -> dict:
    """What every section of the cluster page shows: header, buttons, section tabs with their counts."""
    instance_types = selectors.instance_type_list(compute=compute)
    cluster = compute.cluster
    manage = context["perms"]["manage"] and compute.provisioning_state != ProvisioningState.DELETING
    return {
        **context, "nav": "compute", "tab": "kubernetes", "tab_label": "Kubernetes clusters", "compute": compute,
        "cluster": cluster, "section": section, "instance_types": instance_types, "can_manage": manage,
        "can_delete": manage, "type_label": ComputeType(compute.type).label,
        "sections": [(key, label, {"instance-types": len(instance_types), "nodes": len(cluster.nodes) if cluster else 0}.get(key))
                     for key, label in SECTIONS],
        "polling": any(row["provisioning_state"] in UNSETTLED for row in instance_types),
    }


def page(request, context: dict, compute: ComputeTarget, section: str):
    """Render one section of the cluster page (the overview's YAML and secrets come from the generic details view)."""
    context = cluster_context(context, compute, section)
    if section == "overview":
        context["checks"] = attach_checks.attachment_checks(compute)
        context["checking"] = compute.provisioning_state in attach_checks.RUNNING_STATES
    elif section == "nodes":
        context["nodes"] = selectors.node_list(compute=compute)
    return render(request, "frontend/kubernetes/cluster.html", context)


@login_required
def instance_types(request, ws, name):
    """The instance types section; htmx polls just the table while some row is on its way."""
    context = workspace_page(request, ws)
    compute = kubernetes_compute(context["workspace"], name)
    if request.htmx:
        return render(request, "frontend/kubernetes/_instance_types.html", cluster_context(context, compute, "instance-types"))
    return page(request, context, compute, "instance-types")


@login_required
def nodes(request, ws, name):
    context = workspace_page(request, ws)
    return page(request, context, kubernetes_compute(context["workspace"], name), "nodes")


@login_required
def status(request, ws, name):
    """The checks panel alone, polled by htmx while the checks run; it stops polling once they settled."""
    context = workspace_page(request, ws)
    compute = kubernetes_compute(context["workspace"], name)
    context.update(
        compute=compute, cluster=compute.cluster, checks=attach_checks.attachment_checks(compute),
        checking=compute.provisioning_state in attach_checks.RUNNING_STATES, oob=True,
        secrets=[(key, key in compute.secret_fields) for key in SERIALIZERS[compute.type].secret_fields],
        can_manage=context["perms"]["manage"] and compute.provisioning_state != ProvisioningState.DELETING,
    )
    return render(request, "frontend/kubernetes/_status.html", context)


@login_required
@require_POST
def recheck(request, ws, name):
    """Check again: the attachment's checks and the node list are read anew."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "manage")
    compute = kubernetes_compute(context["workspace"], name)
    try:
        services.compute_recheck(user=request.user, compute=compute)
    except USER_ERRORS as exc:
        messages.error(request, error_rows(exc)[0]["message"])
    return redirect("frontend:compute-detail", ws=ws, name=name)


@login_required
@require_POST
def contexts(request, ws):
    """The attach form's context picker for the kubeconfig being pasted; the kubeconfig itself is not sent back."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "manage")
    try:
        kubeconfig = compute_form.read_value(KUBECONFIG, request.POST, request.FILES)
    except ValueError as exc:
        context.update(contexts=[], context_choice="", contexts_error=str(exc))
    else:
        context.update(compute_form.context_choices(kubeconfig, request.POST.get("context", "")))
    response = render(request, "frontend/kubernetes/_contexts.html", context)
    response["HX-Trigger-After-Settle"] = "contexts-loaded"  # the form refreshes its YAML with the chosen context
    return response
