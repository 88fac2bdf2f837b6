"""Issue 9, finding 2, replayed end to end: attaching a cluster by URL alone must not hand over another team's cluster.

REST API, a real Celery worker on Redis and the fake kube-apiserver, which authenticates every bearer token: workspace
A attaches it with a good token and makes instance types; user B (any user may make a workspace in development mode)
attaches the same server URL with a junk token and then tries to list, change and delete A's instance types.
"""
import pytest

from compute.models import Cluster, ComputeTarget, InstanceType
from compute.tasks import resync
from conftest import client_for
from tests.e2e_support import BASE, attach, crs, fresh_client_state, in_process_worker, settled, wait_for
from tests.support import assert_error
from workspaces.services import workspace_create

B_BASE = "/api/v1/workspaces/team-b/computes"
SMALL = {"name": "small", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}}
B_TOKEN = "team-b-own-valid-token"


@pytest.fixture
def fake(make_fake_kube):
    kube = make_fake_kube(seed=5)
    kube.add_token(B_TOKEN, "team-b")  # B's own account on the same cluster, for the allowed case
    fresh_client_state(kube)
    yield kube
    fresh_client_state(kube)


@pytest.fixture
def worker(transactional_db, fake):
    with in_process_worker():
        yield


@pytest.fixture
def a_with_instance_types(worker, owner_api, workspace, fake):
    """Workspace A (team-a) attached with the cluster's admin token, with one instance type in the cluster."""
    attach(owner_api, fake)
    assert owner_api.post(f"{BASE}/k8s/instancetypes/", SMALL, format="json").status_code == 201
    wait_for(lambda: "small" in crs(fake) and settled(["small"]), what="A's CR")
    return crs(fake)["small"]


@pytest.fixture
def b_api(make_user):
    mallory = make_user("mallory")
    workspace_create(user=mallory, name="team-b", display_name="Team B")
    return client_for(mallory)


def attach_as_b(b_api, fake, token: str, name: str = "stolen") -> dict:
    body = {"name": name, "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml(token=token)}
    assert b_api.post(f"{B_BASE}/", body, format="json").status_code == 201

    def checked():
        row = b_api.get(f"{B_BASE}/{name}/").json()
        return row if row["provisioning_state"] in ("Succeeded", "Failed") else None

    return wait_for(checked, what=f"B's check of {name}")


def test_a_junk_token_for_the_same_url_sees_and_changes_nothing(a_with_instance_types, b_api, fake):
    before = a_with_instance_types
    row = attach_as_b(b_api, fake, token="junk-token")
    assert row["provisioning_state"] == "Failed"
    assert row["provisioning_errors"] == [{"code": "Unauthorized", "message": "The cluster refused the credentials (401)."}]
    assert ComputeTarget.objects.get(name="stolen").cluster_id is None
    fake.requests.clear()

    listed = b_api.get(f"{B_BASE}/stolen/instancetypes/").json()["results"]
    assert [item["name"] for item in listed] == ["defaultinstancetype"]  # nothing of A's cluster
    assert b_api.get(f"{B_BASE}/stolen/nodes/").json()["results"] == []
    assert b_api.get(f"{B_BASE}/stolen/instancetypes/small/").status_code == 404
    change = {"resources": {"limits": {"cpu": "4"}}}
    for response in (
        b_api.patch(f"{B_BASE}/stolen/instancetypes/small/", change, format="json"),
        b_api.put(f"{B_BASE}/stolen/instancetypes/small/", SMALL, format="json"),
        b_api.delete(f"{B_BASE}/stolen/instancetypes/small/"),
        b_api.post(f"{B_BASE}/stolen/instancetypes/", {**SMALL, "name": "mine"}, format="json"),
    ):
        assert "has not passed its checks" in assert_error(response, 409, "Conflict")["message"]

    resync.delay()  # the periodic resync rechecks B (still refused) and syncs A's cluster with A's credentials only
    wait_for(lambda: fake.requests.find(resource="nodes"), what="a resync of A's cluster")
    wait_for(lambda: [r for r in fake.requests.all() if r.status == 401], what="B's recheck")
    record = InstanceType.objects.get(name="small")
    assert (record.provisioning_state, record.generation, record.requests, record.limits) == (
        "Succeeded", 1, {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi"})
    assert crs(fake)["small"]["spec"] == before["spec"] and crs(fake)["small"]["metadata"]["uid"] == before["metadata"]["uid"]
    assert not [r for r in fake.requests.writes() if r.resource == "instancetypes"]
    assert {r.user for r in fake.requests.all() if r.status != 401} == {"fake-kube-admin"}  # A's token, never B's


def test_own_valid_credentials_for_the_same_cluster_share_its_instance_types(a_with_instance_types, b_api, fake):
    row = attach_as_b(b_api, fake, token=B_TOKEN, name="shared")
    assert row["provisioning_state"] == "Succeeded", row
    a_compute, b_compute = ComputeTarget.objects.get(name="k8s"), ComputeTarget.objects.get(name="shared")
    assert a_compute.cluster_id == b_compute.cluster_id and Cluster.objects.get().uid == fake.cluster_uid
    assert "small" in [item["name"] for item in b_api.get(f"{B_BASE}/shared/instancetypes/").json()["results"]]

    fake.requests.clear()
    patch = {"resources": {"limits": {"cpu": "2"}}}
    assert b_api.patch(f"{B_BASE}/shared/instancetypes/small/", patch, format="json").status_code == 200
    wait_for(lambda: crs(fake)["small"]["spec"]["resources"]["limits"]["cpu"] == "2" and settled(["small"]), what="B's change")
    writers = {r.user for r in fake.requests.writes() if r.resource == "instancetypes"}
    assert writers == {"team-b"}  # B's change was made with B's own credentials


def test_a_different_cluster_at_the_same_url_is_not_merged(a_with_instance_types, b_api, fake, make_fake_kube):
    port = fake.port
    fake.stop()
    fresh_client_state(fake)
    other = make_fake_kube(seed=6, port=port)  # another cluster now answers at A's URL
    other.add_token(B_TOKEN, "team-b")
    assert other.url == fake.url and other.cluster_uid != fake.cluster_uid

    row = attach_as_b(b_api, other, token=B_TOKEN, name="elsewhere")
    assert row["provisioning_state"] == "Succeeded", row
    a_cluster = ComputeTarget.objects.get(name="k8s").cluster
    b_cluster = ComputeTarget.objects.get(name="elsewhere").cluster
    assert a_cluster.pk != b_cluster.pk and (a_cluster.uid, b_cluster.uid) == (fake.cluster_uid, other.cluster_uid)
    assert [item["name"] for item in b_api.get(f"{B_BASE}/elsewhere/instancetypes/").json()["results"]] == ["defaultinstancetype"]
    assert InstanceType.objects.get(name="small").cluster_id == a_cluster.pk
