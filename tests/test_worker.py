"""Reconcile through a real Celery worker on the Redis broker: records converge, and the resync catches up."""
import time

import pytest
from celery.contrib.testing.worker import start_worker

from compute.models import ComputeTarget
from compute.tasks import resync
from controlplane.celery import app
from controlplane.reconciling import ProvisioningState


def wait_for(predicate, timeout: float = 20.0):
    """Poll until predicate() is truthy; a worker is asynchronous by design."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def worker(transactional_db):
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        yield


def state_of(name: str) -> str | None:
    compute = ComputeTarget.objects.filter(name=name).first()
    return compute.provisioning_state if compute else None


# A record-only type: its reconcile needs no cluster (compute instances now run on one).
RECORD_ONLY = {"name": "cpu", "type": "databricks", "workspace_url": "https://adb-1.azuredatabricks.net", "access_token": "dapi1"}


def test_created_compute_is_reconciled_by_the_worker(worker, owner_api, workspace):
    response = owner_api.post("/api/v1/workspaces/team-a/computes/", RECORD_ONLY, format="json")
    assert response.status_code == 201 and response.json()["provisioning_state"] == "Creating"
    wait_for(lambda: state_of("cpu") == ProvisioningState.SUCCEEDED)
    compute = ComputeTarget.objects.get(name="cpu")
    assert compute.observed_generation == compute.generation


def test_update_then_delete_converge(worker, owner_api, workspace):
    owner_api.post("/api/v1/workspaces/team-a/computes/", RECORD_ONLY, format="json")
    wait_for(lambda: state_of("cpu") == ProvisioningState.SUCCEEDED)
    response = owner_api.patch("/api/v1/workspaces/team-a/computes/cpu/", {"workspace_url": "https://adb-2.azuredatabricks.net"}, format="json")
    assert response.json()["provisioning_state"] == "Updating"
    wait_for(lambda: ComputeTarget.objects.filter(name="cpu", observed_generation=2, provisioning_state="Succeeded").exists())
    assert owner_api.delete("/api/v1/workspaces/team-a/computes/cpu/").status_code == 202
    wait_for(lambda: state_of("cpu") is None)


def test_resync_catches_up_records_whose_message_was_lost(worker, owner, workspace):
    # Saved without an enqueue, as if the broker had been down when the change was committed.
    ComputeTarget.objects.create(workspace=workspace, name="lost", type="databricks", generation=3, observed_generation=1)
    resync.delay()
    wait_for(lambda: state_of("lost") == ProvisioningState.SUCCEEDED)
    assert ComputeTarget.objects.get(name="lost").observed_generation == 3


def test_steady_state_resync_enqueues_nothing(transactional_db, workspace):
    ComputeTarget.objects.create(
        workspace=workspace, name="done", type="amlcompute", generation=2, observed_generation=2,
        provisioning_state=ProvisioningState.SUCCEEDED,
    )
    assert resync() == 0
