"""Jobs on a compute cluster end to end on the fake API server with its Karpenter simulation, through the real client:
the compute cluster's own reconcile declares the NodePool and observes it, the job's reconcile submits the Job, the
fake's Karpenter launches nodes for the job's pods and removes them when idle.

Every step is driven by hand on the fake's clock (`advance`): the compute-cluster observation (`pool`), the jobs'
observation loop (`observe`), so what each look sees is deterministic.
"""
import pytest

from compute import reconcile as compute_reconcile
from compute import tasks as compute_tasks
from compute.models import ComputeTarget
from compute.pools import KARPENTER_POOL_LABEL, pool_name
from jobs.tests.test_kubernetes import BASE, attach, load, observe, pods_of, run_reconcile
from tests.e2e_support import fresh_client_state

SIZE = "Standard_NC6s_v3"
POOL = pool_name("team-a", "gpu-cluster")
LAUNCH = 30.0
IDLE = 60
WAITING = "Waiting for a node: compute cluster 'gpu-cluster'"


@pytest.fixture(autouse=True)
def fresh_clients(fake_kube):
    fresh_client_state(fake_kube)
    yield
    fresh_client_state(fake_kube)


@pytest.fixture
def api(owner_api, workspace):
    return owner_api


@pytest.fixture
def gpu_cluster(api, fake_kube) -> ComputeTarget:
    """gpu-cluster: Standard_NC6s_v3, 0..2 nodes, 60 s idle, on the attached fake running Karpenter."""
    fake_kube.install_karpenter(launch_seconds=LAUNCH)
    attach(api, fake_kube)
    body = {"name": "gpu-cluster", "type": "amlcompute", "size": SIZE, "min_instances": 0, "max_instances": 2,
            "idle_time_before_scale_down": IDLE, "kubernetes_compute": "k8s"}
    response = api.post(f"{BASE}/computes/", body, format="json")
    assert response.status_code == 201, response.json()
    compute_reconcile.reconcile_compute(ComputeTarget.objects.get(name="gpu-cluster"))
    return pool()


def pool() -> ComputeTarget:
    """One tick of the compute clusters' observation (what its beat task does every few seconds)."""
    compute = ComputeTarget.objects.get(name="gpu-cluster")
    host = ComputeTarget.objects.get(name="k8s")
    compute_tasks.observe_batch(host.pk, [compute.pk])
    compute.refresh_from_db()
    assert compute.provisioning_state == "Succeeded", compute.provisioning_errors
    return compute


def submit(api, name: str, **body) -> str:
    body = {"name": name, "command": "python train.py", "compute": "azureml:gpu-cluster",
            "environment": {"image": "python:3.11"}, **body}
    response = api.post(f"{BASE}/jobs/", body, format="json")
    assert response.status_code == 201, response.json()
    run_reconcile(name)
    return name


def look(fake, seconds: float = 0) -> ComputeTarget:
    """Time passes; the pool and then the jobs are observed, as the two loops do."""
    fake.advance(seconds)
    compute = pool()
    observe(compute)
    return compute


def nodes_of(fake, name: str) -> set[str]:
    return {pod["spec"]["nodeName"] for pod in pods_of(fake, name) if pod["spec"].get("nodeName")}


def pool_nodes(fake) -> list[dict]:
    return [node for node in fake.list("nodes") if node["metadata"]["labels"].get(KARPENTER_POOL_LABEL) == POOL]


def test_the_pool_scales_from_zero_runs_the_job_and_scales_back(api, fake_kube, gpu_cluster):
    assert gpu_cluster.status["current_node_count"] == 0 and not pool_nodes(fake_kube)
    fake_kube.plan_pods(run_seconds=5, logs="epoch 1\n")
    submit(api, "train")

    compute = look(fake_kube, 1)
    assert (compute.status["current_node_count"], compute.status["target_node_count"]) == (0, 1)
    job = load("train")
    assert (job.status, job.status_reason) == ("Queued", f"{WAITING} is adding a node (1 of at most 2 launching).")
    assert job.events.filter(reason="Unschedulable").exists()  # the scheduler's own words, kept

    look(fake_kube, LAUNCH)
    look(fake_kube, 1)
    assert load("train").status == "Running"
    (node_name,) = nodes_of(fake_kube, "train")
    labels = fake_kube.get("nodes", node_name)["metadata"]["labels"]
    assert labels[KARPENTER_POOL_LABEL] == POOL and labels["node.kubernetes.io/instance-type"] == SIZE

    look(fake_kube, 10)
    assert load("train").status == "Completed"
    assert [node["metadata"]["name"] for node in pool_nodes(fake_kube)] == [node_name]  # kept while idle ...
    assert look(fake_kube, IDLE + 5).status["current_node_count"] == 0  # ... and gone after the idle time
    assert not pool_nodes(fake_kube)


def test_max_instances_holds_and_the_third_job_says_why(api, fake_kube, gpu_cluster):
    fake_kube.plan_pods(run_seconds=20)
    for name in ("one", "two", "three"):
        submit(api, name)
    look(fake_kube, 1)
    assert {load(name).status_reason for name in ("one", "two", "three")} == {
        f"{WAITING} is adding 2 nodes (2 of at most 2 launching)."}

    compute = look(fake_kube, LAUNCH)
    look(fake_kube, 1)
    running = [name for name in ("one", "two", "three") if load(name).status == "Running"]
    (waiting,) = {"one", "two", "three"} - set(running)
    assert len(running) == 2 and len(pool_nodes(fake_kube)) == 2 == compute.status["current_node_count"]
    assert load(waiting).status_reason == (f"{WAITING} is at max_instances (2 nodes), all busy; the job starts when "
                                           "one frees up.")
    assert len(pool_nodes(fake_kube)) == 2  # Karpenter launched no third node

    look(fake_kube, 20)
    look(fake_kube, 1)
    assert load(waiting).status in ("Running", "Completed") and len(pool_nodes(fake_kube)) == 2


def test_a_distributed_job_gets_a_node_per_instance(api, fake_kube, gpu_cluster):
    fake_kube.plan_pods(run_seconds=5)
    submit(api, "dist", resources={"instance_count": 2}, distribution={"type": "pytorch"})
    look(fake_kube, 1)
    look(fake_kube, LAUNCH)
    look(fake_kube, 1)
    assert load("dist").status == "Running"
    nodes = nodes_of(fake_kube, "dist")
    assert len(nodes) == 2 and nodes == {node["metadata"]["name"] for node in pool_nodes(fake_kube)}


def test_a_refused_launch_shows_the_autoscalers_reason_until_it_succeeds(api, fake_kube, gpu_cluster):
    fake_kube.fail_launches(POOL, reason="InsufficientCapacity", message=f"{SIZE} is not available in eastus now")
    fake_kube.plan_pods(run_seconds=5)
    submit(api, "train")
    compute = look(fake_kube, 1)
    (refusal,) = compute.status["autoscaler_errors"]
    assert f"{SIZE} is not available in eastus now" in refusal
    job = load("train")
    assert (job.status, job.status_reason) == ("Queued", f"{WAITING} cannot add a node: {refusal}")

    fake_kube.mend_launches()
    look(fake_kube, 11)  # the refused claim goes and a new one launches
    look(fake_kube, LAUNCH)
    look(fake_kube, 1)
    assert load("train").status == "Running"
