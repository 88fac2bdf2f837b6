"""The Kubernetes pages in a real browser, against the fake API server: attach, watch the checks, shape instance types.

Instance-type reconciles run eagerly after commit (as a worker would, in the web server's thread). The attach check is
held back and run by the test, so the page is seen polling while the checks run and turning green when they pass.
"""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from compute import reconcile, tasks
from compute.models import ComputeTarget, InstanceType
from controlplane.kube import client as kube
from workspaces.models import Membership
from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser

GROUP = "amlarc.azureml.com"
SEED = Path(__file__).resolve().parents[2] / "compute" / "tests" / "data" / "my_instance_type_list.yaml"
CHECKS = ("reachable", "namespace", "access", "crd")


@pytest.fixture(autouse=True)
def fresh_kube_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


@pytest.fixture
def held_checks(monkeypatch):
    """Attach checks wait for `run_held()` instead of running at once; everything else still runs eagerly."""
    held: list[int] = []
    monkeypatch.setattr(tasks.reconcile_compute, "delay", held.append)

    def run_held() -> None:
        while held:
            pk = held.pop(0)
            try:
                reconcile.reconcile_compute(ComputeTarget.objects.get(pk=pk))
            except kube.KubeTransient:
                continue  # the failure is recorded on the record; a worker would retry later
            compute = ComputeTarget.objects.get(pk=pk)
            if compute.provisioning_state == "Succeeded":  # as the task does: a passing check syncs the cluster
                reconcile.sync_cluster(compute.cluster)

    return run_held


def expect_checks(page, status: str) -> None:
    for key in CHECKS:
        expect(page.locator(f'[data-check="{key}"]')).to_have_attribute("data-status", status)


def test_attach_and_shape_a_kubernetes_cluster(transactional_db, django_user_model, eager_reconcile, held_checks,
                                               fake_kube, page, screenshot):
    owner = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    reader = django_user_model.objects.create_user(username="rita", password="correct-horse-battery")
    workspace = workspace_create(user=owner, name="vision", display_name="Vision team")
    Membership.objects.create(workspace=workspace, user=reader, role="reader")
    sign_in(page, "olivia")

    # The attach wizard: pasting the kubeconfig offers its contexts; the YAML never shows the secret
    page.goto("/w/vision/compute/?tab=kubernetes")
    page.get_by_role("link", name="Create").click()
    page.get_by_label("Compute name").fill("k8s-lab")
    page.get_by_role("textbox", name="Kubeconfig", exact=True).fill(fake_kube.kubeconfig_yaml())
    expect(page.locator("#contexts-note")).to_contain_text("1 context in the kubeconfig")
    expect(page.get_by_label("Context")).to_have_value("fake-kube")
    expect(page.locator("#yaml-preview")).to_contain_text("context: fake-kube")
    page.get_by_label("Node selector").fill("kubernetes.io/os=linux")
    expect(page.locator("#yaml-preview")).to_contain_text("kubernetes.io/os: linux")
    expect(page.locator("#yaml-preview")).not_to_contain_text("fake-kube-admin-token")
    screenshot(page, "k8s-01-attach")
    page.get_by_role("button", name="Attach", exact=True).click()

    # The cluster page polls its checks while they run, and turns green when they pass
    expect(page).to_have_url(re.compile(r"/w/vision/compute/k8s-lab/$"))
    expect_checks(page, "running")
    screenshot(page, "k8s-02-checks-running")
    held_checks()
    expect_checks(page, "passed")
    expect(page.locator("#compute-state [data-state]")).to_have_attribute("data-state", "Succeeded")
    expect(page.locator('[data-check="reachable"]')).to_contain_text("Kubernetes v1.")
    expect(page.locator("#cluster-status")).not_to_have_attribute("hx-trigger", re.compile("every"))
    screenshot(page, "k8s-03-checks-passed")

    # Check again: the checks run anew and the nodes are read
    page.get_by_role("button", name="Check again").click()
    expect_checks(page, "running")
    held_checks()
    expect_checks(page, "passed")
    page.locator(".hub-tabs").get_by_role("link", name=re.compile("Nodes")).click()
    expect(page.locator("tr[data-node]")).to_have_count(3)
    expect(page.locator('tr[data-node="gpu-node-0"]')).to_contain_text("4 GPUs")
    screenshot(page, "k8s-04-nodes")
    page.locator(".hub-tabs").get_by_role("link", name=re.compile("Overview")).click()
    expect(page.locator("[data-nodes-read]")).to_contain_text("nodes last changed")  # the last read, and the last change
    screenshot(page, "k8s-04b-nodes-read")

    # A new instance type from the form: an error next to its field first, the CR preview as typed
    page.locator(".hub-tabs").get_by_role("link", name=re.compile("Instance types")).click()
    expect(page.locator('tr[data-instance-type="defaultinstancetype"] [data-source="builtin"]')).to_be_visible()
    page.get_by_role("link", name="New instance type").click()
    page.locator("#id_name").fill("gpu-small")
    page.get_by_label("Node selector").fill("nvidia.com/gpu.present=true")
    page.locator("#id_requests_cpu").fill("4")
    page.locator("#id_requests_memory").fill("4Gi")
    page.locator("#id_limits_cpu").fill("2")
    page.locator("#id_limits_memory").fill("8Gi")
    page.locator("#id_limits_gpu").fill("1")
    expect(page.locator("#yaml-preview")).to_contain_text("nvidia.com/gpu: 1")
    expect(page.locator("#yaml-preview")).to_contain_text("kind: InstanceType")
    screenshot(page, "k8s-05-instance-type-form")
    page.get_by_role("button", name="Create", exact=True).click()
    expect(page.locator(".invalid-feedback", has_text="exceeds its limit")).to_be_visible()
    screenshot(page, "k8s-06-instance-type-error")
    page.locator("#id_requests_cpu").fill("1")
    page.get_by_role("button", name="Create", exact=True).click()

    # Reconciled: the CR is in the cluster, and it fits the one GPU node
    row = page.locator('tr[data-instance-type="gpu-small"]')
    expect(row.locator("[data-state]")).to_have_attribute("data-state", "Succeeded")
    expect(row).to_contain_text("fits 1 node")
    live = {cr["metadata"]["name"]: cr for cr in fake_kube.list("instancetypes", group=GROUP)}
    assert live["gpu-small"]["spec"]["resources"]["limits"] == {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": 1}
    assert live["gpu-small"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}

    # The seed's InstanceTypeList, pasted
    page.get_by_role("link", name="Paste YAML").click()
    page.get_by_label("InstanceType or InstanceTypeList").fill(SEED.read_text())
    screenshot(page, "k8s-07-paste-yaml")
    page.get_by_role("button", name="Create", exact=True).click()
    expect(page.locator('tr[data-instance-type="cpusmall"] [data-state]')).to_have_attribute("data-state", "Succeeded")
    expect(page.locator('tr[data-instance-type="defaultinstancetype"] [data-source="dockyard"]')).to_be_visible()
    assert {cr["metadata"]["name"] for cr in fake_kube.list("instancetypes", group=GROUP)} == {"gpu-small", "cpusmall", "defaultinstancetype"}
    screenshot(page, "k8s-08-instance-types")

    # Details: the rendered CR; once the cluster's copy differs, both side by side
    page.get_by_role("link", name="gpu-small").click()
    expect(page.locator("#manifest")).to_contain_text("app.kubernetes.io/managed-by: dockyard")
    screenshot(page, "k8s-09-instance-type-detail")
    record = InstanceType.objects.get(name="gpu-small")
    record.observed_spec = {**record.observed_spec, "resources": {**record.observed_spec["resources"], "limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 1}}}
    record.save(update_fields=["observed_spec"])
    page.reload()
    expect(page.locator("#drift")).to_contain_text("drifted")
    expect(page.locator("#drift-diff .diff-changed")).to_have_count(2)
    screenshot(page, "k8s-10-drift")

    # Delete, with a confirmation
    page.locator(".crumbs").get_by_role("link", name="Instance types").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete cpusmall").click()
    expect(page.locator('tr[data-instance-type="cpusmall"]')).to_have_count(0)
    assert fake_kube.get("instancetypes", "cpusmall", group=GROUP) is None

    # A second attachment whose namespace is missing says which check failed
    page.goto("/w/vision/compute/new/kubernetes/")
    page.get_by_label("Compute name").fill("k8s-team-x")
    page.get_by_role("textbox", name="Kubeconfig", exact=True).fill(fake_kube.kubeconfig_yaml())
    page.get_by_label("Namespace").fill("team-x")
    expect(page.get_by_label("Context")).to_have_value("fake-kube")
    page.get_by_role("button", name="Attach", exact=True).click()
    expect_checks(page, "running")
    held_checks()
    expect(page.locator('[data-check="namespace"]')).to_have_attribute("data-status", "failed")
    expect(page.locator('[data-check="namespace"]')).to_contain_text("Namespace 'team-x' does not exist")
    expect(page.locator('[data-check="crd"]')).to_have_attribute("data-status", "skipped")
    screenshot(page, "k8s-11-failed-check")

    # A reader sees it all and none of the buttons
    page.get_by_test_id("user-menu").click()
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, "rita")
    page.goto("/w/vision/compute/k8s-lab/instance-types/")
    expect(page.locator('tr[data-instance-type="gpu-small"]')).to_be_visible()
    expect(page.get_by_role("link", name="New instance type")).to_have_count(0)
    expect(page.get_by_role("button", name="Check again")).to_have_count(0)
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
    screenshot(page, "k8s-12-reader")
