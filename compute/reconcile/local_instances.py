"""Local compute instances (`kubernetes_compute: local`): JupyterLab in the sandbox on the worker's host.

The same lifecycle as an instance on a cluster (Creating → Running → Stopping → Stopped → Starting, Failed with the
reason), with the server process in place of the StatefulSet's pod and the instance's home folder in place of its
disk: stop ends the process group and keeps the home, delete removes both. Idle shutdown probes the server over its
Unix socket (probes.probe_local) and decides with compute.idle.verdict, as for a cluster's instance.
"""
import http.client
import logging
import os
import time
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from controlplane.kube.errors import KubeTransient
from controlplane.reconciling import ProvisioningState, problem, record_status
from workspaces.access import local_compute_refusal

from .. import idle
from ..choices import ComputeType, DesiredState, InstanceState, StopCause
from ..models import ComputeInstance, ComputeTarget
from ..runners import local as runner
from ..runners import notebooks, unix_http
from .probes import probe_local

logger = logging.getLogger(__name__)

LOCAL = "local"  # `kubernetes_compute` of an instance that runs on the worker's host
ANSWER_WAIT = 5.0  # seconds a reconcile waits in-line for a started server; then it lets the state show and looks again
LOOK_AGAIN = 1.0
NEVER = timedelta(days=3650)  # the threshold of an instance without idle shutdown: activity is still recorded
STOP_REASONS = {StopCause.USER: "Stopped on request.", StopCause.SCHEDULE: "Stopped by its schedule.",
                StopCause.NONE: "Stopped."}


class StillStarting(KubeTransient):
    """The server was started and does not answer yet: the task commits the state (Starting) and looks again."""


def is_local_instance(compute: ComputeTarget) -> bool:
    return compute.type == ComputeType.COMPUTEINSTANCE and compute.properties.get("kubernetes_compute") == LOCAL


def instance_of(compute: ComputeTarget) -> ComputeInstance:
    """The run-state record (the create service makes it; made here if a record predates it)."""
    return ComputeInstance.objects.get_or_create(compute=compute)[0]


def _token(compute: ComputeTarget) -> str:
    return compute.secrets.get("token", "")


def set_state(instance: ComputeInstance, state: str, reason: str = "", **fields) -> None:
    """Write the observed state (and when it changed) and any other fields, only what changed."""
    values = {"state": state, "state_reason": reason, **fields}
    if instance.state != state:
        values["state_changed_at"] = timezone.now()
    changed = [key for key, value in values.items() if getattr(instance, key) != value]
    for key in changed:
        setattr(instance, key, values[key])
    if changed:
        instance.save(update_fields=[*changed, "updated_at"])


def reconcile_local_instance(compute: ComputeTarget) -> None:
    """Bring a local instance's server to its desired state (the caller holds the row lock); delete removes it all."""
    if compute.provisioning_state == ProvisioningState.DELETING:
        notebooks.delete(compute)
        logger.info("Deleted local compute instance %s and its home folder", compute.name)
        compute.delete()
        return
    instance = instance_of(compute)
    refusal = local_compute_refusal(compute.workspace)
    if refusal:
        _refuse(compute, instance, refusal)
    elif instance.desired_state == DesiredState.STOPPED:
        _stop(compute, instance)
    else:
        _run(compute, instance)


def _refuse(compute: ComputeTarget, instance: ComputeInstance, refusal: str) -> None:
    """Local compute is off for the workspace (or the server): no server runs, and the instance says why."""
    notebooks.stop(compute)
    set_state(instance, InstanceState.FAILED, f"The Jupyter server does not run: {refusal}")
    record_status(compute, ProvisioningState.FAILED, [problem("LocalComputeOff", refusal)])


def _stop(compute: ComputeTarget, instance: ComputeInstance) -> None:
    if notebooks.running(compute) is not None:
        set_state(instance, InstanceState.STOPPING, instance.state_reason)
        notebooks.stop(compute)
    reason = instance.state_reason if instance.stop_cause == StopCause.IDLE else STOP_REASONS[instance.stop_cause]
    set_state(instance, InstanceState.STOPPED, reason)
    record_status(compute, ProvisioningState.SUCCEEDED, [])


def started_at(compute: ComputeTarget) -> datetime | None:
    """When the running server's wrapper started (its pid file is written first thing)."""
    try:
        stamp = os.stat(notebooks.folder_of(compute) / notebooks.RUN / runner.PID_FILE).st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(stamp, tz=UTC)


def _restart_due(compute: ComputeTarget, instance: ComputeInstance) -> bool:
    """A restart was asked after the running server started."""
    started = started_at(compute)
    return bool(instance.restart_requested_at and started and started < instance.restart_requested_at)


def _run(compute: ComputeTarget, instance: ComputeInstance) -> None:
    process = notebooks.running(compute)
    if process is not None and _restart_due(compute, instance):
        set_state(instance, InstanceState.STOPPING, "Restarting.")
        notebooks.stop(compute)
        process = None
    if process is None:
        first = instance.state == InstanceState.CREATING
        set_state(instance, InstanceState.CREATING if first else InstanceState.STARTING)
        try:
            network = settings.DOCKYARD_SANDBOX_NETWORK or compute.workspace.local_network_enabled
            notebooks.start(compute, _token(compute), network)
        except OSError as exc:
            _failed(compute, instance, f"The Jupyter server could not be started: {exc}")
            return
        # Committed now, so the owner sees Creating/Starting; the next look adopts the server and waits for it.
        raise StillStarting(f"The Jupyter server of compute instance '{compute.name}' is starting.", retry_after=LOOK_AGAIN)
    _await_answer(compute, instance)


def _await_answer(compute: ComputeTarget, instance: ComputeInstance) -> None:
    """Running once the server answers; Failed if it ended; else the state shows and the task looks again."""
    deadline = time.monotonic() + ANSWER_WAIT
    while True:
        if answers(compute):
            set_state(instance, InstanceState.RUNNING, "", stop_cause=StopCause.NONE)
            record_status(compute, ProvisioningState.SUCCEEDED, [])
            return
        if notebooks.running(compute) is None:
            _failed(compute, instance, notebooks.ended(compute, _token(compute)) or "The Jupyter server ended.")
            return
        if time.monotonic() >= deadline:
            raise StillStarting(f"The Jupyter server of compute instance '{compute.name}' is starting.",
                                retry_after=LOOK_AGAIN)
        time.sleep(0.1)


def _failed(compute: ComputeTarget, instance: ComputeInstance, reason: str) -> None:
    set_state(instance, InstanceState.FAILED, reason)
    record_status(compute, ProvisioningState.FAILED, [problem("ServerFailed", reason)])


def answers(compute: ComputeTarget, timeout: float = 5.0) -> bool:
    """The server answers its status with the instance's token (over its Unix socket)."""
    path = notebooks.local_instance_socket(compute)
    if path is None:
        return False
    headers = {"Authorization": f"token {_token(compute)}"}
    try:
        status = unix_http.request(path, "GET", f"{notebooks.base_url(compute)}api/status", None, headers, timeout)[0]
    except (OSError, http.client.HTTPException):
        return False
    return status == 200


# Observing: the beat looks at every local instance that should run (server alive, activity, idle shutdown).


def observe_local_instances() -> int:
    """Observe each local instance that should be running, under its row lock (busy rows are skipped); returns how many."""
    ids = list(ComputeInstance.objects.filter(
        compute__type=ComputeType.COMPUTEINSTANCE, compute__properties__kubernetes_compute=LOCAL,
        desired_state=DesiredState.RUNNING).exclude(compute__provisioning_state=ProvisioningState.DELETING)
        .values_list("compute_id", flat=True))
    seen = 0
    for pk in ids:
        with transaction.atomic():
            compute = ComputeTarget.objects.select_for_update(skip_locked=True, of=("self",)).select_related(
                "workspace").filter(pk=pk).first()
            if compute is not None:
                observe_local_instance(compute)
                seen += 1
    return seen


def observe_local_instance(compute: ComputeTarget) -> None:
    """One look (the caller holds the row lock): the server still runs, its activity, and stop it when idle."""
    instance = instance_of(compute)
    refusal = local_compute_refusal(compute.workspace)
    if refusal:
        _refuse(compute, instance, refusal)
        return
    if instance.state not in (InstanceState.RUNNING, InstanceState.STARTING, InstanceState.CREATING):
        return  # Failed stays Failed until the owner starts it again; Stopping/Stopped is the reconcile's
    if notebooks.running(compute) is None:
        if instance.state == InstanceState.RUNNING:
            _failed(compute, instance, notebooks.ended(compute, _token(compute)) or "The Jupyter server ended.")
        return  # (a start in progress is the reconcile's, which a resync brings back after a worker's crash)
    if instance.state != InstanceState.RUNNING:
        if answers(compute):  # a start whose reconcile gave up waiting (or died): it is running now
            set_state(instance, InstanceState.RUNNING, "", stop_cause=StopCause.NONE)
            record_status(compute, ProvisioningState.SUCCEEDED, [])
        return
    _probe(compute, instance)


def _threshold(compute: ComputeTarget) -> timedelta | None:
    minutes = compute.properties.get("idle_time_before_shutdown_minutes")
    return timedelta(seconds=minutes * settings.DOCKYARD_IDLE_SECONDS_PER_MINUTE) if minutes else None


def _probe(compute: ComputeTarget, instance: ComputeInstance) -> None:
    """Read the server's activity, record it, and stop the instance when the verdict says idle."""
    now = timezone.now()
    socket_path = notebooks.local_instance_socket(compute)
    probes = probe_local(socket_path, notebooks.base_url(compute), _token(compute)) if socket_path else [
        idle.Probe("jupyter", False, error="The Jupyter server's socket is not there.")]
    threshold = _threshold(compute)
    verdict = idle.verdict(probes, threshold or NEVER, now, started_at(compute) or now)
    failed = [probe.error for probe in probes if not probe.ok]
    values = {"probed_at": now, "probe_error": "; ".join(failed)[:1000]}
    if verdict.last_activity is not None:
        values.update(last_activity=verdict.last_activity, last_activity_source=verdict.source[:200])
    set_state(instance, instance.state, instance.state_reason, **values)
    if threshold is not None and verdict.idle:
        logger.info("Compute instance %s is idle: %s", compute.name, verdict.reason)
        idle_stop(compute, instance, verdict.reason)


def idle_stop(compute: ComputeTarget, instance: ComputeInstance, reason: str) -> None:
    """Stop for idleness now, as the owner's stop would, with the reason shown."""
    instance.desired_state, instance.stop_cause = DesiredState.STOPPED, StopCause.IDLE
    instance.save(update_fields=["desired_state", "stop_cause", "updated_at"])
    set_state(instance, instance.state, reason)
    compute.generation += 1  # a new desired state, acted on at once
    compute.save(update_fields=["generation"])
    _stop(compute, instance)
