"""Workspaces over the API: create, read, change, delete; bad input is refused and changes nothing."""
import pytest

from compute.tests.factories import create_compute
from tests.support import assert_error
from workspaces.models import AuditEvent, Membership, Workspace
from workspaces.tests.factories import MembershipFactory, WorkspaceFactory

URL = "/api/v1/workspaces/"


def counts() -> tuple[int, int, int]:
    return Workspace.objects.count(), Membership.objects.count(), AuditEvent.objects.count()


def test_create_makes_the_creator_its_owner(owner_api, owner):
    response = owner_api.post(URL, {"name": "vision", "display_name": "Vision", "description": "CV team", "tags": {"cost": "42"}}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert {key: body[key] for key in ("name", "display_name", "description", "tags", "role", "created_by")} == {
        "name": "vision", "display_name": "Vision", "description": "CV team", "tags": {"cost": "42"},
        "role": "owner", "created_by": "olivia",
    }
    assert Membership.objects.get(workspace__name="vision").user == owner
    assert Membership.objects.get(workspace__name="vision").role == "owner"
    event = AuditEvent.objects.get(workspace__name="vision")
    assert (event.action, event.target_type, event.target_name, event.actor_name) == ("create", "workspace", "vision", "olivia")


def test_display_name_defaults_to_the_name(owner_api):
    response = owner_api.post(URL, {"name": "nlp"}, format="json")
    assert response.status_code == 201
    assert response.json()["display_name"] == "nlp"


def test_create_from_yaml(owner_api):
    response = owner_api.post(URL, "name: speech\ntags:\n  team: audio\n", content_type="application/yaml")
    assert response.status_code == 201, response.json()
    assert response.json()["tags"] == {"team": "audio"}


@pytest.mark.parametrize(
    "data, target",
    [
        pytest.param({}, "name", id="missing-name"),
        pytest.param({"name": ""}, "name", id="empty-name"),
        pytest.param({"name": "Team-B"}, "name", id="uppercase"),
        pytest.param({"name": "team_b"}, "name", id="underscore"),
        pytest.param({"name": "team.b"}, "name", id="dot"),
        pytest.param({"name": "-team"}, "name", id="leading-hyphen"),
        pytest.param({"name": "team-"}, "name", id="trailing-hyphen"),
        pytest.param({"name": "t" * 64}, "name", id="too-long"),
        pytest.param({"name": "team b"}, "name", id="space"),
        pytest.param({"name": ["team-b"]}, "name", id="not-a-string"),
        pytest.param({"name": "team-b", "tags": ["a"]}, "tags", id="tags-not-a-map"),
        pytest.param({"name": "team-b", "tags": {"cost": 1}}, "tags", id="tag-value-not-a-string"),
        pytest.param({"name": "team-b", "display_name": "x" * 201}, "display_name", id="display-name-too-long"),
        pytest.param(["team-b"], "", id="body-a-list"),
    ],
)
def test_invalid_create_is_refused_and_changes_nothing(owner_api, workspace, data, target):
    before = counts()
    assert_error(owner_api.post(URL, data, format="json"), 400, "ValidationError", target)
    assert counts() == before


def test_invalid_yaml_is_refused(owner_api):
    before = counts()
    assert_error(owner_api.post(URL, "name: [team", content_type="application/yaml"), 400, "ValidationError", "")
    assert counts() == before


@pytest.mark.parametrize("role", ["owner", "outsider"])
def test_a_taken_name_is_a_conflict_even_for_someone_who_cannot_see_it(api_as, role):
    client = api_as(role)
    before = counts()
    error = assert_error(client.post(URL, {"name": "team-a"}, format="json"), 409, "Conflict")
    assert "team-a" in error["message"]
    assert counts() == before


def test_a_name_that_was_a_workspace_is_free_after_delete(owner_api, workspace):
    assert owner_api.delete(URL + "team-a/").status_code == 204
    assert owner_api.post(URL, {"name": "team-a"}, format="json").status_code == 201


def test_list_shows_only_my_workspaces_with_my_role(api_as, workspace, make_user):
    WorkspaceFactory(name="hidden")
    reader = api_as("reader")
    body = reader.get(URL).json()
    assert [(row["name"], row["role"]) for row in body["results"]] == [("team-a", "reader")]
    assert api_as("outsider").get(URL).json() == {"count": 0, "next": None, "previous": None, "results": []}


def test_staff_see_every_workspace_and_the_same_role_as_when_reading_one(api_as, workspace):
    WorkspaceFactory(name="hidden")
    staff = api_as("staff")
    listed = {row["name"]: row["role"] for row in staff.get(URL).json()["results"]}
    assert set(listed) == {"team-a", "hidden"}
    for name, role in listed.items():
        assert staff.get(f"{URL}{name}/").json()["role"] == role == "owner"


def test_retrieve(api_as, workspace):
    response = api_as("contributor").get(URL + "team-a/")
    assert response.status_code == 200
    assert response.json()["display_name"] == "Team A"
    assert response.json()["role"] == "contributor"


def test_patch_changes_display_fields_and_records_what_changed(owner_api, workspace):
    response = owner_api.patch(URL + "team-a/", {"display_name": "Team Alpha", "tags": {"cost": "7"}}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["display_name"] == "Team Alpha"
    workspace.refresh_from_db()
    assert (workspace.display_name, workspace.tags) == ("Team Alpha", {"cost": "7"})
    event = AuditEvent.objects.filter(action="update", target_type="workspace").get()
    assert event.changes == {"display_name": ["Team A", "Team Alpha"], "tags": [{}, {"cost": "7"}]}
    assert event.actor_name == "olivia"


def test_patch_that_changes_nothing_records_nothing(owner_api, workspace):
    events = AuditEvent.objects.count()
    assert owner_api.patch(URL + "team-a/", {"display_name": "Team A"}, format="json").status_code == 200
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(
    "patch, code, target",
    [
        pytest.param({"name": "team-b"}, "ImmutableField", "name", id="rename"),
        pytest.param({"tags": "cost=7"}, "ValidationError", "tags", id="tags-not-a-map"),
        pytest.param({"tags": {"cost": 7}}, "ValidationError", "tags", id="tag-value-not-a-string"),
        pytest.param({"display_name": "x" * 201}, "ValidationError", "display_name", id="display-name-too-long"),
        pytest.param({"description": ["x"]}, "ValidationError", "description", id="description-not-a-string"),
    ],
)
def test_invalid_patch_is_refused_and_changes_nothing(owner_api, workspace, patch, code, target):
    before, events = Workspace.objects.values().get(pk=workspace.pk), AuditEvent.objects.count()
    assert_error(owner_api.patch(URL + "team-a/", patch, format="json"), 400, code, target)
    assert Workspace.objects.values().get(pk=workspace.pk) == before
    assert AuditEvent.objects.count() == events


def test_patch_with_the_same_name_is_fine(owner_api, workspace):
    response = owner_api.patch(URL + "team-a/", {"name": "team-a", "description": "d"}, format="json")
    assert response.status_code == 200, response.json()


def test_delete_removes_the_workspace_and_its_memberships(owner_api, workspace, users):
    assert owner_api.delete(URL + "team-a/").status_code == 204
    assert not Workspace.objects.filter(name="team-a").exists()
    assert not Membership.objects.filter(workspace_id=workspace.pk).exists()
    event = AuditEvent.objects.get(action="delete", target_type="workspace")
    assert (event.target_name, event.actor_name) == ("team-a", "olivia")


def test_delete_of_a_workspace_with_compute_is_a_conflict(owner_api, workspace, owner):
    create_compute(workspace, owner, name="cpu-cluster")
    before = counts()
    error = assert_error(owner_api.delete(URL + "team-a/"), 409, "Conflict")
    assert "compute" in error["message"]
    assert counts() == before


def test_unknown_workspace_is_404(owner_api):
    assert_error(owner_api.get(URL + "nope/"), 404, "NotFound")


def test_membership_in_one_workspace_gives_nothing_in_another(api_as, workspace, owner):
    other = WorkspaceFactory(name="team-b")
    MembershipFactory(workspace=other, user=owner, role="reader")
    reader = api_as("reader")
    for url in (URL + "team-b/", URL + "team-b/members/", URL + "team-b/computes/", URL + "team-b/events/"):
        assert_error(reader.get(url), 404, "NotFound")
