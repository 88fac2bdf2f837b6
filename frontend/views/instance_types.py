"""Instance types of a Kubernetes compute: details with the rendered CR and drift, the form (or pasted YAML), delete."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from compute import selectors, services
from controlplane.reconciling import ProvisioningState

from ..forms import instance_types as form
from .clusters import kubernetes_compute
from .common import USER_ERRORS, error_rows, paste_submit, require, workspace_page

BUILTIN = "builtin"


def compute_page(request, ws: str, name: str, *, manage: bool = False) -> dict:
    """Context for a page of one Kubernetes compute (owners only when `manage`)."""
    context = workspace_page(request, ws)
    if manage:
        require(request.user, context["workspace"], "manage")
    compute = kubernetes_compute(context["workspace"], name)
    return {**context, "compute": compute, "nav": "compute", "tab": "kubernetes", "tab_label": "Kubernetes clusters"}


def row_or_404(compute, name: str) -> dict:
    row = selectors.instance_type_get(compute=compute, name=name)
    if row is None:
        raise Http404
    return row


def list_url(context: dict) -> str:
    return reverse("frontend:instance-types", args=[context["workspace"].name, context["compute"].name])


def detail_url(context: dict, name: str) -> str:
    return reverse("frontend:instance-type", args=[context["workspace"].name, context["compute"].name, name])


def editable(context: dict, row: dict) -> bool:
    return context["perms"]["manage"] and row["provisioning_state"] != ProvisioningState.DELETING


@login_required
def detail(request, ws, name, it):
    """One instance type: shape, state, fit, the CR Dockyard applies and, when drifted, what the cluster has instead."""
    context = compute_page(request, ws, name)
    row = row_or_404(context["compute"], it)
    observed = row["status"]["observed_spec"]
    context.update(
        row=row, can_edit=editable(context, row), can_delete=editable(context, row) and row["source"] != BUILTIN,
        nodes_synced=bool(context["compute"].cluster and context["compute"].cluster.nodes_read_at),
        manifest_yaml=form.cr_yaml(row["manifest"]) if row["manifest"] else "",
        shape_yaml=form.cr_yaml(form.cr_of(row)), observed_yaml=form.cr_yaml(observed) if observed else "",
        diff=form.spec_diff(row["manifest"]["spec"], observed) if row["status"]["drifted"] else [],
    )
    return render(request, "frontend/kubernetes/instance_type.html", context)


def render_form(request, context: dict, data, errors: list[dict], *, mode: str, row: dict | None = None):
    fields, stray = form.bind(data, errors)
    body, _ = form.body_of(data)
    context.update(
        mode=mode, row=row, fields=fields, stray_errors=stray, yaml=form.cr_yaml(form.cr_of(body)),
        title=(f"Override {row['name']}" if row["source"] == BUILTIN else f"Edit {row['name']}") if row else "New instance type",
        verb="Save" if row else "Create",
    )
    return render(request, "frontend/kubernetes/instance_type_form.html", context)


@login_required
def create(request, ws, name):
    """The form; a valid post becomes a record (and a CR) through instance_types_create."""
    context = compute_page(request, ws, name, manage=True)
    data, errors = {"limits_gpu": ""}, []
    if request.method == "POST":
        data = request.POST
        body, errors = form.body_of(request.POST)
        if not errors:
            try:
                (record,) = services.instance_types_create(user=request.user, compute=context["compute"], body=body)
            except USER_ERRORS as exc:
                errors = error_rows(exc, target="name")  # a bare conflict is about the name
            else:
                messages.success(request, f"Instance type {record.name} is being applied to the cluster.")
                return redirect(list_url(context))
    return render_form(request, context, data, errors, mode="form")


@login_required
def edit(request, ws, name, it):
    """Replace an instance type (PUT semantics); for the built-in default this creates the override."""
    context = compute_page(request, ws, name, manage=True)
    row = row_or_404(context["compute"], it)
    if not editable(context, row):
        messages.error(request, f"Instance type {it} is being deleted.")
        return redirect(list_url(context))
    data, errors = form.data_of(row), []
    if request.method == "POST":
        data = {**request.POST.dict(), "name": it}  # the name is fixed
        body, errors = form.body_of(data)
        if not errors:
            try:
                services.instance_type_update(user=request.user, compute=context["compute"], name=it, body=body, partial=False)
            except USER_ERRORS as exc:
                errors = error_rows(exc)
            else:
                messages.success(request, f"Instance type {it} is being updated on the cluster.")
                return redirect(detail_url(context, it))
    return render_form(request, context, data, errors, mode="form", row=row)


@login_required
def paste(request, ws, name):
    """Paste (or upload) an InstanceType or an InstanceTypeList, such as the seed's files; all or nothing."""
    context = compute_page(request, ws, name, manage=True)
    text, errors = "", []
    if request.method == "POST":
        def create(text):
            return services.instance_types_create(user=request.user, compute=context["compute"], body=form.pasted_body(text))

        text, records, errors = paste_submit(request, create)
        if not errors:
            names = ", ".join(record.name for record in records)
            many = len(records) > 1
            messages.success(request, f"Instance type{'s' if many else ''} {names} {'are' if many else 'is'} being applied to the cluster.")
            return redirect(list_url(context))
    context.update(mode="yaml", title="New instance type", yaml_text=text, yaml_errors=errors, example=form.YAML_EXAMPLE, verb="Create")
    return render(request, "frontend/kubernetes/instance_type_form.html", context)


@login_required
@require_POST
def preview(request, ws, name):
    """The CR the form amounts to, re-rendered as the user types."""
    compute_page(request, ws, name, manage=True)
    body, _ = form.body_of(request.POST)
    return HttpResponse(form.cr_yaml(form.cr_of(body)), content_type="text/plain; charset=utf-8")


@login_required
@require_POST
def delete(request, ws, name, it):
    context = compute_page(request, ws, name, manage=True)
    row_or_404(context["compute"], it)
    try:
        services.instance_type_delete(user=request.user, compute=context["compute"], name=it)
    except USER_ERRORS as exc:
        messages.error(request, error_rows(exc)[0]["message"])
    else:
        messages.success(request, f"Instance type {it} is being removed from the cluster.")
    return redirect(list_url(context))
