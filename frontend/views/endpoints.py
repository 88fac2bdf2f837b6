"""Online endpoints: the list with its create form and an endpoint's tabs (details with deployment cards and traffic
sliders, Test, Consume, deployment logs, manifests); deployments.py has the deployments' own forms and buttons.

Every change goes through endpoints.services, the same path as the REST API; the Test tab calls the data plane
directly (a workspace member needs no key here), as the score URL does after checking one.
"""
import json
import logging
import time
from http import HTTPStatus

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET, require_POST

from controlplane.reconciling import ProvisioningState
from endpoints import selectors, services
from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.serializers import scoring_uri

from ..forms import endpoints as forms
from ..forms.yaml import manifests_yaml
from .common import USER_ERRORS, error_rows, require, workspace_page

logger = logging.getLogger(__name__)

SECTIONS = (("details", "Details"), ("test", "Test"), ("consume", "Consume"), ("logs", "Deployment logs"),
            ("manifests", "Manifests"))
MOVING = (ProvisioningState.CREATING, ProvisioningState.UPDATING, ProvisioningState.DELETING)
SETTLING = ("Starting", "Restarting", "RollingOut")  # a deployment's server state while it is not serving yet
LOG_LINES = (50, 200, 1000, 5000)
DEFAULT_LOG_LINES = 200
EXAMPLE_REQUEST = '{"data": [[1, 2, 3, 4]]}'


def no_store(response: HttpResponse) -> HttpResponse:
    """A page holding a key: no back-button or proxy copy of it."""
    response["Cache-Control"] = "no-store"
    return response


# The list and the create form


def list_context(context: dict) -> dict:
    workspace = context["workspace"]
    return {**context, "nav": "endpoints", "endpoints": selectors.endpoint_list(workspace=workspace),
            "api_path": f"/api/v1/workspaces/{workspace.name}/online-endpoints/"}


@login_required
def endpoint_list(request, ws):
    """Endpoints of the workspace; a POST is the create form (contributors and owners), whose keys show once here."""
    context = workspace_page(request, ws)
    data, errors, created = forms.endpoint_initial(context["workspace"]), [], None
    if request.method == "POST":
        require(request.user, context["workspace"], "use")
        data = request.POST
        try:
            endpoint, made = services.endpoint_create(user=request.user, workspace=context["workspace"],
                                                      data=forms.endpoint_body(request.POST))
        except USER_ERRORS as exc:
            errors = error_rows(exc, target="name")  # a bare conflict is about the name
        else:
            created = {"endpoint": endpoint, "keys": made}
            data = forms.endpoint_initial(context["workspace"])
    fields, stray = forms.bind_endpoint(context["workspace"], data, errors)
    context = list_context(context)
    context.update(fields=fields, stray_errors=stray, show_form=bool(errors), created=created)
    if request.htmx and request.method == "GET":
        return render(request, "frontend/endpoints/_list.html", context)
    response = render(request, "frontend/endpoints/list.html", context)
    return no_store(response) if created else response


# One endpoint


def endpoint_or_404(workspace, name: str) -> OnlineEndpoint:
    try:
        return selectors.endpoint_get(workspace=workspace, name=name)
    except OnlineEndpoint.DoesNotExist:
        raise Http404 from None


def card(endpoint: OnlineEndpoint, deployment: OnlineDeployment, can_use: bool) -> dict:
    """What a deployment's card shows, and which of its buttons work."""
    share, mirrored = endpoint.traffic.get(deployment.name, 0), endpoint.mirror_traffic.get(deployment.name, 0)
    deleting = deployment.provisioning_state == ProvisioningState.DELETING
    status = deployment.status or {}
    blocked = ""
    if share:
        blocked = f"It takes {share}% of the traffic: move it to other deployments first."
    elif mirrored:
        blocked = f"It receives {mirrored}% mirrored traffic: stop mirroring to it first."
    return {
        "deployment": deployment, "share": share, "mirrored": mirrored, "status": status, "deleting": deleting,
        "desired": status.get("replicas", deployment.instance_count), "ready": status.get("ready_replicas", 0),
        "restarts": status.get("restarts"),  # local servers count them; a Kubernetes rollout reports none
        "local": endpoint.is_local, "placement": deployment.placement, "can_edit": can_use and not deleting,
        "can_delete": can_use and not deleting and not blocked, "delete_blocked": blocked if can_use and not deleting else "",
        "settling": deployment.provisioning_state in MOVING or status.get("state") in SETTLING,
    }


def traffic_rows(endpoint: OnlineEndpoint, deployments: list[OnlineDeployment], data=None) -> list[dict]:
    """One slider per live deployment: its share as saved, or as just posted when the post was refused."""
    rows = []
    for deployment in deployments:
        if deployment.provisioning_state == ProvisioningState.DELETING:
            continue
        value = endpoint.traffic.get(deployment.name, 0)
        if data is not None:
            value = data.get(f"traffic.{deployment.name}", value)
        width = min(int(value), 100) if str(value).isdigit() else 0  # the bar's segment, never the posted text
        rows.append({"name": deployment.name, "value": value, "width": width, "state": deployment.provisioning_state})
    return rows


def endpoint_context(request, ws: str, name: str, section: str) -> dict:
    """What every tab of an endpoint shows: the header (state, buttons), the tabs, the deployments."""
    context = workspace_page(request, ws)
    endpoint = endpoint_or_404(context["workspace"], name)
    deployments = list(selectors.deployment_list(endpoint=endpoint))
    for deployment in deployments:
        deployment.endpoint = endpoint
    deleting = endpoint.provisioning_state == ProvisioningState.DELETING
    use = context["perms"]["use"] and not deleting
    cards = [card(endpoint, deployment, use) for deployment in deployments]
    return {
        **context, "nav": "endpoints", "endpoint": endpoint, "deployments": deployments, "cards": cards,
        "section": section, "sections": SECTIONS, "can_use": use, "deleting": deleting,
        "local": endpoint.is_local, "managed": endpoint.is_managed, "route": (endpoint.status or {}).get("route") or {},
        "active": endpoint.provisioning_state in MOVING or any(item["settling"] for item in cards),
        "scoring_url": request.build_absolute_uri(scoring_uri(endpoint)),
    }


def details_context(context: dict, data=None, traffic_errors=(), card_errors=None) -> dict:
    endpoint = context["endpoint"]
    rows = traffic_rows(endpoint, context["deployments"], data)
    mirror_name, mirror_percent = next(iter(endpoint.mirror_traffic.items()), ("", 0))
    if data is not None:
        mirror_name, mirror_percent = data.get("mirror_deployment", ""), data.get("mirror_percent", "")
    total = sum(int(row["value"]) for row in rows if str(row["value"]).isdigit())
    return {
        "traffic": rows, "traffic_total": total, "traffic_errors": list(traffic_errors),
        "traffic_changed": data is not None,  # the sliders show what was posted (refused), not what is saved
        "mirror_name": mirror_name, "mirror_percent": mirror_percent, "card_errors": card_errors or {},
    }


def consume_context(context: dict) -> dict:
    endpoint = context["endpoint"]
    keys = [{"type": key_type, "prefix": endpoint.key_prefixes[key_type],
             "rotated_at": parse_datetime(endpoint.keys_rotated_at.get(key_type) or "")}
            for key_type in ("primary", "secondary") if endpoint.key_prefixes.get(key_type)]
    return {"keys": keys if context["perms"]["use"] else [], "new_key": None}


def log_context(request, context: dict) -> dict:
    """The last lines of one deployment's server output (the first deployment unless one is asked for)."""
    names = [deployment.name for deployment in context["deployments"]]
    chosen = request.GET.get("deployment") if request.GET.get("deployment") in names else (names[0] if names else "")
    lines = int(request.GET["lines"]) if request.GET.get("lines", "").isdigit() else DEFAULT_LOG_LINES
    lines = min(max(lines, 1), LOG_LINES[-1])
    text, error = "", ""
    if chosen:
        deployment = next(item for item in context["deployments"] if item.name == chosen)
        try:
            text = services.deployment_logs(deployment=deployment, lines=lines)
        except Exception as exc:  # an unreachable cluster is no reason for a 500 page: say so in the pane
            logger.warning("Logs of %s/%s could not be read: %s", context["endpoint"].name, chosen, exc)
            error = f"The logs could not be read: {exc}"
    return {"log_deployment": chosen, "log_lines": lines, "log_line_choices": LOG_LINES, "log_text": text,
            "log_error": error, "log_count": len(text.splitlines()) if text else 0}


def manifests_context(context: dict) -> dict:
    return {
        "route_yaml": manifests_yaml(context["endpoint"].manifests) if context["endpoint"].manifests else "",
        "deployment_manifests": [(deployment, manifests_yaml(deployment.manifests) if deployment.manifests else "")
                                 for deployment in context["deployments"]],
    }


def section_context(request, context: dict) -> dict:
    section = context["section"]
    if section == "details":
        return details_context(context)
    if section == "test":
        return {"request_text": EXAMPLE_REQUEST, "chosen": "", "result": None}
    if section == "consume":
        return consume_context(context)
    if section == "logs":
        return log_context(request, context)
    return manifests_context(context)


@login_required
def detail(request, ws, name, section="details"):
    """One tab of an endpoint; an htmx request of the logs tab (Refresh) gets just the log pane."""
    if section not in dict(SECTIONS):
        raise Http404
    context = endpoint_context(request, ws, name, section)
    context.update(section_context(request, context))
    if request.htmx and section == "logs":
        return render(request, "frontend/endpoints/_log_pane.html", context)
    return render(request, "frontend/endpoints/detail.html", context)


@login_required
@require_GET
def status(request, ws, name):
    """The deployment cards, polled while something moves; the header's state badge comes along out of band."""
    context = endpoint_context(request, ws, name, "details")
    return render(request, "frontend/endpoints/_cards.html", {**context, "oob": True})


def use_context(request, ws: str, name: str, section: str) -> dict:
    """An endpoint's context for a change: contributors and owners only, re-checked on every POST."""
    context = endpoint_context(request, ws, name, section)
    require(request.user, context["workspace"], "use")
    return context


def endpoint_url(ws: str, name: str, section: str = "details") -> str:
    if section == "details":
        return reverse("frontend:endpoint", args=[ws, name])
    return reverse("frontend:endpoint-section", args=[ws, name, section])


@login_required
@require_POST
def traffic(request, ws, name):
    """Save the sliders and the mirror row through endpoint_update, which checks them again (0 or 100, names)."""
    context = use_context(request, ws, name, "details")
    names = [row["name"] for row in traffic_rows(context["endpoint"], context["deployments"])]
    patch = forms.traffic_body(request.POST, names)
    try:
        services.endpoint_update(user=request.user, endpoint=context["endpoint"], patch=patch)
    except USER_ERRORS as exc:
        context.update(details_context(context, request.POST, error_rows(exc, target="traffic")))
        return render(request, "frontend/endpoints/detail.html", context)
    split = ", ".join(f"{key} {value}%" for key, value in patch["traffic"].items() if value) or "no deployment"
    mirror = "".join(f"; {value}% mirrored to {key}" for key, value in patch["mirror_traffic"].items() if value)
    messages.success(request, f"Traffic saved: {split}{mirror}.")
    return redirect(endpoint_url(ws, name))


def run_test(endpoint: OnlineEndpoint, text: str, requested: str) -> dict:
    """Send the request as the score URL would (no key: the studio's user is a member) and describe the answer."""
    try:
        json.loads(text)
    except ValueError as exc:
        return {"error": f"The request is not valid JSON: {exc}.", "status": None, "body": None}
    target = selectors.scoring_target(workspace_name=endpoint.workspace.name, endpoint_name=endpoint.name)
    if target is None:
        return {"error": f"Endpoint {endpoint.name} is being deleted.", "status": None, "body": None}
    started = time.monotonic()
    try:
        endpoint, deployments = target
        answer = services.endpoint_score(endpoint=endpoint, deployments=deployments, body=text.encode(),
                                         content_type="application/json", requested=requested or None)
    except services.ScoringError as exc:
        return {"error": str(exc), "code": exc.code, "status": exc.status, "body": None}
    elapsed = round((time.monotonic() - started) * 1000)
    body = answer.body.decode("utf-8", errors="replace")
    try:
        body = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        pass  # not JSON: shown as it came
    try:
        reason = HTTPStatus(answer.status).phrase
    except ValueError:  # a status of the model's own
        reason = ""
    # a failed answer points at the server's log, where the scoring script's traceback is
    return {"status": answer.status, "reason": reason, "deployment": answer.deployment, "content_type": answer.content_type, "body": body,
            "elapsed_ms": elapsed, "ok": 200 <= answer.status < 300}


@login_required
def test(request, ws, name):
    """The Test tab; a POST sends its JSON to one deployment (by traffic, or the one chosen) and shows the answer."""
    context = endpoint_context(request, ws, name, "test")
    context.update(section_context(request, context))
    if request.method == "POST":
        require(request.user, context["workspace"], "use")
        text, chosen = request.POST.get("request", ""), request.POST.get("deployment", "")
        context.update(request_text=text, chosen=chosen, result=run_test(context["endpoint"], text, chosen))
        if request.htmx:
            return render(request, "frontend/endpoints/_test_result.html", context)
    return render(request, "frontend/endpoints/detail.html", context)


@login_required
@require_POST
def regenerate(request, ws, name):
    """A new primary or secondary key, shown in this answer only; the other key keeps working."""
    context = use_context(request, ws, name, "consume")
    key_type = request.POST.get("key_type", "")
    try:
        made = services.endpoint_regenerate_key(user=request.user, endpoint=context["endpoint"], key_type=key_type)
    except USER_ERRORS as exc:
        messages.error(request, error_rows(exc)[0]["message"])
        return redirect(endpoint_url(ws, name, "consume"))
    context["endpoint"] = endpoint_or_404(context["workspace"], name)  # the new prefix
    context.update(consume_context(context), new_key={"type": key_type, "value": made[f"{key_type}Key"]})
    return no_store(render(request, "frontend/endpoints/detail.html", context))


@login_required
@require_POST
def delete(request, ws, name):
    """Delete the endpoint: every deployment is stopped, then the record goes."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "use")
    endpoint = services.endpoint_delete(user=request.user, endpoint=endpoint_or_404(context["workspace"], name))
    messages.success(request, f"Endpoint {endpoint.name} is being deleted with its deployments.")
    return redirect("frontend:endpoints", ws=ws)
