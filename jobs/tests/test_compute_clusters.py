"""Jobs on a compute cluster (amlcompute) against the fake API server, through the real client: accepted or refused at
submit, held Queued until the cluster's pool is declared, one whole pool node per instance, and the pool's words while
the pods wait.

The cluster's pool is declared by hand here (ComputeTarget.status as the compute-cluster reconcile writes it) and its
nodes added by hand (labelled and tainted as Karpenter makes them): these tests are about the job's side. The
autoscaler's side is test_compute_clusters_e2e.py's.
"""
import pytest

from compute import vmsizes
from compute.models import ComputeTarget
from compute.pools import COMPUTE_TAINT_KEY, KARPENTER_POOL_LABEL, pool_name
from compute.tests.factories import create_compute
from jobs import tasks
from jobs.manifests import kube_job_name
from jobs.tests.support import counts
from jobs.tests.test_kubernetes import BASE, attach, live_job, load, observe, pods_of, run_reconcile
from tests.e2e_support import fresh_client_state
from tests.support import assert_error

SIZE = "Standard_NC6s_v3"
POOL = pool_name("team-a", "gpu-cluster")
IMAGE = "python:3.11"


@pytest.fixture(autouse=True)
def fresh_clients(fake_kube):
    fresh_client_state(fake_kube)
    yield
    fresh_client_state(fake_kube)


@pytest.fixture
def api(owner_api, workspace):
    return owner_api


@pytest.fixture
def cluster(api, fake_kube, workspace, owner) -> ComputeTarget:
    """gpu-cluster: Standard_NC6s_v3 nodes, 0..2, on the attached fake `k8s` (its pool not declared yet)."""
    attach(api, fake_kube)
    record = create_compute(workspace, owner, "amlcompute", name="gpu-cluster", size=SIZE, min_instances=0,
                            max_instances=2)
    ComputeTarget.objects.filter(pk=record.pk).update(properties={**record.properties, "kubernetes_compute": "k8s"})
    return ComputeTarget.objects.get(pk=record.pk)


def declare(cluster: ComputeTarget, **status) -> None:
    """The pool as the compute-cluster reconcile reports it."""
    base = {"engine": "karpenter", "pool": POOL, "current_node_count": 0, "target_node_count": 0, "idle_node_count": 0,
            "max_node_count": 2, "scaling": "steady", "autoscaler_errors": [], "nodes": []}
    ComputeTarget.objects.filter(pk=cluster.pk).update(status={**base, **status}, provisioning_state="Succeeded")


def pool_node(fake, name: str) -> dict:
    """A node as Karpenter launches it for the pool: its labels (the template's too) and the pool's taint."""
    return fake.add_node(name, cpu="6", memory="112Gi", gpu=1,
                         labels={KARPENTER_POOL_LABEL: POOL, COMPUTE_TAINT_KEY: POOL,
                                 "node.kubernetes.io/instance-type": SIZE, "karpenter.sh/capacity-type": "on-demand"},
                         taints=[{"key": COMPUTE_TAINT_KEY, "value": POOL, "effect": "NoSchedule"}])


def submit(api, **body):
    body = {"command": "python train.py", "compute": "azureml:gpu-cluster", "environment": {"image": IMAGE}, **body}
    return api.post(f"{BASE}/jobs/", body, format="json")


# --- submit ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("resources", [{}, {"instance_type": SIZE}, {"instance_type": "STANDARD_NC6S_V3"},
                                       {"instance_count": 2}])
def test_a_job_to_a_compute_cluster_is_accepted_on_its_size(api, cluster, resources):
    response = submit(api, name="train", resources=resources)
    assert response.status_code == 201, response.json()
    assert response.json()["placement"] == {"target": "kubernetes", "compute": "gpu-cluster", "instance_type": SIZE}
    assert response.json()["compute"] == "azureml:gpu-cluster"
    assert load("train").events.get().message == f"Submitted, to compute 'gpu-cluster' with instance type '{SIZE}'."


@pytest.mark.parametrize("resources, target, words", [
    ({"instance_type": "Standard_DS3_v2"}, "resources.instance_type",
     "Compute cluster 'gpu-cluster' runs Standard_NC6s_v3 nodes only"),
    ({"instance_type": "defaultinstancetype"}, "resources.instance_type", "leave instance_type out or give"),
    ({"instance_count": 3}, "resources.instance_count", "can never have 3 nodes (max_instances is 2)"),
])
def test_what_the_cluster_can_never_give_is_a_400_and_nothing_is_written(api, cluster, resources, target, words):
    before = counts()
    error = assert_error(submit(api, resources=resources), 400, "InvalidJob", target)
    assert words in error["details"][0]["message"]
    assert counts() == before


def test_a_compute_cluster_naming_no_kubernetes_compute_is_refused(api, cluster):
    ComputeTarget.objects.filter(pk=cluster.pk).update(properties={**cluster.properties, "kubernetes_compute": "gone"})
    error = assert_error(submit(api), 400, "InvalidJob", "compute")
    assert "names no kubernetes compute of this workspace to run on" in error["details"][0]["message"]


# --- reconcile -------------------------------------------------------------------------------------


def cluster_writes(fake) -> list:
    return [r for r in fake.requests.writes() if r.resource in ("jobs", "services", "pods", "secrets")]


def test_the_job_waits_queued_until_the_pool_is_declared_and_the_resync_submits_it(api, fake_kube, cluster, monkeypatch):
    assert submit(api, name="train").status_code == 201
    job = run_reconcile("train")
    assert (job.status, job.status_reason) == ("Queued", "Waiting for compute cluster 'gpu-cluster' to be ready (its "
                                                         "node pool is not declared yet); the job is submitted once it is.")
    assert not job.runner.get("submitted") and not cluster_writes(fake_kube)

    monkeypatch.setattr(tasks.reconcile_job, "delay", lambda pk, tick=False: tasks.reconcile_job.apply((pk,), {"tick": tick}))
    monkeypatch.setattr(tasks.observe_jobs, "delay", lambda *args: None)
    ComputeTarget.objects.filter(pk=cluster.pk).update(provisioning_state="Failed", provisioning_errors=[
        {"code": "NoAutoscaler", "message": "The cluster runs neither Karpenter nor Cluster API."}])
    assert tasks.resync_jobs() == 1  # held for its cluster: looked at again
    assert load("train").status_reason == ("Waiting for compute cluster 'gpu-cluster', which is Failed: The cluster "
                                           "runs neither Karpenter nor Cluster API. The job is submitted once the "
                                           "cluster is ready.")
    assert not cluster_writes(fake_kube)

    declare(cluster)
    tasks.resync_jobs()
    job = load("train")
    assert job.runner["submitted"] and job.status == "Queued"
    enqueued = []
    monkeypatch.setattr(tasks.reconcile_job, "delay", lambda pk, tick=False: enqueued.append(pk))
    tasks.resync_jobs()
    assert enqueued == []  # submitted: the observation loop follows it from here, not the resync


def test_the_pod_takes_one_whole_pool_node_and_tolerates_only_its_taint(api, fake_kube, cluster):
    declare(cluster)
    assert submit(api, name="dist", resources={"instance_count": 2}, distribution={"type": "pytorch"}).status_code == 201
    run_reconcile("dist")
    live = live_job(fake_kube, "dist")
    template = live["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {KARPENTER_POOL_LABEL: POOL, "node.kubernetes.io/instance-type": SIZE}
    assert template["spec"]["tolerations"] == [
        {"key": COMPUTE_TAINT_KEY, "operator": "Equal", "value": POOL, "effect": "NoSchedule"}]
    assert template["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"
    main = template["spec"]["containers"][0]
    whole_node = vmsizes.size_shape(SIZE).container_resources()
    assert main["resources"]["limits"]["nvidia.com/gpu"] == "1" == str(whole_node["limits"]["nvidia.com/gpu"])
    assert main["resources"]["requests"]["cpu"] == whole_node["requests"]["cpu"]
    assert (live["spec"]["completions"], live["spec"]["parallelism"]) == (2, 2)  # two nodes of the pool


def test_waiting_pods_say_what_the_pool_does_and_run_on_its_node(api, fake_kube, cluster):
    declare(cluster)
    fake_kube.plan_pods(run_seconds=5, logs="epoch 1\n")
    assert submit(api, name="train").status_code == 201
    compute = run_reconcile("train").compute
    fake_kube.advance(1)

    declare(cluster, target_node_count=1, scaling="scaling_up")
    observe(compute)
    job = load("train")
    assert (job.status, job.status_reason) == (
        "Queued", "Waiting for a node: compute cluster 'gpu-cluster' is adding a node (1 of at most 2 launching).")
    (scheduler,) = job.events.filter(reason="Unschedulable")
    assert scheduler.message.startswith("The scheduler: 0/3 nodes are available")  # its own words, kept
    observe(compute)
    assert load("train").events.filter(reason="Unschedulable").count() == 1  # once per message, not per look

    declare(cluster, autoscaler_errors=["Launching a Standard_NC6s_v3 node failed: InsufficientCapacity."])
    observe(compute)
    assert load("train").status_reason == ("Waiting for a node: compute cluster 'gpu-cluster' cannot add a node: "
                                           "Launching a Standard_NC6s_v3 node failed: InsufficientCapacity.")

    pool_node(fake_kube, "gpu-pool-node-0")
    declare(cluster, current_node_count=1, target_node_count=1)
    fake_kube.advance(1)
    observe(compute)
    assert load("train").status == "Running"
    (pod,) = pods_of(fake_kube, "train")
    node = fake_kube.get("nodes", pod["spec"]["nodeName"])
    assert node["metadata"]["labels"][KARPENTER_POOL_LABEL] == POOL
    fake_kube.advance(10)
    observe(compute)
    assert load("train").status == "Completed"


def test_a_job_that_does_not_tolerate_the_taint_stays_off_the_pool(api, fake_kube, cluster):
    """The pool's taint is what keeps other work off its nodes: a Kubernetes-compute job never lands there."""
    pool_node(fake_kube, "gpu-pool-node-0")
    for name in ("node-0", "node-1", "gpu-node-0"):
        fake_kube.taint_node(name, "busy", "yes")  # nothing else left for it
    body = {"command": "python train.py", "compute": "azureml:k8s", "environment": {"image": IMAGE}, "name": "other"}
    assert api.post(f"{BASE}/jobs/", body, format="json").status_code == 201
    compute = run_reconcile("other").compute
    fake_kube.advance(1)
    observe(compute)
    job = load("other")
    assert job.status == "Queued" and f"{COMPUTE_TAINT_KEY}={POOL}" in job.status_reason
    assert kube_job_name("team-a", "other") not in {p["metadata"]["labels"].get("dockyard.dev/job")
                                                    for p in fake_kube.list("pods", "default") if p["spec"].get("nodeName")}


# --- serverless --------------------------------------------------------------------------------------


def test_a_serverless_job_of_the_clusters_size_lands_on_it(api, fake_kube, cluster):
    declare(cluster)
    response = api.post(f"{BASE}/jobs/", {"name": "anywhere", "command": "python train.py", "environment": {"image": IMAGE},
                                          "resources": {"instance_type": "standard_nc6s_v3"}}, format="json")
    assert response.status_code == 201, response.json()
    job = run_reconcile("anywhere")
    assert (job.compute.name, job.instance_type, job.target) == ("gpu-cluster", SIZE, "serverless")
    assert job.events.get(reason="Placed").message == ("Serverless: placed on compute cluster 'gpu-cluster' "
                                                       "(can scale: 0 of 2 nodes).")
    template = live_job(fake_kube, "anywhere")["spec"]["template"]
    assert template["spec"]["nodeSelector"][KARPENTER_POOL_LABEL] == POOL
    placement = api.get(f"{BASE}/jobs/anywhere/").json()["placement"]
    assert placement == {"target": "serverless", "compute": "gpu-cluster", "instance_type": SIZE}
