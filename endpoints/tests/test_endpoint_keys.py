"""An endpoint's keys: shown once at creation, prefixes after, regenerated one at a time, none under aml_token."""
import json

import pytest

from endpoints import keys as endpoint_keys
from endpoints.models import OnlineEndpoint
from endpoints.tests.support import BASE, assert_refused, create_deployment, create_endpoint, score, state
from tests.support import assert_error
from workspaces.models import AuditEvent

# local compute is off by default: enabled as staff would
pytestmark = pytest.mark.usefixtures("local_compute", "deployment_folders")


# ---------------------------------------------------------------- keys

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
