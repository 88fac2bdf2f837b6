"""Compute clusters on the fake API server, through the real kubernetes client: the pool objects applied (the fake's
Karpenter and Cluster API CRDs validate them), the status read back, drift, deletion, and a steady pass that writes
nothing."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from compute import pools, reconcile, tasks
from compute.connections import connection_for
from compute.manifests import PLACEHOLDER_PRIORITY_CLASS
from compute.models import ComputeTarget
from compute.services import compute_delete, compute_update
from controlplane.kube import client as kube
from controlplane.reconciling import ProvisioningState
from tests.support import assert_error

BASE = "/api/v1/workspaces/team-a/computes"
KARPENTER = "karpenter.sh"
CAPI_GROUP = "cluster.x-k8s.io"
POOL = pools.pool_name("team-a", "gpu-cluster")
CLUSTER_API = {
    "cluster_name": "dev", "namespace": "default", "version": "v1.36.0",
    "bootstrap_config_template": {"api_group": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "boot"},
    "infrastructure_templates": {"Standard_NC6s_v3": {"api_group": "infrastructure.cluster.x-k8s.io",
                                                      "kind": "AzureMachineTemplate", "name": "nc6s"}},
}


@pytest.fixture(autouse=True)
def fresh_kube_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


def attach(api, fake_kube, **fields) -> ComputeTarget:
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml(), "namespace": "default", **fields}
    assert api.post(f"{BASE}/", body, format="json").status_code == 201
    host = ComputeTarget.objects.get(name="k8s")
    reconcile.reconcile_compute(host)
    host.refresh_from_db()
    assert host.provisioning_state == ProvisioningState.SUCCEEDED, host.provisioning_errors
    return host


def cluster(api, name="gpu-cluster", **fields) -> ComputeTarget:
    body = {"name": name, "type": "amlcompute", "size": "Standard_NC6s_v3", "max_instances": 4, **fields}
    response = api.post(f"{BASE}/", body, format="json")
    assert response.status_code == 201, response.json()
    return run(ComputeTarget.objects.get(name=name))


def run(compute: ComputeTarget) -> ComputeTarget:
    reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
    compute.refresh_from_db()
    return compute


def observe(compute: ComputeTarget) -> ComputeTarget:
    """One tick of the periodic observation, as its task runs it."""
    host = ComputeTarget.objects.get(workspace=compute.workspace, name=compute.properties["kubernetes_compute"])
    tasks.observe_batch(host.pk, [compute.pk])
    compute.refresh_from_db()
    return compute


def nodepool(fake_kube, name=POOL) -> dict | None:
    return fake_kube.get("nodepools", name, group=KARPENTER)


@pytest.fixture
def karpenter(owner_api, workspace, fake_kube):
    fake_kube.install_karpenter()
    return attach(owner_api, fake_kube)


def test_a_compute_cluster_is_a_nodepool_on_its_attachment(owner_api, karpenter, fake_kube):
    compute = cluster(owner_api, tier="low_priority", idle_time_before_scale_down=300)
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    assert compute.cluster_id == karpenter.cluster_id
    spec = nodepool(fake_kube)["spec"]  # stored: the fake's CRD schema and rules accepted it
    assert spec["limits"] == {"nodes": "4"}
    assert spec["disruption"]["consolidationPolicy"] == "WhenEmpty" and spec["disruption"]["consolidateAfter"] == "300s"
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]} in spec["template"]["spec"]["requirements"]
    assert compute.status == {
        "engine": "karpenter", "pool": POOL, "current_node_count": 0, "target_node_count": 0, "idle_node_count": 0,
        "max_node_count": 4, "scaling": "steady", "autoscaler_errors": [], "nodes": []}


def test_the_api_shows_the_status_and_the_host(owner_api, karpenter, fake_kube):
    cluster(owner_api)
    shown = owner_api.get(f"{BASE}/gpu-cluster/").json()
    assert shown["kubernetes_compute"] == "k8s" and shown["backend"] is None
    assert (shown["status"]["current_node_count"], shown["status"]["target_node_count"], shown["status"]["idle_node_count"]) == (0, 0, 0)


def test_node_counts_and_idle_nodes_come_from_the_pool_nodes_and_dockyard_pods(owner_api, karpenter, fake_kube):
    compute = cluster(owner_api)
    for name in ("pool-a", "pool-b"):
        fake_kube.add_node(name, labels={pools.KARPENTER_POOL_LABEL: POOL})
    fake_kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "train-0", "namespace": "default",
        "labels": {"app.kubernetes.io/managed-by": "dockyard", "dockyard.dev/kind": "job"}},
        "spec": {"nodeName": "pool-a", "containers": [{"name": "main", "image": "busybox"}]}})
    fake_kube.settle()
    status = observe(compute).status
    assert (status["current_node_count"], status["target_node_count"], status["idle_node_count"]) == (2, 2, 1)
    assert status["nodes"] == [{"name": "pool-a", "ready": True, "idle": False}, {"name": "pool-b", "ready": True, "idle": True}]


def test_without_an_autoscaler_the_compute_cluster_fails_saying_so_and_recovers_at_resync(owner_api, workspace, fake_kube):
    attach(owner_api, fake_kube)
    compute = cluster(owner_api)
    assert compute.provisioning_state == ProvisioningState.FAILED
    (error,) = compute.provisioning_errors
    assert error["code"] == "NoAutoscaler" and "neither Karpenter" in error["message"]
    fake_kube.install_karpenter()
    assert run(compute).provisioning_state == ProvisioningState.SUCCEEDED  # what the resync's recheck does
    assert nodepool(fake_kube) is not None


def test_an_attachment_that_failed_its_checks_fails_its_compute_clusters(owner_api, karpenter, fake_kube):
    ComputeTarget.objects.filter(pk=karpenter.pk).update(provisioning_state=ProvisioningState.FAILED, provisioning_errors=[
        {"code": "Unauthorized", "message": "The cluster refused the credentials (401)."}])
    compute = cluster(owner_api)
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.provisioning_errors[0]["code"] == "HostNotReady"
    assert "'k8s' is Failed: The cluster refused the credentials (401)." in compute.provisioning_errors[0]["message"]


def test_min_instances_are_held_by_a_placeholder_that_goes_with_min_zero(owner_api, owner, karpenter, fake_kube):
    compute = cluster(owner_api, min_instances=2)
    placeholder = fake_kube.get("deployments", POOL, "default", group="apps")
    assert placeholder["spec"]["replicas"] == 2
    assert placeholder["spec"]["template"]["spec"]["priorityClassName"] == PLACEHOLDER_PRIORITY_CLASS
    assert fake_kube.get("priorityclasses", PLACEHOLDER_PRIORITY_CLASS, group="scheduling.k8s.io")["value"] < 0
    compute_update(user=owner, compute=compute, patch={"min_instances": 0})
    run(compute)
    fake_kube.advance(1)  # a Deployment goes once its pods have (foreground deletion)
    assert fake_kube.get("deployments", POOL, "default", group="apps") is None


def test_a_nodepool_deleted_or_edited_behind_dockyards_back_is_applied_again(owner_api, karpenter, fake_kube):
    compute = cluster(owner_api)
    fake_kube.delete("nodepools", POOL, group=KARPENTER)
    fake_kube.settle()
    observe(compute)
    assert nodepool(fake_kube)["spec"]["limits"] == {"nodes": "4"}
    path = f"/apis/karpenter.sh/v1/nodepools/{POOL}"
    kube.request(connection_for(karpenter), "PATCH", path, query=[("fieldManager", "kubectl-edit")], body={"spec": {"limits": {"nodes": "99"}}},
                 content_type="application/merge-patch+json")
    assert nodepool(fake_kube)["spec"]["limits"] == {"nodes": "99"}
    observe(compute)
    assert nodepool(fake_kube)["spec"]["limits"] == {"nodes": "4"}


def test_a_steady_pass_writes_nothing(owner_api, karpenter, fake_kube):
    compute = cluster(owner_api)
    observe(compute)
    with CaptureQueriesContext(connection) as queries:
        observe(compute)
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(("UPDATE", "INSERT", "DELETE"))]
    assert writes == []


def test_deleting_a_compute_cluster_removes_its_pool_then_the_row(owner_api, owner, karpenter, fake_kube):
    compute = cluster(owner_api, min_instances=1)
    compute_delete(user=owner, compute=compute)
    with pytest.raises(kube.KubeTransient, match="being deleted"):  # the task retries until the objects are gone
        reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
    assert ComputeTarget.objects.filter(pk=compute.pk).exists()
    fake_kube.advance(1)
    reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
    assert nodepool(fake_kube) is None and fake_kube.get("deployments", POOL, "default", group="apps") is None
    assert not ComputeTarget.objects.filter(pk=compute.pk).exists()


def test_an_attachment_cannot_be_deleted_while_compute_clusters_live_on_it(owner_api, karpenter, fake_kube):
    cluster(owner_api)
    cluster(owner_api, name="cpu-cluster", size="Standard_DS3_v2")
    response = owner_api.delete(f"{BASE}/k8s/")
    error = assert_error(response, 400, "ComputeInUse", "name")
    assert "cpu-cluster, gpu-cluster" in error["message"]


def test_under_cluster_api_a_compute_cluster_is_a_machinedeployment(owner_api, workspace, fake_kube):
    fake_kube.install_cluster_api()
    attach(owner_api, fake_kube, cluster_api=CLUSTER_API)
    compute = cluster(owner_api, min_instances=1)
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    deployment = fake_kube.get("machinedeployments", POOL, "default", group=CAPI_GROUP)
    annotations = deployment["metadata"]["annotations"]
    assert annotations["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] == "4"
    assert annotations["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] == "1"
    assert compute.status["engine"] == "cluster-api"


def test_cluster_api_without_settings_fails_saying_what_to_add(owner_api, workspace, fake_kube):
    fake_kube.install_cluster_api()
    attach(owner_api, fake_kube)
    compute = cluster(owner_api)
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert "no cluster_api settings" in compute.provisioning_errors[0]["message"]


# --- with the fake's Karpenter at work: a job's pod on the pool brings a node, the node goes when idle -------------

def job_pod(fake_kube, name: str, size: str = "Standard_NC6s_v3") -> dict:
    """A pod placed on the pool as a job's is (the pool's selector, toleration, one node's shape), labelled as one."""
    shape = pools.pool_shape(size, pools.KARPENTER, POOL)
    spec = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "resources": shape.container_resources()}]}
    metadata = {"name": name, "namespace": "default",
                "labels": {"app.kubernetes.io/managed-by": "dockyard", "dockyard.dev/kind": "job"}}
    shape.pod_placement(spec, metadata)
    return fake_kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def counts(compute) -> tuple:
    status = observe(compute).status
    return status["current_node_count"], status["target_node_count"], status["idle_node_count"], status["scaling"]


def test_a_pod_on_the_pool_scales_it_up_and_the_idle_node_goes_after_the_idle_time(owner_api, workspace, fake_kube):
    fake_kube.install_karpenter(launch_seconds=30)
    attach(owner_api, fake_kube)
    compute = cluster(owner_api, max_instances=1, idle_time_before_scale_down=60)
    job_pod(fake_kube, "train-0")
    fake_kube.settle()
    assert counts(compute) == (0, 1, 0, "scaling_up")  # a NodeClaim, its node not registered yet
    fake_kube.advance(31)
    assert counts(compute) == (1, 1, 0, "steady")  # the job runs on it
    fake_kube.finish_pod("default", "train-0")
    fake_kube.settle()
    assert counts(compute) == (1, 1, 1, "steady")
    fake_kube.advance(61)
    assert counts(compute) == (0, 0, 0, "steady")


def test_max_instances_hold_the_pool_at_its_limit(owner_api, workspace, fake_kube):
    fake_kube.install_karpenter(launch_seconds=1)
    attach(owner_api, fake_kube)
    compute = cluster(owner_api, max_instances=1)
    job_pod(fake_kube, "train-0"), job_pod(fake_kube, "train-1")
    fake_kube.advance(2)
    assert counts(compute) == (1, 1, 0, "at_limit")
    assert len([node for node in fake_kube.list("nodes") if node["metadata"]["labels"].get(pools.KARPENTER_POOL_LABEL)]) == 1


def test_launches_the_cloud_refuses_are_the_autoscalers_errors(owner_api, workspace, fake_kube):
    fake_kube.install_karpenter(launch_seconds=1)
    attach(owner_api, fake_kube)
    compute = cluster(owner_api)
    fake_kube.fail_launches(POOL, reason="InsufficientCapacity", message="no Standard_NC6s_v3 in eastus")
    job_pod(fake_kube, "train-0")
    fake_kube.settle()
    (error,) = observe(compute).status["autoscaler_errors"]
    assert "(InsufficientCapacity): no Standard_NC6s_v3 in eastus" in error


def test_the_placeholder_holds_a_node_until_a_job_preempts_it(owner_api, workspace, fake_kube):
    fake_kube.install_karpenter(launch_seconds=1)
    attach(owner_api, fake_kube)
    compute = cluster(owner_api, min_instances=1, max_instances=2)
    fake_kube.advance(2)
    assert counts(compute) == (1, 1, 1, "steady")  # kept by the placeholder, idle for Dockyard's work
    job_pod(fake_kube, "train-0")
    fake_kube.advance(2)
    fake_kube.advance(2)
    status = observe(compute).status
    assert (status["current_node_count"], status["idle_node_count"]) == (2, 1)  # the job took one, the placeholder moved
    placeholders = [pod for pod in fake_kube.list("pods", "default") if pod["metadata"]["labels"].get("dockyard.dev/placeholder")]
    assert [pod["status"]["phase"] for pod in placeholders] == ["Running"]


def test_under_cluster_api_the_autoscaler_scales_the_machinedeployment_for_a_pod_on_the_pool(owner_api, workspace, fake_kube):
    fake_kube.install_cluster_api(launch_seconds=30)
    attach(owner_api, fake_kube, cluster_api=CLUSTER_API)
    compute = cluster(owner_api, max_instances=2)
    shape = pools.pool_shape("Standard_NC6s_v3", pools.CLUSTER_API, POOL)
    spec = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "resources": shape.container_resources()}]}
    metadata = {"name": "train-0", "namespace": "default", "labels": {"app.kubernetes.io/managed-by": "dockyard", "dockyard.dev/kind": "job"}}
    shape.pod_placement(spec, metadata)
    fake_kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    fake_kube.settle()
    assert counts(compute) == (0, 1, 0, "scaling_up")
    fake_kube.advance(31)
    current, target, idle, _ = counts(compute)
    assert (current, idle) == (1, 0) and target >= 1  # target: the replicas the autoscaler set (the fake's may overshoot)
    node = fake_kube.get("pods", "train-0", "default")["spec"]["nodeName"]
    assert fake_kube.get("nodes", node)["metadata"]["labels"][pools.CAPI_POOL_LABEL] == POOL
