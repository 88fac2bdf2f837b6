"""The reconcile machinery every app shares: desired-vs-observed records, status writes, locked and chained runs.

Tasks stay thin: they take the row lock here, call their app's reconcile, and let this module sort the errors.
"""
import random
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from controlplane.celery import enqueue_on_commit
from controlplane.kube.errors import KubeTransient

MAX_BACKOFF = 300


class ProvisioningState(models.TextChoices):
    CREATING = "Creating"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UPDATING = "Updating"
    DELETING = "Deleting"


class Reconciled(models.Model):
    """Desired-vs-observed bookkeeping shared by every record a reconciler brings into a cluster."""

    provisioning_state = models.CharField(
        max_length=16, choices=ProvisioningState.choices, default=ProvisioningState.CREATING
    )
    provisioning_errors = models.JSONField(default=list, blank=True)
    generation = models.PositiveBigIntegerField(default=1)
    observed_generation = models.PositiveBigIntegerField(default=0)

    class Meta:
        abstract = True


# Writing observed state: only the fields that changed, so a steady resync writes nothing.

def set_status(record: models.Model, state: str, errors: list[dict], **observed) -> list[str]:
    """Set provisioning state/errors, observed_generation and any extra observed fields in memory; returns the changed ones."""
    values = {"provisioning_state": state, "provisioning_errors": errors, "observed_generation": record.generation, **observed}
    changed = [key for key, value in values.items() if getattr(record, key) != value]
    for key in changed:
        setattr(record, key, values[key])
    return changed


def record_status(record: models.Model, state: str, errors: list[dict], **observed) -> bool:
    """Set the status as `set_status` does and save only what changed."""
    changed = set_status(record, state, errors, **observed)
    if changed:
        record.save(update_fields=changed)
    return bool(changed)


def problem(code: str, message: str) -> dict:
    return {"code": code, "message": message}


def backoff(retries: int, retry_after: float | None) -> float:
    """Exponential backoff with jitter, never shorter than the server's Retry-After."""
    delay = min(2**retries, MAX_BACKOFF) * random.uniform(0.5, 1.5)
    return max(delay, retry_after or 0)


def locked_run(task, model, pk: int, action, related: tuple[str, ...] = ()):
    """Run `action(row)` under the row lock (skip if gone or busy); retry transient cluster errors after commit."""
    failure, row = None, None
    with transaction.atomic():
        # `of=self`: related rows come in the same query but stay unlocked (attachments share a cluster).
        rows = model.objects.select_for_update(skip_locked=True, of=("self",)).select_related(*related)
        row = rows.filter(pk=pk).first()
        try:
            if row is not None:
                action(row)
        except KubeTransient as exc:
            failure = exc  # keep the status already written; retry outside the transaction
    if failure is not None:
        raise task.retry(countdown=backoff(task.request.retries, failure.retry_after), exc=failure)
    return row


def fresh(heartbeat, seconds: float) -> bool:
    """Whether the heartbeat was written in the last `seconds`."""
    return heartbeat is not None and heartbeat > timezone.now() - timedelta(seconds=seconds)


def looked_after(heartbeat) -> bool:
    """Whether a look-again chain has touched the record recently (else it died with its worker)."""
    return fresh(heartbeat, settings.DOCKYARD_JOB_STALE_SECONDS)


def chained_run(task, model, pk: int, tick: bool | str, step, period: float, related: tuple[str, ...] = ()):
    """Run `step(row)` under the row lock; when it returns a delay, look again then: one chain of looks per record.

    A look of the chain carries the heartbeat it wrote (`tick`) and goes on only while that is still the record's last
    one: when another look takes over (a resync's, tick=True, once the chain went quiet), the older chain ends at its
    next look, whatever the timing. A look that finds the row busy comes back instead of ending the chain. Other calls
    (create, update, cancel, delete) start a chain only when none is alive.
    """
    def action(row) -> None:
        if isinstance(tick, str) and row.heartbeat_at != datetime.fromisoformat(tick):
            return  # another look took the chain over since this one was asked for
        if tick is True and fresh(row.heartbeat_at, period / 2):
            return  # the chain looked a moment ago
        delay = step(row)
        if row.pk is None or delay is None or not (tick or not looked_after(row.heartbeat_at)):
            return
        beat = timezone.now()
        model.objects.filter(pk=row.pk).update(heartbeat_at=beat)
        enqueue_on_commit(task, row.pk, tick=beat.isoformat(), countdown=delay)

    row = locked_run(task, model, pk, action, related=related)
    if row is None and isinstance(tick, str) and model.objects.filter(pk=pk).exists():
        task.apply_async((pk,), {"tick": tick}, countdown=period / 2)  # busy (a cancel, a delete): look again soon
    return row
