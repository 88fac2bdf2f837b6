"""Thin Celery tasks for jobs: lock, reconcile, look again when asked; the per-compute observation loop; resync."""
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from compute.choices import ComputeType
from controlplane.celery import enqueue_on_commit
from controlplane.kube.errors import KubeRejected, KubeTransient
from controlplane.reconciling import backoff, chained_run, fresh

from . import reconcile
from .choices import ACTIVE, JobStatus, Target
from .models import LOGS_BEHIND, Job, JobSync

OBSERVE_EVERY = 2.0  # seconds between looks at a compute's Kubernetes jobs


def _stale(heartbeat) -> bool:
    return heartbeat is None or heartbeat < timezone.now() - timedelta(seconds=settings.DOCKYARD_JOB_STALE_SECONDS)


@shared_task(bind=True, acks_late=True, max_retries=10)
def reconcile_job(self, job_id: int, tick: bool | str = False) -> None:
    """Reconcile one job; a running local job is followed by a chain of looks (controlplane.reconciling.chained_run)."""
    job = chained_run(self, Job, job_id, tick, reconcile.reconcile_job, reconcile.LOOK_EVERY,
                      related=("workspace", "compute", "compute__cluster"))
    if job is not None and job.pk and job.target != Target.LOCAL and job.runner.get("submitted") and job.status in ACTIVE:
        ensure_observed(job.compute_id)


def ensure_observed(compute_id: int) -> None:
    """Start the compute's observation loop unless it is running."""
    sync = JobSync.objects.filter(compute_id=compute_id).first()
    if sync is None or _stale(sync.heartbeat_at):
        enqueue_on_commit(observe_jobs, compute_id)


def _observed_jobs() -> Q:
    """Submitted jobs the loop looks at: active ones, and ended ones whose last log lines are still to be fetched."""
    return Q(runner__submitted=True) & (Q(status__in=ACTIVE) | Q(**{f"runner__{LOGS_BEHIND}": True}))


def _watched(compute_id: int) -> list[Job]:
    watched = Job.objects.filter(_observed_jobs(), compute_id=compute_id, deleting=False)
    return list(watched.exclude(status=JobStatus.CANCEL_REQUESTED).select_related("workspace", "compute", "compute__cluster"))


@shared_task(bind=True, acks_late=True, max_retries=10)
def observe_jobs(self, compute_id: int, tick: bool = False) -> None:
    """Observe every active Kubernetes job of a compute with two LIST calls; look again while any is active."""
    JobSync.objects.get_or_create(compute_id=compute_id)
    with transaction.atomic():
        sync = JobSync.objects.select_for_update(skip_locked=True).filter(compute_id=compute_id).first()
        if sync is None or (fresh(sync.heartbeat_at, OBSERVE_EVERY / 2) if tick else not _stale(sync.heartbeat_at)):
            return  # another loop holds it or has just looked
        sync.heartbeat_at = timezone.now()
        sync.save(update_fields=["heartbeat_at"])
    jobs = _watched(compute_id)
    if not jobs:
        JobSync.objects.filter(compute_id=compute_id).update(heartbeat_at=None)  # the next submit starts a loop
        if not _watched(compute_id):  # (unless one was submitted just now)
            return
        return observe_jobs.delay(compute_id)
    try:
        observed = reconcile.observe_compute(jobs[0].compute, jobs)
    except KubeTransient as exc:
        countdown = max(OBSERVE_EVERY, backoff(self.request.retries, exc.retry_after))
        # As a tick: the heartbeat just written is this loop's own, not another loop's.
        raise self.retry(kwargs={"tick": True}, countdown=countdown, exc=exc) from None
    except KubeRejected:
        observed = {}  # the attachment broke: its checks say why; the loop keeps trying
    for job_id, (state, pods) in observed.items():
        with transaction.atomic():
            # of=self: the compute is a nullable (outer-joined) relation, which PostgreSQL refuses to lock.
            rows = Job.objects.select_for_update(skip_locked=True, of=("self",))
            job = rows.select_related("workspace", "compute", "compute__cluster").filter(pk=job_id).first()
            if job is not None:
                reconcile.apply_observation(job, state, pods)
    observe_jobs.apply_async((compute_id,), {"tick": True}, countdown=OBSERVE_EVERY)


@shared_task(acks_late=True)
def resync_jobs() -> int:
    """Re-enqueue jobs that are behind, deleting, unplaced, held for their compute cluster or whose loop died;
    returns how many were enqueued."""
    behind = Q(observed_generation__lt=F("generation")) | Q(deleting=True)
    unplaced = Q(target=Target.SERVERLESS, compute__isnull=True, status__in=ACTIVE)
    # held Queued until its compute cluster's pool is declared (jobs/reconcile/clusters.py)
    unsubmitted = ~Q(runner__has_key="submitted") | Q(runner__submitted=False)  # (NOT on a missing key is NULL)
    held = Q(compute__type=ComputeType.AMLCOMPUTE, status__in=ACTIVE) & unsubmitted
    stale = timezone.now() - timedelta(seconds=settings.DOCKYARD_JOB_STALE_SECONDS)
    # processes Dockyard follows itself (local, on attached VMs) whose chain of looks died with a worker
    lost_followed = (Q(target__in=[Target.LOCAL, Target.SSH], status__in=ACTIVE)
                     & (Q(heartbeat_at__lt=stale) | Q(heartbeat_at=None)))
    ids = list(Job.objects.filter(behind | unplaced | held | lost_followed).values_list("pk", flat=True))
    for pk in ids:
        reconcile_job.delay(pk, tick=True)
    computes = set(Job.objects.filter(_observed_jobs()).exclude(target=Target.LOCAL)
                   .values_list("compute_id", flat=True))
    synced = {sync.compute_id for sync in JobSync.objects.filter(compute_id__in=computes) if not _stale(sync.heartbeat_at)}
    for compute_id in computes - synced:
        observe_jobs.delay(compute_id)
    return len(ids) + len(computes - synced)
