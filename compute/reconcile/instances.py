"""Compute instances on an attached cluster: a Secret, a headless Service and a StatefulSet of one pod each (compute/
manifests/instances.py), applied with server-side apply; the run state observed from the StatefulSet and its pod;
restarts, idle shutdown and deletion.

Everything is done per attachment for a batch of instances at once (as for compute clusters): one LIST per kind of
the attachment's instance objects, an apply only for the records that changed or the objects that drifted, one UPDATE
of what changed. `reconcile_compute_instance` is the batch of one.
"""
import logging
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from controlplane.kube import client as kube
from controlplane.kube.connection import Connection
from controlplane.kube.objects import managed_selector
from controlplane.kube.pods import container_problem, unschedulable_message, unschedulable_parts
from controlplane.reconciling import ProvisioningState, problem, set_status

from .. import idle, shapes
from ..choices import DesiredState, InstanceState, StopCause
from ..connections import HOST_KEY, PROVEN_STATES, connection_for, host_attachment
from ..manifests.instances import INSTANCE_LABEL, KIND, Instance, instance_manifests, instance_names
from ..models import ComputeInstance, ComputeTarget
from ..selectors import instance_type_shapes, kubernetes_shape
from .probes import probe_kubernetes

logger = logging.getLogger(__name__)
WORKSPACE_LABEL = "dockyard.dev/workspace"
OWNED = [("apps/v1", "StatefulSet"), ("v1", "Service"), ("v1", "Secret")]


@dataclass
class Seen:
    """The attachment's compute-instance objects, keyed by (workspace, instance name)."""

    objects: dict[str, dict[tuple[str, str], dict]] = field(default_factory=dict)  # kind -> key -> object
    pods: dict[tuple[str, str], dict] = field(default_factory=dict)

    def live(self, kind: str, key: tuple[str, str]) -> dict | None:
        return self.objects.get(kind, {}).get(key)


def _key(item: dict) -> tuple[str, str] | None:
    found = item.get("metadata", {}).get("labels") or {}
    return (found[WORKSPACE_LABEL], found[INSTANCE_LABEL]) if WORKSPACE_LABEL in found and INSTANCE_LABEL in found else None


def look(conn: Connection, namespace: str, selector: str) -> Seen:
    """One LIST per kind (StatefulSets, Services, Secrets, pods) of Dockyard's instance objects in the namespace."""
    seen = Seen()
    for api_version, kind in OWNED:
        items = kube.list_objects(conn, api_version, kind, namespace, selector)
        seen.objects[kind] = {key: item for item in items if (key := _key(item))}
    for pod in kube.list_objects(conn, "v1", "Pod", namespace, selector):
        if (key := _key(pod)) and not _gone(pod):
            seen.pods[key] = pod
    return seen


def _gone(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


@dataclass
class Attachment:
    """What every instance of one attachment shares: its record, connection, namespace, shapes and objects."""

    host: ComputeTarget
    conn: Connection
    namespace: str
    seen: Seen
    known: dict = field(default_factory=dict)  # instance types by name (one query per batch)


def reconcile_compute_instance(compute: ComputeTarget) -> None:
    """Reconcile one compute instance (the caller holds its row lock): apply its objects, observe, record."""
    reconcile_compute_instances(host_attachment(compute), [compute], changed={compute.pk})


def reconcile_compute_instances(host: ComputeTarget | None, computes: list[ComputeTarget], changed: set[int],
                                probe: bool = False) -> None:
    """Reconcile compute instances of one attachment (rows locked by the caller): the objects of `changed` records
    are applied, the others' only when gone or edited; with `probe`, running ones are probed for idleness. What
    changed is written in one UPDATE per table."""
    records = [(compute, _instance_row(compute)) for compute in computes]
    waiting = _host_problem(host, computes[0] if computes else None)
    if waiting:
        _save([(compute, instance, *_failed(compute, instance, waiting)) for compute, instance in records])
        return
    selector = managed_selector(KIND)
    if len(computes) == 1:  # one instance: list the objects of its name only (another workspace's too: see _taken)
        selector += f",{INSTANCE_LABEL}={computes[0].name}"
    conn = connection_for(host)
    namespace = host.properties.get("namespace", "default")
    shared = Attachment(host, conn, namespace, look(conn, namespace, selector), instance_type_shapes(compute=host))
    written = []
    try:
        for compute, instance in records:
            written.append((compute, instance, *_reconcile_one(shared, compute, instance, compute.pk in changed, probe)))
    finally:  # what was applied before a transient error is recorded; the rest is retried
        _save(written)


def _instance_row(compute: ComputeTarget) -> ComputeInstance:
    """The record's run state (made here if the create service did not: reconcile does not depend on it)."""
    try:
        return compute.instance
    except ComputeInstance.DoesNotExist:
        instance, _ = ComputeInstance.objects.get_or_create(compute=compute, defaults={"assigned_user": compute.created_by})
        return instance


def _save(written: list[tuple[ComputeTarget, ComputeInstance, list[str], list[str]]]) -> None:
    """One UPDATE per table for the records whose observed state changed (a steady pass writes nothing)."""
    for model, index in ((ComputeTarget, 0), (ComputeInstance, 1)):
        changed = [(row[index], row[index + 2]) for row in written if row[index + 2]]
        if changed:
            fields = sorted({name for _, names in changed for name in names})
            model.objects.bulk_update([record for record, _ in changed], fields)


def _host_problem(host: ComputeTarget | None, compute: ComputeTarget | None) -> dict | None:
    """Why the attachment cannot act for its compute instances now (None when it can)."""
    name = compute.properties.get(HOST_KEY) if compute else None
    if host is None and not name:
        return problem("HostMissing", "The compute instance names no kubernetes compute to run on (kubernetes_compute).")
    if host is None:
        return problem("HostMissing", f"The kubernetes compute '{name}' this compute instance runs on does not exist.")
    if host.provisioning_state not in PROVEN_STATES or not host.cluster_id:
        why = (host.provisioning_errors or [{}])[0].get("message") or "its checks have not passed yet"
        return problem("HostNotReady", f"The kubernetes compute '{host.name}' is {host.provisioning_state}: {why} "
                                       "The compute instance starts once it passes its checks.")
    return None


def _failed(compute: ComputeTarget, instance: ComputeInstance, error: dict) -> tuple[list[str], list[str]]:
    """Provisioning Failed with `error`, and the run state Failed saying the same."""
    return set_status(compute, ProvisioningState.FAILED, [error]), _observed(instance, InstanceState.FAILED, error["message"])


def _observed(instance: ComputeInstance, state: str, reason: str, **more) -> list[str]:
    """Set the run state (and `more` fields) in memory; the fields that changed."""
    values = {"state": state, "state_reason": reason, **more}
    if instance.state != state:
        values["state_changed_at"] = timezone.now()
    if state == InstanceState.RUNNING and instance.first_ready_at is None:
        values["first_ready_at"] = timezone.now()
    changed = [key for key, value in values.items() if getattr(instance, key) != value]
    for key in changed:
        setattr(instance, key, values[key])
    return changed


def shape_name(compute: ComputeTarget) -> str:
    """What shapes the instance's pod: its instance type, else its VM size, else the attachment's default type."""
    properties = compute.properties
    return properties.get("instance_type") or properties.get("size") or shapes.DEFAULT_NAME


def desired(shared: Attachment, compute: ComputeTarget, instance: ComputeInstance) -> Instance | None:
    """The instance as its manifests take it (None when its instance type or size has no shape here)."""
    shape = kubernetes_shape(compute=shared.host, name=shape_name(compute), known=shared.known)
    if shape is None:
        return None
    return Instance(
        workspace=compute.workspace.name, name=compute.name, namespace=shared.namespace, shape=shape,
        running=instance.desired_state == DesiredState.RUNNING, token=compute.secrets.get("token", ""),
        image=settings.DOCKYARD_INSTANCE_IMAGE, code_server_image=settings.DOCKYARD_CODE_SERVER_IMAGE,
        disk_gb=int(compute.properties.get("disk_size_gb") or settings.DOCKYARD_INSTANCE_DISK_GB),
    )


def _no_shape(shared: Attachment, compute: ComputeTarget) -> dict:
    name = shape_name(compute)
    return problem("InstanceTypeNotFound", f"'{name}' is neither an instance type of the kubernetes compute "
                                           f"'{shared.host.name}' nor a VM size Dockyard knows; choose another.")


def _reconcile_one(shared: Attachment, compute: ComputeTarget, instance: ComputeInstance, changed: bool,
                   probe: bool) -> tuple[list[str], list[str]]:
    """Apply one instance's objects (all if its record changed, else those gone or edited), restart it if asked,
    observe its state, probe it for idleness; the (target, instance) fields changed."""
    key = (compute.workspace.name, compute.name)
    wanted = desired(shared, compute, instance)
    if wanted is None:
        return _failed(compute, instance, _no_shape(shared, compute))
    taken = _taken(shared.seen, key, shared.namespace)
    if taken:
        return _failed(compute, instance, taken)
    try:
        for manifest in instance_manifests(wanted):
            live = shared.seen.live(manifest["kind"], key)
            if changed or drifted(manifest, live):
                shared.seen.objects.setdefault(manifest["kind"], {})[key] = kube.apply(shared.conn, manifest)
    except kube.KubeRejected as exc:
        message = f"The cluster refused the compute instance's objects ({exc.status}): {exc}"
        return _failed(compute, instance, problem("InstanceRejected", message))
    more = _restart(shared, instance, key)
    target_fields = set_status(compute, ProvisioningState.SUCCEEDED, [], cluster_id=shared.host.cluster_id)
    state, reason = instance_state(running=wanted.running, statefulset=shared.seen.live("StatefulSet", key),
                                   pod=shared.seen.pods.get(key), ever_ready=instance.first_ready_at is not None,
                                   node_selector=wanted.shape.selector)
    if state == InstanceState.STOPPED or state == InstanceState.STOPPING:
        reason = stopped_reason(instance)
    instance_fields = more + _observed(instance, state, reason)
    if probe and state == InstanceState.RUNNING:
        instance_fields += _idle_check(shared, compute, instance, wanted)
    return target_fields, sorted(set(instance_fields))


def _taken(seen: Seen, key: tuple[str, str], namespace: str) -> dict | None:
    """Another workspace's instance of the same name in the namespace (attachments of two workspaces may share one)."""
    names = instance_names(key[1])
    for items in seen.objects.values():
        for other, item in items.items():
            if other != key and item["metadata"]["name"] in (names.statefulset, names.secret):
                return problem("NameTaken", f"The namespace '{namespace}' already holds the compute instance "
                                            f"'{key[1]}' of workspace '{other[0]}'; choose another name.")
    return None


def drifted(wanted: dict, live: dict | None) -> bool:
    """Whether the live object is gone or differs from what Dockyard applied (fields the server or others add are fine)."""
    if live is None or live.get("metadata", {}).get("deletionTimestamp"):
        return True
    body = {key: value for key, value in wanted.items() if key not in ("apiVersion", "kind", "metadata")}
    return not (within(body, live) and within(wanted["metadata"].get("labels") or {}, live["metadata"].get("labels") or {}))


def within(wanted, live) -> bool:
    """`wanted` is part of `live`: maps key by key, lists item by item (a server defaults fields inside list items)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(within(value, live.get(key)) for key, value in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(wanted) == len(live) and all(map(within, wanted, live))
    return wanted == live


def _restart(shared: Attachment, instance: ComputeInstance, key: tuple[str, str]) -> list[str]:
    """A restart asked and not yet acted on: delete the pod (the StatefulSet makes a new one on the same claim).

    Acted on once, by the request's own time (restart_handled_at), not by comparing the pod's start with it: the
    cluster's clock may differ from Dockyard's, and its timestamps have whole seconds."""
    asked = instance.restart_requested_at
    if asked is None or (instance.restart_handled_at is not None and instance.restart_handled_at >= asked):
        return []
    pod = shared.seen.pods.pop(key, None)
    if pod is not None and instance.desired_state == DesiredState.RUNNING:
        kube.delete(shared.conn, "v1", "Pod", pod["metadata"]["name"], shared.namespace)
    instance.restart_handled_at = asked
    return ["restart_handled_at"]


def _ready(pod: dict) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(item.get("type") == "Ready" and item.get("status") == "True" for item in conditions)


def instance_state(*, running: bool, statefulset: dict | None, pod: dict | None, ever_ready: bool,
                   node_selector: dict[str, str]) -> tuple[str, str]:
    """(state, reason) from what was asked and what the cluster shows (pure)."""
    if not running:
        replicas = ((statefulset or {}).get("spec") or {}).get("replicas") or 0
        return (InstanceState.STOPPING, "") if pod is not None or replicas else (InstanceState.STOPPED, "")
    waiting = InstanceState.STARTING if ever_ready else InstanceState.CREATING
    if pod is None or pod["metadata"].get("deletionTimestamp"):
        return waiting, "Waiting for its pod to be created."
    if _ready(pod):
        return InstanceState.RUNNING, ""
    message = unschedulable_message(pod)
    if message is not None:
        parts = unschedulable_parts(message, node_selector)
        words = "; ".join(parts) if parts else message.rstrip(".") or "the scheduler gave no reason"
        return InstanceState.FAILED, f"No node can run it: {words}."
    found = container_problem(pod)
    if found:
        return InstanceState.FAILED, found[1]
    return waiting, "Its pod is scheduled; JupyterLab and VS Code are starting."


def stopped_reason(instance: ComputeInstance) -> str:
    """Why a stopped (or stopping) instance is: who or what asked; an idle stop keeps the sentence written then."""
    if instance.stop_cause == StopCause.IDLE:
        return instance.state_reason if instance.state_reason.startswith("Stopped: idle") else "Stopped: idle."
    if instance.stop_cause == StopCause.SCHEDULE:
        return "Stopped by its schedule."
    return "Stopped on request."


# --- idle shutdown ------------------------------------------------------------------------------------------------

def threshold_of(compute: ComputeTarget) -> timedelta | None:
    """The idle threshold, one minute being DOCKYARD_IDLE_SECONDS_PER_MINUTE seconds (None: no idle shutdown)."""
    minutes = compute.properties.get("idle_time_before_shutdown_minutes")
    return timedelta(seconds=minutes * settings.DOCKYARD_IDLE_SECONDS_PER_MINUTE) if minutes else None


def _probe(conn: Connection, namespace: str, compute: ComputeTarget) -> list:
    """The idle helper's probes through the API server's service proxy (compute/reconcile/probes.py)."""
    return probe_kubernetes(conn, namespace, compute.name, compute.workspace.name, compute.secrets.get("token", ""))


def _verdict(probes: list, threshold: timedelta, now: datetime, running_since: datetime):
    """The idle helper's decision from the probes (compute/idle.py)."""
    return idle.verdict(probes, threshold, now, running_since)


def _idle_check(shared: Attachment, compute: ComputeTarget, instance: ComputeInstance, wanted: Instance) -> list[str]:
    """Probe a running instance with an idle threshold: record its last activity; idle past the threshold → stop it
    (StatefulSet at 0 replicas now) saying why. A probe that fails never counts as idle (the verdict's rule)."""
    threshold = threshold_of(compute)
    if threshold is None:
        return []
    now = timezone.now()
    probes = _probe(shared.conn, shared.namespace, compute)
    errors = "; ".join(item.error for item in probes if not item.ok)
    verdict = _verdict(probes, threshold, now, instance.state_changed_at or now)
    values: dict = {"probe_error": errors[:2000]}
    if not errors:
        values["probed_at"] = now
    if verdict.last_activity is not None and (instance.last_activity is None or verdict.last_activity >= instance.last_activity):
        values.update(last_activity=verdict.last_activity, last_activity_source=verdict.source[:200])
    changed = [key for key, value in values.items() if getattr(instance, key) != value]
    for key in changed:
        setattr(instance, key, values[key])
    if verdict.idle:
        changed += _stop_idle(shared, compute, instance, wanted, threshold)
    return changed


def idle_sentence(minutes: int, last_activity: datetime | None, source: str) -> str:
    """'Stopped: idle for 30 min; last activity 14:02 UTC, kernel idle' (pure)."""
    if last_activity is None:
        return f"Stopped: idle for {minutes} min; no activity seen since it started."
    when = last_activity.astimezone(UTC).strftime("%H:%M UTC")
    return f"Stopped: idle for {minutes} min; last activity {when}" + (f", {source}" if source else "") + "."


def _stop_idle(shared: Attachment, compute: ComputeTarget, instance: ComputeInstance, wanted: Instance,
               threshold: timedelta) -> list[str]:
    """Ask for the stop (as the owner's Stop would, cause idle) and scale the StatefulSet to 0 now."""
    stopped = replace(wanted, running=False)
    key = (compute.workspace.name, compute.name)
    manifest = next(item for item in instance_manifests(stopped) if item["kind"] == "StatefulSet")
    shared.seen.objects.setdefault("StatefulSet", {})[key] = kube.apply(shared.conn, manifest)
    minutes = compute.properties.get("idle_time_before_shutdown_minutes")
    instance.desired_state, instance.stop_cause = DesiredState.STOPPED, StopCause.IDLE
    reason = idle_sentence(minutes, instance.last_activity, instance.last_activity_source)
    logger.info("Compute instance %s/%s idle for %s: stopping", compute.workspace.name, compute.name, threshold)
    return ["desired_state", "stop_cause", *_observed(instance, InstanceState.STOPPING, reason)]


# --- deletion -----------------------------------------------------------------------------------------------------

def delete_compute_instance(compute: ComputeTarget) -> bool:
    """Start deleting the instance's StatefulSet (its pod, and its claim by the retention policy), Service and
    Secret; True once they are gone, so the row may go. A claim a cluster kept (no retention policy there) is deleted
    once the StatefulSet is gone."""
    host = host_attachment(compute)
    if host is None or not host.cluster_id:
        return True  # nothing of it was ever applied with credentials that still exist
    conn, namespace, names = connection_for(host), host.properties.get("namespace", "default"), instance_names(compute.name)
    owned = [("apps/v1", "StatefulSet", names.statefulset), ("v1", "Service", names.service),
             ("v1", "Secret", names.secret)]
    remaining = 0
    for api_version, kind, name in owned:
        live = kube.get(conn, api_version, kind, name, namespace)
        if live is None or _key(live) != (compute.workspace.name, compute.name):
            continue  # gone, or another workspace's of the same name: not ours to delete
        kube.delete(conn, api_version, kind, name, namespace)
        remaining += kube.get(conn, api_version, kind, name, namespace) is not None
    if remaining:
        return False
    claim = kube.get(conn, "v1", "PersistentVolumeClaim", names.claim, namespace)
    if claim is not None and _key(claim) == (compute.workspace.name, compute.name):
        kube.delete(conn, "v1", "PersistentVolumeClaim", names.claim, namespace)
        return kube.get(conn, "v1", "PersistentVolumeClaim", names.claim, namespace) is None
    return True
