"""The online endpoints API: endpoints, deployments, keys, traffic and scoring basics (no worker, no server).

Every refused body is a 400 in the contract's error shape naming the fields, and nothing is written: no
endpoint, deployment or audit event, no key rotated, no traffic moved.
"""
import json
from pathlib import Path

import pytest
import yaml
from rest_framework.test import APIClient

from compute.models import InstanceType
from compute.tests.factories import as_checked, create_compute
from endpoints import keys as endpoint_keys
from endpoints.models import OnlineDeployment, OnlineEndpoint
from tests.support import assert_error
from workspaces.models import AuditEvent

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would

BASE = "/api/v1/workspaces/team-a/online-endpoints"
ADDER = Path(__file__).parent / "data" / "adder"
GPU = "nvidia.com/gpu"
DEFAULT_RESOURCES = {"requests": {"cpu": "100m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}
PROBE_DEFAULTS = {"period": 10, "initial_delay": 10, "timeout": 2, "success_threshold": 1, "failure_threshold": 30}


@pytest.fixture(autouse=True)
def folders(settings, tmp_path):
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"
    settings.DOCKYARD_LOCAL_COMPUTE = True


@pytest.fixture
def api(owner_api, workspace):
    return owner_api


def local_deployment(name: str = "blue", **fields) -> dict:
    """A valid deployment of the adder scoring script on a local endpoint (None removes a field)."""
    data = {"name": name, "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"},
            **fields}
    return {key: value for key, value in data.items() if value is not None}


def kube_deployment(name: str = "blue", **fields) -> dict:
    """A valid deployment for a Kubernetes endpoint (None removes a field)."""
    data = {"name": name, "code_configuration": {"code": "./script", "scoring_script": "score.py"},
            "environment": {"image": "mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest"}, **fields}
    return {key: value for key, value in data.items() if value is not None}


def create_endpoint(api, name: str = "my-ep", **fields) -> dict:
    response = api.post(f"{BASE}/", {"name": name, "compute": "local", **fields}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def create_deployment(api, endpoint: str = "my-ep", body: dict | None = None) -> dict:
    response = api.post(f"{BASE}/{endpoint}/deployments/", body or local_deployment(), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def set_traffic(endpoint: str, traffic: dict, mirror: dict | None = None) -> None:
    """Straight into the record: the API's own traffic rules are tested below."""
    OnlineEndpoint.objects.filter(name=endpoint).update(traffic=traffic, mirror_traffic=mirror or {})


def state() -> tuple:
    """Everything a refused request must leave as it was."""
    endpoints = list(OnlineEndpoint.objects.order_by("pk").values_list(
        "name", "description", "tags", "auth_mode", "traffic", "mirror_traffic", "primary_key_hash", "secondary_key_hash",
        "key_prefixes", "generation", "provisioning_state"))
    deployments = list(OnlineDeployment.objects.order_by("pk").values_list(
        "name", "spec", "instance_type", "resources", "instance_count", "generation", "provisioning_state"))
    return OnlineEndpoint.objects.count(), OnlineDeployment.objects.count(), AuditEvent.objects.count(), endpoints, deployments


def assert_refused(response, code: str, targets: list[str], before: tuple, status: int = 400) -> None:
    error = assert_error(response, status, code)
    assert sorted(detail["target"] for detail in error["details"]) == sorted(targets), error
    assert state() == before


@pytest.fixture
def k8s(workspace, owner):
    """A Kubernetes compute record (no cluster behind it) whose cluster has three instance types."""
    compute = as_checked(create_compute(workspace, owner, "kubernetes", name="k8s"))
    cluster = compute.cluster
    InstanceType.objects.create(cluster=cluster, name="small", requests={"cpu": "1", "memory": "2Gi"}, limits={"cpu": "4", "memory": "8Gi"})
    InstanceType.objects.create(cluster=cluster, name="big", requests={"cpu": "2", "memory": "4Gi"}, limits={"cpu": "8", "memory": "32Gi"})
    InstanceType.objects.create(cluster=cluster, name="gpu-small", node_selector={"accelerator": "nvidia"},
                                requests={"cpu": "700m", "memory": "1500Mi"}, limits={"cpu": "4", "memory": "16Gi"}, gpu=2)
    return compute


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


# ---------------------------------------------------------------- keys

def score(key: str | None, endpoint: str = "my-ep", **headers):
    client = APIClient()
    if key is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    return client.post(f"{BASE}/{endpoint}/score", {"numbers": [1, 2]}, format="json", **headers)


def accepted(response) -> bool:
    """The key was accepted: with no traffic set, the answer is NoTraffic rather than 401."""
    if response.status_code == 401:
        return False
    assert_error(response, 404, "NoTraffic")
    return True


def test_keys_are_shown_once_and_only_their_prefixes_after(api):
    made = create_endpoint(api, "my-ep")["keys"]
    create_deployment(api, "my-ep")
    response = api.get(f"{BASE}/my-ep/keys")
    assert response.status_code == 200
    body = response.json()
    assert body["auth_mode"] == "key" and set(body["keys"]) == {"primary", "secondary"}
    assert body["keys"]["primary"]["prefix"] == made["primaryKey"][: endpoint_keys.PREFIX_LENGTH]
    assert body["keys"]["secondary"]["prefix"] == made["secondaryKey"][: endpoint_keys.PREFIX_LENGTH]
    assert all(row["rotated_at"] for row in body["keys"].values())
    api.patch(f"{BASE}/my-ep/", {"description": "changed"}, format="json")
    answers = [
        api.get(f"{BASE}/"), api.get(f"{BASE}/my-ep/"), api.get(f"{BASE}/my-ep/keys"), api.get(f"{BASE}/my-ep/keys/"),
        api.patch(f"{BASE}/my-ep/", {"tags": {"a": "b"}}, format="json"),
        api.get(f"{BASE}/my-ep/deployments/"), api.get(f"{BASE}/my-ep/deployments/blue/"),
        api.get("/api/v1/workspaces/team-a/events/"), api.get("/api/v1/workspaces/team-a/events/", {"page_size": 100}),
    ]
    for answer in answers:
        assert answer.status_code == 200, answer.content
        for key in made.values():
            assert key not in answer.content.decode(), answer.request["PATH_INFO"]
    stored = json.dumps(list(AuditEvent.objects.values()), default=str)
    assert all(key not in stored for key in made.values())


@pytest.mark.parametrize("path", ["keys", "keys/regenerate"])
def test_regenerating_one_key_leaves_the_other_working(api, path):
    made = create_endpoint(api, "my-ep")["keys"]
    assert accepted(score(made["primaryKey"])) and accepted(score(made["secondaryKey"]))
    response = api.post(f"{BASE}/my-ep/{path}", {"key_type": "secondary"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["auth_mode"] == "key"
    assert set(response.json()) == {"auth_mode", "secondaryKey"}
    new = response.json()["secondaryKey"]
    assert new not in made.values()
    assert not accepted(score(made["secondaryKey"]))
    assert accepted(score(new)) and accepted(score(made["primaryKey"]))
    assert api.get(f"{BASE}/my-ep/keys").json()["keys"]["secondary"]["prefix"] == new[: endpoint_keys.PREFIX_LENGTH]
    event = AuditEvent.objects.get(verb="regenerate-key")
    assert event.changes == {"secondary_key": "(secret changed)"} and new not in json.dumps(event.changes)
    # the primary key in turn (the default key_type)
    response = api.post(f"{BASE}/my-ep/{path}", {}, format="json")
    assert response.status_code == 200 and set(response.json()) == {"auth_mode", "primaryKey"}
    assert not accepted(score(made["primaryKey"]))
    assert accepted(score(response.json()["primaryKey"])) and accepted(score(new))


@pytest.mark.parametrize("key_type", ["tertiary", "", 1, None])
def test_an_unknown_key_type_rotates_nothing(api, key_type):
    create_endpoint(api, "my-ep")
    before = state()
    response = api.post(f"{BASE}/my-ep/keys/regenerate", {"key_type": key_type}, format="json")
    assert_refused(response, "InvalidKeyType", ["key_type"], before)


def test_aml_token_endpoints_have_no_keys(api, users):
    response = api.post(f"{BASE}/", {"name": "tok", "compute": "local", "auth_mode": "aml_token"}, format="json")
    assert response.status_code == 201 and response.json()["keys"] == {}
    endpoint = OnlineEndpoint.objects.get(name="tok")
    assert endpoint.primary_key_hash == endpoint.secondary_key_hash == "" and endpoint.key_prefixes == {}
    assert api.get(f"{BASE}/tok/keys").json() == {"auth_mode": "aml_token", "keys": {}}
    before = state()
    for path in ("keys", "keys/regenerate"):
        assert_refused(api.post(f"{BASE}/tok/{path}", {"key_type": "primary"}, format="json"), "NoKeys", ["auth_mode"], before)


def test_switching_to_key_auth_makes_keys_shown_once(api):
    create_endpoint(api, "tok", auth_mode="aml_token")
    response = api.patch(f"{BASE}/tok/", {"auth_mode": "key"}, format="json")
    assert response.status_code == 200, response.json()
    made = response.json()["keys"]
    assert set(made) == {"primaryKey", "secondaryKey"}
    assert accepted(score(made["primaryKey"], "tok")) and accepted(score(made["secondaryKey"], "tok"))
    assert made["primaryKey"] not in api.get(f"{BASE}/tok/").content.decode()


def test_keys_made_before_a_switch_to_aml_token_stop_working(api):
    old = create_endpoint(api, "my-ep")["keys"]
    assert api.patch(f"{BASE}/my-ep/", {"auth_mode": "aml_token"}, format="json").status_code == 200
    assert api.get(f"{BASE}/my-ep/keys").json() == {"auth_mode": "aml_token", "keys": {}}
    response = api.patch(f"{BASE}/my-ep/", {"auth_mode": "key"}, format="json")
    new = response.json()["keys"]
    assert set(new) == {"primaryKey", "secondaryKey"} and not set(new.values()) & set(old.values())
    assert not accepted(score(old["primaryKey"])) and not accepted(score(old["secondaryKey"]))
    assert accepted(score(new["primaryKey"])) and accepted(score(new["secondaryKey"]))


# ---------------------------------------------------------------- traffic

@pytest.fixture
def three(api):
    """Endpoint `my-ep` with local deployments blue, green and red; blue takes all the traffic."""
    create_endpoint(api, "my-ep")
    for name in ("blue", "green", "red"):
        create_deployment(api, "my-ep", local_deployment(name))
    set_traffic("my-ep", {"blue": 100})
    return api


@pytest.mark.parametrize("patch, traffic, mirror", [
    pytest.param({"traffic": {"blue": 90, "green": 10}}, {"blue": 90, "green": 10}, {}, id="ninety-ten"),
    pytest.param({"traffic": {"green": 100}}, {"green": 100}, {}, id="all-to-green"),
    pytest.param({"traffic": {"blue": 0, "green": 0}}, {"blue": 0, "green": 0}, {}, id="totals-zero"),
    pytest.param({"traffic": {}}, {}, {}, id="no-traffic"),
    pytest.param({"traffic": {"blue": 34, "green": 33, "red": 33}}, {"blue": 34, "green": 33, "red": 33}, {}, id="three-ways"),
    pytest.param({"mirror_traffic": {"green": 50}}, {"blue": 100}, {"green": 50}, id="mirror-fifty"),
    pytest.param({"traffic": {"blue": 100, "green": 0}, "mirror_traffic": {"green": 10}}, {"blue": 100, "green": 0}, {"green": 10},
                 id="mirror-to-a-zero-share"),
])
def test_traffic_accepted(three, patch, traffic, mirror):
    response = three.patch(f"{BASE}/my-ep/", patch, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["traffic"], response.json()["mirror_traffic"]) == (traffic, mirror)
    endpoint = OnlineEndpoint.objects.get(name="my-ep")
    assert (endpoint.traffic, endpoint.mirror_traffic) == (traffic, mirror)
    event = AuditEvent.objects.filter(target_type="online-endpoint", action="update").get()
    assert set(event.changes) <= {"traffic", "mirror_traffic"}


def test_traffic_cannot_name_a_deployment_being_deleted(three):
    OnlineDeployment.objects.filter(name="red").update(provisioning_state="Deleting")
    before = state()
    assert_refused(three.patch(f"{BASE}/my-ep/", {"traffic": {"red": 100}}, format="json"), "InvalidTraffic", ["traffic.red"], before)


# ---------------------------------------------------------------- bad endpoint bodies

BAD_ENDPOINT_CREATES = [
    pytest.param({"compute": "local"}, "InvalidEndpoint", ["name"], id="name-missing"),
    pytest.param({"name": "ab", "compute": "local"}, "InvalidEndpoint", ["name"], id="name-too-short"),
    pytest.param({"name": "e" * 33, "compute": "local"}, "InvalidEndpoint", ["name"], id="name-too-long"),
    pytest.param({"name": "1ep", "compute": "local"}, "InvalidEndpoint", ["name"], id="name-starts-with-a-digit"),
    pytest.param({"name": "my_ep", "compute": "local"}, "InvalidEndpoint", ["name"], id="name-underscore"),
    pytest.param({"name": "my-ep"}, "InvalidEndpoint", ["compute"], id="compute-missing"),
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
    pytest.param({"name": "x", "compute": "", "auth_mode": "aad_token"}, "InvalidEndpoint", ["name", "compute", "auth_mode"],
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


BAD_ENDPOINT_PATCHES = [
    pytest.param({"traffic": {"blue": 90}}, "InvalidTraffic", ["traffic"], id="totals-90"),
    pytest.param({"traffic": {"blue": 60, "green": 60}}, "InvalidTraffic", ["traffic"], id="totals-120"),
    pytest.param({"traffic": {"blue": 1}}, "InvalidTraffic", ["traffic"], id="totals-1"),
    pytest.param({"traffic": {"purple": 100}}, "InvalidTraffic", ["traffic.purple"], id="unknown-deployment"),
    pytest.param({"traffic": {"blue": 50, "purple": 50}}, "InvalidTraffic", ["traffic.purple"], id="one-unknown"),
    pytest.param({"traffic": {"blue": 99.5, "green": 0.5}}, "InvalidEndpoint", ["traffic.blue", "traffic.green"], id="fractions"),
    pytest.param({"traffic": {"blue": -10, "green": 110}}, "InvalidEndpoint", ["traffic.blue", "traffic.green"], id="out-of-range"),
    pytest.param({"traffic": {"blue": "100"}}, "InvalidEndpoint", ["traffic.blue"], id="share-a-string"),
    pytest.param({"traffic": [["blue", 100]]}, "InvalidEndpoint", ["traffic"], id="traffic-a-list"),
    pytest.param({"mirror_traffic": {"green": 51}}, "InvalidTraffic", ["mirror_traffic.green"], id="mirror-over-50"),
    pytest.param({"mirror_traffic": {"green": 101}}, "InvalidEndpoint", ["mirror_traffic.green"], id="mirror-over-100"),
    pytest.param({"mirror_traffic": {"blue": 10}}, "InvalidTraffic", ["mirror_traffic.blue"], id="mirror-to-live"),
    pytest.param({"traffic": {"blue": 0, "green": 100}, "mirror_traffic": {"green": 10}}, "InvalidTraffic", ["mirror_traffic.green"],
                 id="mirror-to-the-new-live-one"),
    pytest.param({"mirror_traffic": {"green": 10, "red": 10}}, "InvalidTraffic", ["mirror_traffic"], id="mirror-to-two"),
    pytest.param({"mirror_traffic": {"purple": 10}}, "InvalidTraffic", ["mirror_traffic.purple"], id="mirror-to-unknown"),
    pytest.param({"name": "renamed"}, "ImmutableField", ["name"], id="rename"),
    pytest.param({"compute": "azureml:k8s"}, "ImmutableField", ["compute"], id="move-compute"),
    pytest.param({"auth_mode": "aad_token"}, "InvalidEndpoint", ["auth_mode"], id="aad-token"),
    pytest.param({"colour": "blue"}, "InvalidEndpoint", ["colour"], id="unknown-field"),
    pytest.param({"description": 5}, "InvalidEndpoint", ["description"], id="description-not-a-string"),
    pytest.param(["description"], "InvalidEndpoint", [""], id="body-a-list"),
]


@pytest.mark.parametrize("patch, code, targets", BAD_ENDPOINT_PATCHES)
def test_bad_endpoint_patches(three, patch, code, targets):
    before = state()
    assert_refused(three.patch(f"{BASE}/my-ep/", patch, format="json"), code, targets, before)
    assert OnlineEndpoint.objects.get(name="my-ep").traffic == {"blue": 100}


def test_a_bad_traffic_patch_in_yaml(three):
    before = state()
    response = three.patch(f"{BASE}/my-ep/", "traffic:\n  blue: 90\n  green: 5\n", content_type="application/yaml")
    assert_refused(response, "InvalidTraffic", ["traffic"], before)


# ---------------------------------------------------------------- deployments

def test_create_list_show_a_local_deployment(api):
    create_endpoint(api, "my-ep")
    body = create_deployment(api, "my-ep", local_deployment("blue", environment_variables={"OFFSET": 1}))
    assert body["name"] == "blue" and body["endpoint_name"] == "my-ep"
    # no instance type and no resources: the process runs on the Dockyard host (the studio says the same)
    assert body["instance_type"] is None and body["instance_count"] == 1
    assert body["resources"] == {}
    assert body["liveness_probe"] == body["readiness_probe"] == PROBE_DEFAULTS
    assert body["request_settings"] == {"request_timeout_ms": 5000, "max_concurrent_requests_per_instance": 1}
    assert body["scale_settings"] == {"type": "default"} and body["environment_variables"] == {"OFFSET": "1"}
    assert body["provisioning_state"] == "Creating" and body["created_by"] == "olivia"
    create_deployment(api, "my-ep", local_deployment("green", liveness_probe={"period": 5}))
    listed = api.get(f"{BASE}/my-ep/deployments/").json()
    assert listed["count"] == 2 and [row["name"] for row in listed["results"]] == ["blue", "green"]
    shown = api.get(f"{BASE}/my-ep/deployments/green/")
    assert shown.status_code == 200 and shown["ETag"]
    assert shown.json()["liveness_probe"] == {**PROBE_DEFAULTS, "period": 5}
    assert "manifests" in shown.json()
    assert api.get(f"{BASE}/my-ep/").json()["deployments"] == ["blue", "green"]
    assert AuditEvent.objects.filter(target_type="online-deployment", action="create").count() == 2
    assert_error(api.get(f"{BASE}/my-ep/deployments/nope/"), 404, "NotFound")
    assert_error(api.get(f"{BASE}/nope/deployments/"), 404, "NotFound")


def test_a_local_deployment_may_leave_the_environment_out(api):
    create_endpoint(api, "my-ep")
    assert create_deployment(api, "my-ep", local_deployment("blue", environment=None))["environment"] == {}


def test_create_a_deployment_in_yaml(api):
    create_endpoint(api, "my-ep")
    text = yaml.safe_dump({"$schema": "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineDeployment.schema.json",
                           "endpoint_name": "my-ep", "app_insights_enabled": False, **local_deployment("blue")})
    response = api.post(f"{BASE}/my-ep/deployments/", text, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    assert response.json()["endpoint_name"] == "my-ep"


def test_a_taken_deployment_name_is_a_conflict(api):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep")
    before = state()
    assert_error(api.post(f"{BASE}/my-ep/deployments/", local_deployment("blue"), format="json"), 409, "Conflict")
    assert state() == before


def test_patch_a_deployment(api):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep")
    response = api.patch(f"{BASE}/my-ep/deployments/blue/", {"environment_variables": {"OFFSET": "5"}, "name": "blue"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["environment_variables"] == {"OFFSET": "5"}
    response = api.patch(f"{BASE}/my-ep/deployments/blue/", "request_settings:\n  request_timeout_ms: 9000\n", content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert response.json()["request_settings"]["request_timeout_ms"] == 9000
    deployment = OnlineDeployment.objects.get(name="blue")
    assert deployment.generation == 3 and deployment.provisioning_state == "Updating"
    assert AuditEvent.objects.filter(target_type="online-deployment", action="update").count() == 2
    before = state()
    assert api.patch(f"{BASE}/my-ep/deployments/blue/", {"instance_count": 1}, format="json").status_code == 200
    assert state() == before  # nothing changed, nothing written


@pytest.mark.parametrize("traffic, mirror", [({"blue": 100}, {}), ({"blue": 90, "green": 10}, {}), ({"green": 100}, {"blue": 20})])
def test_a_deployment_with_traffic_cannot_be_deleted(api, traffic, mirror):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep", local_deployment("blue"))
    create_deployment(api, "my-ep", local_deployment("green"))
    set_traffic("my-ep", traffic, mirror)
    before = state()
    assert_refused(api.delete(f"{BASE}/my-ep/deployments/blue/"), "DeploymentHasTraffic", ["traffic"], before)


def test_a_deployment_without_traffic_is_deleted(api):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep", local_deployment("blue"))
    create_deployment(api, "my-ep", local_deployment("green"))
    set_traffic("my-ep", {"blue": 100, "green": 0}, {"green": 0})
    response = api.delete(f"{BASE}/my-ep/deployments/green/")
    assert response.status_code == 202, response.json()
    assert response.json()["provisioning_state"] == "Deleting"
    assert OnlineDeployment.objects.get(name="green").provisioning_state == "Deleting"
    assert AuditEvent.objects.filter(target_type="online-deployment", action="delete").count() == 1
    assert_error(api.patch(f"{BASE}/my-ep/deployments/green/", {"description": "x"}, format="json"), 409, "Conflict")
    # its name is no longer a traffic target
    assert_error(api.patch(f"{BASE}/my-ep/", {"traffic": {"green": 100}}, format="json"), 400, "InvalidTraffic", "traffic.green")


def test_local_deployment_logs(api):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep")
    response = api.get(f"{BASE}/my-ep/deployments/blue/logs/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    for lines in ("0", "-1", "abc", "5001"):
        assert_error(api.get(f"{BASE}/my-ep/deployments/blue/logs/", {"lines": lines}), 400, "InvalidLines", "lines")


# ---------------------------------------------------------------- Kubernetes deployments and instance types

def test_kubernetes_deployments_on_named_and_default_instance_types(api, k8s):
    create_endpoint(api, "kep", compute="azureml:k8s")
    body = create_deployment(api, "kep", kube_deployment("blue", instance_type="small", instance_count=3))
    assert body["instance_type"] == "small" and body["instance_count"] == 3
    assert body["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
    body = create_deployment(api, "kep", kube_deployment("green"))
    assert body["instance_type"] == "defaultinstancetype" and body["resources"] == DEFAULT_RESOURCES
    body = create_deployment(api, "kep", kube_deployment("red", instance_type="small", resources={
        "requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "3999m", "memory": "6Gi"}}))
    assert body["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "3999m", "memory": "6Gi"}}


def test_a_gpu_instance_type(api, k8s):
    create_endpoint(api, "kep", compute="azureml:k8s")
    body = create_deployment(api, "kep", kube_deployment("blue", instance_type="gpu-small"))
    assert body["resources"] == {"requests": {"cpu": "700m", "memory": "1500Mi"}, "limits": {"cpu": "4", "memory": "16Gi", GPU: 2}}
    body = create_deployment(api, "kep", kube_deployment("green", instance_type="gpu-small", resources={
        "requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 1}}))
    assert body["resources"]["limits"] == {"cpu": "2", "memory": "8Gi", GPU: 1}
    # all the type's GPUs: whole devices no side process uses (cpu and memory stay below the type's)
    body = create_deployment(api, "kep", kube_deployment("red", instance_type="gpu-small", resources={
        "requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 2}}))
    assert body["resources"]["limits"] == {"cpu": "2", "memory": "8Gi", GPU: 2}


def test_the_clusters_own_defaultinstancetype_replaces_the_builtin(api, k8s):
    InstanceType.objects.create(cluster=k8s.cluster, name="defaultinstancetype", requests={"cpu": "1", "memory": "4Gi"},
                                limits={"cpu": "8", "memory": "16Gi"})
    create_endpoint(api, "kep", compute="azureml:k8s")
    body = create_deployment(api, "kep", kube_deployment("blue", resources={"requests": {"cpu": "1", "memory": "1Gi"},
                                                                             "limits": {"cpu": "4", "memory": "8Gi"}}))
    assert body["instance_type"] == "defaultinstancetype" and body["resources"]["limits"] == {"cpu": "4", "memory": "8Gi"}


def test_mlflow_models_on_kubernetes(api, k8s, tmp_path):
    create_endpoint(api, "kep", compute="azureml:k8s")
    mlflow = {"path": "./model", "type": "mlflow_model"}
    body = create_deployment(api, "kep", kube_deployment("blue", model=mlflow, code_configuration=None, instance_type="big"))
    assert body["model"] == mlflow and body["code_configuration"] is None
    # a folder with an MLmodel file is an MLflow model too
    folder = tmp_path / "mlflow-model"
    folder.mkdir()
    (folder / "MLmodel").write_text("flavors: {}\n")
    before = state()
    response = api.post(f"{BASE}/kep/deployments/", kube_deployment("green", model=str(folder), instance_type="big", resources={
        "requests": {"cpu": "1", "memory": "4Gi"}}), format="json")
    assert_refused(response, "InvalidDeployment", ["resources.requests"], before)
    create_deployment(api, "kep", kube_deployment("green", model=str(folder), instance_type="big", resources={
        "requests": {"cpu": "2", "memory": "4Gi"}}))


def test_a_model_path_this_host_cannot_look_up_is_not_an_mlflow_model(api, k8s):
    create_endpoint(api, "kep", compute="azureml:k8s")
    body = create_deployment(api, "kep", kube_deployment("blue", model="/mnt/" + "m" * 300))
    assert body["model"]["type"] == "custom_model"


def test_patch_a_kubernetes_deployments_instance_count(api, k8s):
    create_endpoint(api, "kep", compute="azureml:k8s")
    create_deployment(api, "kep", kube_deployment("blue", instance_type="small"))
    etag = api.get(f"{BASE}/kep/deployments/blue/")["ETag"]
    response = api.patch(f"{BASE}/kep/deployments/blue/", {"instance_count": 4}, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 200, response.json()
    assert response.json()["instance_count"] == 4 and response.json()["instance_type"] == "small"
    deployment = OnlineDeployment.objects.get(name="blue")
    assert (deployment.instance_count, deployment.generation, deployment.spec["instance_count"]) == (4, 2, 4)
    event = AuditEvent.objects.get(target_type="online-deployment", action="update")
    assert event.target_name == "kep/blue" and "instance_count" in event.changes
    before = state()
    assert_error(api.patch(f"{BASE}/kep/deployments/blue/", {"instance_count": 5}, format="json", HTTP_IF_MATCH=etag), 412,
                 "PreconditionFailed")
    assert state() == before
    # and to another instance type, resolved again
    response = api.patch(f"{BASE}/kep/deployments/blue/", {"instance_type": "big"}, format="json")
    assert response.status_code == 200 and response.json()["resources"]["limits"] == {"cpu": "8", "memory": "32Gi"}


# ---------------------------------------------------------------- bad deployment bodies

BAD_LOCAL_DEPLOYMENTS = [
    pytest.param(local_deployment(name=None), ["name"], id="name-missing"),
    pytest.param(local_deployment(name="b"), ["name"], id="name-too-short"),
    pytest.param(local_deployment(name="blue_1"), ["name"], id="name-underscore"),
    pytest.param(local_deployment(endpoint_name="other"), ["endpoint_name"], id="endpoint-name-mismatch"),
    pytest.param(local_deployment(model="azureml:sklearn:1"), ["model"], id="registered-model"),
    pytest.param(local_deployment(model={"type": "custom_model"}), ["model"], id="model-without-path"),
    pytest.param(local_deployment(model={"path": str(ADDER), "type": "onnx"}), ["model.type"], id="model-type-unknown"),
    pytest.param(local_deployment(model="/nonexistent/model.pkl"), ["model.path"], id="model-path-missing"),
    pytest.param(local_deployment(code_configuration=None), ["code_configuration"], id="code-configuration-missing"),
    pytest.param(local_deployment(code_configuration={"code": str(ADDER)}), ["code_configuration.scoring_script"], id="scoring-script-missing"),
    pytest.param(local_deployment(code_configuration={"code": "/nonexistent/script", "scoring_script": "score.py"}),
                 ["code_configuration.code"], id="code-folder-missing"),
    pytest.param(local_deployment(code_configuration={"code": str(ADDER), "scoring_script": "nope.py"}),
                 ["code_configuration.scoring_script"], id="scoring-script-not-in-folder"),
    pytest.param(local_deployment(code_configuration={"code": str(ADDER / "score.py"), "scoring_script": "score.py"}),
                 ["code_configuration.code"], id="code-a-file"),
    pytest.param(local_deployment(code_configuration={"code": "/tmp/" + "c" * 300, "scoring_script": "score.py"}),
                 ["code_configuration.code"], id="code-folder-name-too-long-for-the-host"),
    pytest.param(local_deployment(model="/tmp/" + "m" * 300), ["model.path"], id="model-name-too-long-for-the-host"),
    pytest.param(local_deployment(code_configuration={"code": "./script", "scoring_script": "score.py"}), ["code_configuration.code"],
                 id="code-folder-relative"),
    pytest.param(local_deployment(model="./model.pkl"), ["model.path"], id="model-path-relative"),
    pytest.param(local_deployment(environment="azureml:env:1"), ["environment"], id="registered-environment"),
    pytest.param(local_deployment(environment={"image": "x", "colour": "blue"}), ["environment.colour"], id="environment-unknown-field"),
    pytest.param(local_deployment(environment_variables={"1X": "a"}), ["environment_variables.1X"], id="bad-variable-name"),
    pytest.param(local_deployment(instance_count=2), ["instance_count"], id="local-instance-count-2"),
    pytest.param(local_deployment(instance_count=0), ["instance_count"], id="instance-count-0"),
    pytest.param(local_deployment(instance_count="1"), ["instance_count"], id="instance-count-a-string"),
    pytest.param(local_deployment(instance_type="small"), ["instance_type"], id="local-named-instance-type"),
    pytest.param(local_deployment(instance_type=""), ["instance_type"], id="instance-type-empty"),
    pytest.param(local_deployment(scale_settings={"type": "target_utilization"}), ["scale_settings.type"], id="local-autoscale"),
    pytest.param(local_deployment(scale_settings={"type": "manual"}), ["scale_settings.type"], id="scale-type-unknown"),
    pytest.param(local_deployment(liveness_probe={"success_threshold": 2}), ["liveness_probe.success_threshold"], id="liveness-success-2"),
    pytest.param(local_deployment(readiness_probe={"period": 0}), ["readiness_probe.period"], id="readiness-period-0"),
    pytest.param(local_deployment(request_settings={"request_timeout_ms": 0}), ["request_settings.request_timeout_ms"], id="timeout-0"),
    pytest.param(local_deployment(colour="blue"), ["colour"], id="unknown-field"),
    # what a local deployment cannot act on is refused with the reason
    pytest.param(local_deployment(resources={"requests": {"cpu": "0.1", "memory": "0.2Gi"}}), ["resources"], id="local-resources"),
    pytest.param(local_deployment(instance_type="defaultinstancetype"), ["instance_type"], id="local-default-instance-type"),
    pytest.param(local_deployment(environment={"image": "python:3.11"}), ["environment.image"], id="local-image"),
    pytest.param(local_deployment(readiness_probe={"period": 5}), ["readiness_probe"], id="local-readiness-probe"),
    pytest.param(local_deployment(model={"path": str(ADDER), "type": "mlflow_model"}, code_configuration=None), ["model.type"],
                 id="local-mlflow-without-code"),
    pytest.param({"name": "x", "instance_count": 0, "endpoint_name": "other", "environment": ["python"]},
                 ["name", "endpoint_name", "code_configuration", "environment", "instance_count"], id="every-problem-at-once"),
    pytest.param(["blue"], [""], id="body-a-list"),
]


@pytest.mark.parametrize("body, targets", BAD_LOCAL_DEPLOYMENTS)
def test_bad_local_deployments(api, body, targets):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep", local_deployment("existing"))
    set_traffic("my-ep", {"existing": 100})
    before = state()
    assert_refused(api.post(f"{BASE}/my-ep/deployments/", body, format="json"), "InvalidDeployment", targets, before)


BAD_KUBERNETES_DEPLOYMENTS = [
    pytest.param(kube_deployment(instance_type="huge"), ["instance_type"], id="unknown-instance-type"),
    pytest.param(kube_deployment(environment={"conda_file": "conda.yml"}), ["environment.image"], id="no-image"),
    pytest.param(kube_deployment(environment=None), ["environment.image"], id="no-environment"),
    pytest.param(kube_deployment(instance_count=0), ["instance_count"], id="instance-count-0"),
    pytest.param(kube_deployment(instance_count=2**31), ["instance_count"], id="instance-count-too-large"),
    pytest.param(kube_deployment(instance_type="small", resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "4"}}),
                 ["resources.limits.cpu"], id="cpu-limit-equals-the-types"),
    pytest.param(kube_deployment(instance_type="small", resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "9Gi"}}),
                 ["resources.limits.memory"], id="memory-limit-above-the-types"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2"}}),
                 ["resources.limits.cpu"], id="no-type-named-cpu-limit-equals-the-defaults"),
    pytest.param(kube_deployment(instance_type="gpu-small", resources={"requests": {"cpu": "1", "memory": "1Gi"},
                                                                       "limits": {"cpu": "2", "memory": "2Gi", GPU: 3}}),
                 [f"resources.limits.{GPU}"], id="gpu-limit-above-the-types"),
    pytest.param(kube_deployment(type="managed"), ["type"], id="managed-type"),
    pytest.param(kube_deployment(environment={"image": "python:3.11", "venv": "/opt/venv"}), ["environment.venv"], id="venv-on-kubernetes"),
    # resources, no instance type named: against defaultinstancetype (requests 100m/2Gi, limits 2/2Gi)
    pytest.param(kube_deployment(resources={"requests": {"memory": "1Gi"}}), ["resources.requests.cpu"], id="cpu-request-missing"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "0", "memory": "1Gi"}}), ["resources.requests.cpu"], id="cpu-request-zero"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "", "memory": "1Gi"}}), ["resources.requests.cpu"], id="cpu-request-empty"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1"}}), ["resources.requests.memory"], id="memory-request-missing"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "512Ki"}}), ["resources.requests.memory"], id="memory-under-1MB"),
    pytest.param(kube_deployment(resources={"limits": {"cpu": "1", "memory": "1Gi"}}), ["resources.requests"], id="requests-missing"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi", GPU: 1}}), [f"resources.requests.{GPU}"],
                 id="gpu-in-requests"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2"}}), ["resources.limits.cpu"],
                 id="cpu-limit-equals-default"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}), ["resources.limits.memory"],
                 id="memory-limit-equals-default"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": ""}}), ["resources.limits.cpu"],
                 id="cpu-limit-empty"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi", GPU: 1}}),
                 [f"resources.limits.{GPU}"], id="gpu-on-the-default-type"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "3Gi"}}), ["resources.requests.memory"],
                 id="memory-request-above-default-limit"),

    pytest.param(kube_deployment(instance_type="gpu-small", resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {GPU: 1}}),
                 ["resources.limits.cpu", "resources.limits.memory"], id="gpu-without-cpu-and-memory-limits"),
    pytest.param(kube_deployment(instance_type="gpu-small", resources={"requests": {"cpu": "1", "memory": "1Gi"},
                                                                       "limits": {"cpu": "2", "memory": "2Gi", GPU: 0.5}}),
                 [f"resources.limits.{GPU}"], id="gpu-fraction"),
    pytest.param(kube_deployment(instance_type="small", resources={"requests": {"cpu": "1", "memory": "1Gi"},
                                                                   "limits": {"cpu": "2", "memory": "2Gi", GPU: 1}}),
                 [f"resources.limits.{GPU}"], id="gpu-on-a-cpu-type"),
    pytest.param(kube_deployment(model={"path": "./model", "type": "mlflow_model"}, code_configuration=None), ["instance_type"],
                 id="mlflow-on-the-default-type"),
    pytest.param(kube_deployment(model={"path": "./model", "type": "mlflow_model"}, code_configuration=None, instance_type="big",
                                 resources={"requests": {"cpu": "1", "memory": "4Gi"}}), ["resources.requests"], id="mlflow-1-cpu"),
    pytest.param(kube_deployment(model={"path": "./model", "type": "mlflow_model"}, code_configuration=None, instance_type="big",
                                 resources={"requests": {"cpu": "2", "memory": "3Gi"}}), ["resources.requests"], id="mlflow-3Gi"),
    pytest.param(kube_deployment(scale_settings={"type": "target_utilization", "min_instances": 3, "max_instances": 2}),
                 ["scale_settings.min_instances"], id="autoscale-min-above-max"),
    pytest.param(kube_deployment(scale_settings={"type": "target_utilization", "target_utilization_percentage": 101}),
                 ["scale_settings.target_utilization_percentage"], id="autoscale-target-over-100"),
]


@pytest.mark.parametrize("body, targets", BAD_KUBERNETES_DEPLOYMENTS)
def test_bad_kubernetes_deployments(api, k8s, body, targets):
    create_endpoint(api, "kep", compute="azureml:k8s")
    create_deployment(api, "kep", kube_deployment("existing", instance_type="small"))
    before = state()
    assert_refused(api.post(f"{BASE}/kep/deployments/", body, format="json"), "InvalidDeployment", targets, before)


BAD_DEPLOYMENT_PATCHES = [
    pytest.param({"instance_count": 0}, "InvalidDeployment", ["instance_count"], id="instance-count-0"),
    pytest.param({"instance_count": -3}, "InvalidDeployment", ["instance_count"], id="instance-count-negative"),
    pytest.param({"name": "green"}, "ImmutableField", ["name"], id="rename"),
    pytest.param({"endpoint_name": "other"}, "ImmutableField", ["endpoint_name"], id="move-endpoint"),
    pytest.param({"instance_type": "huge"}, "InvalidDeployment", ["instance_type"], id="unknown-instance-type"),
    pytest.param({"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "4"}}}, "InvalidDeployment",
                 ["resources.limits.cpu"], id="limit-equals-the-types"),
    pytest.param({"resources": {"requests": {"cpu": "0", "memory": "0"}}}, "InvalidDeployment",
                 ["resources.requests.cpu", "resources.requests.memory"], id="zero-requests"),
    pytest.param({"environment": {"conda_file": "conda.yml"}}, "InvalidDeployment", ["environment.image"], id="no-image"),
    pytest.param({"liveness_probe": {"success_threshold": 3}}, "InvalidDeployment", ["liveness_probe.success_threshold"], id="liveness-3"),
    pytest.param({"colour": "blue"}, "InvalidDeployment", ["colour"], id="unknown-field"),
    pytest.param(["instance_count"], "InvalidDeployment", [""], id="body-a-list"),
]


@pytest.mark.parametrize("patch, code, targets", BAD_DEPLOYMENT_PATCHES)
def test_bad_deployment_patches(api, k8s, patch, code, targets):
    create_endpoint(api, "kep", compute="azureml:k8s")
    create_deployment(api, "kep", kube_deployment("blue", instance_type="small"))
    before = state()
    assert_refused(api.patch(f"{BASE}/kep/deployments/blue/", patch, format="json"), code, targets, before)


def test_a_local_deployments_instance_count_stays_one(api):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep")
    before = state()
    assert_refused(api.patch(f"{BASE}/my-ep/deployments/blue/", {"instance_count": 2}, format="json"), "InvalidDeployment",
                   ["instance_count"], before)
    assert_refused(api.patch(f"{BASE}/my-ep/deployments/blue/", "instance_count: 3\n", content_type="application/yaml"),
                   "InvalidDeployment", ["instance_count"], before)


# ---------------------------------------------------------------- scoring, without a running server

@pytest.fixture
def scoring(api):
    """Endpoint `my-ep` (keys returned) with local deployment blue, not yet serving."""
    made = create_endpoint(api, "my-ep")["keys"]
    create_deployment(api, "my-ep", local_deployment("blue"))
    return made


def test_score_an_unknown_endpoint(scoring, users):
    """A member's token learns that the endpoint does not exist; anyone else gets the 401 a wrong key gets (no leak)."""
    from workspaces.services import token_create

    tokens = {role: token_create(user=users[role], name="score")[1] for role in ("reader", "outsider")}
    assert_error(score(tokens["reader"], "nope"), 404, "NotFound")
    for key in (scoring["primaryKey"], tokens["outsider"], None):
        response = score(key, "nope")
        assert_error(response, 401, "Unauthorized")
        assert response["WWW-Authenticate"] == "Bearer"
    missing_workspace = APIClient().post("/api/v1/workspaces/no-such-team/online-endpoints/my-ep/score", {}, format="json",
                                         HTTP_AUTHORIZATION=f"Bearer {tokens['reader']}")
    assert_error(missing_workspace, 401, "Unauthorized")


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token abc"])
def test_score_without_a_key(scoring, authorization):
    headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
    response = APIClient().post(f"{BASE}/my-ep/score", {"numbers": [1]}, format="json", **headers)
    assert_error(response, 401, "Unauthorized")
    assert response["WWW-Authenticate"] == "Bearer"


def test_score_with_a_wrong_key(scoring, api, owner):
    from workspaces.services import token_create

    _, token = token_create(user=owner, name="not-a-key")
    for key in ("wrong", scoring["primaryKey"][:-1], scoring["primaryKey"] + "x", token):
        response = score(key)
        assert_error(response, 401, "Unauthorized")
        assert response["WWW-Authenticate"] == "Bearer"


def test_score_with_no_traffic(scoring):
    assert_error(score(scoring["primaryKey"]), 404, "NoTraffic")
    set_traffic("my-ep", {"blue": 0})
    assert_error(score(scoring["secondaryKey"]), 404, "NoTraffic")


def test_score_with_an_unknown_deployment_header(scoring):
    set_traffic("my-ep", {"blue": 100})
    assert_error(score(scoring["primaryKey"], HTTP_AZUREML_MODEL_DEPLOYMENT="green"), 404, "DeploymentNotFound")


def test_score_a_deployment_that_is_not_ready(scoring):
    assert_error(score(scoring["primaryKey"], HTTP_AZUREML_MODEL_DEPLOYMENT="blue"), 503, "DeploymentNotReady")
    set_traffic("my-ep", {"blue": 100})
    assert_error(score(scoring["primaryKey"]), 503, "DeploymentNotReady")
    assert_error(APIClient().post(f"{BASE}/my-ep/score/", {"numbers": [1]}, format="json",
                                  HTTP_AUTHORIZATION=f"Bearer {scoring['primaryKey']}"), 503, "DeploymentNotReady")


def test_score_a_deployment_being_deleted_or_an_endpoint_being_deleted(scoring, api, owner):
    from workspaces.services import token_create

    OnlineDeployment.objects.filter(name="blue").update(provisioning_state="Deleting")
    assert_error(score(scoring["primaryKey"], HTTP_AZUREML_MODEL_DEPLOYMENT="blue"), 404, "DeploymentNotFound")
    api.delete(f"{BASE}/my-ep/")
    assert_error(score(scoring["primaryKey"]), 401, "Unauthorized")  # an endpoint being deleted is gone: its keys too
    assert_error(score(token_create(user=owner, name="score")[1]), 404, "NotFound")


def test_score_an_aml_token_endpoint(api, api_as, users):
    create_endpoint(api, "tok", auth_mode="aml_token")
    from workspaces.services import token_create

    # a reader may read the endpoint but not use it (API.md: a member without the role gets 403)
    codes = {404: "NoTraffic", 401: "Unauthorized", 403: "Forbidden"}
    for role, expected in (("reader", 403), ("contributor", 404), ("owner", 404), ("outsider", 401)):
        _, token = token_create(user=users[role], name="score")
        response = score(token, "tok")
        assert_error(response, expected, codes[expected])
    assert_error(score(None, "tok"), 401, "Unauthorized")
