"""Thin Celery tasks for online endpoints: lock, reconcile, look again while a server starts or a rollout runs."""
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from controlplane.reconciling import ProvisioningState, chained_run, locked_run

from . import reconcile
from .models import OnlineDeployment, OnlineEndpoint

RELATED = ("endpoint", "endpoint__workspace", "endpoint__compute", "endpoint__compute__cluster")


@shared_task(bind=True, acks_late=True, max_retries=10)
def reconcile_deployment(self, deployment_id: int, tick: bool = False) -> None:
    """Reconcile one deployment; a local server is watched (probe, restart) by a chain of looks."""
    endpoint_id = OnlineDeployment.objects.filter(pk=deployment_id).values_list("endpoint_id", flat=True).first()
    deployment = chained_run(self, OnlineDeployment, deployment_id, tick, reconcile.reconcile_deployment, reconcile.LOOK_EVERY, RELATED)
    if deployment is not None and deployment.pk is None and endpoint_id:
        reconcile_endpoint.delay(endpoint_id)  # its route loses the deployment (or a deleted endpoint can go now)


@shared_task(bind=True, acks_late=True, max_retries=10)
def reconcile_endpoint(self, endpoint_id: int) -> None:
    """Reconcile one endpoint's route; a deleted endpoint waits for its deployments."""
    holder = {}

    def step(endpoint: OnlineEndpoint) -> None:
        holder["delay"] = reconcile.reconcile_endpoint(endpoint)

    locked_run(self, OnlineEndpoint, endpoint_id, step, related=("workspace", "compute", "compute__cluster"))
    if holder.get("delay"):
        reconcile_endpoint.apply_async((endpoint_id,), countdown=holder["delay"])


@shared_task(acks_late=True)
def resync_endpoints() -> int:
    """Re-enqueue endpoints behind or deleting, and every deployment no chain watches (drift, crashed servers)."""
    behind = Q(observed_generation__lt=F("generation")) | Q(provisioning_state=ProvisioningState.DELETING)
    endpoints = list(OnlineEndpoint.objects.filter(behind).values_list("pk", flat=True))
    stale = timezone.now() - timedelta(seconds=settings.DOCKYARD_JOB_STALE_SECONDS)
    unwatched = Q(heartbeat_at=None) | Q(heartbeat_at__lt=stale)
    deployments = list(OnlineDeployment.objects.filter(unwatched).values_list("pk", flat=True))
    for pk in endpoints:
        reconcile_endpoint.delay(pk)
    for pk in deployments:
        reconcile_deployment.delay(pk, tick=True)
    return len(endpoints) + len(deployments)
