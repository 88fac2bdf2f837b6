"""An endpoint's deployments: the add-deployment form (or pasted YAML) with its live YAML, and the cards' scale and
delete buttons. Every change goes through endpoints.services, which checks the whole deployment again.
"""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from endpoints import selectors, services
from endpoints.models import OnlineDeployment, OnlineEndpoint

from ..forms import endpoints as forms
from ..forms.fields import as_number
from ..forms.yaml import as_yaml
from .common import USER_ERRORS, error_rows, paste_submit
from .endpoints import details_context, endpoint_url, use_context


def deployment_or_404(endpoint: OnlineEndpoint, name: str) -> OnlineDeployment:
    try:
        return selectors.deployment_get(endpoint=endpoint, name=name)
    except OnlineDeployment.DoesNotExist:
        raise Http404 from None


def render_form(request, context: dict, data, errors: list[dict]):
    """The add-deployment form with its values, each error at its field (the rest on top) and its YAML."""
    endpoint = context["endpoint"]
    fields, stray = forms.bind_deployment(endpoint, data, errors)
    body, _ = forms.deployment_body(data, endpoint.name)
    context.update(mode="form", fields=fields, stray_errors=stray, yaml=as_yaml(body))
    return render(request, "frontend/endpoints/deployment_form.html", context)


def deployment_page(request, ws: str, name: str) -> dict:
    context = use_context(request, ws, name, "details")
    if context["deleting"]:
        raise Http404  # nothing can be added to an endpoint on its way out
    return context


@login_required
def create(request, ws, name):
    """The add-deployment form; a valid post becomes a deployment through deployment_create, the one validator."""
    context = deployment_page(request, ws, name)
    data, errors = forms.deployment_initial(context["endpoint"]), []
    if request.method == "POST":
        data = request.POST
        body, errors = forms.deployment_body(request.POST, name)
        if not errors:
            try:
                deployment = services.deployment_create(user=request.user, endpoint=context["endpoint"], data=body)
            except USER_ERRORS as exc:
                errors = error_rows(exc, target="name")  # a bare conflict is about the name
            else:
                messages.success(request, f"Deployment {deployment.name} added.")  # its card says how it is doing, as it changes
                return redirect(endpoint_url(ws, name))
    return render_form(request, context, data, errors)


@login_required
def paste(request, ws, name):
    """Paste (or upload) a deployment's YAML, as `online-deployment create -f` takes it."""
    context = deployment_page(request, ws, name)
    text, errors = "", []
    if request.method == "POST":
        def create(text):
            return services.deployment_create(user=request.user, endpoint=context["endpoint"], data=forms.pasted_deployment(text))

        text, deployment, errors = paste_submit(request, create)
        if not errors:
            messages.success(request, f"Deployment {deployment.name} added.")
            return redirect(endpoint_url(ws, name))
    context.update(mode="yaml", yaml_text=text, yaml_errors=errors, example=forms.LOCAL_YAML_EXAMPLE if context["local"] else forms.YAML_EXAMPLE)
    return render(request, "frontend/endpoints/deployment_form.html", context)


@login_required
@require_POST
def preview(request, ws, name):
    """The deployment YAML the form amounts to, re-rendered as the user types."""
    deployment_page(request, ws, name)
    body, _ = forms.deployment_body(request.POST, name)
    return HttpResponse(as_yaml(body), content_type="text/plain; charset=utf-8")


@login_required
@require_POST
def scale(request, ws, name, deployment):
    """The card's instance-count form: deployment_update checks the whole deployment again."""
    context = use_context(request, ws, name, "details")
    record = deployment_or_404(context["endpoint"], deployment)
    raw = request.POST.get("instance_count", "").strip()
    try:
        services.deployment_update(user=request.user, deployment=record, patch={"instance_count": as_number(raw)})
    except USER_ERRORS as exc:
        context.update(details_context(context, card_errors={deployment: [row["message"] for row in error_rows(exc)]}))
        return render(request, "frontend/endpoints/detail.html", context)
    messages.success(request, f"Deployment {deployment} is being scaled to {raw} instance{'s' if raw != '1' else ''}.")
    return redirect(endpoint_url(ws, name))


@login_required
@require_POST
def delete(request, ws, name, deployment):
    """Delete a deployment without traffic (the service refuses one with traffic, whatever the page showed)."""
    context = use_context(request, ws, name, "details")
    record = deployment_or_404(context["endpoint"], deployment)
    try:
        services.deployment_delete(user=request.user, deployment=record)
    except USER_ERRORS as exc:
        messages.error(request, error_rows(exc)[0]["message"])
    else:
        messages.success(request, f"Deployment {deployment} is being stopped and deleted.")
    return redirect(endpoint_url(ws, name))
