"""Compute instances in the studio: the hub tab's rows, the details page's state panel (polled while the instance is
between states), Start / Stop / Restart through the services, and the JupyterLab / VS Code / terminal links."""
from dataclasses import dataclass, field

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import PermissionDenied

from compute import selectors, services, vmsizes
from compute.choices import ComputeType, DesiredState, InstanceState, StopCause
from compute.models import ComputeInstance, ComputeTarget
from controlplane.reconciling import ProvisioningState
from workspaces import access
from workspaces.choices import ROLE_RANK, Role

from .common import USER_ERRORS, compute_of_type, error_rows, workspace_page

POLL_SECONDS = 2
TRANSITIONAL = (InstanceState.CREATING, InstanceState.STARTING, InstanceState.STOPPING)
# Which buttons make sense in which observed state (the service still says no with 409 when they do not).
ACTIONS_IN = {
    "start": (InstanceState.STOPPED, InstanceState.FAILED),
    "stop": (InstanceState.RUNNING, InstanceState.STARTING, InstanceState.CREATING, InstanceState.FAILED),
    "restart": (InstanceState.RUNNING,),
}
ACTION_LABELS = {"start": ("Start", "play-fill"), "stop": ("Stop", "stop-fill"), "restart": ("Restart", "arrow-clockwise")}
# The servers of an instance behind Dockyard's proxy (the proxy checks the session and who may open it).
APPLICATIONS = (("JupyterLab", "jupyterlab", "journal-code"), ("VS Code", "vscode", "code-square"),
                ("Terminal", "terminal", "terminal"))


@dataclass
class InstanceView:
    """A compute instance as the studio shows it: its run state in words and what this user may do with it."""

    compute: ComputeTarget
    state: str
    reason: str
    since: object
    assigned_user: str
    shape: str
    last_activity: str
    can_act: bool
    can_open: bool
    actions: list[dict] = field(default_factory=list)
    applications: list[dict] = field(default_factory=list)

    @property
    def transitional(self) -> bool:
        return self.state in TRANSITIONAL


def run_state(compute: ComputeTarget) -> ComputeInstance | None:
    try:
        return compute.instance
    except ComputeInstance.DoesNotExist:
        return None  # a record made before instances ran: the service makes its run state on the first action


def no_run_state(compute: ComputeTarget) -> str:
    """The state of a record without run state: Creating while it is being created, else Stopped (as the service
    treats it: its first start makes the run state)."""
    return InstanceState.CREATING if compute.provisioning_state == ProvisioningState.CREATING else InstanceState.STOPPED


def shown_state(instance: ComputeInstance) -> str:
    """The observed state, or the one it is heading to once asked (Stopping after Stop, Starting after Start) until the
    reconcile writes its own: the buttons then offer what makes sense next, and the page polls."""
    asked_stop = instance.desired_state == DesiredState.STOPPED
    if asked_stop and instance.state in (InstanceState.RUNNING, InstanceState.STARTING, InstanceState.CREATING):
        return InstanceState.STOPPING
    if not asked_stop and instance.state in (InstanceState.STOPPED, InstanceState.STOPPING):
        return InstanceState.STARTING
    return instance.state


def may_act(user, compute: ComputeTarget, instance: ComputeInstance | None) -> bool:
    """The service's rule, to show the buttons: the assigned user (contributor or owner), owners, staff."""
    role = access.role_of(user, compute.workspace)
    if role is None or ROLE_RANK[role] < ROLE_RANK[Role.CONTRIBUTOR]:
        return False
    return role == Role.OWNER or (instance is not None and instance.assigned_user_id == user.pk)


def shape_text(properties: dict) -> str:
    """The instance type, or the VM size with its vCPUs and memory, in one line."""
    if properties.get("instance_type"):
        return f"instance type {properties['instance_type']}"
    size = properties.get("size") or ""
    vm = vmsizes.vm_size(size) if size else None
    if vm is None:
        return size or "the compute's default instance type"
    gpus = f", {vm.gpus} × {vm.gpu_model}" if vm.gpus else ""
    return f"{vm.name} ({vm.vcpus} vCPUs, {vm.memory_gib:g} GiB{gpus})"


def clock(moment) -> str:
    """A time as the studio shows it: HH:MM today, else the date too (in the server's time zone)."""
    local = timezone.localtime(moment)
    return local.strftime("%H:%M") if local.date() == timezone.localdate() else local.strftime("%Y-%m-%d %H:%M")


def activity_text(instance: ComputeInstance | None) -> str:
    """"14:02, kernel idle"; "" before any probe saw activity."""
    if instance is None or instance.last_activity is None:
        return ""
    source = instance.last_activity_source
    return f"{clock(instance.last_activity)}, {source}" if source else clock(instance.last_activity)


def application_links(compute: ComputeTarget) -> list[dict]:
    urls = selectors.instance_applications(compute)
    return [{"label": label, "url": urls[key], "icon": icon} for label, key, icon in APPLICATIONS]


def instance_view(user, compute: ComputeTarget) -> InstanceView:
    """One compute instance for this user: state, reason, shape, activity, the buttons and links it may use."""
    instance = run_state(compute)
    state = shown_state(instance) if instance else no_run_state(compute)
    can_act, can_open = may_act(user, compute, instance), services.instance_open_allowed(user, compute)
    view = InstanceView(
        compute=compute, state=state, reason=instance.state_reason if instance else "",
        since=instance.state_changed_at if instance else None,
        assigned_user=instance.assigned_user.username if instance and instance.assigned_user else "",
        shape=shape_text(compute.properties), last_activity=activity_text(instance), can_act=can_act, can_open=can_open,
    )
    if can_act:
        view.actions = [{"action": action, "label": ACTION_LABELS[action][0], "icon": ACTION_LABELS[action][1],
                         "enabled": state in states} for action, states in ACTIONS_IN.items()]
    if can_open and state == InstanceState.RUNNING:
        view.applications = application_links(compute)
    return view


def instance_views(user, computes) -> list[InstanceView]:
    return [instance_view(user, compute) for compute in computes]


def idle_text(compute: ComputeTarget, instance: ComputeInstance | None) -> str:
    """"Stops after 30 min idle; last activity 14:02 (kernel idle)", or that it never stops on its own."""
    minutes = compute.properties.get("idle_time_before_shutdown_minutes")
    if not minutes:
        return "No idle shutdown: it runs until it is stopped."
    text = f"Stops after {minutes} min idle"
    if instance is not None and instance.last_activity:
        source = f" ({instance.last_activity_source})" if instance.last_activity_source else ""
        text += f"; last activity {clock(instance.last_activity)}{source}"
    return text + "."


def stopped_text(compute: ComputeTarget, instance: ComputeInstance | None) -> str:
    """Why a stopped instance stopped, in words; the reconcile's own reason when it wrote one."""
    if instance is None or instance.state != InstanceState.STOPPED:
        return ""
    if instance.state_reason:
        return instance.state_reason
    minutes = compute.properties.get("idle_time_before_shutdown_minutes")
    if instance.stop_cause == StopCause.IDLE:
        activity = activity_text(instance)
        return f"Stopped: idle for {minutes} min" + (f"; last activity {activity}." if activity else ".")
    return {StopCause.SCHEDULE: "Stopped by its schedule.", StopCause.USER: "Stopped by a user."}.get(instance.stop_cause, "")


def instance_or_404(workspace, name: str) -> ComputeTarget:
    return compute_of_type(workspace, name, ComputeType.COMPUTEINSTANCE)


def host_namespace(compute: ComputeTarget, host: str) -> str:
    """The namespace of the Kubernetes compute the instance runs on ("" for local or a host gone)."""
    found = selectors.kubernetes_compute_list(workspace=compute.workspace, deleting=True).filter(name=host).first()
    return found.properties.get("namespace", "default") if found else ""


def panel_context(request, context: dict, compute: ComputeTarget) -> dict:
    """What the details page's state panel shows (the page and its polling share it)."""
    instance = run_state(compute)
    host = compute.properties.get("kubernetes_compute") or ""
    return {
        **context, "compute": compute, "view": instance_view(request.user, compute), "instance": instance,
        "idle_text": idle_text(compute, instance), "stopped_text": stopped_text(compute, instance),
        "host": host, "namespace": host_namespace(compute, host) if host and host != "local" else "",
        "poll_seconds": POLL_SECONDS,
    }


@login_required
@require_GET
def panel(request, ws, name):
    """The details page's state panel alone: polled every few seconds while the instance is between states."""
    context = workspace_page(request, ws)
    compute = instance_or_404(context["workspace"], name)
    context = panel_context(request, context, compute)
    context["oob"] = True  # the page's title badge follows the panel
    return render(request, "frontend/compute/_instance_panel.html", context)


@login_required
@require_POST
def action(request, ws, name, verb):
    """Start, stop or restart through the service; htmx swaps in the row (hub) or the panel (details) it came from."""
    context = workspace_page(request, ws)
    compute = instance_or_404(context["workspace"], name)
    if verb not in ACTION_LABELS:
        raise Http404
    errors = []
    try:
        services.compute_instance_action(user=request.user, compute=compute, action=verb)
    except PermissionDenied as exc:
        raise DjangoPermissionDenied(str(exc.detail)) from None  # the buttons are not shown to this user: 403
    except USER_ERRORS as exc:
        errors = error_rows(exc)  # e.g. already stopped: said in the row (htmx swaps 200 answers only), like a form's errors
    compute = instance_or_404(context["workspace"], name)
    if request.POST.get("view") == "row":
        context.update(view=instance_view(request.user, compute), errors=errors)
        return render(request, "frontend/compute/_instance_row.html", context)
    context = panel_context(request, context, compute)
    context.update(errors=errors, oob=True)
    return render(request, "frontend/compute/_instance_panel.html", context)
