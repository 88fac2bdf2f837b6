"""Helpers the endpoints API tests share: creating through the API, scoring, and what a refusal must leave alone."""
from rest_framework.test import APIClient

from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.tests.bodies import local_deployment
from tests.support import assert_error
from workspaces.models import AuditEvent

BASE = "/api/v1/workspaces/team-a/online-endpoints"


def create_endpoint(api, name: str = "my-ep", **fields) -> dict:
    response = api.post(f"{BASE}/", {"name": name, "compute": "local", **fields}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def create_deployment(api, endpoint: str = "my-ep", body: dict | None = None) -> dict:
    response = api.post(f"{BASE}/{endpoint}/deployments/", body or local_deployment(), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def set_traffic(endpoint: str, traffic: dict, mirror: dict | None = None) -> None:
    """Straight into the record: the API's own traffic rules are tested in test_endpoint_traffic_and_refused_patches.py."""
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
    """Refused in the contract's error shape naming exactly these fields, and nothing written.

    Nothing written: no endpoint, deployment or audit event, no key rotated, no traffic moved (`state()` as before).
    """
    error = assert_error(response, status, code)
    assert sorted(detail["target"] for detail in error["details"]) == sorted(targets), error
    assert state() == before


def score(key: str | None, endpoint: str = "my-ep", **headers):
    client = APIClient()
    if key is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    return client.post(f"{BASE}/{endpoint}/score", {"numbers": [1, 2]}, format="json", **headers)
