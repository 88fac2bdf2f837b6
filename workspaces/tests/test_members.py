"""Members of a workspace: add, change role, remove; the last owner stays."""
import pytest

from tests.support import assert_error
from workspaces.models import AuditEvent, Membership

URL = "/api/v1/workspaces/team-a/members/"


def roles(workspace) -> dict[str, str]:
    return dict(Membership.objects.filter(workspace=workspace).values_list("user__username", "role"))


def test_the_creator_is_the_only_member_and_owner(owner_api, workspace):
    response = owner_api.get(URL)
    assert response.status_code == 200
    assert [(row["user"], row["role"]) for row in response.json()["results"]] == [("olivia", "owner")]


def test_list_shows_every_member_with_role_and_email(api_as, users, workspace):
    users["reader"].email = "reader@example.com"
    users["reader"].save()
    rows = api_as("reader").get(URL).json()["results"]
    assert {row["user"]: row["role"] for row in rows} == {"olivia": "owner", "reader-user": "reader", "contributor-user": "contributor"}
    assert {row["user"]: row["email"] for row in rows}["reader-user"] == "reader@example.com"


def test_filter_by_role(owner_api, users, workspace):
    rows = owner_api.get(URL, {"role": "contributor"}).json()["results"]
    assert [row["user"] for row in rows] == ["contributor-user"]


def test_add_a_member(owner_api, workspace, make_user):
    make_user("nina")
    response = owner_api.post(URL, {"user": "nina", "role": "contributor"}, format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["user"], response.json()["role"]) == ("nina", "contributor")
    assert roles(workspace)["nina"] == "contributor"
    event = AuditEvent.objects.get(target_type="member", action="create")
    assert (event.target_name, event.changes, event.actor_name) == ("nina", {"role": [None, "contributor"]}, "olivia")


def test_retrieve_a_member(owner_api, users, workspace):
    response = owner_api.get(URL + "reader-user/")
    assert response.status_code == 200
    assert response.json()["role"] == "reader"
    assert_error(owner_api.get(URL + "oscar/"), 404, "NotFound")  # a user, but not a member


@pytest.mark.parametrize(
    "data, target",
    [
        pytest.param({"user": "nobody", "role": "reader"}, "user", id="unknown-user"),
        pytest.param({"user": "inactive", "role": "reader"}, "user", id="inactive-user"),
        pytest.param({"role": "reader"}, "user", id="missing-user"),
        pytest.param({"user": "nina", "role": "admin"}, "role", id="unknown-role"),
        pytest.param({"user": "nina", "role": "Owner"}, "role", id="role-wrong-case"),
        pytest.param({"user": "nina"}, "role", id="missing-role"),
        pytest.param({"user": ["nina"], "role": "reader"}, "user", id="user-not-a-string"),
        pytest.param(["nina", "reader"], "", id="body-a-list"),
    ],
)
def test_invalid_add_is_refused_and_changes_nothing(owner_api, workspace, make_user, data, target):
    make_user("nina")
    inactive = make_user("inactive")
    inactive.is_active = False
    inactive.save()
    before, events = roles(workspace), AuditEvent.objects.count()
    assert_error(owner_api.post(URL, data, format="json"), 400, "ValidationError", target)
    assert roles(workspace) == before
    assert AuditEvent.objects.count() == events


def test_adding_a_member_twice_is_a_conflict(owner_api, users, workspace):
    before, events = roles(workspace), AuditEvent.objects.count()
    error = assert_error(owner_api.post(URL, {"user": "reader-user", "role": "owner"}, format="json"), 409, "Conflict")
    assert "reader-user" in error["message"]
    assert roles(workspace) == before
    assert AuditEvent.objects.count() == events


def test_change_a_role(owner_api, users, workspace):
    response = owner_api.patch(URL + "reader-user/", {"role": "contributor"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["role"] == "contributor"
    assert roles(workspace)["reader-user"] == "contributor"
    event = AuditEvent.objects.get(target_type="member", action="update")
    assert (event.target_name, event.changes) == ("reader-user", {"role": ["reader", "contributor"]})


@pytest.mark.parametrize(
    "patch, target",
    [
        pytest.param({"role": "admin"}, "role", id="unknown-role"),
        pytest.param({}, "role", id="missing-role"),
        pytest.param({"role": None}, "role", id="null-role"),
    ],
)
def test_invalid_role_change_is_refused_and_changes_nothing(owner_api, users, workspace, patch, target):
    before, events = roles(workspace), AuditEvent.objects.count()
    assert_error(owner_api.patch(URL + "reader-user/", patch, format="json"), 400, "ValidationError", target)
    assert roles(workspace) == before
    assert AuditEvent.objects.count() == events


def test_patch_of_a_non_member_is_404(owner_api, users, workspace):
    assert_error(owner_api.patch(URL + "oscar/", {"role": "reader"}, format="json"), 404, "NotFound")
    assert_error(owner_api.patch(URL + "nobody/", {"role": "reader"}, format="json"), 404, "NotFound")


def test_remove_a_member(owner_api, users, workspace):
    assert owner_api.delete(URL + "contributor-user/").status_code == 204
    assert "contributor-user" not in roles(workspace)
    event = AuditEvent.objects.get(target_type="member", action="delete")
    assert (event.target_name, event.changes) == ("contributor-user", {"role": ["contributor", None]})


def test_a_removed_member_loses_access(owner_api, api_as, users, workspace):
    contributor = api_as("contributor")
    assert contributor.get("/api/v1/workspaces/team-a/").status_code == 200
    owner_api.delete(URL + "contributor-user/")
    assert_error(contributor.get("/api/v1/workspaces/team-a/"), 404, "NotFound")


@pytest.mark.parametrize("actor", ["owner", "staff"])
def test_the_last_owner_cannot_be_demoted(api_as, users, workspace, actor):
    client = api_as(actor)
    before, events = roles(workspace), AuditEvent.objects.count()
    response = client.patch(URL + "olivia/", {"role": "contributor"}, format="json")
    assert_error(response, 400, "LastOwner", "role")
    assert roles(workspace) == before
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize("actor", ["owner", "staff"])
def test_the_last_owner_cannot_be_removed(api_as, users, workspace, actor):
    client = api_as(actor)
    before, events = roles(workspace), AuditEvent.objects.count()
    assert_error(client.delete(URL + "olivia/"), 400, "LastOwner")
    assert roles(workspace) == before
    assert AuditEvent.objects.count() == events


def test_an_owner_can_step_down_once_there_is_another_owner(owner_api, users, workspace):
    assert owner_api.patch(URL + "reader-user/", {"role": "owner"}, format="json").status_code == 200
    assert owner_api.patch(URL + "olivia/", {"role": "reader"}, format="json").status_code == 200
    assert roles(workspace)["olivia"] == "reader"
    # and now reader-user is the last owner
    assert_error(owner_api.delete(URL + "reader-user/"), 403, "Forbidden")


def test_an_owner_can_leave_once_there_is_another_owner(owner_api, users, workspace):
    assert owner_api.patch(URL + "contributor-user/", {"role": "owner"}, format="json").status_code == 200
    assert owner_api.delete(URL + "olivia/").status_code == 204
    assert roles(workspace) == {"contributor-user": "owner", "reader-user": "reader"}


def test_keeping_the_owner_role_is_not_a_demotion(owner_api, workspace):
    events = AuditEvent.objects.count()
    assert owner_api.patch(URL + "olivia/", {"role": "owner"}, format="json").status_code == 200
    assert AuditEvent.objects.count() == events  # nothing changed, nothing recorded
