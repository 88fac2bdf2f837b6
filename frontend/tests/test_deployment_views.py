"""The studio's deployment pages through the Django test client: the add-deployment form (fields or pasted YAML),
and the cards' instance count and delete buttons.

Records are made through endpoints.services (as the pages do); no worker runs here, so states stay where the test puts them.
"""
import html
import re

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from controlplane.reconciling import ProvisioningState
from endpoints.models import OnlineDeployment
from endpoints.services import endpoint_create

from .endpoint_pages import ADDER, DEPLOYMENT_FORM, EP, VENV, add, card_of, field_block, text

pytestmark = pytest.mark.usefixtures("local_endpoints")


# Add a deployment


def test_the_form_starts_with_the_venv_a_local_server_runs_in_and_its_yaml(client_as, settings, endpoint):
    body = text(client_as("contributor").get(f"{EP}deployments/new/form/"))
    assert f'value="{settings.DOCKYARD_INFERENCE_VENV}"' in field_block(body, "venv")
    assert "none (local)" in field_block(body, "instance_type")
    # what a local deployment cannot take is not offered: no image, no resources
    assert 'id="id_image"' not in body and 'id="id_requests_cpu"' not in body and 'id="id_limits_gpu"' not in body
    preview = yaml.safe_load(html.unescape(re.search(r'<code id="yaml-preview">(.*?)</code>', body, re.S).group(1)))
    assert preview["endpoint_name"] == "adder" and preview["environment"] == {"venv": str(settings.DOCKYARD_INFERENCE_VENV)}
    assert preview["code_configuration"] == {"code": "", "scoring_script": "score.py"}


def test_the_live_preview_is_the_deployment_yaml(client_as, endpoint):
    response = client_as("contributor").post(f"{EP}deployments/new/preview/", {
        **DEPLOYMENT_FORM, "model": "/models/adder", "requests_cpu": "500m", "requests_memory": "512Mi", "limits_cpu": "1"})
    document = yaml.safe_load(text(response))
    assert document["$schema"].endswith("kubernetesOnlineDeployment.schema.json")
    assert document["code_configuration"] == {"code": str(ADDER), "scoring_script": "score.py"}
    assert document["model"] == {"path": "/models/adder"} and document["environment_variables"] == {"DEPLOYMENT_NAME": "blue"}
    assert document["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "1"}}
    assert document["instance_count"] == 1


def test_adding_a_deployment_through_the_form(client_as, endpoint):
    response = client_as("contributor").post(f"{EP}deployments/new/form/", DEPLOYMENT_FORM)
    assert response.status_code == 302 and response["Location"] == EP
    deployment = OnlineDeployment.objects.get(name="blue")
    assert deployment.spec["code_configuration"] == {"code": str(ADDER), "scoring_script": "score.py"}
    assert deployment.spec["environment_variables"] == {"DEPLOYMENT_NAME": "blue"}
    assert deployment.spec["environment"] == {"venv": VENV}
    assert deployment.instance_type == "" and deployment.provisioning_state == ProvisioningState.CREATING  # none locally


@pytest.mark.parametrize("change, field, message", [
    ({"code": str(ADDER.parent / "nowhere")}, "code", "does not exist on the Dockyard host"),
    ({"code": "/nowhere/at/all"}, "code", "is not under a folder this server shares"),
    ({"scoring_script": "missing.py"}, "scoring_script", "There is no missing.py"),
    ({"name": "b"}, "name", "3–32 letters"),
    ({"instance_count": "2"}, "instance_count", "instance_count must be 1"),
    ({"requests_cpu": "1", "requests_memory": "1Gi"}, "requests_cpu", "leave resources out"),  # local: not limited
    ({"limits_cpu": "2"}, "requests_cpu", "leave resources out"),
    ({"environment_variables": "oops"}, "environment_variables", "is not key=value"),
    ({"model": str(ADDER.parent / "no-model-here")}, "model", "does not exist"),
    ({"model": "/no/model/here"}, "model", "is not under a folder this server shares"),
])
def test_deployment_errors_are_shown_at_their_field_and_nothing_is_created(client_as, endpoint, change, field, message):
    response = client_as("contributor").post(f"{EP}deployments/new/form/", {**DEPLOYMENT_FORM, **change})
    assert response.status_code == 200
    block = field_block(text(response), field)
    assert "is-invalid" in block and message in html.unescape(block)
    assert not OnlineDeployment.objects.exists()


def test_a_kubernetes_deployment_needs_an_image_and_offers_the_instance_types(client_as, kubernetes, owner, workspace):
    endpoint_create(user=owner, workspace=workspace, data={"name": "fraud", "compute": "azureml:k8s"})
    url = "/w/team-a/endpoints/fraud/deployments/new/form/"
    body = text(client_as("contributor").get(url))
    block = field_block(body, "instance_type")
    assert "defaultinstancetype — 100m/2 cpu, 2Gi/2Gi" in block and 'value="cpu-large"' in block
    assert 'id="id_venv"' not in body  # a local-only field
    kube_form = {**DEPLOYMENT_FORM, "venv": "", "code": "/var/azureml-app", "instance_type": "cpu-large"}
    response = client_as("contributor").post(url, kube_form)
    assert "environment.image is required" in field_block(text(response), "image")
    response = client_as("contributor").post(url, {**kube_form, "image": "python:3.11-slim", "instance_count": "3"})
    assert response.status_code == 302
    deployment = OnlineDeployment.objects.get(name="blue")
    assert (deployment.instance_type, deployment.instance_count) == ("cpu-large", 3)


def test_a_taken_deployment_name_is_a_conflict_at_the_name(client_as, owner, endpoint):
    add(owner, endpoint, "blue")
    block = field_block(text(client_as("contributor").post(f"{EP}deployments/new/form/", DEPLOYMENT_FORM)), "name")
    assert "already has a deployment named" in html.unescape(block)
    assert OnlineDeployment.objects.count() == 1


def test_pasting_a_deployment_yaml(client_as, endpoint):
    document = (f"name: green\ncode_configuration:\n  code: {ADDER}\n  scoring_script: score.py\n"
                "environment_variables:\n  DEPLOYMENT_NAME: green\n")
    response = client_as("contributor").post(f"{EP}deployments/new/paste/", {"yaml": document})
    assert response.status_code == 302
    assert OnlineDeployment.objects.get(name="green").spec["environment_variables"] == {"DEPLOYMENT_NAME": "green"}


def test_pasting_an_uploaded_file(client_as, endpoint):
    upload = SimpleUploadedFile("blue.yml", f"name: blue\ncode_configuration: {{code: {ADDER}, scoring_script: score.py}}\n".encode())
    assert client_as("contributor").post(f"{EP}deployments/new/paste/", {"yaml_file": upload}).status_code == 302
    assert OnlineDeployment.objects.filter(name="blue").exists()


@pytest.mark.parametrize("document, message", [
    ("name: [unclosed", "This is not valid YAML (line 1"),
    ("", "Paste an online deployment"),
    ("name: a\n---\nname: b\n", "one online deployment at a time"),
    ("name: blue\nendpoint_name: other\nenvironment: {image: x}\ncode_configuration: {code: /tmp, scoring_script: s.py}\n",
     "not &#x27;other&#x27;"),
    ("name: blue\nenvironment: {image: x}\n", "code_configuration (code, scoring_script) is required"),
])
def test_pasted_yaml_errors_and_nothing_is_created(client_as, endpoint, document, message):
    response = client_as("contributor").post(f"{EP}deployments/new/paste/", {"yaml": document})
    assert response.status_code == 200
    errors = re.search(r'id="yaml-errors">(.*?)</div>\s*<label', text(response), re.S).group(1)
    assert message in errors
    assert not OnlineDeployment.objects.exists()


@pytest.mark.parametrize("url", ["deployments/new/form/", "deployments/new/paste/"])
def test_a_reader_cannot_add_deployments(client_as, endpoint, url):
    assert client_as("reader").get(f"{EP}{url}").status_code == 403
    assert client_as("reader").post(f"{EP}{url}", DEPLOYMENT_FORM).status_code == 403
    assert client_as("reader").post(f"{EP}deployments/new/preview/", DEPLOYMENT_FORM).status_code == 403
    assert not OnlineDeployment.objects.exists()


# Instance count and delete


def test_the_instance_count_form_updates_the_deployment(client_as, kube_endpoint):
    response = client_as("contributor").post("/w/team-a/endpoints/fraud/deployments/blue/scale/", {"instance_count": "3"})
    assert response.status_code == 302
    deployment = OnlineDeployment.objects.get(name="blue")
    assert deployment.instance_count == 3 and deployment.provisioning_state == ProvisioningState.UPDATING


@pytest.mark.parametrize("value, message", [("0", "instance_count must be a whole number from 1"),
                                            ("two", "instance_count must be a whole number from 1")])
def test_a_bad_instance_count_is_shown_on_its_card(client_as, kube_endpoint, value, message):
    response = client_as("contributor").post("/w/team-a/endpoints/fraud/deployments/blue/scale/", {"instance_count": value})
    assert response.status_code == 200
    blue = card_of(text(response), "blue")
    assert "is-invalid" in blue and message in blue
    assert OnlineDeployment.objects.get(name="blue").instance_count == 2
    assert 'id="deployment-cards" hx-get' not in text(response)  # no poll wipes the error away


def test_a_reader_cannot_scale(client_as, kube_endpoint):
    assert client_as("reader").post("/w/team-a/endpoints/fraud/deployments/blue/scale/", {"instance_count": "3"}).status_code == 403
    assert OnlineDeployment.objects.get(name="blue").instance_count == 2


def test_deleting_a_deployment_with_traffic_is_refused_whatever_the_page_showed(client_as, blue_green):
    response = client_as("contributor").post(f"{EP}deployments/blue/delete/", follow=True)
    assert "takes 90% of the traffic" in text(response)
    assert OnlineDeployment.objects.get(name="blue").provisioning_state == ProvisioningState.SUCCEEDED


def test_deleting_a_deployment_without_traffic(client_as, owner, blue_green):
    add(owner, blue_green, "idle")
    response = client_as("contributor").post(f"{EP}deployments/idle/delete/")
    assert response.status_code == 302
    assert OnlineDeployment.objects.get(name="idle").provisioning_state == ProvisioningState.DELETING
    assert client_as("reader").post(f"{EP}deployments/blue/delete/").status_code == 403


def test_a_registered_model_is_sent_by_its_reference(client_as, endpoint):
    response = client_as("contributor").post(f"{EP}deployments/new/preview/", {**DEPLOYMENT_FORM, "model": "azureml:adder@latest"})
    assert yaml.safe_load(text(response))["model"] == "azureml:adder@latest"
