"""Shared by the end-to-end reconcile tests: bounded polling, in-process workers, the fake cluster's CRs."""
import contextlib
import time

from celery.contrib.testing.worker import start_worker
from django.core.cache import cache

from compute.manifests import INSTANCE_TYPE_API_VERSION, INSTANCE_TYPE_GROUP
from compute.models import InstanceType
from controlplane.celery import app
from controlplane.kube import client as kube
from controlplane.reconciling import ProvisioningState

BASE = "/api/v1/workspaces/team-a/computes"


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.1, what: str = "the condition"):
    """Poll until predicate() is truthy and return its value; fail after `timeout` seconds (never hangs)."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what} was not reached within {timeout:.0f} s (last value: {value!r})")


@contextlib.contextmanager
def in_process_worker(pool: str = "solo", concurrency: int = 1):
    """A real Celery worker on the configured broker, in a thread of the test process."""
    app.control.purge()
    with start_worker(app, pool=pool, concurrency=concurrency, perform_ping_check=False, shutdown_timeout=15):
        yield
    app.control.purge()


def fresh_client_state(fake) -> None:
    """Forget cached clients (a port can be reused by the next fake) and any Retry-After remembered for it."""
    kube._clients.clear()
    cache.delete(kube._backoff_key(kube.Connection(key=fake.url, kubeconfig={})))


def crs(fake) -> dict[str, dict]:
    """The fake cluster's InstanceType CRs by name (read in-process: not recorded, no faults)."""
    return {cr["metadata"]["name"]: cr for cr in fake.list("instancetypes", group=INSTANCE_TYPE_GROUP)}


def kubectl_instance_type(name: str, cpu: str = "1", memory: str = "1Gi", **spec) -> dict:
    """An InstanceType CR as an admin would `kubectl apply` it (no Dockyard labels)."""
    resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    return {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceType", "metadata": {"name": name},
            "spec": {"resources": resources, **spec}}


def settled(names) -> bool:
    """Every named record exists, is Succeeded and has observed its latest generation."""
    records = list(InstanceType.objects.filter(name__in=list(names)))
    return len(records) == len(set(names)) and all(
        r.provisioning_state == ProvisioningState.SUCCEEDED and r.observed_generation == r.generation for r in records)


def attach(api, fake, name: str = "k8s", timeout: float = 30.0, **fields) -> dict:
    """Attach the fake cluster through the REST API and wait for the worker to report Succeeded."""
    body = {"name": name, "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml(), **fields}
    response = api.post(f"{BASE}/", body, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["provisioning_state"] == "Creating"

    def succeeded():
        row = api.get(f"{BASE}/{name}/").json()
        assert row["provisioning_state"] != "Failed" or row["provisioning_errors"][0]["code"] == "Unreachable", row
        return row if row["provisioning_state"] == "Succeeded" else None

    return wait_for(succeeded, timeout, what=f"attach of {name}")
