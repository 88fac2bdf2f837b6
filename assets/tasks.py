"""Thin Celery tasks for artifacts: the periodic collection of what nothing needs any more."""
from celery import shared_task

from . import collect


@shared_task(acks_late=True)
def collect_artifacts() -> str:
    """Collect abandoned uploads, unnamed snapshots and unlisted blobs (CELERY_BEAT_SCHEDULE runs it)."""
    return collect.collect().summary()
