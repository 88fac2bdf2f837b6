"""Managed deployments on the fake API server: the pods of a deployment placed on a compute cluster carry the pool's
node selector, toleration and do-not-disrupt annotation and run on the pool's node, never on another node of the size;
the endpoint's route lives on the attachment. Reconcile runs by hand, the fake's clock moves the rollout on."""
import pytest

from compute import pools
from compute import reconcile as compute_reconcile
from compute.models import ComputeTarget
from compute.tests.factories import create_compute
from controlplane.kube import client as kube
from endpoints import reconcile
from endpoints.manifests import deployment_object_name
from endpoints.models import OnlineDeployment, OnlineEndpoint

WS = "team-a"
BASE = f"/api/v1/workspaces/{WS}/online-endpoints"
DS3 = "Standard_DS3_v2"
SIZE_LABEL = "node.kubernetes.io/instance-type"
RELATED = ("endpoint", "endpoint__workspace", "endpoint__compute", "endpoint__compute__cluster")


@pytest.fixture(autouse=True)
def fresh_kube_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


@pytest.fixture
def fake(owner_api, workspace, fake_kube):
    """The fake cluster attached as Kubernetes compute `k8s` (namespace default)."""
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml()}
    assert owner_api.post(f"/api/v1/workspaces/{WS}/computes/", body, format="json").status_code == 201
    compute_reconcile.reconcile_compute(ComputeTarget.objects.get(name="k8s"))
    assert ComputeTarget.objects.get(name="k8s").provisioning_state == "Succeeded"
    return fake_kube


def compute_cluster(workspace, owner, name: str = "cpu-cluster", *, engine: str = pools.KARPENTER, nodes: int = 0) -> str:
    """A compute cluster on `k8s` as its reconcile leaves it (the pool declared); returns the pool's name."""
    compute = create_compute(workspace, owner, "amlcompute", name=name, size=DS3, max_instances=2)
    pool = pools.pool_name(workspace.name, name)
    compute.properties = {**compute.properties, "kubernetes_compute": "k8s"}
    compute.status = {"engine": engine, "pool": pool, "current_node_count": nodes, "target_node_count": nodes,
                      "idle_node_count": nodes, "max_node_count": 2, "scaling": "steady", "autoscaler_errors": [], "nodes": []}
    compute.save(update_fields=["properties", "status"])
    return pool


def deploy(api, **fields) -> dict:
    response = api.post(f"{BASE}/", {"name": "adder", "auth_mode": "key"}, format="json")
    assert response.status_code == 201, response.json()
    body = {"name": "blue", "instance_type": DS3, "instance_count": 1, "model": {"path": "/var/azureml-app/models/adder"},
            "environment": {"image": "registry.example.com/adder:1"},
            "code_configuration": {"code": "/var/azureml-app/adder", "scoring_script": "score.py"}, **fields}
    response = api.post(f"{BASE}/adder/deployments/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def look() -> OnlineDeployment:
    row = OnlineDeployment.objects.select_related(*RELATED).get(name="blue", endpoint__name="adder")
    reconcile.reconcile_deployment(row)
    return OnlineDeployment.objects.get(pk=row.pk)


def pods_of(fake) -> list[dict]:
    name = deployment_object_name(WS, "adder", "blue")
    return [pod for pod in fake.list("pods", "default")
            if pod["metadata"].get("labels", {}).get("dockyard.dev/online-deployment") == name]


def test_a_managed_deployment_runs_on_its_pool_node_only(owner_api, workspace, owner, fake):
    pool = compute_cluster(workspace, owner, nodes=1)
    taint = pools.pool_toleration(pool)
    fake.add_node("pool-node", cpu="4", memory="16Gi", labels={SIZE_LABEL: DS3, pools.KARPENTER_POOL_LABEL: pool},
                  taints=[{key: taint[key] for key in ("key", "value", "effect")}])
    fake.add_node("plain-ds3", cpu="4", memory="16Gi", labels={SIZE_LABEL: DS3})  # the size, but no pool's node
    assert deploy(owner_api)["placement"]["pool"] == pool
    row = look()
    template = fake.get("deployments", deployment_object_name(WS, "adder", "blue"), "default", group="apps")["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {SIZE_LABEL: DS3, pools.KARPENTER_POOL_LABEL: pool}
    assert template["spec"]["tolerations"] == [taint]
    assert template["metadata"]["annotations"] == pools.DO_NOT_DISRUPT
    assert row.manifests == reconcile.kubernetes.render(row)
    fake.advance(2)
    row = look()
    assert row.provisioning_state == "Succeeded", (row.provisioning_state, row.status)
    [pod] = pods_of(fake)
    assert pod["spec"]["nodeName"] == "pool-node"


def test_without_a_pool_node_the_deployment_waits_saying_why(owner_api, workspace, owner, fake):
    compute_cluster(workspace, owner)
    deploy(owner_api)
    look()
    fake.advance(2)
    row = look()
    assert row.provisioning_state == "Creating"
    assert row.status["state"] == "RollingOut" and "karpenter.sh/nodepool" in row.status["reason"], row.status


def test_the_endpoint_routes_on_the_attachment_its_first_deployment_fixed(owner_api, workspace, owner, fake):
    compute_cluster(workspace, owner)
    deploy(owner_api)
    endpoint = OnlineEndpoint.objects.select_related("workspace", "compute", "compute__cluster").get(name="adder")
    assert endpoint.compute.name == "k8s" and endpoint.provisioning_state == "Updating"
    reconcile.reconcile_endpoint(endpoint)
    endpoint.refresh_from_db()
    assert endpoint.provisioning_state == "Succeeded"
    assert endpoint.status["route"]["state"] == "Unavailable"  # the fake has no Gateway API until installed


def test_a_deployment_whose_compute_cluster_is_gone_says_so_and_is_placed_anew_when_sent_again(owner_api, workspace, owner,
                                                                                                fake):
    compute_cluster(workspace, owner)
    shown = deploy(owner_api)
    ComputeTarget.objects.filter(name="cpu-cluster").update(provisioning_state="Deleting")
    compute_cluster(workspace, owner, "other-cluster")
    row = look()
    assert "Compute cluster 'cpu-cluster' this deployment was placed on is gone" in row.status["reason"], row.status
    response = owner_api.patch(f"{BASE}/adder/deployments/blue", shown, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["placement"]["compute"] == "other-cluster"


def nodepool(pool: str) -> dict:
    """A minimal valid karpenter.sh/v1 NodePool for the pool, as the compute cluster's reconcile declares one."""
    taint = pools.pool_toleration(pool)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": pool}, "spec": {
        "template": {"metadata": {"labels": {pools.COMPUTE_TAINT_KEY: pool}}, "spec": {
            "nodeClassRef": {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"},
            "requirements": [{"key": SIZE_LABEL, "operator": "In", "values": [DS3]},
                             {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            "taints": [{key: taint[key] for key in ("key", "value", "effect")}], "expireAfter": "Never"}},
        "limits": {"nodes": "2"}, "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "120s"}}}


def test_a_managed_deployment_lands_on_a_node_karpenter_launches_for_its_pool(owner_api, workspace, owner, fake):
    fake.install_karpenter(launch_seconds=30)
    pool = compute_cluster(workspace, owner)
    fake.create(nodepool(pool))
    fake.create(nodepool(pools.pool_name("team-b", "cpu-cluster")))  # another workspace's pool of the size: not ours
    assert deploy(owner_api, instance_count=2)["placement"]["capacity"] == "can_scale"
    row = look()
    assert row.status["state"] == "RollingOut"
    claims = fake.list("nodeclaims", group="karpenter.sh")
    assert len(claims) == 2 and {claim["metadata"]["labels"]["karpenter.sh/nodepool"] for claim in claims} == {pool}
    fake.advance(30)  # the nodes come up; the pods bind and start
    fake.advance(2)
    row = look()
    assert row.provisioning_state == "Succeeded", (row.provisioning_state, row.status)
    nodes = {node["metadata"]["name"]: node["metadata"]["labels"] for node in fake.list("nodes")}
    placed = [pod["spec"]["nodeName"] for pod in pods_of(fake)]
    assert len(set(placed)) == 2  # one whole node per instance
    for name in placed:
        assert nodes[name][pools.KARPENTER_POOL_LABEL] == pool and nodes[name][SIZE_LABEL] == DS3
