"""Compute instances in a real browser: the hub tab with instances in several states, Stop from a row, the details page
settling from Starting to Running by polling, and the open-JupyterLab flow through Dockyard's proxy.

The reconcile is held back in the first two tests: the test plays its part and writes the run state (the contract the
instance reconcile writes), and the pages, polling, show each change without a reload.
"""
import json
import secrets
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from compute import tasks
from compute.choices import DesiredState, InstanceState, StopCause
from compute.idle import verdict
from compute.models import ComputeInstance, ComputeTarget
from compute.reconcile.probes import probe_local
from compute.runners import notebooks, unix_http
from compute.tests.servers import Web
from controlplane.reconciling import ProvisioningState
from tests.e2e_support import wait_for
from workspaces.choices import Role
from workspaces.models import Membership, Workspace
from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser

POLL = 10_000  # ms: a few of the page's 2-second polls


def shot(page, screenshot, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")  # a full-page shot of a scrolled page draws the sticky top bar mid-page
    screenshot(page, name)


def instance(workspace, owner, name: str, user, state: str, **fields) -> ComputeTarget:
    properties = {"kubernetes_compute": "k8s", "size": "Standard_DS3_v2", "idle_time_before_shutdown_minutes": 30,
                  "assigned_user": user.username, **fields.pop("properties", {})}
    compute = ComputeTarget.objects.create(workspace=workspace, name=name, type="computeinstance", created_by=owner,
                                           provisioning_state=ProvisioningState.SUCCEEDED, properties=properties)
    desired = DesiredState.STOPPED if state in (InstanceState.STOPPED, InstanceState.STOPPING) else DesiredState.RUNNING
    ComputeInstance.objects.create(compute=compute, assigned_user=user, state=state, desired_state=desired,
                                   state_changed_at=timezone.now() - timedelta(minutes=12), **fields)
    return compute


@pytest.fixture
def team(transactional_db, django_user_model, monkeypatch):
    """Olivia owns `vision` with a Kubernetes compute; Dana (contributor) has instances in several states."""
    monkeypatch.setattr(tasks.reconcile_compute, "delay", lambda pk: None)  # the test writes what reconcile would
    owner = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    dana = django_user_model.objects.create_user(username="dana", password="correct-horse-battery")
    workspace = workspace_create(user=owner, name="vision", display_name="Vision team")
    Membership.objects.create(workspace=workspace, user=dana, role=Role.CONTRIBUTOR)
    ComputeTarget.objects.create(
        workspace=workspace, name="k8s", type="kubernetes", created_by=owner, provisioning_state=ProvisioningState.SUCCEEDED,
        properties={"server": "https://k8s.example.internal:6443", "namespace": "vision"})
    at = timezone.localtime().replace(hour=14, minute=2, second=0, microsecond=0)
    instance(workspace, owner, "dana-box", dana, InstanceState.RUNNING, last_activity=at, last_activity_source="kernel idle")
    instance(workspace, owner, "dana-gpu", dana, InstanceState.STARTING, properties={"size": "Standard_NC6s_v3"})
    instance(workspace, owner, "dana-idle", dana, InstanceState.STOPPED, stop_cause=StopCause.IDLE, last_activity=at,
             last_activity_source="terminal")
    instance(workspace, owner, "olivia-box", owner, InstanceState.FAILED, properties={"size": "Standard_E8s_v3"},
             state_reason="No node of k8s fits 8 vCPUs and 64 GiB: the largest has 4 vCPUs and 16 GiB.")
    return workspace


def test_the_tab_shows_states_and_stop_swaps_the_row(team, page, screenshot):
    sign_in(page, "dana")
    page.goto("/w/vision/compute/?tab=instances")
    rows = page.locator("[data-instances] tbody tr")
    expect(rows).to_have_count(4)
    running = page.locator('tr[data-compute="dana-box"]')
    expect(running.locator("[data-state=Running]")).to_be_visible()
    expect(running.locator("[data-last-activity]")).to_have_text("14:02, kernel idle")
    expect(running.get_by_role("link", name="JupyterLab")).to_have_attribute("href", "/instances/vision/dana-box/jupyter/lab")
    expect(running.get_by_role("link", name="JupyterLab")).to_have_attribute("target", "_blank")
    expect(running.get_by_role("button", name="Start", exact=True)).to_be_disabled()
    expect(page.locator('tr[data-compute="dana-gpu"] .spinner-border')).to_be_visible()
    failed = page.locator('tr[data-compute="olivia-box"]')
    expect(failed.locator("[data-state=Failed]")).to_have_attribute("title", "No node of k8s fits 8 vCPUs and 64 GiB: the largest has 4 vCPUs and 16 GiB.")
    expect(failed.get_by_role("button")).to_have_count(0)  # Olivia's: Dana neither starts nor opens it
    expect(failed.get_by_role("link", name="JupyterLab")).to_have_count(0)
    failed.locator("summary", has_text="Why").click()
    expect(failed.locator("details")).to_contain_text("the largest has 4 vCPUs")
    shot(page, screenshot, "i14-instances-tab")

    running.get_by_role("button", name="Stop", exact=True).click()
    expect(running.locator("[data-state=Stopping]")).to_be_visible()
    expect(running.get_by_role("link", name="JupyterLab")).to_have_count(0)
    assert ComputeInstance.objects.get(compute__name="dana-box").desired_state == DesiredState.STOPPED
    shot(page, screenshot, "i14-instances-tab-stopping")

    # The reconcile scales it to zero: the tab, polling while an instance is between states, shows it Stopped
    ComputeInstance.objects.filter(compute__name="dana-box").update(state=InstanceState.STOPPED, stop_cause=StopCause.USER)
    expect(running.locator("[data-state=Stopped]")).to_be_visible(timeout=POLL)
    expect(running.get_by_role("button", name="Start", exact=True)).to_be_enabled()


def test_the_details_page_settles_by_polling(team, page, screenshot):
    weekly = {"type": "recurrence", "frequency": "week", "interval": 1, "time_zone": "Europe/Berlin",
              "schedule": {"hours": [8], "minutes": [0], "week_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]}}
    evening = {"type": "recurrence", "frequency": "day", "interval": 1, "time_zone": "Europe/Berlin",
               "schedule": {"hours": [19], "minutes": [0]}}
    ComputeTarget.objects.filter(name="dana-gpu").update(properties={
        "kubernetes_compute": "k8s", "size": "Standard_NC6s_v3", "idle_time_before_shutdown_minutes": 30,
        "assigned_user": "dana", "schedules": {"compute_start_stop": [
            {"action": "start", "state": "Enabled", "trigger": weekly}, {"action": "stop", "state": "Enabled", "trigger": evening}]}})
    sign_in(page, "dana")
    page.goto("/w/vision/compute/dana-gpu/")
    panel = page.locator("#instance-panel")
    expect(panel.locator("[data-state=Starting]")).to_be_visible()
    expect(panel.locator("[data-host]")).to_have_text("Kubernetes compute k8s, namespace vision")
    expect(panel.locator("[data-shape]")).to_contain_text("Standard_NC6s_v3 (6 vCPUs, 112 GiB, 1 × NVIDIA V100")
    expect(page.locator("[data-sentence]").first).to_contain_text("Starts every weekday at 08:00 Europe/Berlin")
    expect(page.locator("[data-sentence]").first).to_contain_text("next: ")
    expect(page.locator("[data-sentence]").nth(1)).to_contain_text("Stops every day at 19:00 Europe/Berlin")

    # The reconcile sees the server up and a kernel at work: the panel follows without a reload
    ComputeInstance.objects.filter(compute__name="dana-gpu").update(
        state=InstanceState.RUNNING, state_changed_at=timezone.now(), last_activity=timezone.now(),
        last_activity_source="kernel busy")
    expect(panel.locator("[data-state=Running]")).to_be_visible(timeout=POLL)
    expect(panel.locator("[data-idle]")).to_contain_text("Stops after 30 min idle; last activity")
    expect(panel.get_by_role("link", name="JupyterLab")).to_be_visible()
    expect(panel.get_by_role("link", name="VS Code")).to_have_attribute("href", "/instances/vision/dana-gpu/vscode/")
    shot(page, screenshot, "i14-instance-details")

    page.goto("/w/vision/compute/dana-idle/")
    expect(page.locator("#instance-panel [data-state-reason]")).to_contain_text("Stopped: idle for 30 min; last activity 14:02, terminal")
    expect(page.locator("#instance-panel").get_by_role("button", name="Start", exact=True)).to_be_enabled()
    shot(page, screenshot, "i14-instance-details-stopped-idle")


@pytest.fixture
def lab(transactional_db, django_user_model, settings):
    """Dana's running local instance `dana-lab`: a real JupyterLab in the sandbox (the local runner), and Dockyard's
    ASGI app (studio and proxy) served by uvicorn, as production serves it."""
    folder = Path(tempfile.mkdtemp(prefix="dy-"))  # a socket address holds 108 bytes: a short folder
    settings.DOCKYARD_INSTANCE_DIR = folder
    settings.DOCKYARD_LOCAL_COMPUTE = True
    owner = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    dana = django_user_model.objects.create_user(username="dana", password="correct-horse-battery")
    workspace = workspace_create(user=owner, name="vision", display_name="Vision team")
    Workspace.objects.filter(pk=workspace.pk).update(local_compute_enabled=True)
    Membership.objects.create(workspace=workspace, user=dana, role=Role.CONTRIBUTOR)
    compute = instance(workspace, owner, "dana-lab", dana, InstanceState.RUNNING,
                       properties={"kubernetes_compute": "local", "idle_time_before_shutdown_minutes": None})
    compute.secrets = {"token": secrets.token_urlsafe(32)}
    compute.save()
    notebooks.start(compute, compute.secrets["token"])
    headers = {"Authorization": f"token {compute.secrets['token']}"}
    wait_for(lambda: notebooks.local_instance_socket(compute) and unix_http.request(
        notebooks.local_instance_socket(compute), "GET", f"{notebooks.base_url(compute)}api/status", None, headers,
        5)[0] == 200, 120, 0.5, "JupyterLab's start")
    web = Web()
    try:
        yield f"http://127.0.0.1:{web.port}"
    finally:
        web.stop()
        notebooks.delete(compute)
        shutil.rmtree(folder, ignore_errors=True)


def test_open_jupyterlab_from_the_tab(lab, chromium, screenshot):
    """Click JupyterLab on a running instance: a new tab opens at /instances/<ws>/<name>/jupyter/lab and JupyterLab
    renders through Dockyard's proxy; another member sees no link and the proxy answers 403."""
    context = chromium.new_context(viewport={"width": 1440, "height": 900}, base_url=lab)
    try:
        page = context.new_page()
        sign_in(page, "dana")
        page.goto("/w/vision/compute/?tab=instances")
        with context.expect_page() as opened:
            page.locator('tr[data-compute="dana-lab"]').get_by_role("link", name="JupyterLab").click()
        tab = opened.value
        tab.wait_for_load_state()
        assert "/instances/vision/dana-lab/jupyter/lab" in tab.url and "token" not in tab.url
        expect(tab.locator("#jp-main-dock-panel")).to_be_visible(timeout=90_000)
        expect(tab.locator(".jp-LauncherCard").first).to_be_visible(timeout=60_000)
        shot(tab, screenshot, "i14-open-jupyterlab")
        # The open, unused tab polls Jupyter's API: /api/status's last_activity follows it, the probes' verdict (kernels
        # and terminals) sees nothing, so a forgotten tab does not keep the instance up (docs/compute-instances.md)
        compute = ComputeTarget.objects.get(name="dana-lab")
        token, socket_path = compute.secrets["token"], notebooks.local_instance_socket(compute)

        def api_activity() -> str:
            return json.loads(unix_http.request(socket_path, "GET", f"{notebooks.base_url(compute)}api/status", None,
                                                {"Authorization": f"token {token}"}, 5)[2])["last_activity"]

        first = api_activity()
        wait_for(lambda: api_activity() > first, 90, 1, "the tab's next poll")
        probes = probe_local(socket_path, notebooks.base_url(compute), token)
        assert probes[0].ok and verdict(probes, timedelta(minutes=15), timezone.now(), timezone.now()).last_activity is None
    finally:
        context.close()
    other = chromium.new_context(base_url=lab)
    try:
        page = other.new_page()
        sign_in(page, "olivia")  # the workspace's owner, not the instance's user
        page.goto("/w/vision/compute/?tab=instances")
        expect(page.locator('tr[data-compute="dana-lab"]').get_by_role("link", name="JupyterLab")).to_have_count(0)
        assert page.goto("/instances/vision/dana-lab/jupyter/lab").status == 403
    finally:
        other.close()
