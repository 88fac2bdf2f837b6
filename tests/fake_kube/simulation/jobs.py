"""The Job controller: pods per completion (NonIndexed or Indexed), status, Complete/Failed, deadlines."""
from __future__ import annotations

from datetime import datetime, timedelta

from ..clock import parse_stamp, stamp
from ..errors import ApiError
from ..store import clone

INDEX_KEY = "batch.kubernetes.io/job-completion-index"
COMPLETE = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")


def _finished(job: dict) -> bool:
    return any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _memory(sim, job: dict) -> dict:
    """Pods the controller has counted (uid -> phase), surviving the pods' deletion."""
    return sim.state.setdefault("jobs", {}).setdefault(job["metadata"]["uid"], {"counted": {}, "indexes": set()})


def _condition(kind: str, reason: str, message: str, now: str) -> dict:
    return {"type": kind, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def _compress(indexes: set[int]) -> str:
    """completedIndexes notation: "0-2,5"."""
    out, ordered = [], sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def _pod_for(job: dict, index: int | None) -> dict:
    template = clone(job["spec"]["template"])
    meta = template.get("metadata") or {}
    name = job["metadata"]["name"]
    pod_meta = {"generateName": f"{name}-" if index is None else f"{name}-{index}-",
                "namespace": job["metadata"]["namespace"], "labels": dict(meta.get("labels") or {}),
                "annotations": dict(meta.get("annotations") or {}),
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                     "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]}
    spec = template["spec"]
    if index is not None:
        pod_meta["annotations"][INDEX_KEY] = str(index)
        pod_meta["labels"][INDEX_KEY] = str(index)
        spec.setdefault("hostname", f"{name}-{index}")
        # addCompletionIndexEnvVariables: init and main containers, from the annotation, unless set
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            if not any(var.get("name") == "JOB_COMPLETION_INDEX" for var in c.get("env") or []):
                c.setdefault("env", []).append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                    "apiVersion": "v1", "fieldPath": f"metadata.annotations['{INDEX_KEY}']"}}})
    if not pod_meta["annotations"]:
        del pod_meta["annotations"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def _create_pods(sim, job: dict, indexes: list) -> None:
    for index in indexes:
        try:
            pod = sim.create(sim.rt("pods"), _pod_for(job, index))
        except ApiError as error:
            sim.events.record(job, "FailedCreate", f"Error creating: {error.message}", "Warning", "job-controller")
            return
        sim.events.record(job, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}",
                          component="job-controller")


def _count(sim, job: dict, pods: list[dict], memory: dict) -> list[dict]:
    """Record finished pods once; return the active ones. Active pods that vanished count as failed."""
    active, seen = [], set()
    for pod in pods:
        uid, phase = pod["metadata"]["uid"], (pod.get("status") or {}).get("phase")
        seen.add(uid)
        if phase in ("Succeeded", "Failed"):
            if uid not in memory["counted"]:
                memory["counted"][uid] = phase
                if phase == "Succeeded" and INDEX_KEY in (pod["metadata"].get("annotations") or {}):
                    memory["indexes"].add(int(pod["metadata"]["annotations"][INDEX_KEY]))
        elif not pod["metadata"].get("deletionTimestamp"):
            active.append(pod)
    for uid in memory.setdefault("active", set()) - seen:
        memory["counted"].setdefault(uid, "Failed")
    memory["active"] = {p["metadata"]["uid"] for p in active}
    return active


def _stop(sim, pods: list[dict]) -> None:
    for pod in pods:
        sim.delete(sim.rt("pods"), pod)


def _reconcile(sim, job: dict) -> None:
    spec, status = job["spec"], clone(job.get("status") or {})
    memory, now = _memory(sim, job), stamp(sim.now())
    pods = sim.owned_by(job, "pods")
    active = _count(sim, job, pods, memory)
    succeeded = sum(1 for p in memory["counted"].values() if p == "Succeeded")
    failed = sum(1 for p in memory["counted"].values() if p == "Failed")
    indexed = spec.get("completionMode") == "Indexed"
    completions = spec.get("completions")
    if spec.get("suspend"):
        memory["active"] = set()  # pods removed by suspension are not failures
        _stop(sim, active)
        status["conditions"] = [c for c in status.get("conditions") or [] if c["type"] != "Suspended"] + [
            _condition("Suspended", "JobSuspended", "Job suspended", now)]
        active = []
    else:
        status.setdefault("startTime", now)
        status["conditions"] = [c for c in status.get("conditions") or [] if c["type"] != "Suspended"]
    done = (len(memory["indexes"]) >= completions) if indexed else (
        succeeded >= completions if completions is not None else succeeded > 0 and not active)
    outcome = None
    if failed > spec.get("backoffLimit", 6):
        outcome = ("Failed", BACKOFF)
    elif spec.get("activeDeadlineSeconds") is not None and status.get("startTime") and not spec.get("suspend") and \
            (sim.now() - parse_stamp(status["startTime"])).total_seconds() >= spec["activeDeadlineSeconds"]:
        outcome = ("Failed", DEADLINE)
    elif done:
        outcome = ("Complete", COMPLETE)
    if outcome:
        if outcome[0] == "Failed":  # the pods a failure stops count as failed (trackJobStatusAndRemoveFinalizers)
            for pod in active:
                memory["counted"].setdefault(pod["metadata"]["uid"], "Failed")
            failed = sum(1 for p in memory["counted"].values() if p == "Failed")
        memory["active"] = set()
        _stop(sim, active)
        active = []
        kind, (reason, message) = outcome
        target = "SuccessCriteriaMet" if kind == "Complete" else "FailureTarget"
        status["conditions"] += [_condition(target, reason, message, now), _condition(kind, reason, message, now)]
        if kind == "Complete":
            status["completionTime"] = now
        sim.events.record(job, "Completed" if kind == "Complete" else reason,
                          "Job completed" if kind == "Complete" else message,
                          "Normal" if kind == "Complete" else "Warning", "job-controller")
    elif not spec.get("suspend"):
        _create_pods(sim, job, _missing(spec, active, memory, succeeded, indexed))
        active = [p for p in sim.owned_by(job, "pods")
                  if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        memory["active"] = {p["metadata"]["uid"] for p in active}
    _write_status(sim, job, status, active, succeeded, failed, memory if indexed else None)


def _missing(spec: dict, active: list, memory: dict, succeeded: int, indexed: bool) -> list:
    parallelism = spec.get("parallelism", 1)
    if indexed:
        running = {int(p["metadata"]["annotations"][INDEX_KEY]) for p in active}
        todo = [i for i in range(spec["completions"]) if i not in memory["indexes"] and i not in running]
        return todo[:max(parallelism - len(active), 0)]
    remaining = (spec["completions"] - succeeded) if spec.get("completions") is not None else parallelism
    return [None] * max(min(parallelism, remaining) - len(active), 0)


def _write_status(sim, job, status, active, succeeded, failed, memory) -> None:
    status["active"] = len(active)
    status["ready"] = sum(1 for p in active if any(c["type"] == "Ready" and c["status"] == "True"
                                                   for c in (p.get("status") or {}).get("conditions") or []))
    status["succeeded"], status["failed"], status["terminating"] = succeeded, failed, 0
    status["uncountedTerminatedPods"] = {}
    if memory is not None and memory["indexes"]:  # omitempty: no index completed, no field
        status["completedIndexes"] = _compress(memory["indexes"])
    for key in ("active", "succeeded", "failed"):
        if not status[key]:
            del status[key]
    if not status.get("conditions"):
        status.pop("conditions", None)
    sim.set_status(sim.rt("jobs", "batch"), job, status)


def jobs(sim) -> None:
    """Reconcile every unfinished Job; delete finished ones past ttlSecondsAfterFinished."""
    for job in sim.items("jobs", "batch"):
        if job["metadata"].get("deletionTimestamp"):
            continue
        if _finished(job):
            ttl = job["spec"].get("ttlSecondsAfterFinished")
            ended = _ended(job)
            if ttl is not None and ended and (sim.now() - ended).total_seconds() >= ttl:
                sim.delete(sim.rt("jobs", "batch"), job, "Background")
            continue
        _reconcile(sim, job)


def _ended(job: dict) -> datetime | None:
    times = [c.get("lastTransitionTime") for c in (job.get("status") or {}).get("conditions") or []
             if c["type"] in ("Complete", "Failed")]
    return parse_stamp(times[0]) if times and times[0] else None


def next_due(sim) -> datetime | None:
    """Deadlines and TTLs of Jobs."""
    moments = []
    for job in sim.items("jobs", "batch"):
        spec, status = job["spec"], job.get("status") or {}
        if _finished(job):
            if spec.get("ttlSecondsAfterFinished") is not None and _ended(job):
                moments.append(_ended(job) + timedelta(seconds=spec["ttlSecondsAfterFinished"]))
        elif spec.get("activeDeadlineSeconds") is not None and status.get("startTime"):
            moments.append(parse_stamp(status["startTime"]) + timedelta(seconds=spec["activeDeadlineSeconds"]))
    return min(moments) if moments else None
