"""Compute instances' run state: the record and token, who may use and open one, and asking it to start, stop or
restart. Below services and tasks (both ask here: a person through compute.services, the schedules through the beat
task), so it enqueues nothing: its callers do, after commit."""
import secrets

from django.contrib.auth import get_user_model
from django.db.models import F
from django.utils import timezone

from controlplane.api import BadRequest, Conflict, PermissionDenied, ValidationError
from controlplane.reconciling import ProvisioningState
from workspaces import access
from workspaces.audit import audit_record, changed_fields
from workspaces.choices import ROLE_RANK, AuditAction, Role

from .choices import ComputeType, DesiredState, InstanceState, StopCause
from .models import ComputeInstance, ComputeTarget

ACTIONS = ("start", "stop", "restart")
TOKEN_KEY = "token"
# A schedule that asks for what is already so does nothing; a person asking is told (Azure ML refuses those too).
BUSY_STARTING = (InstanceState.CREATING, InstanceState.STARTING)


def new_token() -> str:
    """The per-instance secret the servers check (43 url-safe characters); stored encrypted, never shown."""
    return secrets.token_urlsafe(32)


def assigned_user_for(*, workspace, username: str):
    """The member a compute instance is for: a contributor or owner of the workspace (its user starts and stops it)."""
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    role = access.role_of(user, workspace) if user is not None else None
    if role is None:
        raise ValidationError({"assigned_user": [f"'{username}' is not a member of workspace '{workspace.name}'; a "
                                                 "compute instance is assigned to one of its members."]})
    if ROLE_RANK[role] < ROLE_RANK[Role.CONTRIBUTOR]:
        raise ValidationError({"assigned_user": [f"'{username}' is a reader of workspace '{workspace.name}'; the user of "
                                                 "a compute instance starts and stops it, which needs the contributor "
                                                 "role."]})
    return user


def instance_create(*, compute: ComputeTarget, assigned_user) -> ComputeInstance:
    """The run-state record of a new compute instance (asked to run) and its token in the record's secrets."""
    compute.secrets = {**compute.secrets, TOKEN_KEY: new_token()}
    compute.save(update_fields=["secrets_encrypted", "secret_fields", "updated_at"])
    return ComputeInstance.objects.create(compute=compute, assigned_user=assigned_user,
                                          desired_state=DesiredState.RUNNING, state=InstanceState.CREATING)


def instance_reassign(*, compute: ComputeTarget, assigned_user) -> None:
    """Give a compute instance to another member (an owner's or staff's change)."""
    instance = ensure_instance(compute)
    instance.assigned_user = assigned_user
    instance.save(update_fields=["assigned_user", "updated_at"])
    compute.instance = instance


def ensure_instance(compute: ComputeTarget) -> ComputeInstance:
    """The record's run state, made for a compute instance created before instances ran (stopped, with its token)."""
    instance = ComputeInstance.objects.select_for_update().filter(compute=compute).first()
    if instance is not None:
        return instance
    if not compute.secrets.get(TOKEN_KEY):
        compute.secrets = {**compute.secrets, TOKEN_KEY: new_token()}
        compute.save(update_fields=["secrets_encrypted", "secret_fields", "updated_at"])
    return ComputeInstance.objects.create(compute=compute, assigned_user_id=compute.created_by_id,
                                          desired_state=DesiredState.STOPPED, state=InstanceState.STOPPED)


def _is_assigned(user, compute: ComputeTarget, instance: ComputeInstance | None) -> bool:
    return instance is not None and instance.assigned_user_id is not None and instance.assigned_user_id == user.pk


def _instance_of(compute: ComputeTarget) -> ComputeInstance | None:
    try:
        return compute.instance
    except ComputeInstance.DoesNotExist:
        return None


def open_allowed(user, compute: ComputeTarget) -> bool:
    """Whether `user` may open the instance's servers: its assigned user or staff, and a member of the workspace."""
    if compute.type != ComputeType.COMPUTEINSTANCE or not getattr(user, "is_authenticated", False):
        return False
    if access.role_of(user, compute.workspace) is None:
        return False
    return user.is_staff or _is_assigned(user, compute, _instance_of(compute))


def action_allowed(user, compute: ComputeTarget) -> bool:
    """Whether `user` may start, stop or restart it: its assigned user (a contributor or owner), owners and staff."""
    role = access.role_of(user, compute.workspace)
    if role is None or ROLE_RANK[role] < ROLE_RANK[Role.CONTRIBUTOR]:
        return False
    return role == Role.OWNER or _is_assigned(user, compute, _instance_of(compute))


def _refuse_other_types(compute: ComputeTarget, action: str) -> None:
    if compute.type != ComputeType.COMPUTEINSTANCE:
        raise BadRequest(f"Compute '{compute.name}' is of type {compute.type}; only a compute instance can be "
                         f"{'restarted' if action == 'restart' else action + 'ped' if action == 'stop' else 'started'}.",
                         code="UnsupportedComputeType", target="name")


def _plan(instance: ComputeInstance, action: str, scheduled: bool) -> bool:
    """Whether `action` changes anything; Conflict when a person asks for what cannot be done now."""
    running = instance.desired_state == DesiredState.RUNNING
    failed = instance.state == InstanceState.FAILED
    if action == "start" and running and not failed:
        if scheduled:
            return False
        raise Conflict(f"It is already {instance.state.lower()} (asked to run); stop it first to start it again, or "
                       "restart it.")
    if action == "stop" and not running and not failed:
        if scheduled:
            return False
        raise Conflict(f"It is already {instance.state.lower()} (asked to stop).")
    if action == "restart":
        if not running:
            raise Conflict("It is stopped or stopping; start it instead of restarting it.")
        if instance.state in BUSY_STARTING:
            raise Conflict(f"It is still {instance.state.lower()}; restart it once it is running.")
    return True


def _apply(instance: ComputeInstance, action: str, cause: str) -> list[str]:
    """Ask for the action on the run-state record; the fields changed."""
    if action == "stop":
        instance.desired_state, instance.stop_cause = DesiredState.STOPPED, cause
        return ["desired_state", "stop_cause"]
    instance.desired_state, instance.stop_cause = DesiredState.RUNNING, StopCause.NONE
    if action == "restart":
        instance.restart_requested_at = timezone.now()
        return ["desired_state", "stop_cause", "restart_requested_at"]
    return ["desired_state", "stop_cause"]


def request_action(*, user, compute: ComputeTarget, action: str, cause: str = StopCause.USER) -> bool:
    """Ask a compute instance to start, stop or restart on its record and bump the generation; whether it changed.

    Run inside the caller's transaction, which enqueues the reconcile. `user` is None for the schedules (audited as
    the system); a scheduled start of a running instance (or stop of a stopped one) does nothing, where a person
    asking gets 409.
    """
    _refuse_other_types(compute, action)
    if action not in ACTIONS:
        raise BadRequest(f"'{action}' is not an action of a compute instance; one of: {', '.join(ACTIONS)}.",
                         code="BadRequest", target="action")
    if user is not None and not action_allowed(user, compute):
        raise PermissionDenied("Only the instance's assigned user (a contributor or owner), the workspace's owners and "
                               "staff can start, stop or restart it.")
    if compute.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Compute '{compute.name}' is being deleted.")
    instance = ensure_instance(compute)
    if not _plan(instance, action, scheduled=cause == StopCause.SCHEDULE):
        return False
    before = {"desired_state": instance.desired_state, "stop_cause": instance.stop_cause}
    fields = _apply(instance, action, cause if action == "stop" else StopCause.NONE)
    instance.save(update_fields=[*fields, "updated_at"])
    ComputeTarget.objects.filter(pk=compute.pk).update(generation=F("generation") + 1, updated_at=timezone.now())
    compute.refresh_from_db(fields=["generation", "updated_at"])
    compute.instance = instance
    audit_record(actor=user, action=AuditAction.ACTION, verb=action, target_type="compute", target_name=compute.name,
                 workspace=compute.workspace, changes=changed_fields(before, {key: getattr(instance, key) for key in before}))
    return True

