"""Thin Celery tasks: take the row lock, call reconcile; the resync safety net."""
from celery import shared_task
from django.db import transaction
from django.db.models import F, Q

from . import reconcile
from .choices import ProvisioningState
from .models import ComputeTarget


@shared_task(acks_late=True)
def reconcile_compute(compute_id: int) -> None:
    """Reconcile one compute; skip it if gone or if another worker holds it (resync retries)."""
    with transaction.atomic():
        compute = ComputeTarget.objects.select_for_update(skip_locked=True).filter(pk=compute_id).first()
        if compute is not None:
            reconcile.reconcile_compute(compute)


@shared_task(acks_late=True)
def resync() -> int:
    """Re-enqueue records that are behind or being deleted; returns how many."""
    behind = ComputeTarget.objects.filter(
        Q(observed_generation__lt=F("generation")) | Q(provisioning_state=ProvisioningState.DELETING)
    ).values_list("pk", flat=True)
    ids = list(behind)
    for compute_id in ids:
        reconcile_compute.delay(compute_id)
    return len(ids)
