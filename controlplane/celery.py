"""The Celery app: settings from Django (CELERY_*), tasks autodiscovered from the apps; enqueue after commit."""
import logging
import os

from celery import Celery
from django.db import transaction

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
app = Celery("controlplane")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


def enqueue_on_commit(task, *args, countdown: float | None = None, **kwargs) -> None:
    """Send `task` once the transaction commits; a broker error is logged, never raised: the resync catches up.

    The data is committed by then, so failing the request would only hide a saved change from its author. (Django's
    own robust=True is not enough: its error log reads the hook's __qualname__, which a functools.partial lacks.)
    """
    def send() -> None:
        try:
            # .delay when there is no countdown: the one entry point tests and callers patch or wrap.
            task.apply_async(args, kwargs, countdown=countdown) if countdown else task.delay(*args, **kwargs)
        except Exception:
            logger.warning("Could not enqueue %s%r; the resync will pick the record up.", task.name, args, exc_info=True)

    transaction.on_commit(send)
