"""Local deployments over the API: create (JSON, YAML), list, show, patch, delete (only without traffic), logs."""
import pytest
import yaml

from endpoints.models import OnlineDeployment
from endpoints.tests.bodies import PROBE_DEFAULTS, local_deployment
from endpoints.tests.support import BASE, assert_refused, create_deployment, create_endpoint, set_traffic, state
from tests.support import assert_error
from workspaces.models import AuditEvent

# local compute is off by default: enabled as staff would
pytestmark = pytest.mark.usefixtures("local_compute", "deployment_folders")


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


def test_a_local_deployments_instance_count_stays_one(api):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep")
    before = state()
    assert_refused(api.patch(f"{BASE}/my-ep/deployments/blue/", {"instance_count": 2}, format="json"), "InvalidDeployment",
                   ["instance_count"], before)
    assert_refused(api.patch(f"{BASE}/my-ep/deployments/blue/", "instance_count: 3\n", content_type="application/yaml"),
                   "InvalidDeployment", ["instance_count"], before)
