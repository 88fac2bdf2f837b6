"""Core paths of online endpoints, driven directly (no worker): a local deployment serving score requests."""
import time
from pathlib import Path

import pytest

from endpoints import reconcile
from endpoints.models import OnlineDeployment, OnlineEndpoint

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would

BASE = "/api/v1/workspaces/team-a/online-endpoints"
ADDER = Path(__file__).parent / "data" / "adder"


@pytest.fixture(autouse=True)
def folders(settings, tmp_path):
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"


def settle(name, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        deployment = OnlineDeployment.objects.select_related("endpoint", "endpoint__workspace").get(name=name)
        reconcile.reconcile_deployment(deployment)
        deployment.refresh_from_db()
        if deployment.provisioning_state == "Succeeded":
            return deployment
        time.sleep(0.3)
    raise AssertionError(f"{name}: {deployment.provisioning_state} {deployment.status}")


def test_local_endpoint_scores(owner_api, workspace, client):
    response = owner_api.post(f"{BASE}/", {"name": "adder", "compute": "local"}, format="json")
    assert response.status_code == 201, response.json()
    key = response.json()["keys"]["primaryKey"]
    reconcile.reconcile_endpoint(OnlineEndpoint.objects.select_related("workspace").get(name="adder"))
    body = {"name": "blue", "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"},
            "environment_variables": {"DEPLOYMENT_NAME": "blue"}}
    response = owner_api.post(f"{BASE}/adder/deployments/", body, format="json")
    assert response.status_code == 201, response.json()
    deployment = settle("blue")
    try:
        assert owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100}}, format="json").status_code == 200
        url = f"{BASE}/adder/score"
        assert client.post(url, {"numbers": [1, 2]}, content_type="application/json").status_code == 401
        answer = client.post(url, {"numbers": [1, 2]}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
        assert answer.status_code == 200, answer.content
        assert answer.json()["sum"] == 3 and answer["azureml-model-deployment"] == "blue"
        assert owner_api.delete(f"{BASE}/adder/deployments/blue/").status_code == 400
    finally:
        reconcile.local.stop_local(deployment)
