"""Kubernetes jobs: submit the Job once (deterministic name), observe Jobs and pods per compute, fetch logs, stop."""
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from assets import delivery
from compute.choices import ComputeType
from compute.connections import connection_for, host_attachment, namespace_of
from compute.models import ComputeTarget
from compute.pools import pool_shape
from compute.selectors import kubernetes_shape
from controlplane.kube import client as kube
from controlplane.kube.objects import managed_selector
from controlplane.kube.pods import observe, rank_of
from controlplane.kube.resources import Shape

from ..choices import ACTIVE, JobStatus
from ..manifests import (
    CONTAINER,
    Delivery,
    input_key,
    job_manifests,
    kube_job_name,
    urls_secret_manifest,
    urls_secret_name,
)
from ..models import LOGS_BEHIND, Job, JobEvent
from .clusters import pool_observation
from .status import append_lines, generation_seen, save, transition

logger = logging.getLogger(__name__)

JOB_LABEL = "dockyard.dev/job"
JOB_UID = "job_uid"  # runner: the live Job's uid, which the URL Secret names as its owner
URLS_EXPIRE = "urls_expire"  # runner: when the URLs in the Secret stop working (epoch seconds)


@dataclass(frozen=True)
class Unobservable:
    """What the loop could not make of one job's objects (an error); the compute's other jobs are observed as usual."""

    error: str


def _namespace(job: Job) -> str:
    return namespace_of(job.compute)


def job_shape(compute: ComputeTarget, instance_type: str) -> Shape | None:
    """A pod's shape where the job runs: one whole node of a compute cluster's pool (its size, on its nodes only), or
    the instance type of a Kubernetes compute, else a VM size's shape on nodes of that size; None when it is gone."""
    host = host_attachment(compute)
    extension = (host.properties.get("node_selector") if host else None) or {}
    if compute.type == ComputeType.AMLCOMPUTE:
        status = compute.status or {}
        shape = pool_shape(compute.properties.get("size") or instance_type, status.get("engine"), status.get("pool"))
        return shape.on(extension) if shape else None
    return kubernetes_shape(compute=compute, name=instance_type)


def render(job: Job) -> list[dict] | None:
    """The manifests for a placed job (None when its instance type is gone)."""
    shape = job_shape(job.compute, job.instance_type)
    if shape is None:
        return None
    return job_manifests(spec=job.spec, job_name=kube_job_name(job.workspace.name, job.name), namespace=_namespace(job),
                         workspace=job.workspace.name, shape=shape, delivery=_delivery(job))


def _delivery(job: Job) -> Delivery:
    # busybox wget holds the packed outputs in memory while it posts them: room for the largest body Dockyard takes.
    memory = -(-settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES // 2**20) + 64
    return Delivery(image=settings.DOCKYARD_FETCH_IMAGE, code=bool(job.spec.get("code")),
                    inputs=job.resolved_inputs or {}, upload_memory=f"{memory}Mi")


def _urls(job: Job) -> dict[str, str]:
    """Fresh signed URLs for the job's Secret: its code, each snapshot input, and the outputs upload."""
    purpose = f"job {job.name}"
    urls = {"outputs": delivery.upload_url(job.workspace_id, job.pk, purpose=purpose)}
    code = job.spec.get("code")
    if code:
        snapshot = delivery.snapshot_named(job.workspace, code)
        if snapshot is None:
            raise delivery.DeliveryRefused(f"The uploaded code {code} is no longer stored in the workspace.")
        urls["code"] = delivery.fetch_url(snapshot, purpose=purpose)
    for name, resolved in sorted((job.resolved_inputs or {}).items()):
        if "snapshot" not in resolved:
            continue
        snapshot = delivery.snapshot_of(job.workspace, resolved["snapshot"])
        if snapshot is None:
            raise delivery.DeliveryRefused(f"Input '{name}' names a folder that is no longer stored in the workspace.")
        urls[input_key(name)] = delivery.fetch_url(snapshot, purpose=f"{purpose}, input {name}")
    return urls


def _apply_urls(job: Job, conn: kube.Connection, job_uid: str, urls: dict[str, str], expires: int) -> None:
    """Write the job's URL Secret, owned by its Job, saying when its URLs stop working."""
    kube.apply(conn, urls_secret_manifest(job_name=job.runner.get("job") or kube_job_name(job.workspace.name, job.name),
                                          namespace=_namespace(job), workspace=job.workspace.name, urls=urls,
                                          expires=expires, job_uid=job_uid))


def _expiry() -> int:
    """When URLs issued from now on stop working (taken before they are issued: never later than theirs)."""
    return int(time.time()) + settings.DOCKYARD_ARTIFACT_URL_SECONDS


def renew_urls(job: Job, conn: kube.Connection) -> None:
    """New URLs in the job's Secret once half of the current ones' lifetime has passed (the observation loop looks at
    every active job every few seconds), so a pod that starts or ends at any time fetches and uploads."""
    if not job.runner.get(JOB_UID) or not delivery.renewal_due(job.runner.get(URLS_EXPIRE)):
        return
    expires = _expiry()
    _apply_urls(job, conn, job.runner[JOB_UID], _urls(job), expires)
    job.runner = {**job.runner, URLS_EXPIRE: expires}
    job.save(update_fields=["runner", "updated_at"])


def submit_kubernetes(job: Job) -> None:
    """Create the job's objects with server-side apply (a retry applies the same objects: no second Job), then its URL
    Secret. A crash in between leaves the pod waiting for the Secret's volume: the retried submit applies it."""
    try:
        manifests = render(job)
        expires = _expiry()
        urls = _urls(job) if manifests is not None else {}
    except delivery.DeliveryRefused as exc:
        save(job, transition(job, JobStatus.FAILED, str(exc)) + generation_seen(job))
        return
    if manifests is None:
        reason = f"The instance type '{job.instance_type}' no longer exists on compute '{job.compute.name}'."
        save(job, transition(job, JobStatus.FAILED, reason) + generation_seen(job))
        return
    conn = connection_for(job.compute)
    applied, live = [], {}
    try:
        for manifest in manifests:
            live = kube.apply(conn, manifest)
            applied.append(manifest)
        _apply_urls(job, conn, live["metadata"]["uid"], urls, expires)
    except kube.KubeRejected as exc:
        _remove(conn, applied)  # a refused Job leaves no headless Service behind
        save(job, transition(job, JobStatus.FAILED, f"The cluster refused the job: {exc}") + _remember(job, manifests)
             + generation_seen(job))
        return
    name = manifests[-1]["metadata"]["name"]
    fields = _remember(job, manifests, submitted=True, job_uid=live["metadata"]["uid"], expires=expires)
    # The submit ends the reconcile step: the generation goes in the same UPDATE (reconcile_job then has nothing to add).
    save(job, fields + transition(job, JobStatus.QUEUED, f"Submitted as Job {name}; waiting for its pods to be scheduled.")
         + generation_seen(job))


def _remove(conn: kube.Connection, manifests: list[dict]) -> None:
    for manifest in manifests:
        try:
            kube.delete(conn, manifest["apiVersion"], manifest["kind"], manifest["metadata"]["name"],
                        manifest["metadata"]["namespace"])
        except kube.KubeError as exc:  # the labels let an admin find it; the job's failure is what matters here
            logger.warning("Could not remove %s %s of a refused job: %s", manifest["kind"], manifest["metadata"]["name"], exc)


def _remember(job: Job, manifests: list[dict], submitted: bool = False, job_uid: str = "",
              expires: int | None = None) -> list[str]:
    job.manifests = manifests
    job.runner = {"namespace": manifests[-1]["metadata"]["namespace"], "job": manifests[-1]["metadata"]["name"],
                  "submitted": submitted, "pods": job.runner.get("pods", {}),
                  **({JOB_UID: job_uid, URLS_EXPIRE: expires} if job_uid else {})}
    return ["manifests", "runner"]


def stop_kubernetes(job: Job) -> bool:
    """Delete the Job (foreground: pods first) and its Service, keeping the logs; True once they are gone."""
    if not job.runner.get("job"):
        return True
    conn = connection_for(job.compute)
    namespace, name = job.runner["namespace"], job.runner["job"]
    try:
        pods = kube.list_objects(conn, "v1", "Pod", namespace, f"{JOB_LABEL}={name}")
        collect_logs(job, conn, pods)
    except kube.KubeRejected as exc:
        logger.info("Could not keep the last logs of %s: %s", job.name, exc)
    kube.delete(conn, "batch/v1", "Job", name, namespace)
    kube.delete(conn, "v1", "Service", name, namespace)
    if kube.get(conn, "batch/v1", "Job", name, namespace) is not None:
        return False
    # The Secret is the Job's dependent and the garbage collector deletes it; deleted here too so the job's delete
    # leaves nothing behind by the time it is done. Only now: the pods' last uploads read their URL until they end.
    kube.delete(conn, "v1", "Secret", urls_secret_name(name), namespace)
    return True


def observe_compute(compute, jobs: list[Job]) -> dict[int, tuple]:
    """One LIST of Jobs and one of pods for the compute: {job id: (Observed, pods)} for the given jobs."""
    conn = connection_for(compute)
    namespace = namespace_of(compute)
    selector = managed_selector("job")
    live = {item["metadata"]["name"]: item for item in kube.list_objects(conn, "batch/v1", "Job", namespace, selector)}
    pods_by_job: dict[str, list[dict]] = {}
    for pod in kube.list_objects(conn, "v1", "Pod", namespace, selector):
        pods_by_job.setdefault((pod["metadata"].get("labels") or {}).get(JOB_LABEL, ""), []).append(pod)
    result = {}
    for job in jobs:
        try:
            result[job.pk] = _observe_one(job, live, pods_by_job)
        except Exception as exc:  # one job's odd objects or record must not stop the observation of the others
            logger.exception("Could not observe job %s of compute %s", job.name, compute.name)
            result[job.pk] = (Unobservable(_error_words(exc)), [])
    return result


def _observe_one(job: Job, live: dict[str, dict], pods_by_job: dict[str, list[dict]]) -> tuple:
    name = job.runner["job"]
    selector_used = (job.manifests[-1]["spec"]["template"]["spec"].get("nodeSelector") or {}) if job.manifests else {}
    pods = sorted(pods_by_job.get(name, []), key=rank_of)
    return observe(live.get(name), pods, selector_used, (job.spec.get("limits") or {}).get("timeout")), pods


def _error_words(exc: Exception) -> str:
    return type(exc).__name__ + (f": {str(exc)[:200]}" if str(exc) else "")


def apply_observation(job: Job, observed, pods: list[dict], conn=None) -> None:
    """Write what the cluster said about a job whose row the caller locked (a cancel in between wins).

    An error here is this job's alone: its writes are rolled back (a savepoint), its status_reason says what went
    wrong, and the loop goes on with the compute's other jobs; the next look tries this one again.
    """
    ended = job.status not in ACTIVE
    if job.status == JobStatus.CANCEL_REQUESTED or job.deleting or (ended and not job.runner.get(LOGS_BEHIND)):
        return
    if isinstance(observed, Unobservable):
        if not ended:
            _mark_unobservable(job, observed.error)
        return
    try:
        with transaction.atomic():
            if ended:  # only the log lines a kubelet did not give at an earlier look are fetched
                _read_logs(job, conn or connection_for(job.compute), pods)
            else:
                _apply(job, observed, pods, conn)
    except Exception as exc:  # a caught error inside the savepoint leaves the caller's transaction usable
        logger.exception("Could not apply what the cluster said about job %s", job.name)
        _mark_unobservable(job, _error_words(exc))


def _mark_unobservable(job: Job, error: str) -> None:
    reason = f"Dockyard could not process what the cluster reports for this job ({error}); it keeps trying."
    # A plain UPDATE: the in-memory job may hold the rolled-back changes.
    if Job.objects.filter(pk=job.pk).exclude(status_reason=reason).update(status_reason=reason, updated_at=timezone.now()):
        JobEvent.objects.create(job_id=job.pk, time=timezone.now(), type="Warning", reason="ObservationFailed", message=reason)


def _apply(job: Job, observed, pods: list[dict], conn) -> None:
    # Status first: a kubelet that does not answer (its node gone, "no preferred addresses found") must not keep a
    # finished job from being marked Completed or Failed. Its pods' logs are caught up at a later look.
    observed = pool_observation(job, observed, pods)
    when = _parse_time(observed.started_at) if observed.started_at else None
    fields = transition(job, observed.status, observed.reason, exit_code=observed.exit_code)
    if observed.status in (JobStatus.RUNNING, JobStatus.COMPLETED, JobStatus.FAILED) and when and job.start_time is None:
        job.start_time = when
        fields.append("start_time")
    save(job, fields)
    conn = conn or connection_for(job.compute)
    if job.status in ACTIVE:
        renew_urls(job, conn)
    _read_logs(job, conn, pods)


def _read_logs(job: Job, conn: kube.Connection, pods: list[dict]) -> None:
    """Best effort: each pod's log is read from where the last read stopped; `runner.logs_behind` says one failed."""
    behind = False
    try:
        collect_logs(job, conn, pods)
    except kube.KubeRejected as exc:
        logger.info("Logs of %s not fetched: %s", job.name, exc)
    except kube.KubeTransient as exc:
        logger.info("Logs of %s not fetched this time: %s", job.name, exc)
        behind = True
    if bool(job.runner.get(LOGS_BEHIND)) != behind:
        job.runner = {**job.runner, LOGS_BEHIND: behind}
        job.save(update_fields=["runner", "updated_at"])


def _parse_time(value: str):
    from django.utils.dateparse import parse_datetime

    return parse_datetime(value)


def collect_logs(job: Job, conn: kube.Connection, pods: list[dict]) -> None:
    """Append each pod's new lines (all ranks); a pod that has ended is read one last time and then left alone."""
    marks = dict(job.runner.get("pods") or {})
    several = len(pods) > 1 or job.spec.get("resources", {}).get("instance_count", 1) > 1
    changed = False
    try:
        for pod in pods:
            name, phase = pod["metadata"]["name"], (pod.get("status") or {}).get("phase")
            mark = marks.get(name, {})
            if mark.get("done") or phase not in ("Running", "Succeeded", "Failed"):
                continue
            try:
                text = kube.pod_log(conn, job.runner["namespace"], name, CONTAINER, _since(mark.get("since")))
            except kube.KubeRejected as exc:  # this pod's log is gone or refused: the other ranks' are still read
                logger.info("Log of pod %s of %s not fetched: %s", name, job.name, exc)
                continue
            lines, mark = _new_lines(text, mark)
            append_lines(job, [(f"rank-{rank_of(pod)}" if several else "", line) for line in lines])
            marks[name] = {**mark, "done": phase != "Running"}
            changed = True
    finally:  # the marks of the pods read so far go with their lines, even when a later pod's read fails
        if changed:
            job.runner = {**job.runner, "pods": marks}
            job.save(update_fields=["runner", "updated_at"])


def _since(stamp: str | None) -> str | None:
    return stamp[:19] + "Z" if stamp else None  # sinceTime is whole seconds; the lines then are filtered by stamp


def _stamp_key(stamp: str) -> tuple[str, int]:
    seconds, _, fraction = stamp.rstrip("Z").partition(".")
    return seconds, int((fraction + "000000000")[:9]) if fraction else 0


def _new_lines(text: str, mark: dict) -> tuple[list[str], dict]:
    """Lines after the last stored one: later stamps, or the same stamp beyond the lines already taken."""
    since = _stamp_key(mark["since"]) if mark.get("since") else None
    taken_at_since = mark.get("taken", 0)
    lines, last, taken = [], mark.get("since"), taken_at_since
    # Only "\n" ends a line (as the kubelet splits them): str.splitlines() would also split at \x1c, \x85 or
    # U+2028 inside a line, and the piece after it has no timestamp.
    for raw in text.removesuffix("\n").split("\n") if text else []:
        raw = raw.removesuffix("\r")
        stamp, _, line = raw.partition(" ")
        key = _stamp_key(stamp)
        if since is not None and key < since:
            continue
        if since is not None and key == since:
            if taken_at_since > 0:
                taken_at_since -= 1
                continue
        lines.append(line)
        taken = taken + 1 if last is not None and _stamp_key(last) == key else 1
        last = stamp
    return lines, {"since": last, "taken": taken}
