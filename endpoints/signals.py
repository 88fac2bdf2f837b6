"""A worker that starts looks again at the local servers a killed worker was watching."""
from celery.signals import worker_ready


@worker_ready.connect
def recover_deployments(**_) -> None:
    from .tasks import resync_endpoints

    resync_endpoints.delay()
