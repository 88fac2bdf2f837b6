"""Serverless jobs (no `compute`): placement on a Kubernetes compute of the workspace whose nodes fit, or Queued.

Two fake clusters: `big` (the default fake: 2 nodes of 8 cpu/32Gi and a node with 4 GPUs) and `aaa-tiny` (one node
of 1 cpu/2Gi, which fits no instance type here). `aaa-tiny` sorts first, so a placement that ignored fit would pick it.
"""
import pytest

from compute import reconcile as compute_reconcile
from jobs import reconcile, tasks
from jobs.manifests import kube_job_name
from jobs.tests.test_kubernetes import BASE, GROUP, add_instance_type, attach, load, observe, run_reconcile
from tests.e2e_support import fresh_client_state

SMALL = {"name": "small", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
LARGE = {"name": "large", "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}}}
GPU = {"name": "gpu1", "resources": {"requests": {"cpu": "1", "memory": "4Gi"},
                                     "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}}}
GPU8 = {"name": "gpu8", "resources": {"requests": {"cpu": "1", "memory": "4Gi"},
                                      "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 8}}}
NOTHING_FITS = ("Waiting for capacity: no Kubernetes compute of this workspace has a ready node that fits {what}, "
                "and no compute cluster of a fitting size can take it; the job is placed when one can.")


@pytest.fixture
def api(owner_api, workspace):
    return owner_api


@pytest.fixture
def tiny_kube(make_fake_kube):
    fake = make_fake_kube(nodes=1, gpu_nodes=0, node_cpu="1", node_memory="2Gi")
    fresh_client_state(fake)
    yield fake
    fresh_client_state(fake)


@pytest.fixture
def computes(api, fake_kube, tiny_kube):
    fresh_client_state(fake_kube)
    tiny = attach(api, tiny_kube, name="aaa-tiny")
    big = attach(api, fake_kube, name="big")
    yield big, tiny
    fresh_client_state(fake_kube)


def serverless(api, **body) -> str:
    body = {"command": "python train.py", "environment": {"image": "python:3.11"}, **body}
    response = api.post(f"{BASE}/jobs/", body, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["placement"] == {"target": "serverless", "compute": None, "instance_type": None}
    return response.json()["name"]


def cluster_writes(fake) -> list:
    return [r for r in fake.requests.writes() if r.resource in ("jobs", "services", "pods")]


def assert_placed(api, name: str, compute: str, instance_type: str) -> None:
    job = load(name)
    assert (job.compute.name, job.instance_type, job.target) == (compute, instance_type, "serverless")
    placed = job.events.get(reason="Placed")
    assert placed.message == (f"Serverless: placed on compute '{compute}' with instance type '{instance_type}' "
                              "(fits a ready node now).")
    placement = {"target": "serverless", "compute": compute, "instance_type": instance_type}
    assert api.get(f"{BASE}/jobs/{name}/").json()["placement"] == placement
    (row,) = [row for row in api.get(f"{BASE}/jobs/").json()["results"] if row["name"] == name]
    assert row["placement"] == placement and row["compute"] is None  # as written: serverless


def test_the_compute_whose_nodes_fit_is_chosen(api, fake_kube, tiny_kube, computes):
    name = serverless(api, name="anywhere")
    job = run_reconcile(name)
    assert_placed(api, name, "big", "defaultinstancetype")
    assert job.status == "Queued" and job.runner["submitted"]
    assert fake_kube.get("jobs", kube_job_name("team-a", name), "default", group=GROUP)
    assert not cluster_writes(tiny_kube)


def test_the_smallest_fitting_instance_type_when_none_is_named(api, fake_kube, tiny_kube, computes):
    big, tiny = computes
    for body in (LARGE, GPU, SMALL):
        add_instance_type(api, big, body)
    add_instance_type(api, tiny, {**LARGE, "name": "huge"})
    name = serverless(api)
    run_reconcile(name)
    assert_placed(api, name, "big", "small")
    container = fake_kube.get("jobs", kube_job_name("team-a", name), "default", group=GROUP)["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


def test_the_named_instance_type_when_one_is_named(api, fake_kube, computes):
    big, _ = computes
    for body in (LARGE, GPU, SMALL):
        add_instance_type(api, big, body)
    name = serverless(api, resources={"instance_type": "gpu1"})
    run_reconcile(name)
    assert_placed(api, name, "big", "gpu1")
    fake_kube.advance(1)
    observe(load(name).compute)
    job = load(name)
    assert job.status == "Running"
    (pod,) = [pod for pod in fake_kube.list("pods", "default")
              if pod["metadata"]["labels"].get("dockyard.dev/job") == kube_job_name("team-a", name)]
    assert pod["spec"]["nodeName"] == "gpu-node-0"


@pytest.mark.parametrize("instance_type, what", [("huge", "instance type 'huge'"), ("nosuch", "instance type 'nosuch'")])
def test_a_named_instance_type_that_fits_nowhere_stays_queued(api, fake_kube, tiny_kube, computes, instance_type, what):
    add_instance_type(api, computes[1], {**LARGE, "name": "huge"})  # on the tiny cluster, whose node is too small
    name = serverless(api, resources={"instance_type": instance_type})
    job = run_reconcile(name)
    assert (job.status, job.status_reason) == ("Queued", NOTHING_FITS.format(what=what))
    assert job.compute is None and not job.events.filter(reason="Placed").exists()
    assert not cluster_writes(fake_kube) and not cluster_writes(tiny_kube)


def test_no_fit_is_queued_until_a_node_appears_and_the_resync_places_it(api, fake_kube, tiny_kube, computes, monkeypatch):
    big, _ = computes
    add_instance_type(api, big, GPU8)  # the GPU node has 4
    add_instance_type(api, big, {**GPU, "name": "gpu1"})  # fits, but another one is asked for
    name = serverless(api, resources={"instance_type": "gpu8"})
    job = run_reconcile(name)
    assert (job.status, job.status_reason) == ("Queued", NOTHING_FITS.format(what="instance type 'gpu8'"))
    assert job.compute is None and not cluster_writes(fake_kube) and not cluster_writes(tiny_kube)
    assert api.get(f"{BASE}/jobs/{name}/").json()["status_reason"] == job.status_reason

    # The resync runs the reconcile it enqueues here, in this process (the e2e test has a real worker).
    monkeypatch.setattr(tasks.reconcile_job, "delay", lambda pk, tick=False: tasks.reconcile_job.apply((pk,), {"tick": tick}))
    monkeypatch.setattr(tasks.observe_jobs, "delay", lambda *args: None)
    tasks.resync_jobs()
    assert load(name).compute is None  # nothing new yet: still waiting

    fake_kube.add_node("gpu-node-big", gpu=8, labels={"nvidia.com/gpu.present": "true"})
    compute_reconcile.sync_cluster(big.cluster)  # the compute resync's node sync
    assert tasks.resync_jobs() >= 1
    assert_placed(api, name, "big", "gpu8")
    live = fake_kube.get("jobs", kube_job_name("team-a", name), "default", group=GROUP)
    assert live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    fake_kube.advance(1)
    observe(big)
    assert load(name).status == "Running"
    assert reconcile.reconcile_job(load(name)) is None  # placed once: a later reconcile changes nothing
    assert load(name).events.filter(reason="Placed").count() == 1
