"""Jobs on a compute cluster: held Queued until its pool is declared, and told why they wait from the pool's state."""
from dataclasses import replace

from compute.choices import ComputeType
from controlplane.kube.pods import Observed

from ..choices import JobStatus
from ..clusters import not_ready_reason, pool_wait_reason, scheduler_message
from ..models import Job
from .status import event, save, transition

SCHEDULER = "scheduler"  # runner: the scheduler's last message about the job's pods, kept as an event when it changes


def on_cluster(job: Job) -> bool:
    return job.compute is not None and job.compute.type == ComputeType.AMLCOMPUTE


def cluster_not_ready(job: Job) -> bool:
    """True (the job saved Queued with the reason) while its compute cluster cannot take it; the resync looks again."""
    if not on_cluster(job):
        return False
    compute = job.compute
    reason = not_ready_reason(compute.name, compute.provisioning_state, compute.provisioning_errors or [],
                              compute.status or {})
    if reason:
        save(job, transition(job, JobStatus.QUEUED, reason))
    return bool(reason)


def pool_observation(job: Job, observed: Observed, pods: list[dict]) -> Observed:
    """A waiting job on a compute cluster says what its pool is doing (scaling up, at its limit, refused by the
    autoscaler); the scheduler's own words, about nodes that may not exist yet, go to the job's events."""
    if not on_cluster(job) or observed.status != JobStatus.QUEUED:
        return observed
    message = scheduler_message(pods)
    if not message:
        return observed
    if job.runner.get(SCHEDULER) != message:
        event(job, "Unschedulable", f"The scheduler: {message}")
        job.runner = {**job.runner, SCHEDULER: message}
        save(job, ["runner"])
    maximum = int(job.compute.properties.get("max_instances") or 1)
    return replace(observed, reason=pool_wait_reason(job.compute.name, job.compute.status or {}, maximum))
