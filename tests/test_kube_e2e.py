"""End to end: the REST API, a real Celery worker on the Redis broker and the fake kube-apiserver.

Every change reaches the cluster through a task, and the resync task is the only thing that notices
what happens on the cluster behind Dockyard's back (reconcile is called directly only to check a steady state).
"""
from pathlib import Path

import pytest
from kubernetes import client

from compute import reconcile
from compute.manifests import INSTANCE_TYPE_CRD_NAME, INSTANCE_TYPE_GROUP, INSTANCE_TYPE_VERSION
from compute.models import Cluster, InstanceType
from compute.tasks import resync
from controlplane.kube.objects import MANAGED_BY
from tests.e2e_support import (
    BASE,
    attach,
    crs,
    fresh_client_state,
    in_process_worker,
    kubectl_instance_type,
    settled,
    wait_for,
)
from tests.fake_kube.fixtures import api_client

DATA = Path(__file__).resolve().parent.parent / "compute" / "tests" / "data"
RESOURCES = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}


@pytest.fixture
def fake(make_fake_kube):
    kube = make_fake_kube(seed=3)
    fresh_client_state(kube)
    yield kube
    fresh_client_state(kube)


@pytest.fixture
def worker(transactional_db, fake):
    with in_process_worker():
        yield


@pytest.fixture
def attached(worker, owner_api, workspace, fake):
    return attach(owner_api, fake)


def live_spec(fake, name):
    cr = crs(fake).get(name)
    return cr and cr["spec"]


def test_attach_through_the_api_is_checked_by_the_worker(worker, owner_api, workspace, fake):
    row = attach(owner_api, fake)
    assert row["provisioning_errors"] == []
    assert fake.get("customresourcedefinitions", INSTANCE_TYPE_CRD_NAME, group="apiextensions.k8s.io")
    cluster = Cluster.objects.get()
    assert cluster.server == fake.url and cluster.crd_installed
    reviews = fake.requests.find(resource="selfsubjectaccessreviews")
    assert reviews and all(r.status == 201 for r in reviews)


def test_instance_types_created_updated_and_deleted_through_the_api(attached, owner_api, fake):
    assert owner_api.post(f"{BASE}/k8s/instancetypes/", {"name": "small", "resources": RESOURCES}, format="json").status_code == 201
    seed = (DATA / "my_instance_type_list.yaml").read_bytes()
    assert owner_api.generic("POST", f"{BASE}/k8s/instancetypes/", seed, "application/yaml").status_code == 201
    names = {"small", "cpusmall", "defaultinstancetype"}
    wait_for(lambda: names <= set(crs(fake)) and settled(names), what="three CRs")
    assert live_spec(fake, "small") == {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                      "limits": {"cpu": "1", "memory": "2Gi"}}}
    assert live_spec(fake, "cpusmall")["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}  # gpu 0: not written
    assert crs(fake)["small"]["metadata"]["labels"][MANAGED_BY] == "dockyard"

    patch = {"resources": {"limits": {"cpu": "2", "nvidia.com/gpu": 1}}}
    assert owner_api.patch(f"{BASE}/k8s/instancetypes/small/", patch, format="json").json()["provisioning_state"] == "Updating"
    put = {"nodeSelector": {"pool": "cpu"}, "resources": {"requests": {"cpu": "200m", "memory": "200Mi"},
                                                          "limits": {"cpu": "1", "memory": "1Gi"}}}
    assert owner_api.put(f"{BASE}/k8s/instancetypes/cpusmall/", put, format="json").status_code == 200
    wait_for(lambda: (live_spec(fake, "small") or {}).get("resources", {}).get("limits", {}).get("cpu") == "2"
             and (live_spec(fake, "cpusmall") or {}).get("nodeSelector") == {"pool": "cpu"} and settled(names),
             what="the updates on the cluster")
    assert live_spec(fake, "small")["resources"]["limits"] == {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": 1}
    assert live_spec(fake, "cpusmall") == {"nodeSelector": {"pool": "cpu"}, "resources": put["resources"]}
    assert InstanceType.objects.get(name="small").generation == 2

    assert owner_api.delete(f"{BASE}/k8s/instancetypes/small/").status_code == 202
    assert owner_api.delete(f"{BASE}/k8s/instancetypes/defaultinstancetype/").status_code == 202
    wait_for(lambda: set(crs(fake)) == {"cpusmall"} and not InstanceType.objects.exclude(name="cpusmall").exists(),
             what="the deletes on the cluster")
    assert owner_api.get(f"{BASE}/k8s/instancetypes/small/").status_code == 404
    assert owner_api.get(f"{BASE}/k8s/instancetypes/defaultinstancetype/").json()["source"] == "builtin"

    writes = [r for r in fake.requests.writes() if r.resource == "instancetypes"]
    assert {r.verb for r in writes} == {"patch", "delete"}  # server-side apply: never a create that could duplicate
    assert all(r.query.get("fieldManager") == "dockyard" for r in writes if r.verb == "patch")


def test_a_cr_created_with_kubectl_is_imported_by_one_resync(attached, owner_api, fake):
    fake.create(kubectl_instance_type("from-kubectl", cpu="2", memory="4Gi", nodeSelector={"team": "a"}))
    resync.delay()
    row = wait_for(lambda: InstanceType.objects.filter(name="from-kubectl").first(), what="the import")
    assert row.source == InstanceType.Source.CLUSTER
    api_row = owner_api.get(f"{BASE}/k8s/instancetypes/from-kubectl/").json()
    assert api_row["source"] == "cluster" and api_row["provisioning_state"] == "Succeeded"
    assert api_row["nodeSelector"] == {"team": "a"}
    assert api_row["resources"]["limits"]["cpu"] == "2" and api_row["resources"]["requests"]["memory"] == "4Gi"
    assert not [r for r in fake.requests.writes() if r.name == "from-kubectl"]  # imported as it is, not rewritten

    # Editing it through Dockyard adopts it: from then on the CR carries Dockyard's labels and follows the record.
    owner_api.patch(f"{BASE}/k8s/instancetypes/from-kubectl/", {"resources": {"limits": {"cpu": "3"}}}, format="json")
    wait_for(lambda: (crs(fake)["from-kubectl"]["metadata"].get("labels") or {}).get(MANAGED_BY) == "dockyard"
             and settled(["from-kubectl"]), what="the adoption")
    assert live_spec(fake, "from-kubectl")["resources"]["limits"]["cpu"] == "3"
    assert owner_api.get(f"{BASE}/k8s/instancetypes/from-kubectl/").json()["source"] == "dockyard"


def test_crs_deleted_or_edited_behind_our_back_are_restored_by_one_resync(attached, owner_api, fake):
    for name in ("gone", "edited", "grown"):
        owner_api.post(f"{BASE}/k8s/instancetypes/", {"name": name, "resources": RESOURCES}, format="json")
    wait_for(lambda: {"gone", "edited", "grown"} <= set(crs(fake)) and settled(["gone", "edited", "grown"]), what="the CRs")
    desired = {name: live_spec(fake, name) for name in ("gone", "edited", "grown")}
    generations = dict(InstanceType.objects.values_list("name", "generation"))

    fake.delete("instancetypes", "gone", group=INSTANCE_TYPE_GROUP)  # kubectl delete instancetype gone
    with api_client(fake) as api:  # kubectl edit: a changed value, and fields Dockyard never set
        objects = client.CustomObjectsApi(api)
        args = (INSTANCE_TYPE_GROUP, INSTANCE_TYPE_VERSION, "instancetypes")
        objects.patch_cluster_custom_object(*args, "edited", {"spec": {"resources": {"limits": {"cpu": "4"}}}})
        objects.patch_cluster_custom_object(*args, "grown", {"spec": {"nodeSelector": {"zone": "b"},
                                                                      "resources": {"limits": {"nvidia.com/gpu": 2}}}})
    assert live_spec(fake, "edited") != desired["edited"] and live_spec(fake, "grown") != desired["grown"]

    resync.delay()
    wait_for(lambda: {name: live_spec(fake, name) for name in desired} == desired, what="the restored CRs")
    assert settled(desired) and dict(InstanceType.objects.values_list("name", "generation")) == generations
    assert reconcile.sync_cluster(Cluster.objects.get()) == []  # restored for good: the next resync finds no drift
    rows = {row["name"]: row for row in owner_api.get(f"{BASE}/k8s/instancetypes/").json()["results"]}
    assert all(rows[name]["status"]["drifted"] is False for name in desired)
