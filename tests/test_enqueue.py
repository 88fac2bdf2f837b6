"""With the broker down a change is still saved and answered: the enqueue after commit is logged, and the resync sends it."""
import contextlib
import logging
import os
import socket

from compute.models import ComputeTarget
from compute.tasks import resync
from compute.tests.factories import host
from controlplane.celery import app
from controlplane.reconciling import ProvisioningState
from tests.e2e_support import in_process_worker, wait_for

BASE = "/api/v1/workspaces/team-a/computes"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the probe is closed


@contextlib.contextmanager
def broker_at(url: str):
    """Point the real Celery app at another broker, forgetting its pooled connections on the way in and out.

    Celery reads CELERY_BROKER_URL from the environment before its own settings, so both are changed.
    """
    saved, saved_environment = app.conf.broker_url, os.environ.get("CELERY_BROKER_URL")

    def forget_connections():
        # Only the app's references: kombu keeps the pools per broker, and the real broker's is wanted back as it was.
        app._pool = app.amqp._producer_pool = None

    forget_connections()
    app.conf.broker_url = os.environ["CELERY_BROKER_URL"] = url
    try:
        yield
    finally:
        forget_connections()
        app.conf.broker_url = saved
        if saved_environment is None:
            os.environ.pop("CELERY_BROKER_URL")
        else:
            os.environ["CELERY_BROKER_URL"] = saved_environment


def test_a_create_with_the_broker_down_answers_201_and_a_later_resync_reconciles_it(
        transactional_db, owner_api, workspace, caplog):
    host(workspace)  # where the instance runs
    with broker_down_context(), caplog.at_level(logging.WARNING, logger="controlplane.celery"):
        # a record-only type (a compute instance runs on a kubernetes compute, a virtualmachine is reached over SSH)
        response = owner_api.post(f"{BASE}/", {"name": "cpu", "type": "databricks", "workspace_url": "https://adb-1.azuredatabricks.net", "access_token": "dapi123"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["provisioning_state"] == "Creating"
    assert ComputeTarget.objects.filter(name="cpu", provisioning_state=ProvisioningState.CREATING).exists()
    assert "Could not enqueue compute.tasks.reconcile_compute" in caplog.text
    assert "the resync will pick the record up" in caplog.text

    with in_process_worker():
        assert resync() >= 1
        wait_for(lambda: ComputeTarget.objects.filter(name="cpu", provisioning_state=ProvisioningState.SUCCEEDED).exists(),
                 what="the resync's reconcile")


def test_an_update_and_a_delete_with_the_broker_down_are_saved(transactional_db, owner_api, workspace):
    host(workspace)  # where the instance runs
    assert owner_api.post(f"{BASE}/", {"name": "cpu", "type": "computeinstance"}, format="json").status_code == 201
    with broker_down_context():
        assert owner_api.patch(f"{BASE}/cpu/", {"idle_time_before_shutdown_minutes": 60}, format="json").status_code == 200
        assert ComputeTarget.objects.get(name="cpu").generation == 2
        assert owner_api.delete(f"{BASE}/cpu/").status_code == 202
    assert ComputeTarget.objects.get(name="cpu").provisioning_state == ProvisioningState.DELETING


def broker_down_context():
    return broker_at(f"redis://127.0.0.1:{closed_port()}/0")
