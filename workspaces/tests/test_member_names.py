"""Adding a member tells nothing about which user names exist beyond what a successful add must."""
import json

import pytest

from tests.support import assert_error
from workspaces.models import AuditEvent, Membership

URL = "/api/v1/workspaces/team-a/members/"


def refusal(api, username: str) -> dict:
    response = api.post(URL, {"user": username, "role": "reader"}, format="json")
    return assert_error(response, 400, "ValidationError", "user")


def test_an_unknown_name_and_a_deactivated_account_get_the_same_answer(owner_api, workspace, make_user):
    gone = make_user("gone")
    gone.is_active = False
    gone.save(update_fields=["is_active"])
    before = (Membership.objects.count(), AuditEvent.objects.count())
    unknown, deactivated = refusal(owner_api, "nobody"), refusal(owner_api, "gone")
    assert json.dumps(unknown).replace("nobody", "NAME") == json.dumps(deactivated).replace("gone", "NAME")
    assert unknown["details"][0]["message"] == ("'nobody' cannot be added: there is no active user by that name; "
                                                "ask a staff user to create the account.")
    assert (Membership.objects.count(), AuditEvent.objects.count()) == before


def test_guessing_names_is_throttled_and_then_even_real_names_get_429(owner_api, workspace, make_user, settings):
    settings.DOCKYARD_MEMBER_ADD_MISSES_PER_HOUR = 3
    make_user("real")
    for guess in ("alice", "bob", "carol"):
        refusal(owner_api, guess)
    for name in ("dave", "real"):  # past the limit a real name answers like a guess: 429, and nobody is added
        response = owner_api.post(URL, {"user": name, "role": "reader"}, format="json")
        assert_error(response, 429, "TooManyRequests")
    assert not Membership.objects.filter(user__username="real").exists()


def test_successful_adds_do_not_count_towards_the_limit(owner_api, workspace, make_user, settings):
    settings.DOCKYARD_MEMBER_ADD_MISSES_PER_HOUR = 1
    for name in ("ann", "ben", "cat"):
        make_user(name)
        assert owner_api.post(URL, {"user": name, "role": "reader"}, format="json").status_code == 201


@pytest.mark.parametrize("username", ["nobody", "gone"])
def test_the_studio_answers_the_same_for_both(client, owner, workspace, make_user, username):
    gone = make_user("gone")
    gone.is_active = False
    gone.save(update_fields=["is_active"])
    client.force_login(owner)
    response = client.post("/w/team-a/members/", {"username": username, "role": "reader"})
    assert response.status_code == 200
    body = response.content.decode()
    assert f"&#x27;{username}&#x27; cannot be added: there is no active user by that name; ask a staff user" in body
    assert "/users/new/" not in body  # owners cannot create accounts: no link that would only answer 403


def test_staff_are_told_which_it_is_and_are_not_throttled(api_as, users, workspace, make_user, settings):
    settings.DOCKYARD_MEMBER_ADD_MISSES_PER_HOUR = 1
    gone = make_user("gone")
    gone.is_active = False
    gone.save(update_fields=["is_active"])
    staff = api_as("staff")
    for _ in range(3):  # past the owners' limit: staff may list every account anyway
        unknown = assert_error(staff.post(URL, {"user": "nobody", "role": "reader"}, format="json"), 400, "ValidationError", "user")
    deactivated = assert_error(staff.post(URL, {"user": "gone", "role": "reader"}, format="json"), 400, "ValidationError", "user")
    assert unknown["details"][0]["message"] == "There is no user named 'nobody': create the account first."
    assert deactivated["details"][0]["message"] == "'gone' is deactivated: activate the account first."


def test_the_studio_gives_staff_a_link_to_create_the_missing_user(client, users, workspace):
    client.force_login(users["staff"])
    response = client.post("/w/team-a/members/", {"username": "alice", "role": "reader"})
    body = response.content.decode()
    assert "There is no user named &#x27;alice&#x27;: create the account first." in body
    assert 'href="/users/new/?username=alice&amp;ws=team-a"' in body
