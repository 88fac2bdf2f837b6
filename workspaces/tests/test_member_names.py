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
    assert unknown["details"][0]["message"] == "'nobody' cannot be added: there is no active user by that name."
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
    assert f"&#x27;{username}&#x27; cannot be added: there is no active user by that name." in response.content.decode()
