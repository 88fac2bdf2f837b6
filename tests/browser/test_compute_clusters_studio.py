"""A compute cluster in a real browser: pick a GPU size in the create form, see its YAML, land on the compute page and
watch the node counts move as the cluster's status changes.

The reconcile is held back: the test plays its part and writes `ComputeTarget.status` (the contract the compute-cluster
reconcile writes), and the page, polling its pool card, shows each change without a reload.
"""
import re

import pytest
from playwright.sync_api import expect

from compute import tasks
from compute.models import ComputeTarget
from controlplane.reconciling import ProvisioningState
from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser

POLL = 10_000  # ms: a few of the page's 2-second polls


def shot(page, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")  # a full-page shot of a scrolled page draws the sticky top bar mid-page
    page.screenshot(path=f"/tmp/i13-studio-{name}.png", full_page=True)


def set_status(name: str, state: str = ProvisioningState.SUCCEEDED, **status) -> None:
    """What the reconcile would write: the pool as the cluster shows it."""
    ComputeTarget.objects.filter(name=name).update(provisioning_state=state, status=status)


def pool_status(current: int, target: int, idle: int, scaling: str, nodes: list[tuple[str, bool, bool]], errors=()) -> dict:
    return {
        "engine": "karpenter", "pool": "dy-vision-gpu-cluster", "current_node_count": current,
        "target_node_count": target, "idle_node_count": idle, "max_node_count": 2, "scaling": scaling,
        "autoscaler_errors": list(errors), "nodes": [{"name": n, "ready": r, "idle": i} for n, r, i in nodes],
    }


def test_create_a_gpu_cluster_and_watch_its_nodes(transactional_db, django_user_model, monkeypatch, page):
    monkeypatch.setattr(tasks.reconcile_compute, "delay", lambda pk: None)  # the test writes what reconcile would
    owner = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    workspace = workspace_create(user=owner, name="vision", display_name="Vision team")
    ComputeTarget.objects.create(
        workspace=workspace, name="k8s", type="kubernetes", created_by=owner, provisioning_state=ProvisioningState.SUCCEEDED,
        properties={"server": "https://k8s.example.internal:6443", "namespace": "vision"})
    sign_in(page, "olivia")

    # The clusters tab is empty: its centred Create opens the form
    page.goto("/w/vision/compute/?tab=clusters")
    page.get_by_role("link", name="Create").click()
    expect(page.get_by_role("heading", name="Create a compute cluster")).to_be_visible()
    expect(page.get_by_label("Kubernetes compute")).to_have_value("k8s")  # the workspace's only one
    expect(page.locator("#yaml-preview")).to_contain_text("kubernetes_compute: k8s")

    # Only GPU sizes, then search for a GPU model
    picker = page.locator("[data-size-picker]")
    all_rows = picker.locator("[data-size-row]").count()
    expect(picker.locator("[data-size-chosen]")).to_contain_text("Standard_DS3_v2 — 4 vCPUs, 14 GiB")  # the default
    shot(page, "00-size-picker")
    picker.locator('label[for="id_size_kind_gpu"]').click()
    expect(picker.locator('[data-size-row="Standard_DS3_v2"]')).to_be_hidden()
    expect(picker.locator('[data-size-row="Standard_NC6s_v3"]')).to_be_visible()
    gpu_rows = picker.locator("[data-size-row]:visible").count()
    assert 0 < gpu_rows < all_rows
    expect(picker.locator("[data-size-count]")).to_have_text(f"{gpu_rows} sizes")
    picker.get_by_label("Search sizes").fill("v100")
    expect(picker.locator('[data-size-row="Standard_NC24ads_A100_v4"]')).to_be_hidden()
    picker.get_by_label("Search sizes").fill("no such gpu")
    expect(picker.locator("[data-size-none]")).to_be_visible()
    picker.get_by_label("Search sizes").fill("V100")

    # A click on the row picks the size; the YAML follows every field
    picker.locator('[data-size-row="Standard_NC6s_v3"] td', has_text="NVIDIA V100").click()
    expect(page.get_by_label("Standard_NC6s_v3")).to_be_checked()
    expect(picker.locator("[data-size-chosen]")).to_contain_text("Standard_NC6s_v3 — 6 vCPUs, 112 GiB, 1 × NVIDIA V100")
    page.get_by_label("Compute name").fill("gpu-cluster")
    page.get_by_label("Virtual machine tier").select_option("low_priority")
    page.get_by_label("Maximum number of nodes").fill("2")
    page.get_by_label("Idle seconds before scale down").fill("300")
    preview = page.locator("#yaml-preview")
    for line in ("name: gpu-cluster", "size: Standard_NC6s_v3", "tier: low_priority", "max_instances: 2",
                 "idle_time_before_scale_down: 300", "kubernetes_compute: k8s"):
        expect(preview).to_contain_text(line)
    expect(preview).not_to_contain_text("size_filter")
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    shot(page, "01-create-form")

    # Create: the compute page, its pool not read yet
    page.get_by_role("button", name="Create", exact=True).click()
    expect(page.get_by_role("heading", name="gpu-cluster")).to_be_visible()
    expect(page.locator("#compute-pool")).to_have_attribute("data-observed", "false")
    compute = ComputeTarget.objects.get(name="gpu-cluster")
    assert (compute.properties["size"], compute.properties["tier"], compute.properties["max_instances"]) == (
        "Standard_NC6s_v3", "low_priority", 2)
    page.evaluate("window.notReloaded = true")  # gone if the page reloads
    shot(page, "02-compute-page-new")

    # The reconcile reads the pool: no node yet, one wanted
    set_status("gpu-cluster", **pool_status(0, 1, 0, "scaling_up", []))
    counts = page.locator("#compute-pool")
    expect(counts.locator('[data-count="target"] .pool-stat-value')).to_have_text("1", timeout=POLL)
    expect(counts.locator('[data-count="current"] .pool-stat-value')).to_have_text("0")
    expect(page.locator("#compute-state [data-state]")).to_have_attribute("data-state", "Succeeded")
    expect(counts).to_contain_text("The autoscaler is adding nodes")
    expect(counts).to_contain_text("Karpenter NodePool dy-vision-gpu-cluster")

    # A node joins and takes the job; then the pool is at its limit and the autoscaler says why
    set_status("gpu-cluster", **pool_status(1, 1, 0, "steady", [("gpu-node-a", True, False)]))
    expect(counts.locator('[data-count="current"] .pool-stat-value')).to_have_text("1", timeout=POLL)
    expect(counts.locator('[data-node="gpu-node-a"]')).to_have_attribute("data-ready", "true")
    shot(page, "03-compute-page-one-node")
    set_status("gpu-cluster", **pool_status(2, 2, 1, "at_limit", [("gpu-node-a", True, False), ("gpu-node-b", True, True)],
                                            errors=["max_instances (2) reached: 1 job waits for a node."]))
    expect(counts.locator('[data-count="current"] .pool-stat-value')).to_have_text("2", timeout=POLL)
    expect(counts.locator('[data-count="idle"] .pool-stat-value')).to_have_text("1")
    expect(counts.locator("[data-autoscaler-errors]")).to_contain_text("max_instances (2) reached: 1 job waits for a node.")
    expect(counts.locator('[data-node="gpu-node-b"]')).to_have_attribute("data-idle", "true")
    assert page.evaluate("window.notReloaded") is True
    shot(page, "04-compute-page-at-limit")

    # The clusters tab shows the same counts
    page.locator(".crumbs").get_by_role("link", name="Compute clusters").click()
    row = page.locator('tr[data-compute="gpu-cluster"]')
    expect(row.locator("[data-nodes]")).to_have_attribute("data-current", "2")
    expect(row).to_contain_text(re.compile(r"Standard_NC6s_v3\s+Low priority\s+0–2"))
    expect(row.locator("[data-scaling]")).to_have_text("at its limit")
    shot(page, "05-clusters-tab")

    # Paste YAML: the file the CLI takes creates the same kind of record (kubernetes_compute left to the server)
    page.get_by_role("link", name="New").click()
    page.get_by_role("link", name="Paste YAML").click()
    page.get_by_label("Compute YAML").fill(
        "name: cpu-cluster\ntype: amlcompute\nsize: Standard_F4s_v2\nmin_instances: 0\nmax_instances: 4\n")
    shot(page, "06-paste-yaml")
    page.get_by_role("button", name="Create", exact=True).click()
    expect(page.get_by_role("heading", name="cpu-cluster")).to_be_visible()
    assert ComputeTarget.objects.get(name="cpu-cluster").properties["size"] == "Standard_F4s_v2"
