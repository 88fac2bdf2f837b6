"""A worker that starts looks for the local jobs a killed worker was following."""
from celery.signals import worker_ready
from django.conf import settings


@worker_ready.connect
def recover_jobs(**_) -> None:
    from .tasks import resync_jobs

    resync_jobs.delay()
    # A chain killed moments ago still has a fresh heartbeat: look again once it has gone stale.
    resync_jobs.apply_async(countdown=settings.DOCKYARD_JOB_STALE_SECONDS + 1)
