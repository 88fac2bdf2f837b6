"""Job reconcilers: the one entry point tasks call, and the per-compute observation of Kubernetes jobs."""
import shutil

from ..choices import TERMINAL, JobStatus, Target
from ..files import started_folder
from ..models import Job
from .clusters import cluster_not_ready
from .kubernetes import apply_observation, observe_compute, stop_kubernetes, submit_kubernetes
from .local import LOOK_EVERY, reconcile_local, stop_local
from .placement import place
from .ssh import reconcile_ssh, stop_ssh
from .status import save, transition

__all__ = ["reconcile_job", "observe_compute", "apply_observation", "LOOK_EVERY"]
LOOK_AGAIN = 1.0
# Targets whose running process Dockyard follows itself (a cancel is carried out by the follower, which holds the pid).
FOLLOWED = {Target.LOCAL: reconcile_local, Target.SSH: reconcile_ssh}


def reconcile_job(job: Job) -> float | None:
    """Bring a job one step towards its desired state; returns seconds until it wants another look (None: not needed)."""
    if job.deleting:
        return _delete(job)
    if job.status == JobStatus.CANCEL_REQUESTED and not (job.target in FOLLOWED and job.runner.get("pid")):
        return _cancel(job)
    delay = None
    if job.status not in TERMINAL:
        delay = FOLLOWED.get(job.target, _reconcile_kubernetes)(job)
    if job.observed_generation != job.generation:
        job.observed_generation = job.generation
        save(job, ["observed_generation"])
    return delay


def _reconcile_kubernetes(job: Job) -> None:
    if job.compute_id is None and not place(job):
        return None
    if not job.runner.get("submitted") and not cluster_not_ready(job):
        submit_kubernetes(job)
    return None


def _cancel(job: Job) -> float | None:
    if job.target == Target.SSH:
        # GPUs chosen: a launch may have happened whose record was lost in a crash; the host's own pid file says
        if "gpus" in job.runner and not stop_ssh(job):
            return LOOK_AGAIN
    elif job.target != Target.LOCAL and job.compute_id and not stop_kubernetes(job):
        return LOOK_AGAIN  # the Job is still being torn down; cancelled once it is gone
    save(job, transition(job, JobStatus.CANCELED, "Canceled by request."))
    job.observed_generation = job.generation
    save(job, ["observed_generation"])
    return None


def _delete(job: Job) -> float | None:
    """The finalizer: stop what runs, remove the cluster objects, then the row."""
    if job.target == Target.LOCAL:
        stop_local(job)
        shutil.rmtree(started_folder(job), ignore_errors=True)
    elif job.target == Target.SSH:
        if not stop_ssh(job):
            return LOOK_AGAIN
    elif job.compute_id and not stop_kubernetes(job):
        return LOOK_AGAIN
    job.delete()
    return None
