"""Robustness: 200 instance types converge through a cluster that fails 30% of its requests.

The fake answers a seeded 30% of API requests with 500, 503 and 429 (both with Retry-After), 504, a
hung request (the client gives up at its read timeout), a reset or a dropped connection; on top of that a
share of applies is committed and then answered with an error, as when a response is lost. A real
Celery worker reconciles, and the resync task is driven until everything converged. Then the request
log must show that no call was made to the cluster before a Retry-After it had been given was over,
and the cluster must hold no duplicates.

The worker uses the solo pool so that every request in the log was sent after the previous answer
arrived. With concurrent workers a request that passed the Retry-After check just before another
worker's 429 came back still reaches the cluster a few milliseconds after that 429, which no client
can prevent short of serialising its calls; this test checks the promise that can be kept.
"""
import time

import pytest

from compute.models import Cluster, InstanceType
from compute.tasks import resync
from controlplane.kube import client as kube
from controlplane.kube.objects import MANAGED_BY
from controlplane.reconciling import ProvisioningState
from tests.e2e_support import BASE, attach, crs, fresh_client_state, in_process_worker

COUNT = 200
FAULT_KINDS = ("500", "503", "504", "429", "timeout", "reset", "drop")
DEADLINE, RESYNC_EVERY = 120.0, 5.0
CLOCK_TOLERANCE = 0.05  # seconds: the fake and the worker read the same wall clock


def shape(index: int) -> dict:
    """A varied, valid instance type written in canonical quantities (so the CR spec must equal it)."""
    limits = {"cpu": "2", "memory": "2Gi"}
    if index % 7 == 0:
        limits["nvidia.com/gpu"] = 1 + index % 3
    spec = {"resources": {"requests": {"cpu": ("100m", "250m", "500m", "1", "2")[index % 5],
                                       "memory": ("256Mi", "1Gi", "1500Mi", "2Gi")[index % 4]},
                          "limits": limits}}
    if index % 5 == 0:
        spec["nodeSelector"] = {"pool": f"p{index % 3}"}
    return spec


NAMES = [f"shape-{index:03d}" for index in range(COUNT)]
SPECS = {name: shape(index) for index, name in enumerate(NAMES)}


@pytest.fixture
def faulty(make_fake_kube, monkeypatch):
    kube_ = make_fake_kube(seed=2024, fault_rate=0.3, fault_kinds=FAULT_KINDS)
    # A hung request costs the worker its read timeout (20 s in production): shorter here, the fake hangs 5 s.
    monkeypatch.setattr(kube, "TIMEOUT", (2, 0.5))
    fresh_client_state(kube_)
    yield kube_
    fresh_client_state(kube_)


@pytest.fixture
def worker(transactional_db, faulty):
    with in_process_worker(pool="solo"):
        yield


def converged(cluster: Cluster, fake) -> bool:
    records = list(InstanceType.objects.filter(cluster=cluster))
    if len(records) != COUNT or any(
            r.provisioning_state != ProvisioningState.SUCCEEDED or r.observed_generation != r.generation for r in records):
        return False
    return {name: cr["spec"] for name, cr in crs(fake).items()} == SPECS


def retry_after_violations(records) -> list[tuple]:
    """(answer, request) pairs: a request that reached the cluster before the answer's Retry-After was over."""
    records = sorted(records, key=lambda record: record.time)
    violations = []
    for index, answer in enumerate(records):
        if not answer.retry_after:
            continue
        until = answer.time + answer.retry_after - CLOCK_TOLERANCE
        for later in records[index + 1:]:
            if later.time >= until:
                break
            violations.append((answer, later))
    return violations


def test_two_hundred_instance_types_converge_through_faults(worker, owner_api, workspace, faulty):
    rule = faulty.faults.rules[0]
    rule.rate = 0.0  # attach first: ~12 calls in a row would each fail 30% of the time
    attach(owner_api, faulty)
    rule.rate = 0.3
    lost = faulty.faults.add(0.1, ("500", "reset"), verb="patch", resource="instancetypes", after=True)  # committed, answer lost
    cluster = Cluster.objects.get()

    items = [{"metadata": {"name": name}, "spec": SPECS[name]} for name in NAMES[:150]]
    body = {"apiVersion": "amlarc.azureml.com/v1alpha1", "kind": "InstanceTypeList", "items": items}
    assert owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json").status_code == 201
    for name in NAMES[150:]:
        assert owner_api.post(f"{BASE}/k8s/instancetypes/", {"name": name, **SPECS[name]}, format="json").status_code == 201

    started = time.monotonic()
    last_resync = started
    resyncs = 0
    while not converged(cluster, faulty):
        now = time.monotonic()
        assert now - started < DEADLINE, (
            f"not converged after {DEADLINE:.0f} s and {resyncs} resyncs: "
            f"{InstanceType.objects.filter(provisioning_state=ProvisioningState.SUCCEEDED).count()} records Succeeded, "
            f"{len(crs(faulty))} CRs")
        if now - last_resync >= RESYNC_EVERY:
            resync.delay()
            resyncs, last_resync = resyncs + 1, now
        time.sleep(0.25)

    # No duplicates: one record and one CR per name, and never a create that a retry could repeat.
    assert InstanceType.objects.filter(cluster=cluster).count() == COUNT
    live = crs(faulty)
    assert sorted(live) == NAMES
    assert len({cr["metadata"]["uid"] for cr in live.values()}) == COUNT
    assert all(cr["metadata"]["labels"][MANAGED_BY] == "dockyard" for cr in live.values())
    log = faulty.requests.all()
    instancetype_writes = {r.verb for r in log if r.is_write and r.resource == "instancetypes"}
    assert instancetype_writes == {"patch"}, instancetype_writes  # server-side apply only; nothing deleted

    # The faults happened, of every kind (the test proves nothing otherwise).
    faults = [r for r in log if r.fault]
    assert {r.fault for r in faults} == set(FAULT_KINDS)
    assert lost.fired >= 5
    told_to_wait = [r for r in log if r.retry_after]
    assert len(told_to_wait) >= 10 and {r.status for r in told_to_wait} == {429, 503}

    violations = retry_after_violations(log)
    assert not violations, [
        f"{later.method} {later.path} at +{later.time - answer.time:.3f} s after a {answer.status} "
        f"with Retry-After {answer.retry_after}" for answer, later in violations[:10]]
