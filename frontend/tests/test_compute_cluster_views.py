"""The compute-cluster pages: the create form (size picker, Kubernetes compute, YAML, Paste YAML), the hub's clusters
tab with node counts, and the compute page's pool card that htmx polls."""
import html
import re

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext

from compute import selectors, vmsizes
from compute.models import ComputeTarget
from controlplane.reconciling import ProvisioningState
from workspaces.models import AuditEvent

NEW = "/w/team-a/compute/new/amlcompute/"
FORM = {"name": "gpu-cluster", "size": "Standard_NC6s_v3", "tier": "low_priority", "min_instances": "0",
        "max_instances": "3", "idle_time_before_scale_down": "600", "tags": "team=vision"}
STATUS = {
    "engine": "karpenter", "pool": "dy-team-a-gpu-cluster", "current_node_count": 2, "target_node_count": 3,
    "idle_node_count": 1, "max_node_count": 3, "scaling": "scaling_up", "autoscaler_errors": [],
    "nodes": [{"name": "gpu-node-a", "ready": True, "idle": False}, {"name": "gpu-node-b", "ready": True, "idle": True}],
}


def text(response) -> str:
    return response.content.decode()


def field_error(body: str, field: str) -> str:
    """The error text rendered under one field of the create form."""
    for chunk in body.split('<div class="mb-3 field ')[1:]:
        if f'for="id_{field}"' in chunk:
            return " ".join(re.findall(r'invalid-feedback d-block">([^<]+)<', chunk))
    return ""


def yaml_panel(body: str) -> dict:
    return yaml.safe_load(html.unescape(re.search(r'<code id="yaml-preview">(.*?)</code>', body, re.S).group(1)))


def picker_rows(body: str) -> dict[str, str]:
    """The size picker's rows by size name: each row's HTML."""
    return dict(re.findall(r'<tr data-size-row="([^"]+)"(.*?)</tr>', body, re.S))


def cluster(workspace, owner, name: str, status: dict | None = None, **properties) -> ComputeTarget:
    """A compute cluster record as the reconcile leaves it (no service: the test sets what the cluster says)."""
    return ComputeTarget.objects.create(
        workspace=workspace, name=name, type="amlcompute", created_by=owner, status=status or {},
        provisioning_state=ProvisioningState.SUCCEEDED,
        properties={"size": "Standard_DS3_v2", "tier": "dedicated", "min_instances": 0, "max_instances": 4,
                    "idle_time_before_scale_down": 120, "kubernetes_compute": "k8s", **properties})


def kubernetes(workspace, owner, name: str) -> ComputeTarget:
    return ComputeTarget.objects.create(
        workspace=workspace, name=name, type="kubernetes", created_by=owner, provisioning_state=ProvisioningState.SUCCEEDED,
        properties={"server": f"https://{name}.example.internal:6443", "namespace": "ml"})


# The create form


def test_the_size_picker_lists_the_catalog_sizes_for_clusters_with_vcpus_memory_and_gpus(owner_client, workspace):
    rows = picker_rows(text(owner_client.get(NEW)))
    catalog = [row for row in selectors.vm_size_list(supported_in=vmsizes.CLUSTER) if not row["retired"]]
    assert list(rows) == [row["name"] for row in catalog]
    gpu = rows["Standard_NC6s_v3"]  # Azure's table: 6 vCPUs, 112 GiB, one V100
    assert 'data-gpu="1"' in gpu and re.search(r'text-end">6</td>', gpu) and "112 GiB" in gpu and "1 × NVIDIA V100" in gpu
    cpu = rows["Standard_DS3_v2"]
    assert 'data-gpu="0"' in cpu and re.search(r'text-end">4</td>', cpu) and "14 GiB" in cpu
    assert 'value="Standard_DS3_v2" id="id_size_Standard_DS3_v2" checked' in cpu  # the form's default


def test_the_picker_offers_no_retired_size_and_no_instance_only_size(owner_client, workspace):
    rows = picker_rows(text(owner_client.get(NEW)))
    everything = selectors.vm_size_list()
    refused = [row["name"] for row in everything if row["retired"] or vmsizes.CLUSTER not in row["supported_in"]]
    assert not set(refused) & set(rows)
    assert "Standard_NC6" not in rows  # retired in 2023


def test_the_picker_rows_carry_what_the_filters_match(owner_client, workspace):
    rows = picker_rows(text(owner_client.get(NEW)))
    assert re.search(r'data-search="[^"]*standard_nc6s_v3[^"]*nvidia v100', rows["Standard_NC6s_v3"])
    assert 'data-summary="6 vCPUs, 112 GiB, 1 × NVIDIA V100"' in rows["Standard_NC6s_v3"]


def test_the_only_kubernetes_compute_is_chosen_and_shown_in_the_yaml(owner_client, owner, workspace):
    kubernetes(workspace, owner, "k8s")
    body = text(owner_client.get(NEW))
    select = re.search(r'<select[^>]*name="kubernetes_compute">(.*?)</select>', body, re.S).group(1)
    assert re.findall(r'<option value="([^"]*)"', select) == ["k8s"]
    assert yaml_panel(body) == {"type": "amlcompute", "kubernetes_compute": "k8s", "tier": "dedicated",
                                "size": "Standard_DS3_v2", "min_instances": 0, "max_instances": 1,
                                "idle_time_before_scale_down": 120}


def test_several_kubernetes_computes_are_a_choice_and_none_says_to_attach_one(owner_client, owner, workspace):
    assert "data-no-host" in text(owner_client.get(NEW))
    kubernetes(workspace, owner, "k8s-a")
    kubernetes(workspace, owner, "k8s-b")
    body = text(owner_client.get(NEW))
    select = re.search(r'<select[^>]*name="kubernetes_compute">(.*?)</select>', body, re.S).group(1)
    assert re.findall(r'<option value="([^"]*)"', select) == ["", "k8s-a", "k8s-b"]
    assert "Choose a Kubernetes compute" in select and "data-no-host" not in body
    assert "kubernetes_compute" not in yaml_panel(body)


def test_the_yaml_preview_follows_every_field(owner_client, workspace):
    response = owner_client.post(f"{NEW}preview/", {**FORM, "kubernetes_compute": "k8s", "size_filter": "gpu"})
    assert yaml.safe_load(text(response)) == {
        "name": "gpu-cluster", "type": "amlcompute", "kubernetes_compute": "k8s", "tier": "low_priority",
        "size": "Standard_NC6s_v3", "min_instances": 0, "max_instances": 3, "idle_time_before_scale_down": 600,
        "tags": {"team": "vision"},
    }  # the picker's filter is no field


def test_a_valid_post_creates_the_cluster_through_the_service_and_lands_on_its_page(owner_client, owner, workspace):
    kubernetes(workspace, owner, "k8s")
    response = owner_client.post(NEW, FORM)  # kubernetes_compute left to the server: the only one
    assert response.status_code == 302, re.findall(r'invalid-feedback[^>]*>([^<]+)', text(response))
    assert response["Location"] == "/w/team-a/compute/gpu-cluster/"
    compute = ComputeTarget.objects.get(workspace=workspace, name="gpu-cluster")
    assert compute.type == "amlcompute" and compute.created_by == owner and compute.tags == {"team": "vision"}
    assert {key: compute.properties[key] for key in ("size", "tier", "min_instances", "max_instances",
                                                     "idle_time_before_scale_down")} == {
        "size": "Standard_NC6s_v3", "tier": "low_priority", "min_instances": 0, "max_instances": 3,
        "idle_time_before_scale_down": 600}
    assert AuditEvent.objects.filter(target_type="compute", target_name="gpu-cluster", action="create").exists()


@pytest.mark.parametrize("form, field, message", [
    ({"min_instances": "5", "max_instances": "2"}, "min_instances", "must not exceed max_instances"),
    ({"size": "Standard_NC6"}, "size", "retired"),
    ({"idle_time_before_scale_down": "-1"}, "idle_time_before_scale_down", ""),
    ({"kubernetes_compute": "no-such-compute"}, "kubernetes_compute", ""),
])
def test_the_servers_errors_show_at_their_fields_and_nothing_is_created(owner_client, owner, workspace, form, field, message):
    kubernetes(workspace, owner, "k8s")
    response = owner_client.post(NEW, {**FORM, **form})
    assert response.status_code == 200
    shown = field_error(text(response), field)
    assert shown and message in shown
    assert not ComputeTarget.objects.filter(type="amlcompute").exists()


def test_a_refused_post_keeps_the_picked_size_and_tier(owner_client, owner, workspace):
    kubernetes(workspace, owner, "k8s")
    body = text(owner_client.post(NEW, {**FORM, "min_instances": "9"}))
    assert 'value="Standard_NC6s_v3" id="id_size_Standard_NC6s_v3" checked' in body
    assert not re.search(r'value="Standard_DS3_v2" id="id_size_Standard_DS3_v2" checked', body)
    assert '<option value="low_priority" selected>' in body
    assert "Selected: <span class=\"font-monospace\">Standard_NC6s_v3</span>" in body


def test_the_yaml_panel_has_a_copy_button_and_the_form_a_paste_tab(owner_client, workspace):
    body = text(owner_client.get(NEW))
    assert 'data-copy="yaml-preview"' in body
    assert f'href="{NEW}yaml/"' in body


# Paste YAML


PASTED = """$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json
name: gpu-cluster
size: Standard_NC6s_v3
tier: low_priority
min_instances: 0
max_instances: 3
idle_time_before_scale_down: 600
tags: {team: vision}
"""


def test_pasted_yaml_creates_the_same_record_as_the_form(owner_client, owner, workspace):
    kubernetes(workspace, owner, "k8s")
    assert owner_client.post(NEW, {**FORM, "name": "from-form"}).status_code == 302
    response = owner_client.post(f"{NEW}yaml/", {"yaml": PASTED})
    assert response.status_code == 302 and response["Location"] == "/w/team-a/compute/gpu-cluster/"
    pasted, filled = (ComputeTarget.objects.get(name=name) for name in ("gpu-cluster", "from-form"))
    assert (pasted.type, pasted.properties, pasted.tags) == (filled.type, filled.properties, filled.tags)


@pytest.mark.parametrize("pasted, target, message", [
    ("name: c1\nmin_instances: 4\nmax_instances: 2\n", "min_instances", "must not exceed max_instances"),
    ("- just\n- a list\n", "", "must be a mapping"),
    ("name: [unclosed\n", "", "not valid YAML"),
    ("name: a\n---\nname: b\n", "", "one compute at a time"),
])
def test_pasted_yaml_errors_are_listed_and_nothing_is_created(owner_client, workspace, pasted, target, message):
    body = text(owner_client.post(f"{NEW}yaml/", {"yaml": pasted}))
    errors = re.search(r'id="yaml-errors">(.*?)</div>\s*</div>|id="yaml-errors">(.*?)</ul>', body, re.S).group(0)
    assert message in html.unescape(errors)
    if target:
        assert f"<code>{target}</code>" in errors
    assert "Nothing was created:" in body and not ComputeTarget.objects.exists()
    assert html.escape(pasted.splitlines()[0]) in body  # the text stays to be fixed


def test_paste_and_preview_need_manage(client_as, workspace):
    assert client_as("reader").get(f"{NEW}yaml/").status_code == 403
    assert client_as("contributor").post(f"{NEW}yaml/", {"yaml": PASTED}).status_code == 403
    assert client_as("outsider").get(f"{NEW}yaml/").status_code == 404
    assert client_as("anonymous").get(f"{NEW}yaml/").status_code == 302  # to the login page
    assert not ComputeTarget.objects.exists()


# The hub's clusters tab


def test_the_clusters_tab_shows_size_tier_min_max_and_node_counts(client_as, owner, workspace):
    cluster(workspace, owner, "gpu-cluster", STATUS, size="Standard_NC6s_v3", tier="low_priority", max_instances=3)
    cluster(workspace, owner, "cpu-cluster")
    body = text(client_as("reader").get("/w/team-a/compute/?tab=clusters"))
    gpu = re.search(r'<tr data-compute="gpu-cluster">(.*?)</tr>', body, re.S).group(1)
    cells = [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", cell))).strip()
             for cell in re.findall(r"<td[^>]*>(.*?)</td>", gpu, re.S)]
    assert cells[2:6] == ["Standard_NC6s_v3", "Low priority", "0–3", "2 / 3 · 1 idle scaling up"]
    assert 'data-current="2" data-target="3" data-idle="1"' in gpu
    cpu = re.search(r'<tr data-compute="cpu-cluster">(.*?)</tr>', body, re.S).group(1)
    assert "not observed yet" in cpu and "Dedicated" in cpu


def test_the_clusters_tab_says_when_the_autoscaler_refuses(client_as, owner, workspace):
    cluster(workspace, owner, "gpu-cluster", {**STATUS, "scaling": "at_limit",
                                              "autoscaler_errors": ["No instance type satisfied the requirements."]})
    gpu = re.search(r'<tr data-compute="gpu-cluster">(.*?)</tr>', text(client_as("reader").get("/w/team-a/compute/?tab=clusters")), re.S).group(1)
    assert "at its limit" in gpu and 'data-bs-title="No instance type satisfied the requirements."' in gpu


def test_the_clusters_tab_reads_a_fixed_number_of_queries(owner_client, owner, workspace, django_assert_max_num_queries):
    cluster(workspace, owner, "c-0", STATUS)
    owner_client.get("/w/team-a/compute/?tab=clusters")  # the session and the workspace are warm
    with CaptureQueriesContext(connection) as one:
        owner_client.get("/w/team-a/compute/?tab=clusters")
    for number in range(1, 12):
        cluster(workspace, owner, f"c-{number}", STATUS)
    with django_assert_max_num_queries(len(one)):
        body = text(owner_client.get("/w/team-a/compute/?tab=clusters"))
    assert body.count("data-current=") == 12


# The compute page


def test_the_compute_page_shows_the_pool_and_polls_it(client_as, owner, workspace):
    cluster(workspace, owner, "gpu-cluster", STATUS, size="Standard_NC6s_v3")
    body = text(client_as("reader").get("/w/team-a/compute/gpu-cluster/"))
    pool = re.search(r'<div id="compute-pool"(.*?)<div class="card mb-4">\s*<div class="card-header">Properties', body, re.S).group(1)
    assert 'hx-get="/w/team-a/compute/gpu-cluster/pool/" hx-trigger="every 2s" hx-swap="outerHTML"' in pool
    counts = dict(re.findall(r'data-count="(\w+)"><div class="pool-stat-value">(\d+)</div>', pool))
    assert counts == {"current": "2", "target": "3", "idle": "1", "max": "3"}
    assert "scaling up</span>The autoscaler is adding nodes" in pool
    assert re.search(r"Karpenter NodePool <code>dy-team-a-gpu-cluster</code>", pool)
    assert 'href="/w/team-a/compute/k8s/"' in pool  # the Kubernetes compute it lives on
    assert re.findall(r'<tr data-node="([^"]+)" data-ready="(\w+)" data-idle="(\w+)"', pool) == [
        ("gpu-node-a", "true", "false"), ("gpu-node-b", "true", "true")]
    assert "2 of 2 nodes ready." in pool


def test_the_pool_partial_alone_with_the_header_state(client_as, owner, workspace):
    compute = cluster(workspace, owner, "gpu-cluster", STATUS)
    compute.provisioning_state = ProvisioningState.FAILED
    compute.provisioning_errors = [{"code": "NoAutoscaler", "message": "The cluster has neither Karpenter nor Cluster API."}]
    compute.status = {**STATUS, "engine": "cluster-api", "scaling": "at_limit",
                      "autoscaler_errors": ["max_instances (3) reached: 2 jobs wait for a node."]}
    compute.save()
    body = text(client_as("reader").get("/w/team-a/compute/gpu-cluster/pool/", HTTP_HX_REQUEST="true"))
    assert body.lstrip().startswith('<div id="compute-pool"') and "<html" not in body
    for badge in ("compute-state", "compute-state-row"):
        assert re.search(rf'<span id="{badge}" hx-swap-oob="true"><span [^>]*data-state="Failed"', body)
    assert "The cluster has neither Karpenter nor Cluster API." in body and "<code>NoAutoscaler</code>" in body
    assert "max_instances (3) reached: 2 jobs wait for a node." in body
    assert "at its limit</span>Every node max_instances allows is in use" in body and "Cluster API with cluster-autoscaler MachineDeployment" in body


def test_a_pool_not_observed_yet_says_so(client_as, owner, workspace):
    cluster(workspace, owner, "fresh")
    body = text(client_as("reader").get("/w/team-a/compute/fresh/pool/"))
    assert 'data-observed="false"' in body and "Not observed yet" in body and "data-count" not in body


def test_the_pool_is_only_for_compute_clusters_and_members(client_as, owner, workspace):
    cluster(workspace, owner, "gpu-cluster", STATUS)
    kubernetes(workspace, owner, "k8s")
    assert client_as("reader").get("/w/team-a/compute/k8s/pool/").status_code == 404
    assert client_as("reader").get("/w/team-a/compute/nothing/pool/").status_code == 404
    assert client_as("outsider").get("/w/team-a/compute/gpu-cluster/pool/").status_code == 404
    assert client_as("anonymous").get("/w/team-a/compute/gpu-cluster/pool/").status_code == 302
