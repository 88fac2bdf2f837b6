"""Attach and instance-type reconcile against the fake API server, through the real kubernetes client."""
from pathlib import Path

import pytest
import yaml

from compute import connections, reconcile
from compute.manifests import INSTANCE_TYPE_CRD_NAME
from compute.models import Cluster, ComputeTarget, InstanceType
from compute.tests.factories import kubeconfig as kubeconfig_text
from controlplane.kube import client as kube
from controlplane.kube.objects import MANAGED_BY
from controlplane.reconciling import ProvisioningState
from tests.support import assert_error

DATA = Path(__file__).parent / "data"
GROUP = "amlarc.azureml.com"
BASE = "/api/v1/workspaces/team-a/computes"


@pytest.fixture
def owner_api(owner_api, workspace):
    return owner_api


@pytest.fixture(autouse=True)
def fresh_kube_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


def attach(api, fake_kube, name="k8s", **fields):
    body = {"name": name, "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml(), **fields}
    response = api.post(f"{BASE}/", body, format="json")
    assert response.status_code == 201, response.json()
    compute = ComputeTarget.objects.get(name=name)
    run_compute(compute)
    compute.refresh_from_db()
    return compute


def run_compute(compute):
    reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))


def run_instance_types(cluster):
    for record in InstanceType.objects.filter(cluster=cluster):
        reconcile.reconcile_instance_type(record)


def crs(fake_kube) -> dict:
    return {cr["metadata"]["name"]: cr for cr in fake_kube.list("instancetypes", group=GROUP)}


def test_attach_checks_the_cluster_and_installs_the_crd(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    assert fake_kube.get("customresourcedefinitions", INSTANCE_TYPE_CRD_NAME, group="apiextensions.k8s.io")
    cluster = compute.cluster
    assert cluster.server == fake_kube.url and cluster.version.startswith("v1.")
    assert cluster.crd_installed and cluster.uid == fake_kube.cluster_uid  # identified by kube-system, not the URL


def test_missing_namespace_fails_with_a_reason(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube, namespace="team-x")
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert "Namespace 'team-x' does not exist" in compute.provisioning_errors[0]["message"]


def test_forbidden_credentials_fail_naming_what_is_missing(owner_api, fake_kube):
    from tests.fake_kube.server import RESTRICTED_TOKEN

    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": yaml.safe_dump(fake_kube.kubeconfig(token=RESTRICTED_TOKEN))}
    assert owner_api.post(f"{BASE}/", body, format="json").status_code == 201
    compute = ComputeTarget.objects.get(name="k8s")
    run_compute(compute)
    compute.refresh_from_db()
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.provisioning_errors[0]["code"] == "Forbidden"
    assert "patch instancetypes" in compute.provisioning_errors[0]["message"]


def test_credentials_that_may_not_write_secrets_fail_saying_so(owner_api, fake_kube):
    from tests.fake_kube.auth import Rule

    # everything but Secrets: the jobs' URL Secrets could not be applied
    fake_kube.add_token("no-secrets", "no-secrets-bot", [Rule(resources=tuple(sorted(
        {"instancetypes", "jobs", "pods", "namespaces", "customresourcedefinitions", "selfsubjectaccessreviews"})))])
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": yaml.safe_dump(fake_kube.kubeconfig(token="no-secrets"))}
    assert owner_api.post(f"{BASE}/", body, format="json").status_code == 201
    compute = ComputeTarget.objects.get(name="k8s")
    run_compute(compute)
    compute.refresh_from_db()
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.provisioning_errors[0]["message"].startswith("The credentials may not patch secrets, delete secrets")


def test_unreachable_cluster_fails_and_is_retried(owner_api, fake_kube):
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml()}
    owner_api.post(f"{BASE}/", body, format="json")
    fake_kube.stop()
    compute = ComputeTarget.objects.get(name="k8s")
    with pytest.raises(kube.KubeTransient):
        run_compute(compute)
    compute.refresh_from_db()
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.provisioning_errors[0]["code"] == "Unreachable"


def test_seed_files_create_crs_and_the_default_is_listed(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    for name in ("my_instance_type.yaml", "my_instance_type_list.yaml"):
        response = owner_api.generic("POST", f"{BASE}/k8s/instancetypes/", (DATA / name).read_bytes(), "application/yaml")
        assert response.status_code == 201, response.json()
    run_instance_types(compute.cluster)
    live = crs(fake_kube)
    assert set(live) == {"myinstancetypename", "cpusmall", "defaultinstancetype"}
    assert live["myinstancetypename"]["spec"] == {
        "nodeSelector": {"mylabel": "mylabelvalue"},
        "resources": {"requests": {"cpu": "700m", "memory": "1500Mi"}, "limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1}},
    }
    assert live["cpusmall"]["metadata"]["labels"][MANAGED_BY] == "dockyard"
    rows = {row["name"]: row for row in owner_api.get(f"{BASE}/k8s/instancetypes/").json()["results"]}
    assert rows["defaultinstancetype"]["source"] == "dockyard"  # the list's override
    assert rows["myinstancetypename"]["provisioning_state"] == "Succeeded"
    assert rows["myinstancetypename"]["status"] == {"observed_spec": live["myinstancetypename"]["spec"], "drifted": False}


def test_builtin_default_until_overridden_and_back_after_delete(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    builtin = owner_api.get(f"{BASE}/k8s/instancetypes/defaultinstancetype/").json()
    assert builtin["source"] == "builtin" and builtin["manifest"] is None
    assert builtin["resources"] == {"requests": {"cpu": "100m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": None}}
    assert_error(owner_api.delete(f"{BASE}/k8s/instancetypes/defaultinstancetype/"), 400, "BuiltInInstanceType")
    override = {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    assert owner_api.put(f"{BASE}/k8s/instancetypes/defaultinstancetype/", override, format="json").status_code == 200
    run_instance_types(compute.cluster)
    assert "defaultinstancetype" in crs(fake_kube)
    assert owner_api.delete(f"{BASE}/k8s/instancetypes/defaultinstancetype/").status_code == 202
    run_instance_types(compute.cluster)
    assert "defaultinstancetype" not in crs(fake_kube)
    assert owner_api.get(f"{BASE}/k8s/instancetypes/defaultinstancetype/").json()["source"] == "builtin"


def test_update_applies_and_delete_removes_the_cr(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    body = {"name": "small", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json")
    run_instance_types(compute.cluster)
    patch = {"resources": {"limits": {"cpu": "2"}}}
    response = owner_api.patch(f"{BASE}/k8s/instancetypes/small/", patch, format="json")
    assert response.status_code == 200 and response.json()["provisioning_state"] == "Updating"
    run_instance_types(compute.cluster)
    assert crs(fake_kube)["small"]["spec"]["resources"]["limits"]["cpu"] == "2"
    owner_api.delete(f"{BASE}/k8s/instancetypes/small/")
    run_instance_types(compute.cluster)
    assert "small" not in crs(fake_kube) and not InstanceType.objects.filter(name="small").exists()


def test_resync_repairs_drift_imports_and_collects_garbage(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    body = {"name": "small", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json")
    run_instance_types(compute.cluster)
    cluster = Cluster.objects.get()
    fake_kube.delete("instancetypes", "small", group=GROUP)  # as `kubectl delete instancetype small` would
    kubectl = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "InstanceType", "metadata": {"name": "from-kubectl"},
               "spec": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}}
    orphan = {**kubectl, "metadata": {"name": "orphan", "labels": {MANAGED_BY: "dockyard", "dockyard.dev/kind": "instancetype",
                                                                   "dockyard.dev/cluster": str(cluster.pk)}}}
    fake_kube.create(kubectl)
    fake_kube.create(orphan)
    behind = reconcile.sync_cluster(cluster)
    assert behind == [InstanceType.objects.get(name="small").pk]
    run_instance_types(cluster)
    live = crs(fake_kube)
    assert set(live) == {"small", "from-kubectl"}
    imported = InstanceType.objects.get(name="from-kubectl")
    assert imported.source == "cluster" and imported.limits == {"cpu": "1", "memory": "1Gi"}


def test_steady_state_resync_lists_once_per_kind_and_writes_nothing(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    owner_api.generic("POST", f"{BASE}/k8s/instancetypes/", (DATA / "my_instance_type_list.yaml").read_bytes(), "application/yaml")
    run_instance_types(compute.cluster)
    cluster = Cluster.objects.get()
    reconcile.sync_cluster(cluster)  # first sync stores the nodes
    fake_kube.requests.clear()
    assert reconcile.sync_cluster(Cluster.objects.get()) == []
    calls = fake_kube.requests.all()
    assert sorted((call.verb, call.resource) for call in calls) == [("list", "instancetypes"), ("list", "nodes")]


def test_nodes_and_fit(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    gpu = {"name": "gpu1", "resources": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": 1}}}
    huge = {"name": "huge", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "64", "memory": "1Gi"}}}
    for body in (gpu, huge):
        owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json")
    reconcile.sync_cluster(compute.cluster)
    rows = {row["name"]: row for row in owner_api.get(f"{BASE}/k8s/instancetypes/").json()["results"]}
    assert rows["gpu1"]["fits_nodes"] == ["gpu-node-0"]
    assert rows["huge"]["fits_nodes"] == [] and "No node can host 'huge'" in rows["huge"]["warnings"][0]
    assert set(rows["defaultinstancetype"]["fits_nodes"]) == {"node-0", "node-1", "gpu-node-0"}
    nodes = {node["name"]: node for node in owner_api.get(f"{BASE}/k8s/nodes/").json()["results"]}
    assert nodes["gpu-node-0"]["allocatable"]["nvidia.com/gpu"] == 4
    assert "gpu1" in nodes["gpu-node-0"]["instance_types"] and "gpu1" not in nodes["node-0"]["instance_types"]


def test_extension_node_selector_is_anded_and_conflicts_refused(owner_api, fake_kube):
    attach(owner_api, fake_kube, node_selector={"pool": "ml"})
    body = {"name": "t", "nodeSelector": {"pool": "web"}, "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    assert_error(owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json"), 400, "InvalidInstanceType", "nodeSelector.pool")
    body["nodeSelector"] = {"zone": "a"}
    row = owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json").json()
    assert row["effective_node_selector"] == {"pool": "ml", "zone": "a"}


def test_in_cluster_needs_a_pod_and_excludes_a_kubeconfig(api_as, monkeypatch):
    staff_api = api_as("staff")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    body = {"name": "here", "type": "kubernetes", "in_cluster": True}
    assert_error(staff_api.post(f"{BASE}/", body, format="json"), 400, "ValidationError", "in_cluster")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    both = {**body, "kubeconfig": "apiVersion: v1\nkind: Config\n"}
    assert_error(staff_api.post(f"{BASE}/", both, format="json"), 400, "ValidationError", "in_cluster")
    created = staff_api.post(f"{BASE}/", body, format="json").json()
    assert (created["server"], created["in_cluster"], created["secrets_set"]) == ("https://10.96.0.1:443", True, [])


def test_in_cluster_is_for_staff_only(api_as, users, monkeypatch):
    """The in-cluster ServiceAccount is Dockyard's own: a workspace owner may not attach it, nor switch to it."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    owner_api = api_as("owner")
    error = assert_error(owner_api.post(f"{BASE}/", {"name": "here", "type": "kubernetes", "in_cluster": True}, format="json"),
                         403, "Forbidden")
    assert "Only staff" in error["message"]
    assert not ComputeTarget.objects.filter(name="here").exists()
    owner_api.post(f"{BASE}/", {"name": "k8s", "type": "kubernetes", "kubeconfig": kubeconfig_text()}, format="json")
    assert_error(owner_api.patch(f"{BASE}/k8s/", {"in_cluster": True}, format="json"), 403, "Forbidden")
    assert ComputeTarget.objects.get(name="k8s").properties["in_cluster"] is False


def test_drift_shows_until_the_reconcile_restores_it(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    body = {"name": "small", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json")
    run_instance_types(compute.cluster)
    edited = {**crs(fake_kube)["small"]}
    edited["spec"] = {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "3", "memory": "1Gi"}}}
    fake_kube.delete("instancetypes", "small", group=GROUP)
    fake_kube.create({"apiVersion": edited["apiVersion"], "kind": "InstanceType", "metadata": {"name": "small", "labels": edited["metadata"]["labels"]}, "spec": edited["spec"]})
    assert reconcile.sync_cluster(Cluster.objects.get()) == [InstanceType.objects.get(name="small").pk]
    row = owner_api.get(f"{BASE}/k8s/instancetypes/small/").json()
    assert row["status"] == {"observed_spec": edited["spec"], "drifted": True}
    run_instance_types(compute.cluster)
    row = owner_api.get(f"{BASE}/k8s/instancetypes/small/").json()
    assert row["status"]["drifted"] is False and crs(fake_kube)["small"]["spec"]["resources"]["limits"]["cpu"] == "1"


def test_patch_in_cr_form_and_no_edit_while_deleting(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    body = {"name": "small", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json")
    patch = {"apiVersion": "amlarc.azureml.com/v1alpha1", "kind": "InstanceType", "metadata": {"name": "small"},
             "spec": {"nodeSelector": {"pool": "a"}}}
    response = owner_api.patch(f"{BASE}/k8s/instancetypes/small/", patch, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["nodeSelector"] == {"pool": "a"} and response.json()["resources"]["limits"]["cpu"] == "1"
    assert owner_api.delete(f"{BASE}/k8s/instancetypes/small/").status_code == 202
    assert_error(owner_api.patch(f"{BASE}/k8s/instancetypes/small/", {"nodeSelector": {}}, format="json"), 409, "Conflict")
    assert InstanceType.objects.get(name="small").provisioning_state == "Deleting"
    run_instance_types(compute.cluster)


def test_tainted_or_unready_nodes_host_nothing(owner_api, fake_kube):
    compute = attach(owner_api, fake_kube)
    fake_kube.taint_node("node-0", "dedicated", "infra", "NoSchedule")
    fake_kube.set_node_ready("node-1", False)
    reconcile.sync_cluster(compute.cluster)
    row = owner_api.get(f"{BASE}/k8s/instancetypes/defaultinstancetype/").json()
    assert row["fits_nodes"] == ["gpu-node-0"]


@pytest.mark.parametrize("body, target", [
    ({"apiVersion": "amlarc.azureml.com/v1alpha1", "kind": "InstanceTypeList", "items": [
        {"metadata": {"name": "ok"}, "spec": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}},
        {"metadata": {"name": "bad"}, "spec": {"resources": {"requests": {"cpu": "NaN", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}},
    ]}, "items.1.spec.resources.requests.cpu"),
    ({"name": "g", "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}, "limits": {"cpu": "1", "memory": "1Gi"}}},
     "resources.requests.nvidia.com/gpu"),
    ({"name": "r", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}, "resources.requests.cpu"),
])
def test_an_invalid_body_writes_nothing_to_the_database_or_the_cluster(owner_api, fake_kube, body, target):
    from workspaces.models import AuditEvent

    compute = attach(owner_api, fake_kube)
    events = AuditEvent.objects.count()
    fake_kube.requests.clear()
    response = owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json")
    assert_error(response, 400, "InvalidInstanceType", target)
    run_instance_types(compute.cluster)
    assert not InstanceType.objects.exists() and AuditEvent.objects.count() == events
    assert fake_kube.requests.writes() == [] and crs(fake_kube) == {}


# --- the batched reconcile (what the resync enqueues) -------------------------------------------------------------

SHAPE = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


class Task:
    """What compute.tasks.locked_batch needs of a bound Celery task; `retry` hands back what it was asked."""

    class request:
        retries = 0

    @staticmethod
    def retry(**kwargs):
        return RetryRequested(kwargs)


class RetryRequested(Exception):
    pass


def statements(queries) -> list[str]:
    return [query["sql"].split()[0] for query in queries.captured_queries]


def make_records(cluster, count, prefix="it"):
    return [InstanceType.objects.create(cluster=cluster, name=f"{prefix}-{number:03d}", **SHAPE) for number in range(count)]


def batch(cluster):
    """Every record of the cluster, fresh from the database, as the batch task reads them."""
    return list(InstanceType.objects.filter(cluster=cluster).order_by("pk"))


@pytest.mark.parametrize("count", [3, 30])
def test_batch_applies_every_cr_and_writes_statuses_in_constant_queries(owner_api, fake_kube, count):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cluster = attach(owner_api, fake_kube).cluster
    make_records(cluster, count)
    records = batch(cluster)
    with CaptureQueriesContext(connection) as queries:
        reconcile.reconcile_instance_types(cluster, records)
    # One read of the attachment whose credentials act, one bulk UPDATE, whatever N.
    assert statements(queries) == ["SELECT", "UPDATE"], [query["sql"][:120] for query in queries.captured_queries]
    assert set(crs(fake_kube)) == {record.name for record in records}
    for record in batch(cluster):
        assert record.provisioning_state == ProvisioningState.SUCCEEDED and record.observed_generation == record.generation
        assert record.observed_spec == crs(fake_kube)[record.name]["spec"]


def test_a_rejected_record_fails_and_the_others_succeed(owner_api, fake_kube, monkeypatch):
    cluster = attach(owner_api, fake_kube).cluster
    make_records(cluster, 5)
    apply = kube.apply

    def refusing(conn, manifest):
        if manifest["metadata"]["name"] == "it-002":
            raise kube.KubeRejected("spec.resources: Invalid value", 422, "Invalid")
        return apply(conn, manifest)

    monkeypatch.setattr(kube, "apply", refusing)
    reconcile.reconcile_instance_types(cluster, batch(cluster))
    states = {record.name: (record.provisioning_state, record.provisioning_errors) for record in batch(cluster)}
    assert states.pop("it-002") == (ProvisioningState.FAILED, [{"code": "Invalid", "message": "spec.resources: Invalid value"}])
    assert all(state == ProvisioningState.SUCCEEDED and errors == [] for state, errors in states.values()), states
    assert set(crs(fake_kube)) == {"it-000", "it-001", "it-003", "it-004"}
    assert InstanceType.objects.filter(name="it-002", observed_spec__isnull=True).exists()  # SQL NULL, not JSON null


def test_a_transient_error_midway_keeps_what_was_written_and_retries_the_rest(owner_api, fake_kube):
    from compute.tasks import locked_batch

    cluster = attach(owner_api, fake_kube).cluster
    make_records(cluster, 6)
    ids = [record.pk for record in batch(cluster)]
    fake_kube.faults.once("500", verb="patch", path="it-003$")
    with pytest.raises(RetryRequested) as retry:
        locked_batch(Task, cluster.pk, ids)
    asked = retry.value.args[0]
    assert asked["args"] == (cluster.pk, ids[3:]) and isinstance(asked["exc"], kube.KubeTransient)
    states = {record.name: record.provisioning_state for record in batch(cluster)}  # committed: read outside the task
    assert [states[f"it-{number:03d}"] for number in range(6)] == [ProvisioningState.SUCCEEDED] * 3 + [ProvisioningState.CREATING] * 3
    locked_batch(Task, cluster.pk, ids[3:])  # the retry
    assert {record.provisioning_state for record in batch(cluster)} == {ProvisioningState.SUCCEEDED}
    assert len(crs(fake_kube)) == 6


def test_batch_deletes_the_deleting_records_and_their_crs(owner_api, fake_kube):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cluster = attach(owner_api, fake_kube).cluster
    make_records(cluster, 6)
    reconcile.reconcile_instance_types(cluster, batch(cluster))
    InstanceType.objects.filter(name__in=["it-001", "it-004"]).update(provisioning_state=ProvisioningState.DELETING)
    records = batch(cluster)
    with CaptureQueriesContext(connection) as queries:
        reconcile.reconcile_instance_types(cluster, records)
    assert statements(queries) == ["SELECT", "DELETE"]  # the attachment; the others had nothing new
    assert sorted(InstanceType.objects.filter(cluster=cluster).values_list("name", flat=True)) == ["it-000", "it-002", "it-003", "it-005"]
    assert set(crs(fake_kube)) == {"it-000", "it-002", "it-003", "it-005"}


def test_a_second_batch_run_writes_nothing(owner_api, fake_kube):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cluster = attach(owner_api, fake_kube).cluster
    make_records(cluster, 10)
    reconcile.reconcile_instance_types(cluster, batch(cluster))
    fake_kube.requests.clear()
    records = batch(cluster)
    with CaptureQueriesContext(connection) as queries:
        reconcile.reconcile_instance_types(cluster, records)
    assert statements(queries) == ["SELECT"]  # which attachment's credentials act; no write
    assert {call.verb for call in fake_kube.requests.all()} == {"patch"}  # applies are idempotent: the CRs are unchanged


def test_the_resync_enqueues_the_records_behind_in_batches(owner_api, fake_kube, monkeypatch):
    from compute import tasks

    cluster = attach(owner_api, fake_kube).cluster
    make_records(cluster, 5)
    monkeypatch.setattr(tasks, "BATCH", 2)
    sent = []
    monkeypatch.setattr(tasks.reconcile_cluster_instance_types, "delay", lambda *args: sent.append(args))
    monkeypatch.setattr(tasks.reconcile_instance_type, "delay", lambda pk: pytest.fail("one task per record"))
    tasks.sync_cluster.run(cluster.pk)
    behind = sorted(pk for _, ids in sent for pk in ids)
    assert [len(ids) for _, ids in sent] == [2, 2, 1] and {cluster_id for cluster_id, _ in sent} == {cluster.pk}
    assert behind == sorted(InstanceType.objects.filter(cluster=cluster).values_list("pk", flat=True))


def test_an_attachment_not_checked_yet_sees_only_the_default_and_changes_nothing(owner_api, workspace, fake_kube):
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml()}
    owner_api.post(f"{BASE}/", body, format="json")  # never reconciled: not linked to any cluster yet
    listed = owner_api.get(f"{BASE}/k8s/instancetypes/").json()["results"]
    assert [row["name"] for row in listed] == ["defaultinstancetype"]
    assert owner_api.get(f"{BASE}/k8s/nodes/").json()["results"] == []
    shape = {"name": "small", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    error = assert_error(owner_api.post(f"{BASE}/k8s/instancetypes/", shape, format="json"), 409, "Conflict")
    assert "has not passed its checks" in error["message"]
    assert_error(owner_api.put(f"{BASE}/k8s/instancetypes/defaultinstancetype/", shape | {"name": "defaultinstancetype"},
                               format="json"), 409, "Conflict")
    assert_error(owner_api.delete(f"{BASE}/k8s/instancetypes/small/"), 409, "Conflict")
    assert not InstanceType.objects.exists() and not Cluster.objects.exists()


def test_a_revoked_attachment_is_unlinked_and_never_acts_for_the_cluster(owner_api, fake_kube):
    """Cluster-wide work uses an attachment that passes now; one whose credentials stopped passing sees nothing."""
    fake_kube.add_token("second-token", "second")
    first = attach(owner_api, fake_kube, name="first")
    second = attach(owner_api, fake_kube, name="second", kubeconfig=fake_kube.kubeconfig_yaml(token="second-token"))
    assert first.cluster_id == second.cluster_id
    ComputeTarget.objects.filter(pk=first.pk).update(checked_at=first.checked_at.replace(year=2000))  # second is fresher
    assert connections.attachment_connection(first.cluster).credential_version == connections.connection_for(second).credential_version
    fake_kube.auth.users.pop("second-token")  # revoked on the cluster
    run_compute(second)
    second.refresh_from_db()
    assert (second.provisioning_state, second.cluster_id) == (ProvisioningState.FAILED, None)
    assert [row["name"] for row in owner_api.get(f"{BASE}/second/instancetypes/").json()["results"]] == ["defaultinstancetype"]
    fake_kube.requests.clear()
    reconcile.sync_cluster(Cluster.objects.get())
    assert {call.user for call in fake_kube.requests.all()} == {"fake-kube-admin"}  # the first's credentials only
