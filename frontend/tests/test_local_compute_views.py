"""The studio shows whether local compute is on for a workspace; staff alone get the switch; creating workspaces
follows DOCKYARD_WORKSPACE_CREATORS."""
import pytest

from workspaces.models import AuditEvent, Workspace

MEMBERS = "/w/team-a/members/"
SWITCH = "/w/team-a/local-compute/"


@pytest.fixture
def client_as(client, users):
    def log_in(role):
        client.force_login(users[role])
        return client

    return log_in


def test_members_see_that_local_compute_is_off_and_have_no_switch(client_as, workspace):
    page = client_as("owner").get(MEMBERS).content.decode()
    assert 'id="local-compute"' in page and "only a staff user can enable local compute" in page
    assert SWITCH not in page


def test_staff_switch_it_on_with_network_and_it_is_audited(client_as, workspace):
    staff = client_as("staff")
    assert SWITCH in staff.get(MEMBERS).content.decode()
    response = staff.post(SWITCH, {"enabled": "on", "network": "on"})
    assert response.status_code == 302
    workspace.refresh_from_db()
    assert (workspace.local_compute_enabled, workspace.local_network_enabled) == (True, True)
    assert AuditEvent.objects.filter(workspace=workspace, verb="local-compute", actor_name="sam").count() == 1
    assert "with network access" in staff.get(MEMBERS).content.decode()
    staff.post(SWITCH, {})
    workspace.refresh_from_db()
    assert (workspace.local_compute_enabled, workspace.local_network_enabled) == (False, False)


@pytest.mark.parametrize("role", ["owner", "contributor", "reader"])
def test_members_cannot_post_the_switch(client_as, workspace, role):
    assert client_as(role).post(SWITCH, {"enabled": "on"}).status_code == 403
    workspace.refresh_from_db()
    assert workspace.local_compute_enabled is False


def test_outsiders_get_404_for_the_switch(client_as, workspace):
    assert client_as("outsider").post(SWITCH, {"enabled": "on"}).status_code == 404


def test_the_job_form_offers_local_only_where_it_is_enabled(client_as, workspace):
    owner = client_as("owner")
    assert 'value="local"' not in owner.get("/w/team-a/jobs/new/form/").content.decode()
    Workspace.objects.filter(pk=workspace.pk).update(local_compute_enabled=True)
    assert 'value="local"' in owner.get("/w/team-a/jobs/new/form/").content.decode()


def test_home_hides_the_create_form_when_only_staff_create(client_as, settings, workspace):
    settings.DOCKYARD_WORKSPACE_CREATORS = "staff"
    owner = client_as("owner")
    assert "Create workspace" not in owner.get("/").content.decode()
    assert owner.post("/", {"name": "mine"}).status_code == 403
    assert not Workspace.objects.filter(name="mine").exists()
    assert "Create workspace" in client_as("staff").get("/").content.decode()
