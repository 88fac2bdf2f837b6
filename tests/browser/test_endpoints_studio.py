"""Online endpoints in a real browser, run by a real Celery worker: blue/green deployments of the adder script.

Create a local endpoint (its keys shown once), add two deployments (the form, then pasted YAML), wait for the worker to
bring both inference servers up, move the traffic sliders (Save only at a total of 0 or 100), test a request, regenerate
a key, read the logs, then take the traffic away and delete both so no server keeps running. A second test shows a
Kubernetes endpoint as the worker leaves it (no cluster here) to see how its cards and manifests read.
"""
import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from compute.models import Cluster, ComputeTarget, InstanceType
from compute.runners import local as runner
from controlplane.reconciling import ProvisioningState
from endpoints import keys
from endpoints.manifests import deployment_object_name, endpoint_object_name, httproute_manifest
from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.reconcile.kubernetes import render
from endpoints.services import deployment_create, endpoint_create, endpoint_update
from tests.e2e_support import in_process_worker
from workspaces.choices import Role
from workspaces.models import Membership, Workspace
from workspaces.services import workspace_create

from .conftest import SCREENSHOTS, sign_in

pytestmark = pytest.mark.browser

ADDER = Path(__file__).resolve().parents[2] / "endpoints" / "tests" / "data" / "adder"
START = 90_000  # ms a server may take from create to Running (1–3 s alone; far more on a loaded 2-core host)
GREEN_YAML = f"""$schema: https://azuremlschemas.azureedge.net/latest/kubernetesOnlineDeployment.schema.json
name: green
code_configuration:
  code: {ADDER}
  scoring_script: score.py
environment:
  venv: {settings.DOCKYARD_INFERENCE_VENV}
environment_variables:
  DEPLOYMENT_NAME: green
  OFFSET: "0"
"""


@pytest.fixture
def worker(transactional_db, settings, tmp_path):
    """A real worker for local deployments under this test's folder; afterwards no server of the test is left."""
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"
    settings.DOCKYARD_LOCAL_COMPUTE = True
    try:
        with in_process_worker():
            yield
    finally:  # the worker is stopped first: nothing restarts what is stopped here
        for pid_file in Path(settings.DOCKYARD_DEPLOYMENT_DIR).glob(f"*/*/*/{runner.PID_FILE}"):
            process = runner.adopt(pid_file.parent)
            if process and runner.group_alive(process.pid):
                runner.kill_group(process, grace=0.5)


@pytest.fixture
def people(django_user_model):
    """Olivia owns workspace "vision"; Bob may only read it."""
    olivia = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    bob = django_user_model.objects.create_user(username="bob", password="correct-horse-battery")
    workspace = workspace_create(user=olivia, name="vision", display_name="Vision team")
    workspace.local_compute_enabled = True  # off by default: enabled as staff would
    workspace.save(update_fields=["local_compute_enabled"])
    Membership.objects.create(workspace=workspace, user=bob, role=Role.READER)
    return olivia, bob


@pytest.fixture
def shot(screenshot):
    """A full-page screenshot from the top (scrolled, the sticky top bar would be drawn mid-page)."""
    def take(page, name: str) -> None:
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, name)

    return take


def card(page, name: str):
    return page.locator(f'.deployment-card[data-deployment="{name}"]')


def state_of(page, name: str):
    return card(page, name).locator("[data-deployment-state]")


def tab(page, name: str) -> None:
    page.locator(".hub-tabs").get_by_role("link", name=name).click()


def score(page, url: str, key: str, deployment: str | None = None):
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    if deployment:
        headers["azureml-model-deployment"] = deployment
    return page.request.post(url, data=json.dumps({"numbers": [1, 2, 3]}), headers=headers)


def test_blue_green_on_a_local_endpoint(worker, people, page, shot):
    sign_in(page, "olivia")
    page.goto("/w/vision/compute/")
    page.locator(".sidenav").get_by_role("link", name="Endpoints").click()
    expect(page.get_by_text("No endpoints yet")).to_be_visible()
    shot(page, "endpoints-01-empty")

    # Create the endpoint: its two keys are shown once
    page.get_by_role("button", name="Create endpoint").click()
    page.get_by_label("Endpoint name").fill("adder")
    page.get_by_label("Compute").select_option("local")
    page.get_by_label("Description").fill("Adds the numbers it is sent")
    shot(page, "endpoints-02-create-form")
    page.locator("#endpoint-form").get_by_role("button", name="Create").click()
    expect(page.locator("#keys-once")).to_contain_text("only time they are shown")
    primary = page.get_by_test_id("primaryKey").input_value()
    endpoint = OnlineEndpoint.objects.get(name="adder")
    assert keys.hash_key(primary) == endpoint.primary_key_hash
    shot(page, "endpoints-03-keys-once")
    page.get_by_role("link", name="Open adder and add a deployment").click()
    expect(page.locator("#endpoint-state [data-state]")).to_have_attribute("data-state", "Succeeded", timeout=20_000)

    # blue through the form: a wrong code folder first, shown at its field, nothing created
    page.locator(".page-header").get_by_role("link", name="Add deployment").click()
    page.get_by_label("Deployment name").fill("blue")
    page.get_by_label("Code folder").fill("/no/such/folder")
    page.get_by_role("button", name="Create").click()
    expect(page.locator(".field", has=page.locator("#id_code")).locator(".invalid-feedback")).to_contain_text("not under a folder this server shares")
    assert not OnlineDeployment.objects.exists()
    shot(page, "endpoints-04-deployment-error")
    page.get_by_label("Code folder").fill(str(ADDER))
    page.get_by_label("Environment variables").fill("DEPLOYMENT_NAME=blue")
    preview = page.locator("#yaml-preview")
    expect(preview).to_contain_text(f"code: {ADDER}")
    expect(preview).to_contain_text("DEPLOYMENT_NAME: blue")
    shot(page, "endpoints-05-deployment-form")
    page.get_by_role("button", name="Create").click()
    expect(card(page, "blue")).to_be_visible()

    # green as pasted YAML
    page.locator(".page-header").get_by_role("link", name="Add deployment").click()
    page.locator(".hub-tabs").get_by_role("link", name="Paste YAML").click()
    page.get_by_label("Online deployment").fill(GREEN_YAML)
    shot(page, "endpoints-06-paste-yaml")
    page.get_by_role("button", name="Create").click()
    expect(card(page, "green")).to_be_visible()
    shot(page, "endpoints-07-deployments-starting")

    # The worker starts both inference servers; the cards follow until both serve
    for name in ("blue", "green"):
        expect(state_of(page, name)).to_have_attribute("data-deployment-state", "Succeeded", timeout=START)
        expect(card(page, name).locator("[data-replicas]")).to_contain_text("1 / 1 ready")
    expect(page.locator("#deployment-cards")).not_to_have_attribute("hx-trigger", re.compile("every"))
    shot(page, "endpoints-08-deployments-succeeded")

    # Traffic: 90/20 totals 110, so Save stays off; 90/10 saves
    save = page.get_by_role("button", name="Save traffic")
    page.locator("#traffic-blue").fill("90")
    page.locator("#traffic-green").fill("20")
    expect(page.locator("#traffic-total")).to_have_text("110")
    expect(page.locator(".traffic-total")).to_contain_text("must be 0 or 100 (10 too many)")
    expect(page.locator('[data-traffic-number="traffic-green"]')).to_have_value("20")
    expect(save).to_be_disabled()
    shot(page, "endpoints-09-traffic-110")
    page.locator('[data-traffic-number="traffic-green"]').fill("10")  # the number box moves its slider
    expect(page.locator("#traffic-green")).to_have_value("10")
    expect(page.locator("#traffic-total")).to_have_text("100")
    expect(save).to_be_enabled()
    save.click()
    expect(page.locator(".messages")).to_contain_text("Traffic saved: blue 90%, green 10%.")
    expect(card(page, "blue").locator(".share")).to_have_text("90% traffic")
    assert OnlineEndpoint.objects.get(name="adder").traffic == {"blue": 90, "green": 10}
    # Neither can be deleted while it takes traffic: the button says why
    card(page, "green").locator("[data-delete-blocked]").hover()
    expect(page.locator(".tooltip")).to_contain_text("It takes 10% of the traffic")
    page.locator("#deployment-cards").screenshot(path=SCREENSHOTS / "endpoints-10b-delete-tooltip.png")  # as hovered
    shot(page, "endpoints-10-traffic-saved")

    # The key shown at creation scores through the REST URL
    url = page.locator("#scoring-url").input_value()
    answer = score(page, url, primary)
    assert answer.status == 200 and answer.json()["sum"] == 6
    assert answer.headers["azureml-model-deployment"] == answer.json()["deployment"]

    # Test: the answer and which deployment served it
    tab(page, "Test")
    page.get_by_label("Request body (JSON)").fill('{"numbers": [1, 2, 3]}')
    page.get_by_role("button", name="Test").click()
    served = page.get_by_test_id("served-by")
    expect(served).to_have_text(re.compile("^(blue|green)$"))
    expect(page.get_by_test_id("test-status")).to_have_text("200 OK")
    expect(page.get_by_test_id("test-answer")).to_contain_text('"sum": 6')
    expect(page.get_by_test_id("test-answer")).to_contain_text(f'"deployment": "{served.text_content()}"')
    shot(page, "endpoints-11-test")
    page.get_by_label("Deployment").select_option("green")
    page.get_by_role("button", name="Test").click()
    expect(served).to_have_text("green")
    expect(page.get_by_test_id("test-answer")).to_contain_text('"deployment": "green"')

    # Consume: the curl example, and a regenerated key shown once (the new one works, the old one no longer)
    tab(page, "Consume")
    expect(page.locator("#curl-example")).to_contain_text(f'curl -X POST {url}')
    expect(page.locator("#curl-example")).to_contain_text('-H "Authorization: Bearer $KEY"')
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Regenerate primary").click()
    new_key = page.get_by_test_id("new-key").input_value()
    expect(page.locator("#new-key")).to_contain_text("only time it is shown")
    expect(page.locator('tr[data-key="primary"]')).to_contain_text(f"{new_key[:6]}…")
    shot(page, "endpoints-12-consume-new-key")
    assert score(page, url, new_key, "blue").headers["azureml-model-deployment"] == "blue"
    assert score(page, url, primary).status == 401

    # Logs: the server's output, the requests included
    tab(page, "Deployment logs")
    page.get_by_label("Deployment").select_option("green")
    expect(page.locator("#log-pane")).to_have_attribute("data-deployment", "green")
    expect(page.locator("#deployment-log")).to_contain_text("POST /score")
    shot(page, "endpoints-13-logs")
    tab(page, "Manifests")
    expect(page.get_by_text("Not a Kubernetes endpoint")).to_be_visible()

    # Bob reads: the cards and the split, no buttons
    page.get_by_test_id("user-menu").click()
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, "bob")
    page.goto("/w/vision/endpoints/adder/")
    expect(card(page, "blue")).to_be_visible()
    expect(page.get_by_role("link", name="Add deployment")).to_have_count(0)
    expect(page.get_by_role("button", name="Save traffic")).to_have_count(0)
    expect(page.locator("#traffic-blue")).to_be_disabled()
    expect(card(page, "blue").get_by_role("button", name="Delete")).to_have_count(0)
    shot(page, "endpoints-14-reader")
    tab(page, "Test")
    expect(page.get_by_text("Testing needs the contributor role")).to_be_visible()

    # Olivia takes the traffic away and deletes both: their servers stop
    page.get_by_test_id("user-menu").click()
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, "olivia")
    page.goto("/w/vision/endpoints/adder/")
    processes = [runner.Process.from_dict(d.runner) for d in OnlineDeployment.objects.all()]
    page.locator("#traffic-blue").fill("0")
    page.locator("#traffic-green").fill("0")
    expect(page.locator("#traffic-total")).to_have_text("0")
    page.get_by_role("button", name="Save traffic").click()
    expect(page.locator(".messages")).to_contain_text("Traffic saved: no deployment.")
    for name in ("blue", "green"):
        page.once("dialog", lambda dialog: dialog.accept())
        card(page, name).get_by_role("button", name="Delete").click()
        expect(page.locator(".messages")).to_contain_text(f"Deployment {name} is being stopped and deleted.")
    expect(page.get_by_text("No deployments yet")).to_be_visible(timeout=30_000)
    shot(page, "endpoints-15-deleted")
    assert not OnlineDeployment.objects.exists()
    assert all(not runner.group_alive(process.pid) for process in processes)
    page.locator(".page-header").get_by_role("button", name="Delete").click()
    page.locator("#delete-modal").get_by_role("button", name="Delete").click()
    expect(page.locator(".messages")).to_contain_text("Endpoint adder is being deleted")


def test_a_kubernetes_endpoint_as_the_worker_leaves_it(transactional_db, people, page, shot):
    """No cluster here: records as reconcile leaves them (one deployment rolled out, one waiting for a node)."""
    olivia, _ = people
    workspace = Workspace.objects.get(name="vision")
    cluster = Cluster.objects.create(server="https://k8s.example.internal:6443")
    InstanceType.objects.create(cluster=cluster, name="cpu-large", requests={"cpu": "2", "memory": "4Gi"},
                                limits={"cpu": "4", "memory": "8Gi"}, gpu=0, provisioning_state=ProvisioningState.SUCCEEDED)
    ComputeTarget.objects.create(workspace=workspace, name="aks-serving", type="kubernetes", cluster=cluster, created_by=olivia,
                                 provisioning_state=ProvisioningState.SUCCEEDED, properties={"server": cluster.server, "namespace": "ml"})
    endpoint, _ = endpoint_create(user=olivia, workspace=workspace, data={
        "name": "fraud", "compute": "azureml:aks-serving", "description": "Card fraud scores"})
    body = {"code_configuration": {"code": "/var/azureml-app/onlinescoring", "scoring_script": "score.py"},
            "model": {"path": "/var/azureml-app/model"}, "environment": {"image": "mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest"}}
    blue = deployment_create(user=olivia, endpoint=endpoint, data={**body, "name": "blue", "instance_type": "cpu-large", "instance_count": 2})
    green = deployment_create(user=olivia, endpoint=endpoint, data={
        **body, "name": "green", "instance_count": 3,
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1536Mi"}}})
    for deployment in (blue, green):
        deployment.endpoint = endpoint
        OnlineDeployment.objects.filter(pk=deployment.pk).update(manifests=render(deployment))
    OnlineDeployment.objects.filter(pk=blue.pk).update(provisioning_state="Succeeded", status={
        "state": "Running", "replicas": 2, "ready_replicas": 2, "updated_replicas": 2, "available_replicas": 2, "reason": ""})
    OnlineDeployment.objects.filter(pk=green.pk).update(provisioning_state="Creating", status={
        "state": "RollingOut", "replicas": 3, "ready_replicas": 1, "updated_replicas": 3, "available_replicas": 1,
        "reason": "Pod vision-fraud-green-7d9f-x2k4q is Pending: 0/3 nodes are available: 3 Insufficient cpu."})
    endpoint_update(user=olivia, endpoint=endpoint, patch={"traffic": {"blue": 100}, "mirror_traffic": {"green": 10}})
    service = {name: deployment_object_name("vision", "fraud", name) for name in ("blue", "green")}
    route = httproute_manifest(name=endpoint_object_name("vision", "fraud"), namespace="ml", workspace="vision", endpoint="fraud",
                               gateway="dockyard", backends={service["blue"]: 100}, mirror=(service["green"], 10))
    OnlineEndpoint.objects.filter(pk=endpoint.pk).update(provisioning_state="Succeeded", manifests=[route], status={
        "route": {"state": "Accepted", "reason": ""}})

    sign_in(page, "olivia")
    page.goto("/w/vision/endpoints/")
    expect(page.locator('tr[data-endpoint="fraud"]')).to_contain_text("blue 100%")
    shot(page, "endpoints-16-list-kubernetes")
    page.get_by_role("link", name="fraud").click()
    expect(card(page, "green").locator(".status-reason")).to_contain_text("Insufficient cpu")
    expect(card(page, "green").locator(".share-mirror")).to_have_text("10% mirrored")
    expect(card(page, "blue").get_by_label("Instance count")).to_have_value("2")
    expect(page.locator("#route-status")).to_contain_text("Accepted")
    shot(page, "endpoints-17-kubernetes-details")
    tab(page, "Manifests")
    expect(page.locator("#route-manifest")).to_contain_text("kind: HTTPRoute")
    expect(page.locator('[data-deployment-manifest="green"]')).to_contain_text("kind: Deployment")
    shot(page, "endpoints-18-kubernetes-manifests")
    page.goto("/w/vision/endpoints/fraud/deployments/new/form/")
    expect(page.get_by_label("Instance type")).to_contain_text("cpu-large — 2/4 cpu, 4Gi/8Gi")
    page.get_by_label("Deployment name").fill("canary")
    page.get_by_label("Code folder").fill("/var/azureml-app/onlinescoring")
    page.get_by_label("Environment image").fill("mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest")
    page.locator("summary").click()
    page.locator("#id_requests_cpu").fill("500m")
    page.locator("#id_requests_memory").fill("1Gi")
    page.locator("#id_limits_cpu").fill("8")
    page.get_by_role("button", name="Create").click()
    expect(page.locator(".field", has=page.locator("#id_limits_cpu")).locator(".invalid-feedback")).to_contain_text(
        "must be less than")
    shot(page, "endpoints-19-kubernetes-form-error")


def test_an_endpoint_page_without_deployments_runs_no_failing_script_and_a_saved_split_reads_as_saved(
        transactional_db, people, page, shot):
    """The traffic script ran on a page with no sliders (a TypeError); a just-saved split said "ready to save"."""
    olivia, _ = people
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    endpoint, _ = endpoint_create(user=olivia, workspace=Workspace.objects.get(name="vision"), data={"name": "quiet", "compute": "local"})
    sign_in(page, "olivia")
    page.goto("/w/vision/endpoints/quiet/")
    expect(page.get_by_text("No deployments yet")).to_be_visible()
    page.wait_for_load_state("load")
    shot(page, "endpoints-20-no-deployments")
    assert errors == []

    for name in ("blue", "green"):
        deployment_create(user=olivia, endpoint=endpoint, data={
            "name": name, "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"}})
    OnlineDeployment.objects.update(provisioning_state=ProvisioningState.SUCCEEDED,
                                    status={"state": "Running", "replicas": 1, "ready_replicas": 1, "restarts": 0})
    page.goto("/w/vision/endpoints/quiet/")
    page.locator("#traffic-blue").fill("100")
    expect(page.locator("[data-traffic-hint]")).to_have_text("— ready to save")
    page.get_by_role("button", name="Save traffic").click()
    expect(page.get_by_text("Traffic saved: blue 100%.")).to_be_visible()
    expect(page.locator("[data-traffic-hint]")).to_have_text("— as saved")
    shot(page, "endpoints-21-traffic-as-saved")
    page.locator("#traffic-blue").fill("60")
    page.locator("#traffic-green").fill("40")
    expect(page.locator("[data-traffic-hint]")).to_have_text("— ready to save")
    assert errors == []
