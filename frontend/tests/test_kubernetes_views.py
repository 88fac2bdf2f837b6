"""The Kubernetes pages of the studio: the attach wizard, the cluster page with its checks, instance types, nodes.

Clusters are the fake API server (`fake_kube`); reconcile runs by direct call, as a worker would after commit.
"""
import html
import re
from pathlib import Path

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import F

from compute import reconcile
from compute.models import Cluster, ComputeTarget, InstanceType
from compute.services import compute_create
from controlplane.kube import client as kube
from controlplane.reconciling import ProvisioningState
from frontend import attach_checks
from workspaces.models import AuditEvent

DATA = Path(__file__).resolve().parents[2] / "compute" / "tests" / "data"
GROUP = "amlarc.azureml.com"
PAGE = "/w/team-a/compute/k8s"
TWO_CONTEXTS = """apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://10.0.0.5:6443"}
- name: prod
  cluster: {server: "https://k8s.prod.internal:6443"}
contexts:
- name: dev
  context: {cluster: dev, user: admin}
- name: prod
  context: {cluster: prod, user: admin, namespace: ml}
- name: broken
  context: {cluster: nowhere, user: admin}
users:
- name: admin
  user: {token: kube-secret-token}
"""
SMALL = {"name": "small", "requests_cpu": "500m", "requests_memory": "1Gi", "limits_cpu": "1", "limits_memory": "2Gi"}


def text(response) -> str:
    return response.content.decode()


def statuses(body: str) -> dict:
    """{check key: status} from the rendered checks panel."""
    return dict(re.findall(r'data-check="(\w+)" data-status="(\w+)"', body))


@pytest.fixture(autouse=True)
def fresh_kube_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


def attach(owner, workspace, fake_kube, *, reconciled=True, **fields) -> ComputeTarget:
    data = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml(), **fields}
    compute = compute_create(user=owner, workspace=workspace, data=data)
    if reconciled:
        run_checks(compute)
    return ComputeTarget.objects.get(pk=compute.pk)


def run_checks(compute):
    reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))


def run_instance_types():
    for record in InstanceType.objects.all():
        reconcile.reconcile_instance_type(record)


def sync():
    for cluster in Cluster.objects.all():
        reconcile.sync_cluster(cluster)


@pytest.fixture
def cluster(owner, workspace, fake_kube, users):
    """An attached, checked and synced cluster (2 CPU nodes, 1 GPU node)."""
    compute = attach(owner, workspace, fake_kube)
    sync()
    return compute


@pytest.fixture
def gpu_box(owner, workspace):
    return compute_create(user=owner, workspace=workspace, data={
        "name": "gpu-box", "type": "virtualmachine", "address": "10.0.0.7", "admin_username": "u", "admin_password": "p"})


# The attach wizard


def test_pasting_a_kubeconfig_offers_its_contexts(owner_client, workspace):
    response = owner_client.post("/w/team-a/compute/new/kubernetes/contexts/", {"kubeconfig": TWO_CONTEXTS}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Trigger-After-Settle"] == "contexts-loaded"
    body = text(response)
    options = dict(re.findall(r'<option value="([^"]+)"( selected)?', body))
    assert options == {"dev": " selected", "prod": "", "broken": ""}  # the current-context is chosen
    assert "https://10.0.0.5:6443" in body and "namespace ml" in body and "names a cluster that the kubeconfig does not define" in body
    assert "kube-secret-token" not in body and "k8s.prod.internal:6443" in body
    assert "3 contexts in the kubeconfig" in body


def test_contexts_keep_the_choice_and_read_an_uploaded_file(owner_client, workspace):
    upload = SimpleUploadedFile("config", TWO_CONTEXTS.encode())
    body = text(owner_client.post("/w/team-a/compute/new/kubernetes/contexts/", {"kubeconfig_file": upload, "context": "prod"}))
    assert '<option value="prod" selected>' in body and '<option value="dev">' in body


@pytest.mark.parametrize("kubeconfig, message", [("a: [", "not valid YAML"), ("kind: Config\n", "no list of contexts")])
def test_an_unreadable_kubeconfig_says_why(owner_client, workspace, kubeconfig, message):
    body = text(owner_client.post("/w/team-a/compute/new/kubernetes/contexts/", {"kubeconfig": kubeconfig}))
    assert message in body and 'name="context"' in body


def test_the_create_form_wires_the_context_picker(owner_client, workspace):
    body = text(owner_client.get("/w/team-a/compute/new/kubernetes/"))
    assert 'hx-post="/w/team-a/compute/new/kubernetes/contexts/"' in body and 'id="kube-contexts"' in body
    assert "contexts-loaded" in body  # the YAML preview follows the picked context


def test_attach_goes_to_the_cluster_page_which_checks_as_it_runs(owner_client, workspace):
    form = {"name": "k8s", "kubeconfig": TWO_CONTEXTS, "context": "prod", "namespace": "team-a", "node_selector": "pool=ml"}
    response = owner_client.post("/w/team-a/compute/new/kubernetes/", form)
    assert response.status_code == 302 and response["Location"] == f"{PAGE}/"
    compute = ComputeTarget.objects.get(name="k8s")
    assert compute.properties["context"] == "prod" and compute.properties["server"] == "https://k8s.prod.internal:6443"
    body = text(owner_client.get(response["Location"]))
    assert "kube-secret-token" not in body and "kubeconfig: &lt;hidden&gt;" in body
    assert statuses(body) == dict.fromkeys(("reachable", "namespace", "access", "crd"), "running")
    assert f'hx-get="{PAGE}/status/" hx-trigger="every 1s"' in body


def test_a_failed_attach_offers_the_contexts_again_but_not_the_kubeconfig(owner_client, workspace):
    response = owner_client.post("/w/team-a/compute/new/kubernetes/", {"name": "1bad", "kubeconfig": TWO_CONTEXTS, "context": "prod"})
    body = text(response)
    assert response.status_code == 200 and "must start with a letter" in body
    assert '<option value="prod" selected>' in body and "kube-secret-token" not in body
    assert 'name="kubeconfig" rows="5"' in body and "</textarea>" in body.split('name="kubeconfig"')[1][:400]
    assert not ComputeTarget.objects.exists()


def test_contexts_are_for_owners(client_as, workspace, users):
    assert client_as("reader").post("/w/team-a/compute/new/kubernetes/contexts/", {"kubeconfig": TWO_CONTEXTS}).status_code == 403
    assert client_as("outsider").post("/w/team-a/compute/new/kubernetes/contexts/", {"kubeconfig": TWO_CONTEXTS}).status_code == 404


# The checks


def test_checks_turn_green_and_polling_stops(owner_client, owner, workspace, fake_kube):
    compute = attach(owner, workspace, fake_kube, reconciled=False)
    assert 'hx-trigger="every 1s"' in text(owner_client.get(f"{PAGE}/status/", HTTP_HX_REQUEST="true"))
    run_checks(compute)
    body = text(owner_client.get(f"{PAGE}/status/", HTTP_HX_REQUEST="true"))
    assert statuses(body) == dict.fromkeys(("reachable", "namespace", "access", "crd"), "passed")
    assert "hx-trigger" not in body.split('id="compute-state"')[0]  # settled: no more polling
    assert f"Kubernetes {Cluster.objects.get().version} at {fake_kube.url}" in body
    assert 'id="compute-state" hx-swap-oob="true"' in body and 'data-state="Succeeded"' in body


@pytest.mark.parametrize(
    "problem, expected, message",
    [
        ("namespace", {"reachable": "passed", "namespace": "failed", "access": "passed", "crd": "skipped"}, "Namespace 'team-x' does not exist"),
        ("rights", {"reachable": "passed", "namespace": "passed", "access": "failed", "crd": "skipped"}, "may not patch instancetypes"),
        ("down", {"reachable": "failed", "namespace": "skipped", "access": "skipped", "crd": "skipped"}, "Cannot reach the API server"),
    ],
)
def test_a_failed_check_is_named_with_the_reason(owner_client, owner, workspace, fake_kube, problem, expected, message):
    from tests.fake_kube.server import RESTRICTED_TOKEN

    fields = {"namespace": {"namespace": "team-x"}, "rights": {"kubeconfig": fake_kube.kubeconfig_yaml(token=RESTRICTED_TOKEN)}}
    compute = attach(owner, workspace, fake_kube, reconciled=False, **fields.get(problem, {}))
    if problem == "down":
        fake_kube.stop()
        with pytest.raises(kube.KubeTransient):
            run_checks(compute)
    else:
        run_checks(compute)
    body = text(owner_client.get(f"{PAGE}/"))
    assert statuses(body) == expected
    assert message in html.unescape(body) and 'data-state="Failed"' in body and "Check again" in body


@pytest.mark.parametrize(
    "state, codes, expected",
    [
        ("Succeeded", [], "pppp"),
        ("Creating", [], "rrrr"),
        ("Updating", [], "rrrr"),
        ("Failed", ["CrdMissing"], "pppf"),
        ("Failed", ["NamespaceNotFound", "Forbidden"], "pffs"),
        ("Failed", ["Unauthorized"], "fsss"),  # a refused credential: the server answered no
        ("Deleting", [], "ssss"),
    ],
)
def test_checks_from_state_and_error_codes(state, codes, expected):
    compute = ComputeTarget(type="kubernetes", provisioning_state=state, properties={"server": "https://k", "namespace": "ml"},
                            provisioning_errors=[{"code": code, "message": f"{code}!"} for code in codes])
    checks = attach_checks.attachment_checks(compute)
    assert "".join(check.status[0] for check in checks) == expected
    failed = " ".join(check.detail for check in checks if check.status == "failed")
    assert all(f"{code}!" in failed for code in codes)


def test_check_again_reruns_the_checks_and_is_audited(owner_client, cluster):
    generation = cluster.generation
    response = owner_client.post(f"{PAGE}/recheck/")
    assert response.status_code == 302 and response["Location"] == f"{PAGE}/"
    cluster.refresh_from_db()
    assert cluster.provisioning_state == ProvisioningState.UPDATING and cluster.generation == generation + 1
    event = AuditEvent.objects.filter(target_name="k8s").latest("pk")
    assert (event.action, event.verb) == ("action", "recheck")
    assert statuses(text(owner_client.get(f"{PAGE}/")))["reachable"] == "running"
    run_checks(cluster)
    assert statuses(text(owner_client.get(f"{PAGE}/")))["crd"] == "passed"


def test_check_again_is_post_only_and_for_owners(client_as, cluster):
    assert client_as("owner").get(f"{PAGE}/recheck/").status_code == 405
    assert client_as("contributor").post(f"{PAGE}/recheck/").status_code == 403
    assert client_as("outsider").post(f"{PAGE}/recheck/").status_code == 404
    assert ComputeTarget.objects.get(name="k8s").provisioning_state == ProvisioningState.SUCCEEDED


# The cluster page


def test_overview_shows_server_version_namespace_and_selector(client_as, owner, workspace, fake_kube, users):
    attach(owner, workspace, fake_kube, namespace="default", node_selector={"pool": "ml"})
    body = text(client_as("reader").get(f"{PAGE}/"))
    assert fake_kube.url in body and Cluster.objects.get().version in body and "pool=ml" in body
    assert re.search(r'Instance types <span class="badge rounded-pill count">1</span>', body)  # the built-in default
    assert "fake-kube-admin-token" not in body


def test_nodes_read_shows_the_last_read_not_the_last_change(client_as, cluster):
    """A resync that finds the same nodes moves 'Nodes read'; 'nodes last changed' stays where the nodes last changed."""
    from datetime import timedelta

    Cluster.objects.update(nodes_read_at=F("nodes_read_at") - timedelta(hours=3), synced_at=F("synced_at") - timedelta(hours=3))
    changed = Cluster.objects.get().synced_at
    sync()  # the same nodes again
    stored = Cluster.objects.get()
    assert stored.synced_at == changed and stored.nodes_read_at > changed + timedelta(hours=2)
    body = text(client_as("reader").get(f"{PAGE}/"))
    read = re.search(r"<td data-nodes-read>(.*?)</td>", body, re.S).group(1)
    assert stored.nodes_read_at.strftime("%Y-%m-%d %H:%M:%S") in read
    assert f"nodes last changed {changed.strftime('%Y-%m-%d %H:%M:%S')}" in read


def test_a_cluster_without_nodes_reads_as_read(client_as, owner, workspace, fake_kube):
    """An empty node list equals the stored one, so the change time never moved: the page must still say it was read."""
    attach(owner, workspace, fake_kube)
    for cluster in Cluster.objects.all():
        reconcile.instancetypes._store_nodes(cluster, [])  # what a sync of a cluster with no nodes stores
    assert Cluster.objects.get().nodes_read_at is not None and Cluster.objects.get().synced_at is None
    body = text(client_as("reader").get(f"{PAGE}/nodes/"))
    assert "The cluster has no nodes" in body and "Nodes not read yet" not in body


def test_instance_types_table_shows_source_shape_state_and_fit(client_as, cluster):
    for name in ("my_instance_type.yaml", "my_instance_type_list.yaml"):
        client_as("owner").post(f"{PAGE}/instance-types/new/yaml/", {"yaml": (DATA / name).read_text()})
    run_instance_types()
    huge = {**SMALL, "name": "huge", "limits_cpu": "64"}
    client_as("owner").post(f"{PAGE}/instance-types/new/form/", huge)
    body = text(client_as("reader").get(f"{PAGE}/instance-types/"))
    rows = dict(re.findall(r'<tr data-instance-type="([^"]+)">(.*?)</tr>', body, re.S))
    assert set(rows) == {"cpusmall", "defaultinstancetype", "huge", "myinstancetypename"}
    assert 'data-source="dockyard"' in rows["defaultinstancetype"]  # the seed list overrides the built-in
    assert "700m cpu" in rows["myinstancetypename"] and "1500Mi" in rows["myinstancetypename"]
    assert "mylabel=mylabelvalue" in rows["myinstancetypename"] and 'data-state="Succeeded"' in rows["myinstancetypename"]
    assert 'data-fits="0"' in rows["myinstancetypename"]  # no node carries mylabel
    assert 'data-fits="3"' in rows["cpusmall"] and 'data-fits="0"' in rows["huge"]
    assert 'data-state="Creating"' in rows["huge"] and 'hx-trigger="every 2s"' in body  # polls until it settles


def test_the_builtin_default_is_listed_with_override_and_no_delete(owner_client, cluster):
    body = text(owner_client.get(f"{PAGE}/instance-types/"))
    row = re.search(r'<tr data-instance-type="defaultinstancetype">(.*?)</tr>', body, re.S)[1]
    assert 'data-source="builtin"' in row and ">Override</a>" in row and "/delete/" not in row
    assert "100m cpu" in row and 'data-fits="3"' in row
    assert 'hx-trigger="every 2s"' not in body  # nothing is on its way


def test_instance_type_table_refreshes_alone_for_htmx(owner_client, cluster):
    body = text(owner_client.get(f"{PAGE}/instance-types/", HTTP_HX_REQUEST="true"))
    assert body.lstrip().startswith('<div class="card" id="instance-types"') and "<html" not in body


def test_nodes_table(client_as, cluster):
    client_as("owner").post(f"{PAGE}/instance-types/new/form/", {**SMALL, "name": "gpu1", "limits_gpu": "1"})
    body = text(client_as("reader").get(f"{PAGE}/nodes/"))
    rows = dict(re.findall(r'<tr data-node="([^"]+)">(.*?)</tr>', body, re.S))
    assert set(rows) == {"node-0", "node-1", "gpu-node-0"}
    assert "Ready" in rows["gpu-node-0"] and "4 GPUs" in rows["gpu-node-0"] and "8 cpu" in rows["node-0"]
    assert "nvidia.com/gpu.present=true" in rows["gpu-node-0"]
    assert ">gpu1</a>" in rows["gpu-node-0"] and ">gpu1</a>" not in rows["node-0"]
    assert ">defaultinstancetype</a>" in rows["node-0"]


def test_nodes_before_the_first_sync(owner_client, owner, workspace, fake_kube, users):
    attach(owner, workspace, fake_kube)
    body = text(owner_client.get(f"{PAGE}/nodes/"))
    assert "Nodes not read yet" in body and "Check again" in body


# Instance type form


def test_form_creates_an_instance_type_and_reconcile_applies_it(owner_client, cluster, fake_kube):
    response = owner_client.post(f"{PAGE}/instance-types/new/form/", {**SMALL, "node_selector": "nvidia.com/gpu.present=true", "limits_gpu": "2"})
    assert response.status_code == 302 and response["Location"] == f"{PAGE}/instance-types/"
    record = InstanceType.objects.get(name="small")
    assert record.requests == {"cpu": "500m", "memory": "1Gi"} and record.gpu == 2
    assert record.node_selector == {"nvidia.com/gpu.present": "true"} and record.created_by.username == "olivia"
    run_instance_types()
    cr = fake_kube.get("instancetypes", "small", group=GROUP)
    assert cr["spec"]["resources"]["limits"] == {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 2}
    body = text(owner_client.get(response["Location"]))
    assert "Instance type small is being applied" in body
    row = re.search(r'<tr data-instance-type="small">(.*?)</tr>', body, re.S)[1]
    assert 'data-state="Succeeded"' in row and 'data-fits="1"' in row  # only the GPU node


def test_form_page_starts_with_a_cr_preview(owner_client, cluster):
    body = text(owner_client.get(f"{PAGE}/instance-types/new/form/"))
    assert 'hx-post="/w/team-a/compute/k8s/instance-types/new/preview/"' in body
    assert "kind: InstanceType" in body and "apiVersion: amlarc.azureml.com/v1alpha1" in body


def test_preview_is_the_cr(owner_client, cluster):
    response = owner_client.post(f"{PAGE}/instance-types/new/preview/", {**SMALL, "node_selector": "pool=a", "limits_gpu": "1"})
    assert response["Content-Type"].startswith("text/plain")
    assert yaml.safe_load(text(response)) == {
        "apiVersion": "amlarc.azureml.com/v1alpha1", "kind": "InstanceType", "metadata": {"name": "small"},
        "spec": {"nodeSelector": {"pool": "a"}, "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                             "limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1}}},
    }
    assert not InstanceType.objects.exists()


def field_error(body: str, field: str) -> str:
    """The error text rendered under one field of the form."""
    for chunk in body.split('<div class="mb-3 field ')[1:]:
        if f'for="id_{field}"' in chunk:
            return " ".join(re.findall(r'invalid-feedback d-block">([^<]+)<', chunk))
    return ""


@pytest.mark.parametrize(
    "change, field, message",
    [
        ({"name": "Small_1"}, "name", "is not a valid name"),
        ({"name": ""}, "name", "A name is required"),
        ({"requests_cpu": "0"}, "requests_cpu", "must be greater than zero"),
        ({"limits_memory": ""}, "limits_memory", "cannot be empty or zero"),
        ({"requests_memory": "lots"}, "requests_memory", ""),
        ({"requests_cpu": "2"}, "requests_cpu", "exceeds its limit"),
        ({"limits_gpu": "1.5"}, "limits_gpu", "whole number"),
        ({"node_selector": "just-a-word"}, "node_selector", "is not key=value"),
        ({"node_selector": "pool=web"}, "node_selector", "extension nodeSelector sets pool=ml"),
    ],
)
def test_invalid_form_shows_errors_next_to_fields(owner_client, owner, workspace, fake_kube, users, change, field, message):
    attach(owner, workspace, fake_kube, node_selector={"pool": "ml"})
    response = owner_client.post(f"{PAGE}/instance-types/new/form/", {**SMALL, **change})
    assert response.status_code == 200
    error = field_error(text(response), field)
    assert error and message in error, text(response)
    assert not InstanceType.objects.exists()


def test_a_taken_name_is_reported_at_the_name(owner_client, cluster):
    owner_client.post(f"{PAGE}/instance-types/new/form/", SMALL)
    response = owner_client.post(f"{PAGE}/instance-types/new/form/", {**SMALL, "limits_cpu": "4"})
    assert "already exist" in field_error(text(response), "name")
    assert InstanceType.objects.get(name="small").limits["cpu"] == "1"


# Pasted YAML


def test_pasting_the_seed_list_creates_both(owner_client, cluster, fake_kube):
    response = owner_client.post(f"{PAGE}/instance-types/new/yaml/", {"yaml": (DATA / "my_instance_type_list.yaml").read_text()})
    assert response.status_code == 302 and response["Location"] == f"{PAGE}/instance-types/"
    assert set(InstanceType.objects.values_list("name", flat=True)) == {"cpusmall", "defaultinstancetype"}
    run_instance_types()
    assert {cr["metadata"]["name"] for cr in fake_kube.list("instancetypes", group=GROUP)} == {"cpusmall", "defaultinstancetype"}
    assert "Instance types cpusmall, defaultinstancetype are being applied" in text(owner_client.get(response["Location"]))


def test_uploading_the_seed_file(owner_client, cluster):
    upload = SimpleUploadedFile("my_instance_type.yaml", (DATA / "my_instance_type.yaml").read_bytes())
    assert owner_client.post(f"{PAGE}/instance-types/new/yaml/", {"yaml_file": upload}).status_code == 302
    assert InstanceType.objects.get().name == "myinstancetypename"


def test_documents_separated_by_dashes_are_one_list(owner_client, cluster):
    one = yaml.safe_load((DATA / "my_instance_type.yaml").read_text())
    two = {**one, "metadata": {"name": "second"}}
    assert owner_client.post(f"{PAGE}/instance-types/new/yaml/", {"yaml": yaml.safe_dump_all([one, two])}).status_code == 302
    assert InstanceType.objects.count() == 2


@pytest.mark.parametrize(
    "pasted, message",
    [
        ("kind: InstanceType\nmetadata: [", "This is not valid YAML (line"),
        ("", "Paste an InstanceType or an InstanceTypeList"),
        ("kind: Pod\n", "kind must be InstanceType or InstanceTypeList"),
        ((DATA / "my_instance_type_list.yaml").read_text().replace('cpu: "100m"', 'cpu: "0"'),
         "<code>items.0.spec.resources.requests.cpu</code>: The CPU must be greater than zero"),
    ],
)
def test_bad_yaml_creates_nothing_and_says_where(owner_client, cluster, pasted, message):
    response = owner_client.post(f"{PAGE}/instance-types/new/yaml/", {"yaml": pasted})
    assert response.status_code == 200 and message in text(response), text(response)
    assert not InstanceType.objects.exists()
    assert 'id="yaml-errors"' in text(response)


# Edit, override, delete


def test_edit_replaces_the_shape(owner_client, cluster, fake_kube):
    owner_client.post(f"{PAGE}/instance-types/new/form/", {**SMALL, "node_selector": "zone=a"})
    run_instance_types()
    page = text(owner_client.get(f"{PAGE}/instance-types/small/edit/"))
    assert 'value="small" readonly' in page and 'value="500m"' in page and "zone=a</textarea>" in page
    response = owner_client.post(f"{PAGE}/instance-types/small/edit/", {**SMALL, "name": "other", "limits_cpu": "2", "node_selector": ""})
    assert response.status_code == 302 and response["Location"] == f"{PAGE}/instance-types/small/"
    record = InstanceType.objects.get(name="small")  # the name is fixed; PUT semantics drop the selector
    assert record.limits["cpu"] == "2" and record.node_selector == {} and record.provisioning_state == "Updating"
    run_instance_types()
    assert fake_kube.get("instancetypes", "small", group=GROUP)["spec"]["resources"]["limits"]["cpu"] == "2"


def test_invalid_edit_keeps_the_old_shape(owner_client, cluster):
    owner_client.post(f"{PAGE}/instance-types/new/form/", SMALL)
    response = owner_client.post(f"{PAGE}/instance-types/small/edit/", {**SMALL, "limits_memory": "512Mi"})
    assert response.status_code == 200 and "exceeds its limit" in field_error(text(response), "requests_memory")
    assert InstanceType.objects.get(name="small").limits["memory"] == "2Gi"


def test_override_the_builtin_default(owner_client, cluster, fake_kube):
    page = text(owner_client.get(f"{PAGE}/instance-types/defaultinstancetype/edit/"))
    assert "Override defaultinstancetype" in page and 'value="100m"' in page
    data = {"requests_cpu": "1", "requests_memory": "1Gi", "limits_cpu": "1", "limits_memory": "1Gi"}
    assert owner_client.post(f"{PAGE}/instance-types/defaultinstancetype/edit/", data).status_code == 302
    run_instance_types()
    assert fake_kube.get("instancetypes", "defaultinstancetype", group=GROUP)
    body = text(owner_client.get(f"{PAGE}/instance-types/defaultinstancetype/"))
    assert 'data-source="dockyard"' in body and "delete-modal" in body


def test_delete_removes_the_cr(owner_client, cluster, fake_kube):
    owner_client.post(f"{PAGE}/instance-types/new/form/", SMALL)
    run_instance_types()
    assert owner_client.get(f"{PAGE}/instance-types/small/delete/").status_code == 405
    response = owner_client.post(f"{PAGE}/instance-types/small/delete/")
    assert response.status_code == 302 and response["Location"] == f"{PAGE}/instance-types/"
    assert InstanceType.objects.get(name="small").provisioning_state == ProvisioningState.DELETING
    row = re.search(r'<tr data-instance-type="small">(.*?)</tr>', text(owner_client.get(response["Location"])), re.S)[1]
    assert 'data-state="Deleting"' in row and "/edit/" not in row
    run_instance_types()
    assert fake_kube.get("instancetypes", "small", group=GROUP) is None and not InstanceType.objects.exists()


def test_the_builtin_cannot_be_deleted(owner_client, cluster):
    response = owner_client.post(f"{PAGE}/instance-types/defaultinstancetype/delete/", follow=True)
    assert "cannot be deleted" in text(response)
    assert "delete-modal" not in text(owner_client.get(f"{PAGE}/instance-types/defaultinstancetype/"))


# Instance type details


def test_detail_shows_the_rendered_cr_and_fit(client_as, cluster):
    client_as("owner").post(f"{PAGE}/instance-types/new/form/", {**SMALL, "limits_gpu": "1"})
    run_instance_types()
    body = text(client_as("reader").get(f"{PAGE}/instance-types/small/"))
    manifest = yaml.safe_load(re.search(r'id="manifest"><code>(.*?)</code>', body, re.S)[1].replace("&#x27;", "'"))
    assert manifest["kind"] == "InstanceType" and manifest["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "dockyard"
    assert manifest["spec"]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "The cluster's copy matches" in body and 'id="drift"' not in body
    assert "fits 1 node" in body and "gpu-node-0" in body


def test_detail_shows_drift_side_by_side(client_as, cluster):
    client_as("owner").post(f"{PAGE}/instance-types/new/form/", SMALL)
    run_instance_types()
    record = InstanceType.objects.get(name="small")
    record.observed_spec = {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "3", "memory": "2Gi"}}}
    record.save()
    body = text(client_as("reader").get(f"{PAGE}/instance-types/small/"))
    assert 'id="drift"' in body and "has drifted" in body
    changed = re.findall(r'<span class="diff-line diff-changed">([^<]*)</span>', body)
    assert "    cpu: &#x27;1&#x27;" in changed and "    cpu: &#x27;3&#x27;" in changed
    assert "drifted" in text(client_as("reader").get(f"{PAGE}/instance-types/"))


def test_the_builtin_detail_explains_it_has_no_cr(client_as, cluster):
    body = text(client_as("reader").get(f"{PAGE}/instance-types/defaultinstancetype/"))
    assert "Built-in shape" in body and "No CR exists in the cluster" in body and 'id="manifest"' not in body


def test_an_imported_instance_type_shows_the_clusters_spec(owner_client, cluster, fake_kube):
    fake_kube.create({"apiVersion": f"{GROUP}/v1alpha1", "kind": "InstanceType", "metadata": {"name": "from-kubectl"},
                      "spec": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}})
    sync()
    body = text(owner_client.get(f"{PAGE}/instance-types/from-kubectl/"))
    assert 'data-source="cluster"' in body and "The cluster's spec" in body and " Edit</a>" in body


def test_unknown_instance_type_is_404(owner_client, cluster):
    assert owner_client.get(f"{PAGE}/instance-types/nope/").status_code == 404
    assert owner_client.get(f"{PAGE}/instance-types/nope/edit/").status_code == 404


# Who sees and may do what


def test_reader_sees_no_buttons(client_as, cluster):
    client_as("owner").post(f"{PAGE}/instance-types/new/form/", SMALL)
    reader = client_as("reader")
    overview = text(reader.get(f"{PAGE}/"))
    assert "Check again" not in overview and "delete-modal" not in overview and 'data-status="passed"' in overview
    listing = text(reader.get(f"{PAGE}/instance-types/"))
    assert 'data-instance-type="small"' in listing
    assert "New instance type" not in listing and "Paste YAML" not in listing and "/edit/" not in listing and "/delete/" not in listing
    detail = text(reader.get(f"{PAGE}/instance-types/small/"))
    assert "/edit/" not in detail and "delete-modal" not in detail


PAGES = ["/", "/status/", "/nodes/", "/instance-types/", "/instance-types/defaultinstancetype/"]
OWNER_PAGES = ["/instance-types/new/form/", "/instance-types/new/yaml/", "/instance-types/defaultinstancetype/edit/"]


@pytest.mark.parametrize("path", PAGES + OWNER_PAGES)
def test_non_members_get_404(client_as, cluster, path):
    assert client_as("outsider").get(f"{PAGE}{path}").status_code == 404


@pytest.mark.parametrize("path", PAGES)
def test_readers_see_the_pages(client_as, cluster, path):
    assert client_as("reader").get(f"{PAGE}{path}").status_code == 200


@pytest.mark.parametrize("path", OWNER_PAGES)
def test_form_pages_are_for_owners(client_as, cluster, path):
    assert client_as("contributor").get(f"{PAGE}{path}").status_code == 403
    assert client_as("owner").get(f"{PAGE}{path}").status_code == 200


@pytest.mark.parametrize(
    "path, data",
    [
        ("/instance-types/new/form/", SMALL),
        ("/instance-types/new/yaml/", {"yaml": (DATA / "my_instance_type.yaml").read_text()}),
        ("/instance-types/new/preview/", SMALL),
        ("/instance-types/small/edit/", {**SMALL, "limits_cpu": "4"}),
        ("/instance-types/small/delete/", {}),
    ],
)
def test_posts_recheck_the_role(client_as, cluster, path, data):
    client_as("owner").post(f"{PAGE}/instance-types/new/form/", SMALL)
    assert client_as("outsider").post(f"{PAGE}{path}", data).status_code == 404
    assert client_as("contributor").post(f"{PAGE}{path}", data).status_code == 403
    record = InstanceType.objects.get()
    assert (record.name, record.limits["cpu"], record.provisioning_state) == ("small", "1", "Creating")


@pytest.mark.parametrize("path", ["/status/", "/nodes/", "/instance-types/", "/instance-types/new/form/", "/recheck/"])
def test_other_compute_types_have_no_cluster_pages(owner_client, gpu_box, path):
    method = owner_client.post if path == "/recheck/" else owner_client.get
    assert method(f"/w/team-a/compute/gpu-box{path}").status_code == 404


def test_other_types_keep_the_generic_details_page(owner_client, gpu_box):
    body = text(owner_client.get("/w/team-a/compute/gpu-box/"))
    assert "Properties" in body and "cluster-checks" not in body
