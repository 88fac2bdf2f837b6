"""Managed endpoints and deployments through the API: placed on a compute cluster of the VM size (or a Kubernetes compute
whose nodes fit it), the placement shown, the endpoint fixed on one attachment; refusals name the field, write nothing."""
import pytest

from compute import pools, vmsizes
from compute.models import ComputeTarget
from compute.tests.factories import as_checked, create_compute, kubeconfig
from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.tests.bodies import kube_deployment
from endpoints.tests.support import BASE, assert_refused, state

pytestmark = pytest.mark.django_db
DS3, F4 = "Standard_DS3_v2", "Standard_F4s_v2"


def compute_cluster(workspace, owner, name: str, size: str = DS3, host: str = "k8s", *, idle: int = 0, current: int = 0,
                    max_instances: int = 4, pool: bool = True) -> ComputeTarget:
    """A compute cluster as its reconcile leaves it (the pool declared on `host`), without a cluster behind it."""
    compute = create_compute(workspace, owner, "amlcompute", name=name, size=size, max_instances=max_instances,
                             kubernetes_compute=host)
    compute.status = {"engine": pools.KARPENTER, "pool": pools.pool_name(workspace.name, name), "current_node_count": current,
                      "target_node_count": current, "idle_node_count": idle, "max_node_count": max_instances,
                      "scaling": "steady", "autoscaler_errors": [], "nodes": []} if pool else {}
    compute.save(update_fields=["status"])
    return compute


def managed_endpoint(api, name: str = "my-ep") -> dict:
    response = api.post(f"{BASE}/", {"name": name, "auth_mode": "key"}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def managed_deployment(name: str = "blue", **fields) -> dict:
    return kube_deployment(name, **{"instance_type": DS3, "instance_count": 1, **fields})


def post(api, body: dict, endpoint: str = "my-ep"):
    return api.post(f"{BASE}/{endpoint}/deployments/", body, format="json")


def test_an_endpoint_without_compute_is_managed_and_waits_for_its_first_deployment(api, k8s):
    body = managed_endpoint(api)
    assert body["compute"] is None
    assert body["placement"]["kubernetes_compute"] is None and "first deployment" in body["placement"]["reason"]
    assert OnlineEndpoint.objects.get(name="my-ep").compute_id is None


def test_a_managed_deployment_is_placed_on_a_compute_cluster_of_its_size(api, workspace, owner, k8s):
    compute_cluster(workspace, owner, "cpu-cluster", idle=1, current=1)
    compute_cluster(workspace, owner, "f4-cluster", F4, idle=1, current=1)
    managed_endpoint(api)
    response = post(api, managed_deployment(instance_type="STANDARD_DS3_V2"))
    assert response.status_code == 201, response.json()
    body = response.json()
    pool = pools.pool_name(workspace.name, "cpu-cluster")
    assert body["instance_type"] == DS3
    assert {key: value for key, value in body["placement"].items() if key != "reason"} == {
        "compute": "cpu-cluster", "compute_type": "amlcompute", "kubernetes_compute": "k8s", "instance_type": DS3,
        "capacity": "fits_now", "engine": "karpenter", "pool": pool}
    assert body["placement"]["reason"].startswith(f"Managed: placed on compute cluster 'cpu-cluster' ({DS3}, karpenter pool {pool})")
    assert body["resources"] == vmsizes.size_shape(DS3).container_resources()  # one whole node
    endpoint = api.get(f"{BASE}/my-ep").json()
    assert endpoint["compute"] is None
    assert endpoint["placement"]["kubernetes_compute"] == "k8s" and endpoint["placement"]["fixed_by"] == "blue"
    assert OnlineEndpoint.objects.get(name="my-ep").compute == k8s  # its route and Services live there
    assert api.get(f"{BASE}/my-ep/deployments/blue").json()["placement"]["compute"] == "cpu-cluster"


def test_later_deployments_stay_on_the_endpoint_attachment(api, workspace, owner, k8s):
    other = as_checked(create_compute(workspace, owner, "kubernetes", name="k8s-2", kubeconfig=kubeconfig(server="https://10.0.0.2:6443")))
    compute_cluster(workspace, owner, "cpu-cluster", host="k8s")
    compute_cluster(workspace, owner, "f4-there", F4, host=other.name, idle=1, current=1)
    managed_endpoint(api)
    assert post(api, managed_deployment()).status_code == 201
    before = state()
    response = post(api, managed_deployment("green", instance_type=F4))
    assert_refused(response, "NoPlacement", ["instance_type"], before)
    message = response.json()["error"]["details"][0]["message"]
    assert f"No compute cluster of size {F4} in workspace 'team-a' on Kubernetes compute 'k8s'" in message
    assert f"`type: amlcompute, size: {F4}, kubernetes_compute: k8s`" in message
    compute_cluster(workspace, owner, "f4-here", F4, host="k8s")
    response = post(api, managed_deployment("green", instance_type=F4))
    assert response.status_code == 201, response.json()
    assert response.json()["placement"]["compute"] == "f4-here"


def test_a_kubernetes_compute_whose_nodes_fit_the_size_takes_it_when_no_cluster_does(api, k8s):
    cluster = k8s.cluster
    cluster.nodes = [{"name": "ds3-node", "labels": {"node.kubernetes.io/instance-type": DS3}, "taints": [], "ready": True,
                      "allocatable": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 0},
                      "capacity_units": {"millicores": 4000, "memory_bytes": 16 * 2**30}}]
    cluster.save(update_fields=["nodes"])
    managed_endpoint(api)
    response = post(api, managed_deployment())
    assert response.status_code == 201, response.json()
    placement = response.json()["placement"]
    assert (placement["compute"], placement["compute_type"], placement["capacity"]) == ("k8s", "kubernetes", "fits_nodes")
    assert "pool" not in placement and "ds3-node" in placement["reason"]


@pytest.mark.parametrize("fields, code, target, words", [
    pytest.param({}, "NoPlacement", "instance_type",
                 f"No compute cluster of size {DS3} in workspace 'team-a' can take this deployment; compute clusters: "
                 f"'f4' ({F4}, on 'k8s'), 'waiting' ({DS3}, not ready: no pool yet)", id="no-cluster-of-the-size"),
    pytest.param({"instance_type": "cpusmall"}, "InvalidDeployment", "instance_type", "not a VM size", id="not-a-size"),
    pytest.param({"instance_type": None}, "InvalidDeployment", "instance_type", "needs instance_type", id="no-size"),
    pytest.param({"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}, "InvalidDeployment", "resources",
                 "one whole node", id="resources"),
    pytest.param({"scale_settings": {"type": "target_utilization"}}, "InvalidDeployment", "scale_settings.type",
                 "instance_count", id="autoscale"),
    pytest.param({"egress_public_network_access": "enabled"}, "InvalidDeployment", "egress_public_network_access",
                 "network policies", id="egress"),
    pytest.param({"environment": None}, "InvalidDeployment", "environment.image", "container", id="no-image"),
])
def test_refused_managed_deployments_write_nothing(api, workspace, owner, k8s, fields, code, target, words):
    compute_cluster(workspace, owner, "f4", F4)
    compute_cluster(workspace, owner, "waiting", DS3, pool=False)
    managed_endpoint(api)
    before = state()
    response = post(api, managed_deployment(**fields))
    assert_refused(response, code, [target], before)
    assert words in response.json()["error"]["details"][0]["message"]
    assert OnlineEndpoint.objects.get(name="my-ep").compute_id is None  # not fixed on anything


def test_an_update_keeps_the_placement_unless_the_size_changes(api, workspace, owner, k8s):
    compute_cluster(workspace, owner, "cpu-cluster")
    compute_cluster(workspace, owner, "f4-cluster", F4)
    managed_endpoint(api)
    assert post(api, managed_deployment()).status_code == 201
    compute_cluster(workspace, owner, "busy-ds3", idle=2, current=2)  # would rank first now
    response = api.patch(f"{BASE}/my-ep/deployments/blue", {"instance_count": 2}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["placement"]["compute"] == "cpu-cluster"
    response = api.patch(f"{BASE}/my-ep/deployments/blue", {"instance_type": F4}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["placement"]["compute"], response.json()["instance_type"]) == ("f4-cluster", F4)
    assert OnlineDeployment.objects.get(name="blue").generation == 3


def test_a_shown_managed_endpoint_and_deployment_post_back_unchanged(api, workspace, owner, k8s):
    compute_cluster(workspace, owner, "cpu-cluster")
    managed_endpoint(api)
    shown = post(api, managed_deployment()).json()
    response = api.patch(f"{BASE}/my-ep/deployments/blue", shown, format="json")
    assert response.status_code == 200, response.json()
    assert OnlineDeployment.objects.get(name="blue").generation == 1
    endpoint = api.get(f"{BASE}/my-ep").json()
    response = api.patch(f"{BASE}/my-ep", {**endpoint, "traffic": {"blue": 100}}, format="json")
    assert response.status_code == 200, response.json()


def test_deployment_list_queries_stay_bounded(api, workspace, owner, k8s, django_assert_max_num_queries):
    for index in range(3):
        compute_cluster(workspace, owner, f"cluster-{index}")
    managed_endpoint(api)
    for name in ("blue", "green", "red"):
        assert post(api, managed_deployment(name)).status_code == 201
    with django_assert_max_num_queries(8):
        response = api.get(f"{BASE}/my-ep/deployments/")
    assert sorted(row["placement"]["compute"] for row in response.json()["results"]) == ["cluster-0"] * 3


def test_the_studio_shows_where_a_managed_endpoint_and_its_deployments_run(api, workspace, owner, k8s):
    from django.test import Client
    from django.urls import reverse

    compute_cluster(workspace, owner, "cpu-cluster", idle=1, current=1)
    managed_endpoint(api)
    client = Client()
    client.force_login(owner)
    page = client.get(reverse("frontend:endpoint", args=[workspace.name, "my-ep"])).content.decode()
    assert "managed" in page and "not placed yet" in page
    form = client.get(reverse("frontend:deployment-create", args=[workspace.name, "my-ep"])).content.decode()
    assert f'value="{DS3}"' in form and "none (local)" not in form
    assert post(api, managed_deployment()).status_code == 201
    page = client.get(reverse("frontend:endpoint", args=[workspace.name, "my-ep"])).content.decode()
    assert 'id="endpoint-placement"' in page and "on Kubernetes compute" in page
    assert 'data-placement="cpu-cluster"' in page and "Managed: placed on compute cluster &#x27;cpu-cluster&#x27;" in page


def test_a_compute_cluster_serving_a_managed_deployment_cannot_be_deleted(api, workspace, owner, k8s):
    cluster = compute_cluster(workspace, owner, "cpu-cluster", idle=1, current=1)
    compute_cluster(workspace, owner, "spare", idle=1, current=1)
    managed_endpoint(api)
    assert post(api, managed_deployment()).status_code == 201
    response = api.delete("/api/v1/workspaces/team-a/computes/cpu-cluster/")
    assert response.status_code == 409, response.json()
    assert "my-ep/blue" in response.json()["error"]["message"]
    cluster.refresh_from_db()
    assert cluster.provisioning_state != "Deleting"
    assert api.delete("/api/v1/workspaces/team-a/computes/spare/").status_code == 202
