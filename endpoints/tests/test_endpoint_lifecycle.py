"""Online endpoints over the API: create (JSON, YAML), list, show, patch, delete; refused creates write nothing."""
import json

import pytest

from compute.tests.factories import create_compute
from endpoints import keys as endpoint_keys
from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.tests.bodies import local_deployment
from endpoints.tests.support import BASE, assert_refused, create_deployment, create_endpoint, set_traffic, state
from tests.support import assert_error
from workspaces.models import AuditEvent

# local compute is off by default: enabled as staff would
pytestmark = pytest.mark.usefixtures("local_compute", "deployment_folders")


# ---------------------------------------------------------------- endpoints

def test_create_an_endpoint(api):
    response = api.post(f"{BASE}/", {"name": "my-ep", "description": "adds numbers", "tags": {"team": "a"}, "compute": "local"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["name"] == "my-ep" and body["compute"] == "local" and body["auth_mode"] == "key"
    assert body["traffic"] == {} and body["mirror_traffic"] == {} and body["deployments"] == []
    assert body["scoring_uri"] == f"http://testserver{BASE}/my-ep/score"
    assert body["provisioning_state"] == "Creating" and body["created_by"] == "olivia"
    assert set(body["keys"]) == {"primaryKey", "secondaryKey"}
    assert body["keys"]["primaryKey"] != body["keys"]["secondaryKey"] and len(body["keys"]["primaryKey"]) >= 32
    endpoint = OnlineEndpoint.objects.get(name="my-ep")
    assert endpoint.primary_key_hash == endpoint_keys.hash_key(body["keys"]["primaryKey"])
    assert body["keys"]["primaryKey"] not in json.dumps(OnlineEndpoint.objects.filter(name="my-ep").values()[0], default=str)
    event = AuditEvent.objects.get(target_type="online-endpoint")
    assert (event.action, event.target_name) == ("create", "my-ep")


def test_create_an_endpoint_in_yaml(api):
    text = "name: my-ep\ndescription: from a file\nauth_mode: key\ncompute: local\ntags:\n  team: a\n"
    response = api.post(f"{BASE}/", text, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    assert response.json()["description"] == "from a file" and response.json()["tags"] == {"team": "a"}
    assert set(response.json()["keys"]) == {"primaryKey", "secondaryKey"}


def test_a_yaml_body_must_be_a_mapping(api):
    before = state()
    assert_refused(api.post(f"{BASE}/", "- name: my-ep\n", content_type="application/yaml"), "ValidationError", [""], before)
    assert_refused(api.post(f"{BASE}/", "name: [unclosed\n", content_type="application/yaml"), "ValidationError", [""], before)


def test_list_and_show_endpoints(api):
    create_endpoint(api, "my-ep")
    create_endpoint(api, "other", auth_mode="aml_token")
    listed = api.get(f"{BASE}/").json()
    assert listed["count"] == 2 and [row["name"] for row in listed["results"]] == ["my-ep", "other"]
    assert all("keys" not in row and "manifests" not in row for row in listed["results"])
    shown = api.get(f"{BASE}/my-ep/")
    assert shown.status_code == 200 and shown["ETag"]
    assert shown.json()["name"] == "my-ep" and "keys" not in shown.json() and "manifests" in shown.json()
    assert_error(api.get(f"{BASE}/nope/"), 404, "NotFound")


def test_patch_an_endpoint_in_json_and_yaml(api):
    create_endpoint(api, "my-ep")
    response = api.patch(f"{BASE}/my-ep/", {"description": "changed", "tags": {"stage": "dev"}}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["description"] == "changed" and response.json()["tags"] == {"stage": "dev"}
    assert "keys" not in response.json()
    response = api.patch(f"{BASE}/my-ep/", "description: from yaml\n", content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert response.json()["description"] == "from yaml" and response.json()["tags"] == {"stage": "dev"}
    endpoint = OnlineEndpoint.objects.get(name="my-ep")
    assert endpoint.generation == 3 and endpoint.provisioning_state == "Updating"
    assert AuditEvent.objects.filter(target_type="online-endpoint", action="update").count() == 2


def test_an_unchanged_patch_writes_nothing(api):
    create_endpoint(api, "my-ep", description="same")
    before = state()
    response = api.patch(f"{BASE}/my-ep/", {"description": "same", "name": "my-ep", "compute": "local"}, format="json")
    assert response.status_code == 200
    assert state() == before


def test_a_stale_if_match_is_refused(api):
    create_endpoint(api, "my-ep")
    etag = api.get(f"{BASE}/my-ep/")["ETag"]
    assert api.patch(f"{BASE}/my-ep/", {"description": "first"}, format="json", HTTP_IF_MATCH=etag).status_code == 200
    before = state()
    assert_error(api.patch(f"{BASE}/my-ep/", {"description": "second"}, format="json", HTTP_IF_MATCH=etag), 412, "PreconditionFailed")
    assert_error(api.delete(f"{BASE}/my-ep/", HTTP_IF_MATCH=etag), 412, "PreconditionFailed")
    assert state() == before


def test_delete_an_endpoint_marks_it_and_its_deployments_deleting(api):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep", local_deployment("blue"))
    set_traffic("my-ep", {"blue": 100})
    response = api.delete(f"{BASE}/my-ep/")
    assert response.status_code == 202, response.json()
    assert response.json()["provisioning_state"] == "Deleting"
    assert OnlineDeployment.objects.get(name="blue").provisioning_state == "Deleting"
    assert AuditEvent.objects.filter(target_type="online-endpoint", action="delete").count() == 1
    # a deleting endpoint takes no changes and no new deployments
    assert_error(api.patch(f"{BASE}/my-ep/", {"description": "x"}, format="json"), 409, "Conflict")
    assert_error(api.post(f"{BASE}/my-ep/deployments/", local_deployment("green"), format="json"), 409, "Conflict")


def test_a_taken_name_is_a_conflict(api):
    create_endpoint(api, "my-ep")
    before = state()
    assert_error(api.post(f"{BASE}/", {"name": "my-ep", "compute": "local"}, format="json"), 409, "Conflict")
    assert state() == before


def test_a_kubernetes_endpoint(api, k8s):
    response = api.post(f"{BASE}/", {"name": "kep", "compute": "azureml:k8s"}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["compute"] == "azureml:k8s"
    assert OnlineEndpoint.objects.get(name="kep").compute == k8s


def test_the_local_compute_can_be_turned_off(api, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = False
    before = state()
    assert_refused(api.post(f"{BASE}/", {"name": "my-ep", "compute": "local"}, format="json"), "InvalidEndpoint", ["compute"], before)


# ---------------------------------------------------------------- refused creates

BAD_ENDPOINT_CREATES = [
    pytest.param({"compute": "local"}, "InvalidEndpoint", ["name"], id="name-missing"),
    pytest.param({"name": "ab", "compute": "local"}, "InvalidEndpoint", ["name"], id="name-too-short"),
    pytest.param({"name": "e" * 33, "compute": "local"}, "InvalidEndpoint", ["name"], id="name-too-long"),
    pytest.param({"name": "1ep", "compute": "local"}, "InvalidEndpoint", ["name"], id="name-starts-with-a-digit"),
    pytest.param({"name": "my_ep", "compute": "local"}, "InvalidEndpoint", ["name"], id="name-underscore"),
    pytest.param({"name": "my-ep", "compute": "azureml:"}, "InvalidEndpoint", ["compute"], id="compute-empty-reference"),
    pytest.param({"name": "my-ep", "compute": "azureml:nope"}, "InvalidEndpoint", ["compute"], id="compute-unknown"),
    pytest.param({"name": "my-ep", "compute": "azureml:cpu-cluster"}, "InvalidEndpoint", ["compute"], id="compute-not-kubernetes"),
    pytest.param({"name": "my-ep", "compute": 5}, "InvalidEndpoint", ["compute"], id="compute-not-a-string"),
    pytest.param({"name": "my-ep", "compute": "local", "auth_mode": "aad_token"}, "InvalidEndpoint", ["auth_mode"], id="aad-token"),
    pytest.param({"name": "my-ep", "compute": "local", "auth_mode": "password"}, "InvalidEndpoint", ["auth_mode"], id="auth-mode-unknown"),
    pytest.param({"name": "my-ep", "compute": "local", "colour": "blue"}, "InvalidEndpoint", ["colour"], id="unknown-field"),
    pytest.param({"name": "my-ep", "compute": "local", "tags": ["a"]}, "InvalidEndpoint", ["tags"], id="tags-not-a-map"),
    pytest.param({"name": "my-ep", "compute": "local", "description": ["a"]}, "InvalidEndpoint", ["description"], id="description-not-a-string"),
    pytest.param({"name": "my-ep", "compute": "local", "traffic": {"blue": 100}}, "InvalidTraffic", ["traffic.blue"], id="traffic-at-creation"),
    pytest.param({"name": "my-ep", "compute": "local", "traffic": {"blue": 0}}, "InvalidTraffic", ["traffic.blue"], id="zero-traffic-at-creation"),
    pytest.param({"name": "my-ep", "compute": "local", "mirror_traffic": {"blue": 10}}, "InvalidTraffic", ["mirror_traffic.blue"],
                 id="mirror-at-creation"),
    pytest.param({"name": "my-ep", "compute": "local", "traffic": {"blue": 150}}, "InvalidEndpoint", ["traffic.blue"], id="share-over-100"),
    pytest.param({"name": "my-ep", "compute": "local", "traffic": {"blue": 12.5}}, "InvalidEndpoint", ["traffic.blue"], id="share-fraction"),
    pytest.param({"name": "my-ep", "compute": "local", "traffic": "blue=100"}, "InvalidEndpoint", ["traffic"], id="traffic-a-string"),
    pytest.param({"name": "x", "compute": "azureml:", "auth_mode": "aad_token"}, "InvalidEndpoint", ["name", "compute", "auth_mode"],
                 id="every-problem-at-once"),
]


@pytest.mark.parametrize("body, code, targets", BAD_ENDPOINT_CREATES)
def test_bad_endpoint_creates(api, workspace, owner, body, code, targets):
    create_compute(workspace, owner, "amlcompute", name="cpu-cluster")
    create_endpoint(api, "existing")
    before = state()
    assert_refused(api.post(f"{BASE}/", body, format="json"), code, targets, before)


def test_a_bad_endpoint_create_in_yaml(api):
    before = state()
    response = api.post(f"{BASE}/", "name: my-ep\ncompute: local\nauth_mode: aad_token\n", content_type="application/yaml")
    assert_refused(response, "InvalidEndpoint", ["auth_mode"], before)
