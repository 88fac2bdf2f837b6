"""The studio in a real browser: sign in, create a workspace, add a member, create computes of two kinds (compute
clusters: test_compute_clusters_studio.py)."""
import re

import pytest
from playwright.sync_api import expect

from compute.models import ComputeTarget
from workspaces.models import Membership

pytestmark = pytest.mark.browser

KUBECONFIG = """apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod
  cluster: {server: "https://k8s.example.internal:6443"}
contexts:
- name: prod
  context: {cluster: prod, user: admin}
users:
- name: admin
  user: {token: browser-kube-secret}
"""


def open_tab(page, label: str):
    page.locator(".hub-tabs").get_by_role("link", name=label).click()
    expect(page.locator(".hub-tabs .nav-link.active")).to_contain_text(label)


def test_studio_flow(transactional_db, django_user_model, eager_reconcile, page, screenshot):
    django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    django_user_model.objects.create_user(username="bob", password="correct-horse-battery", email="bob@example.com")

    # Sign in
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login/"))
    screenshot(page, "01-login")
    page.get_by_label("User name").fill("olivia")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Sign in").click()

    # Create a workspace (the form is open while there are none)
    expect(page.get_by_role("heading", name="Workspaces", exact=True)).to_be_visible()
    page.get_by_role("textbox", name="Name", exact=True).fill("vision")
    page.get_by_label("Display name").fill("Vision team")
    page.get_by_label("Description").fill("Image models and their GPUs.")
    screenshot(page, "02-home-new-workspace")
    page.get_by_role("button", name="Create workspace").click()
    expect(page.get_by_role("heading", name="Compute", exact=True)).to_be_visible()
    expect(page.get_by_text("No compute instances yet")).to_be_visible()
    screenshot(page, "03-compute-empty")

    # Add a member (as a reader, the default role)
    page.locator(".sidenav").get_by_role("link", name="Members").click()
    page.get_by_label("User name").fill("bob")
    page.get_by_role("button", name="Add member").click()
    expect(page.locator('tr[data-member="bob"]')).to_be_visible()
    # Promote him in place: an htmx post (CSRF header from <body>) that swaps in the refreshed table
    with page.expect_response(re.compile(r"/members/bob/role/$")) as reply:
        page.get_by_label("Role of bob").select_option("contributor")
    assert reply.value.ok
    page.reload()
    expect(page.get_by_label("Role of bob")).to_have_value("contributor")
    screenshot(page, "04-members")

    # The compute-cluster form refuses at the field (a cluster needs a Kubernetes compute to live on, so it is created
    # in test_compute_clusters_studio.py, which has one)
    page.locator(".sidenav").get_by_role("link", name="Compute").click()
    open_tab(page, "Compute clusters")
    page.get_by_role("link", name="Create").click()
    page.get_by_label("Compute name").fill("cpu-cluster")
    page.get_by_label("Virtual machine tier").select_option("low_priority")
    page.get_by_label("Maximum number of nodes").fill("4")
    page.get_by_label("Minimum number of nodes").fill("5")
    expect(page.locator("#yaml-preview")).to_contain_text("min_instances: 5")
    page.get_by_role("button", name="Create", exact=True).click()
    expect(page.locator(".invalid-feedback", has_text="must not exceed max_instances (4)")).to_be_visible()
    screenshot(page, "06-cluster-form-error")
    page.get_by_role("link", name="Cancel").click()

    # The attached tab offers every other type
    open_tab(page, "Attached computes")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("link", name="Azure Databricks")).to_be_visible()
    screenshot(page, "07-attached-create-menu")

    # Attach a Kubernetes cluster; its secret never shows in the YAML
    open_tab(page, "Kubernetes clusters")
    page.get_by_role("link", name="Create").click()
    page.get_by_label("Compute name").fill("k8s-prod")
    page.get_by_role("textbox", name="Kubeconfig", exact=True).fill(KUBECONFIG)
    page.get_by_label("Namespace").fill("vision")
    page.get_by_label("Node selector").fill("pool=gpu")
    expect(page.locator("#yaml-preview")).to_contain_text("kubeconfig: <hidden>")
    expect(page.locator("#yaml-preview")).to_contain_text("pool: gpu")
    expect(page.locator("#yaml-preview")).not_to_contain_text("browser-kube-secret")
    screenshot(page, "08-attach-kubernetes")
    page.get_by_role("button", name="Attach", exact=True).click()
    # Its own page shows the attach checks; this server does not exist, so reaching it fails
    expect(page.get_by_role("heading", name="k8s-prod")).to_be_visible()
    expect(page.locator('[data-check="reachable"]')).to_have_attribute("data-status", "failed")
    page.locator(".crumbs").get_by_role("link", name="Kubernetes clusters").click()
    expect(page.locator('tr[data-compute="k8s-prod"]')).to_be_visible()
    page.get_by_role("button", name="Refresh").click()
    expect(page.locator('tr[data-compute="k8s-prod"]')).to_be_visible()
    screenshot(page, "09-kubernetes-tab")

    # A compute instance on the attached cluster, from the centred Create button of the empty tab; it lands on its page
    open_tab(page, "Compute instances")
    page.get_by_role("link", name="Create").click()
    page.get_by_label("Compute name").fill("ci-dev")
    expect(page.get_by_label("Kubernetes compute")).to_have_value("k8s-prod")  # the workspace's only one
    expect(page.get_by_label("Assigned user")).to_have_value("olivia")
    page.get_by_label("Standard_NC6s_v3").check()
    page.get_by_label("Idle shutdown after (minutes)").fill("60")
    page.get_by_label("Schedule action").select_option("stop")
    page.get_by_label("Time", exact=True).fill("19:30")
    page.get_by_label("Time zone").fill("Pacific Standard Time")  # a Windows name, as Azure ML's list has it
    for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"):
        page.locator(f"label[for=id_schedule_{day}]").click()
    expect(page.locator("#yaml-preview")).to_contain_text("week_days:")
    expect(page.locator("#yaml-preview")).to_contain_text("name: ci-dev")
    screenshot(page, "05-create-instance")
    page.get_by_role("button", name="Create", exact=True).click()
    expect(page.get_by_role("heading", name="ci-dev")).to_be_visible()
    expect(page.locator("[data-time-zone]")).to_contain_text("Pacific Standard Time (America/Los_Angeles)")
    expect(page.locator("[data-sentence]")).to_contain_text("Stops every weekday at 19:30 Pacific Standard Time")
    screenshot(page, "12b-instance-details")
    page.locator(".crumbs").get_by_role("link", name="Compute instances").click()
    expect(page.locator('tr[data-compute="ci-dev"] [data-state]')).to_be_visible()  # whatever the unreachable cluster allows
    screenshot(page, "10-instances-tab")

    page.locator(".sidenav").get_by_role("link", name="Events").click()
    expect(page.locator("tr[data-event]")).to_have_count(5)
    screenshot(page, "13-events")

    page.locator(".sidenav").get_by_role("link", name="Tokens").click()
    page.get_by_placeholder("Name, e.g. laptop CLI").fill("laptop CLI")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#new-token")).to_have_value(re.compile(r"^dy_"))
    screenshot(page, "14-token-created")

    page.get_by_test_id("workspace-switcher").click()
    screenshot(page, "15-workspace-switcher")

    # Bob, a contributor, sees the computes but none of the buttons his role may not use
    page.get_by_test_id("user-menu").click()
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("User name").fill("bob")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".workspace-card .role")).to_have_text("contributor")
    screenshot(page, "16-home-as-contributor")
    page.locator(".workspace-card").click()
    expect(page.locator('tr[data-compute="ci-dev"]')).to_be_visible()
    expect(page.get_by_role("link", name="New")).to_have_count(0)
    screenshot(page, "17-contributor-view")

    assert dict(ComputeTarget.objects.values_list("name", "type")) == {
        "ci-dev": "computeinstance", "k8s-prod": "kubernetes",
    }
    assert Membership.objects.get(user__username="bob").role == "contributor"
