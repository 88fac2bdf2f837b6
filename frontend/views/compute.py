"""The compute hub (Azure ML's tabs), the create form per type with its live YAML, details and delete."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from compute import capabilities, selectors, services
from compute.choices import STUDIO_TABS, ComputeType
from compute.models import ComputeTarget
from compute.serializers import SERIALIZERS
from controlplane.reconciling import ProvisioningState

from ..forms import compute as compute_form
from . import clusters, instances, pools, vms
from .common import USER_ERRORS, error_rows, paste_submit, require, workspace_page

TAB_LABELS = {
    "instances": "Compute instances",
    "clusters": "Compute clusters",
    "kubernetes": "Kubernetes clusters",
    "attached": "Attached computes",
}
# The column that tells records of a tab apart at a glance.
TAB_SUMMARY = {"instances": "Size", "clusters": "", "kubernetes": "Cluster", "attached": "Target"}  # clusters: own columns
TAB_OF_TYPE = {compute_type: tab for tab, types in STUDIO_TABS.items() for compute_type in types}
# Page titles keep the proper nouns of the type labels.
CREATE_TITLES = {
    ComputeType.COMPUTEINSTANCE: "Create a compute instance",
    ComputeType.AMLCOMPUTE: "Create a compute cluster",
    ComputeType.KUBERNETES: "Attach a Kubernetes cluster",
    ComputeType.VIRTUALMACHINE: "Attach a virtual machine",
    ComputeType.HDINSIGHT: "Attach an HDInsight cluster",
    ComputeType.DATALAKEANALYTICS: "Attach Data Lake Analytics",
    ComputeType.SYNAPSESPARK: "Attach a Synapse Spark pool",
    ComputeType.DATABRICKS: "Attach Azure Databricks",
    ComputeType.BATCH: "Attach Azure Batch",
}


def hub_url(ws: str, tab: str) -> str:
    return f"{reverse('frontend:compute', args=[ws])}?tab={tab}"


def managed(compute_type: str) -> bool:
    """Dockyard creates managed types (instances, clusters); every other type is attached."""
    return capabilities.BY_TYPE[compute_type].management == "managed"


def type_choices(tab: str) -> list[tuple[str, str]]:
    return [(compute_type, ComputeType(compute_type).label) for compute_type in STUDIO_TABS[tab]]


@login_required
def hub(request, ws):
    """One tab of the hub; an htmx request (Refresh) gets just the list."""
    context = workspace_page(request, ws)
    tab = request.GET.get("tab") if request.GET.get("tab") in STUDIO_TABS else "instances"
    counts = selectors.compute_type_counts(workspace=context["workspace"])
    context.update(
        nav="compute", tab=tab, tab_label=TAB_LABELS[tab], summary_label=TAB_SUMMARY[tab],
        computes=selectors.compute_list(workspace=context["workspace"], types=STUDIO_TABS[tab]), new_types=type_choices(tab),
        tabs=[(key, label, sum(counts.get(t, 0) for t in STUDIO_TABS[key])) for key, label in TAB_LABELS.items()],
    )
    if tab == "instances":
        computes = context["computes"].select_related("workspace", "instance__assigned_user")
        context["instance_views"] = instances.instance_views(request.user, computes)
        context["poll_seconds"] = instances.POLL_SECONDS if any(view.transitional for view in context["instance_views"]) else None
    if tab == "attached":
        context["notes"] = {compute.name: vms.state_note(compute) for compute in context["computes"]}
        context["poll_seconds"] = vms.POLL_SECONDS if vms.CONTACTING in context["notes"].values() else None
    template = "frontend/compute/_list.html" if request.htmx else "frontend/compute/hub.html"
    return render(request, template, context)


def form_context(workspace, compute_type: str, data, errors: list[dict], files=None) -> dict:
    fields, stray = compute_form.bind(compute_type, data, errors, workspace)
    body, _ = compute_form.compute_body(compute_type, data, files or {})
    context = {
        "compute_type": compute_type, "title": CREATE_TITLES[compute_type], "fields": fields,
        "stray_errors": stray, "yaml": compute_form.body_yaml(compute_type, body),
        "description": capabilities.BY_TYPE[compute_type].description,
        "verb": "Create" if managed(compute_type) else "Attach", "week_days": compute_form.WEEK_DAYS, "mode": "form",
        "size_kinds": compute_form.SIZE_KINDS,
    }
    if compute_type == ComputeType.KUBERNETES:
        context.update(compute_form.context_choices(body.get("kubeconfig") or "", data.get("context", "")))
    return context


def known_type(compute_type: str) -> str:
    if compute_type not in SERIALIZERS:
        raise Http404
    return compute_type


@login_required
def create(request, ws, compute_type):
    """The create form of one type; a valid post becomes a record through compute_create."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "manage")
    compute_type = known_type(compute_type)
    data, errors, files = compute_form.initial_data(compute_type, context["workspace"], request.user), [], {}
    if request.method == "POST":
        data, files = request.POST, request.FILES
        body, errors = compute_form.compute_body(compute_type, request.POST, request.FILES)
        if not errors:
            try:
                compute = services.compute_create(user=request.user, workspace=context["workspace"], data=body)
            except USER_ERRORS as exc:
                errors = error_rows(exc, target="name")  # a bare conflict is about the name
            else:
                return created(request, compute)
    tab = TAB_OF_TYPE[compute_type]
    context.update(form_context(context["workspace"], compute_type, data, errors, files), nav="compute", tab=tab,
                   tab_label=TAB_LABELS[tab])
    return render(request, "frontend/compute/create.html", context)


# Pages that show a new record's progress: a Kubernetes attachment's checks, a compute cluster's nodes, an instance's state,
# an SSH host's key to confirm and its probes.
OWN_PAGE_TYPES = (ComputeType.KUBERNETES, ComputeType.AMLCOMPUTE, ComputeType.COMPUTEINSTANCE, *vms.SSH_TYPES)


def created(request, compute: ComputeTarget):
    """Where a new compute sends the user: its own page where that shows it settling, else its tab of the hub."""
    done = "created" if managed(compute.type) else "attached"
    messages.success(request, f"{ComputeType(compute.type).label} {compute.name} is being {done}.")
    ws = compute.workspace.name
    if compute.type in OWN_PAGE_TYPES:
        return redirect("frontend:compute-detail", ws=ws, name=compute.name)
    return redirect(hub_url(ws, TAB_OF_TYPE[compute.type]))


@login_required
def paste(request, ws, compute_type):
    """Paste (or upload) a compute's YAML, the file the CLI's `compute create -f` takes, and create it as is."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "manage")
    compute_type = known_type(compute_type)
    text, errors = "", []
    if request.method == "POST":
        def create_from(text):
            body = compute_form.pasted_body(text, compute_type)
            return services.compute_create(user=request.user, workspace=context["workspace"], data=body)

        text, compute, errors = paste_submit(request, create_from)
        if not errors:
            return created(request, compute)
    tab = TAB_OF_TYPE[compute_type]
    context.update(
        nav="compute", tab=tab, tab_label=TAB_LABELS[tab], compute_type=compute_type, title=CREATE_TITLES[compute_type],
        description=capabilities.BY_TYPE[compute_type].description, verb="Create" if managed(compute_type) else "Attach",
        mode="yaml", yaml_text=text, yaml_errors=errors,
        example=compute_form.body_yaml(compute_type, compute_form.compute_body(compute_type, compute_form.initial_data(compute_type), {})[0]),
    )
    return render(request, "frontend/compute/create.html", context)


@login_required
@require_POST
def preview(request, ws, compute_type):
    """The YAML the form amounts to, re-rendered as the user types (secrets hidden)."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "manage")
    compute_type = known_type(compute_type)
    body, _ = compute_form.compute_body(compute_type, request.POST, request.FILES)
    return HttpResponse(compute_form.body_yaml(compute_type, body), content_type="text/plain; charset=utf-8")


def compute_or_404(workspace, name: str) -> ComputeTarget:
    try:
        return selectors.compute_get(workspace=workspace, name=name)
    except ComputeTarget.DoesNotExist:
        raise Http404 from None


@login_required
def detail(request, ws, name):
    """Properties (secrets only as 'set'), state, errors, tags and the YAML of one compute."""
    context = workspace_page(request, ws)
    compute = compute_or_404(context["workspace"], name)
    properties = {key: value for key, value in compute.properties.items() if key not in vms.HIDDEN_PROPERTIES}
    body = {"name": compute.name, "type": compute.type, "description": compute.description, **properties,
            "tags": compute.tags}
    body = {key: value for key, value in body.items() if value not in ("", {}, None)}
    tab = TAB_OF_TYPE[compute.type]
    context.update(
        can_delete=context["perms"]["manage"] and compute.provisioning_state != ProvisioningState.DELETING,
        nav="compute", compute=compute, properties=properties, tab=tab, tab_label=TAB_LABELS[tab],
        type_label=ComputeType(compute.type).label,
        secrets=[(key, key in compute.secret_fields) for key in SERIALIZERS[compute.type].secret_fields],
        yaml=compute_form.body_yaml(compute.type, body, compute.secret_fields), backend=capabilities.RECORD_ONLY.get(compute.type),
    )
    if compute.type == ComputeType.KUBERNETES:
        return clusters.page(request, context, compute, "overview")
    if compute.type == ComputeType.AMLCOMPUTE:
        context.update(pools.pool_context(compute))
    if compute.type in vms.SSH_TYPES:
        context.update(vms.vm_context(compute), backend=None)  # no longer a record only: the panel shows what runs
    if compute.type == ComputeType.COMPUTEINSTANCE:
        context = instances.panel_context(request, context, instances.instance_or_404(context["workspace"], name))
    return render(request, "frontend/compute/detail.html", context)


@login_required
@require_POST
def delete(request, ws, name):
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "manage")
    compute = services.compute_delete(user=request.user, compute=compute_or_404(context["workspace"], name))
    messages.success(request, f"{compute.name} is being deleted.")
    return redirect(hub_url(ws, TAB_OF_TYPE[compute.type]))
