"""Thin Celery tasks: take the row lock, call reconcile, sort errors; the resync safety net."""
import logging
from datetime import timedelta
from functools import partial

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from controlplane.api import BadRequest, Conflict
from controlplane.celery import enqueue_on_commit
from controlplane.kube.errors import KubeTransient
from controlplane.reconciling import ProvisioningState, backoff, locked_run

from . import instances, reconcile, schedules
from .choices import SSH_TYPES, ComputeType, InstanceState, StopCause
from .connections import HOST_KEY, LOCAL
from .models import Cluster, ComputeInstance, ComputeTarget, InstanceType

logger = logging.getLogger(__name__)
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
    attachment = compute is not None and compute.pk and compute.type == ComputeType.KUBERNETES
    if attachment and compute.cluster_id and compute.provisioning_state == ProvisioningState.SUCCEEDED:
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


def pool_batch(task, host_id: int | None, ids: list[int]) -> None:
    """Reconcile a batch of one attachment's compute clusters that are behind or failed, under their row locks: one
    discovery and one LIST per kind for all, an apply each, one UPDATE of the statuses. A transient cluster error
    keeps what was written and retries the batch."""
    failure = None
    with transaction.atomic():
        rows = ComputeTarget.objects.select_for_update(skip_locked=True, of=("self",)).select_related("workspace")
        records = list(rows.filter(pk__in=ids, type=ComputeType.AMLCOMPUTE).exclude(
            provisioning_state=ProvisioningState.DELETING).order_by("pk"))
        host = ComputeTarget.objects.filter(pk=host_id).select_related("cluster").first() if host_id else None
        try:
            if records:
                reconcile.reconcile_compute_clusters(host, records, changed={record.pk for record in records})
        except KubeTransient as exc:
            failure = exc
    if failure is not None:
        raise task.retry(countdown=backoff(task.request.retries, failure.retry_after), exc=failure)


@shared_task(bind=True, acks_late=True, max_retries=10)
def reconcile_compute_clusters(self, host_id: int | None, ids: list[int]) -> None:
    """Reconcile a batch of one attachment's compute clusters (what a resync found behind or failed)."""
    pool_batch(self, host_id, ids)


def by_host(computes) -> dict[int | None, list[int]]:
    """Compute clusters' (or compute instances') ids by the pk of the kubernetes compute they live on (None: it is gone)."""
    rows = list(computes.values_list("pk", "workspace_id", f"properties__{HOST_KEY}").order_by("pk"))
    hosts = dict(((workspace, name), pk) for pk, workspace, name in ComputeTarget.objects.filter(
        type=ComputeType.KUBERNETES, workspace_id__in={row[1] for row in rows}).values_list("pk", "workspace_id", "name"))
    groups: dict[int | None, list[int]] = {}
    for pk, workspace, host in rows:
        groups.setdefault(hosts.get((workspace, host)), []).append(pk)
    return groups


def observe_batch(host_id: int | None, ids: list[int]) -> None:
    """Observe a batch of one attachment's settled compute clusters under their row locks (busy rows are skipped: a
    reconcile has them). A cluster that does not answer now is looked at again at the next tick."""
    with transaction.atomic():
        rows = ComputeTarget.objects.select_for_update(skip_locked=True, of=("self",)).select_related("workspace")
        records = list(rows.filter(pk__in=ids, provisioning_state=ProvisioningState.SUCCEEDED,
                                   observed_generation=F("generation")).order_by("pk"))
        host = ComputeTarget.objects.filter(pk=host_id).select_related("cluster").first() if host_id else None
        try:
            if records:
                reconcile.reconcile_compute_clusters(host, records, changed=set())
        except KubeTransient as exc:
            logger.info("Compute clusters of attachment %s not observed this time: %s", host_id, exc)


@shared_task(acks_late=True)
def observe_compute_clusters() -> int:
    """Every few seconds: observe each Succeeded compute cluster's pool (node counts, idle nodes, the autoscaler's
    refusals; drift re-applied), one task per attachment and BATCH records; returns the number of tasks."""
    settled = ComputeTarget.objects.filter(type=ComputeType.AMLCOMPUTE, provisioning_state=ProvisioningState.SUCCEEDED,
                                           observed_generation=F("generation"))
    sent = 0
    for host_id, ids in by_host(settled).items():
        for start in range(0, len(ids), BATCH):
            observe_pools.delay(host_id, ids[start:start + BATCH])
            sent += 1
    return sent


@shared_task(acks_late=True)
def observe_pools(host_id: int | None, ids: list[int]) -> None:
    """Observe a batch of one attachment's compute clusters (statuses written only when they changed)."""
    observe_batch(host_id, ids)


@shared_task(acks_late=True)
def observe_local_compute_instances() -> int:
    """Every DOCKYARD_INSTANCE_PROBE_SECONDS: look at each local compute instance that should run (its server alive,
    its activity) and stop the idle ones; returns how many were looked at."""
    return reconcile.local_instances.observe_local_instances()  # (loaded by reconcile.computes, which dispatches)


@shared_task(acks_late=True)
def resync() -> int:
    """Re-enqueue what is behind, deleting or due a check, and resync every attached cluster; returns the count."""
    due = timezone.now() - timedelta(seconds=settings.DOCKYARD_CLUSTER_CHECK_SECONDS)
    pending = Q(observed_generation__lt=F("generation")) | Q(provisioning_state=ProvisioningState.DELETING)
    check = Q(type=ComputeType.KUBERNETES) & (~Q(provisioning_state=ProvisioningState.SUCCEEDED) | Q(checked_at__lt=due) | Q(checked_at=None))
    # SSH hosts: every look writes checked_at, so a refused login is tried again once a period, not every tick (a host
    # may ban an address that keeps failing); unreachable ones are retried by their task meanwhile.
    check |= Q(type__in=SSH_TYPES) & (Q(checked_at__lt=due) | Q(checked_at=None))
    computes = list(ComputeTarget.objects.filter(pending | check).exclude(
        Q(type=ComputeType.AMLCOMPUTE) & ~Q(provisioning_state=ProvisioningState.DELETING)).values_list("pk", flat=True))
    # Compute clusters behind or failed (no autoscaler on the cluster, their attachment not ready): in batches per
    # attachment, as the instance types are.
    clusters_behind = ComputeTarget.objects.filter(type=ComputeType.AMLCOMPUTE).exclude(
        provisioning_state=ProvisioningState.DELETING).filter(
        Q(observed_generation__lt=F("generation")) | ~Q(provisioning_state=ProvisioningState.SUCCEEDED))
    batches = [(host_id, ids[start:start + BATCH]) for host_id, ids in by_host(clusters_behind).items()
               for start in range(0, len(ids), BATCH)]
    clusters = list(Cluster.objects.filter(computes__isnull=False).distinct().values_list("pk", flat=True))
    for pk in computes:
        reconcile_compute.delay(pk)
    for host_id, ids in batches:
        reconcile_compute_clusters.delay(host_id, ids)
    for pk in clusters:
        sync_cluster.delay(pk)
    return len(computes) + len(batches) + len(clusters)


def instances_to_observe():
    """Settled compute instances on a cluster that are not Stopped (Failed ones too: they may recover)."""
    return ComputeTarget.objects.filter(type=ComputeType.COMPUTEINSTANCE, observed_generation=F("generation")).exclude(
        provisioning_state=ProvisioningState.DELETING).exclude(**{f"properties__{HOST_KEY}": LOCAL}).exclude(
        instance__state=InstanceState.STOPPED)


def observe_instance_batch(host_id: int | None, ids: list[int]) -> None:
    """Observe a batch of one attachment's compute instances under their row locks (busy rows are skipped: a reconcile
    or an action has them): one LIST per kind for all, states written when they change, running ones probed for
    idleness and stopped when idle. A cluster that does not answer now is looked at again at the next tick."""
    with transaction.atomic():
        rows = ComputeTarget.objects.select_for_update(skip_locked=True, of=("self",)).select_related("workspace", "instance")
        records = list(rows.filter(pk__in=ids, type=ComputeType.COMPUTEINSTANCE, observed_generation=F("generation"))
                       .exclude(provisioning_state=ProvisioningState.DELETING).order_by("pk"))
        host = ComputeTarget.objects.filter(pk=host_id).select_related("cluster").first() if host_id else None
        try:
            if records:
                reconcile.reconcile_compute_instances(host, records, changed=set(), probe=True)
        except KubeTransient as exc:
            logger.info("Compute instances of attachment %s not observed this time: %s", host_id, exc)


@shared_task(acks_late=True)
def observe_compute_instances() -> int:
    """Observe compute instances that are not Stopped (state, activity probes) and stop the idle ones, one task per
    attachment and BATCH records; returns the number of tasks."""
    sent = 0
    for host_id, ids in by_host(instances_to_observe()).items():
        for start in range(0, len(ids), BATCH):
            observe_instances.delay(host_id, ids[start:start + BATCH])
            sent += 1
    return sent


@shared_task(acks_late=True)
def observe_instances(host_id: int | None, ids: list[int]) -> None:
    """Observe a batch of one attachment's compute instances (states written only when they changed)."""
    observe_instance_batch(host_id, ids)


@shared_task(acks_late=True)
def fire_instance_schedules() -> int:
    """Fire the start/stop schedules that are due, each once (row lock, schedule_fired_at); returns how many fired."""
    now = timezone.now()
    return sum(fire_schedules_of(pk, now) for pk in scheduled_instances())


def scheduled_instances() -> list[int]:
    """The run-state records of compute instances (not being deleted) with at least one start/stop schedule."""
    return list(ComputeInstance.objects.filter(compute__type=ComputeType.COMPUTEINSTANCE).exclude(
        compute__provisioning_state=ProvisioningState.DELETING).exclude(
        compute__properties__schedules__compute_start_stop=[]).filter(
        compute__properties__schedules__compute_start_stop__isnull=False).order_by("pk").values_list("pk", flat=True))


def fire_schedules_of(instance_id: int, now) -> int:
    """Act on one instance's due firings under its row lock, then record them: a second worker asking at the same time
    waits for the lock and finds them recorded, so each firing acts once. Returns how many were acted on."""
    with transaction.atomic():
        instance = ComputeInstance.objects.select_for_update(of=("self",)).select_related(
            "compute", "compute__workspace").filter(pk=instance_id).first()
        if instance is None:
            return 0
        compute = instance.compute
        items = (compute.properties.get("schedules") or {}).get("compute_start_stop") or []
        firings = schedules.due(items, instance.schedule_fired_at, now)
        acted = 0
        for index, action, fire_time in firings:
            try:
                acted += instances.request_action(user=None, compute=compute, action=action, cause=StopCause.SCHEDULE)
            except (Conflict, BadRequest) as exc:  # being deleted meanwhile: nothing to do; said in the log
                logger.info("Schedule %s of compute %s not acted on: %s", index, compute.pk, exc)
            instance.schedule_fired_at[str(index)] = fire_time.isoformat()
        if firings:
            instance.save(update_fields=["schedule_fired_at", "updated_at"])
        if acted:
            enqueue_on_commit(reconcile_compute, compute.pk)
    return len(firings)
