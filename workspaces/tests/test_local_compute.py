"""Local compute is off in every workspace until a staff user enables it there; who may create workspaces is a setting."""
import pytest

from endpoints.models import OnlineEndpoint
from jobs.models import Job
from tests.support import assert_error
from workspaces.models import AuditEvent, Workspace
from workspaces.services import workspace_local_compute_set

WS = "/api/v1/workspaces/team-a/"
REFUSAL = "Local compute is not enabled for workspace 'team-a'; a staff user can enable it."


def flags(workspace) -> tuple[bool, bool]:
    workspace.refresh_from_db()
    return workspace.local_compute_enabled, workspace.local_network_enabled


def test_a_new_workspace_has_local_compute_and_its_network_off(owner_api):
    created = owner_api.post("/api/v1/workspaces/", {"name": "fresh"}, format="json").json()
    assert (created["allow_local_compute"], created["allow_local_network"]) == (False, False)
    assert owner_api.get("/api/v1/workspaces/fresh/").json()["allow_local_compute"] is False


def test_staff_enable_local_compute_and_it_is_audited_and_shown(api_as, users, workspace):
    response = api_as("staff").patch(WS, {"allow_local_compute": True, "allow_local_network": True}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["allow_local_compute"], response.json()["allow_local_network"]) == (True, True)
    assert flags(workspace) == (True, True)
    event = AuditEvent.objects.get(workspace=workspace, verb="local-compute")
    assert (event.actor_name, event.action, event.target_name) == ("sam", "update", "team-a")
    assert event.changes == {"local_compute_enabled": [False, True], "local_network_enabled": [False, True]}
    assert api_as("reader").get(WS).json()["allow_local_compute"] is True  # every member sees the state


@pytest.mark.parametrize("role", ["owner", "contributor", "reader"])
@pytest.mark.parametrize("field", ["allow_local_compute", "allow_local_network"])
def test_no_member_role_may_turn_local_compute_on(api_as, users, workspace, role, field):
    client = api_as(role)  # (making its token is audited: before the count)
    events = AuditEvent.objects.count()
    response = client.patch(WS, {field: True, "description": "with local"}, format="json")
    assert_error(response, 403, "Forbidden")
    assert flags(workspace) == (False, False)
    workspace.refresh_from_db()
    assert workspace.description == ""  # the whole PATCH is refused, not just the field
    assert AuditEvent.objects.count() == events


def test_an_owner_may_not_turn_it_off_either_but_may_resend_it_unchanged(api_as, users, local_compute):
    owner = api_as("owner")
    assert_error(owner.patch(WS, {"allow_local_compute": False}, format="json"), 403, "Forbidden")
    body = owner.get(WS).json()  # a GET body sent back as read, with a changed display name: accepted
    response = owner.patch(WS, {**body, "display_name": "Team A (vision)"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["display_name"] == "Team A (vision)"
    assert flags(local_compute) == (True, False)


def test_staff_cannot_enable_it_when_the_server_turns_local_compute_off(api_as, users, workspace, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = False
    response = api_as("staff").patch(WS, {"allow_local_compute": True}, format="json")
    assert_error(response, 400, "LocalComputeOff", "allow_local_compute")
    assert flags(workspace) == (False, False)
    assert not AuditEvent.objects.filter(verb="local-compute").exists()


def test_the_service_refuses_non_staff(owner, workspace):
    from rest_framework.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        workspace_local_compute_set(user=owner, workspace=workspace, enabled=True)
    assert flags(workspace) == (False, False)


def test_a_local_job_is_refused_until_staff_enable_it(owner_api, api_as, users, workspace):
    jobs = f"{WS}jobs/"
    error = assert_error(owner_api.post(jobs, {"command": "id", "compute": "local"}, format="json"), 400, "InvalidJob", "compute")
    assert error["details"][0]["message"] == REFUSAL
    assert not Job.objects.exists()
    api_as("staff").patch(WS, {"allow_local_compute": True}, format="json")
    assert owner_api.post(jobs, {"command": "id", "compute": "local"}, format="json").status_code == 201


def test_a_local_endpoint_is_refused_until_staff_enable_it(owner_api, workspace):
    body = {"name": "adder", "compute": "local"}
    error = assert_error(owner_api.post(f"{WS}online-endpoints/", body, format="json"), 400, "InvalidEndpoint", "compute")
    assert error["details"][0]["message"] == REFUSAL
    assert not OnlineEndpoint.objects.exists()


def test_an_unknown_compute_does_not_offer_local_where_it_is_off(owner_api, workspace):
    error = assert_error(owner_api.post(f"{WS}jobs/", {"command": "id", "compute": "gpu"}, format="json"), 400, "InvalidJob")
    assert "local" not in error["details"][0]["message"]


def test_turning_it_off_again_refuses_new_local_jobs(api_as, users, local_compute):
    staff = api_as("staff")
    assert staff.patch(WS, {"allow_local_compute": False}, format="json").status_code == 200
    response = api_as("owner").post(f"{WS}jobs/", {"command": "id", "compute": "local"}, format="json")
    assert_error(response, 400, "InvalidJob", "compute")
    assert_error(api_as("owner").get(f"{WS}computes/local/"), 404, "NotFound")


# who may create workspaces


@pytest.mark.parametrize("creators, status", [("anyone", 201), ("staff", 403)])
def test_who_may_create_workspaces_is_a_setting(owner_api, settings, creators, status):
    settings.DOCKYARD_WORKSPACE_CREATORS = creators
    response = owner_api.post("/api/v1/workspaces/", {"name": "mine"}, format="json")
    if status == 403:
        assert_error(response, 403, "Forbidden")
    assert response.status_code == status
    assert Workspace.objects.filter(name="mine").exists() == (status == 201)


def test_a_refused_creator_learns_nothing_from_validation(owner_api, settings):
    settings.DOCKYARD_WORKSPACE_CREATORS = "staff"
    assert_error(owner_api.post("/api/v1/workspaces/", {"name": "Not A Label!"}, format="json"), 403, "Forbidden")
    assert_error(owner_api.post("/api/v1/workspaces/", {"name": "team-a"}, format="json"), 403, "Forbidden")


def test_staff_create_workspaces_when_only_staff_may(api_as, users, settings):
    settings.DOCKYARD_WORKSPACE_CREATORS = "staff"
    assert api_as("staff").post("/api/v1/workspaces/", {"name": "ops"}, format="json").status_code == 201


@pytest.mark.parametrize("mode, expected", [("production", "staff"), ("development", "anyone")])
def test_workspace_creators_default_to_staff_in_production_and_anyone_in_development(mode, expected):
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "DOCKYARD_MODE": mode, "SECRET_KEY": "x" * 50, "DOCKYARD_WORKSPACE_CREATORS": "",
           "FIELD_ENCRYPTION_KEYS": "cHJvZHVjdGlvbi10ZXN0LWtleS1wcm9kdWN0aW9uLTAx"}
    code = "import controlplane.settings as s; print(s.DOCKYARD_WORKSPACE_CREATORS)"
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    assert result.stdout.strip() == expected, result.stderr


def test_an_unknown_creators_value_stops_the_server():
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "DOCKYARD_WORKSPACE_CREATORS": "everyone"}
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", "import controlplane.settings"], cwd=root, env=env,
                            capture_output=True, text=True)
    assert result.returncode != 0 and "DOCKYARD_WORKSPACE_CREATORS must be 'staff' or 'anyone'" in result.stderr
