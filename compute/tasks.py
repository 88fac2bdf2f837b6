"""Thin Celery tasks: take the row lock, call reconcile, sort errors; the resync safety net."""
from datetime import timedelta
from functools import partial

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from controlplane.reconciling import ProvisioningState, backoff, locked_run

from . import reconcile
from .choices import ComputeType
from .models import Cluster, ComputeTarget, InstanceType

BATCH = 100  # instance types per batched reconcile task: one status UPDATE each, short enough to retry


def locked_batch(task, cluster_id: int, ids: list[int]) -> None:
    """Reconcile the given instance types of one cluster under their row locks (busy rows are skipped: the resync has them).

    On a transient cluster error the statuses written so far are committed and only the records not done are retried;
    the backoff grows only while a retry makes no progress.
    """
    failure = None
    with transaction.atomic():
        cluster = Cluster.objects.filter(pk=cluster_id).first()  # unlocked: shared by every record and attachment
        rows = InstanceType.objects.select_for_update(skip_locked=True, of=("self",))
        records = list(rows.filter(cluster_id=cluster_id, pk__in=ids).order_by("pk"))
        try:
            if cluster is not None and records:
                reconcile.reconcile_instance_types(cluster, records)
        except reconcile.Interrupted as exc:
            failure = exc
    if failure is not None:
        progressed = len(failure.unfinished) < len(records)  # then the cluster is answering: start the backoff afresh
        retries = 0 if progressed else task.request.retries
        raise task.retry(args=(cluster_id, failure.unfinished), countdown=backoff(retries, failure.retry_after), exc=failure)


@shared_task(bind=True, acks_late=True, max_retries=10)
def reconcile_compute(self, compute_id: int) -> None:
    """Reconcile one compute record; a cluster that just passed its checks is synced (nodes, imports) at once."""
    compute = locked_run(self, ComputeTarget, compute_id, reconcile.reconcile_compute)
    if compute is not None and compute.pk and compute.cluster_id and compute.provisioning_state == ProvisioningState.SUCCEEDED:
        sync_cluster.delay(compute.cluster_id)


@shared_task(bind=True, acks_late=True, max_retries=10)
def reconcile_instance_type(self, instance_type_id: int, compute_id: int | None = None) -> None:
    """Reconcile one instance type's CR with the credentials of the attachment that changed it (if it still passes)."""
    action = partial(reconcile.reconcile_instance_type, compute_id=compute_id)
    locked_run(self, InstanceType, instance_type_id, action, related=("cluster",))


@shared_task(bind=True, acks_late=True, max_retries=10)
def reconcile_cluster_instance_types(self, cluster_id: int, ids: list[int]) -> None:
    """Reconcile a batch of one cluster's instance types (what a resync found behind)."""
    locked_batch(self, cluster_id, ids)


@shared_task(bind=True, acks_late=True, max_retries=5)
def sync_cluster(self, cluster_id: int) -> None:
    """Resync one cluster (drift, imports, garbage, nodes) and reconcile the instance types that need it."""
    behind: list[int] = []
    locked_run(self, Cluster, cluster_id, lambda cluster: behind.extend(reconcile.sync_cluster(cluster)))
    for start in range(0, len(behind), BATCH):
        reconcile_cluster_instance_types.delay(cluster_id, behind[start:start + BATCH])


@shared_task(acks_late=True)
def resync() -> int:
    """Re-enqueue what is behind, deleting or due a check, and resync every attached cluster; returns the count."""
    due = timezone.now() - timedelta(seconds=settings.DOCKYARD_CLUSTER_CHECK_SECONDS)
    pending = Q(observed_generation__lt=F("generation")) | Q(provisioning_state=ProvisioningState.DELETING)
    check = Q(type=ComputeType.KUBERNETES) & (~Q(provisioning_state=ProvisioningState.SUCCEEDED) | Q(checked_at__lt=due) | Q(checked_at=None))
    computes = list(ComputeTarget.objects.filter(pending | check).values_list("pk", flat=True))
    clusters = list(Cluster.objects.filter(computes__isnull=False).distinct().values_list("pk", flat=True))
    for pk in computes:
        reconcile_compute.delay(pk)
    for pk in clusters:
        sync_cluster.delay(pk)
    return len(computes) + len(clusters)
