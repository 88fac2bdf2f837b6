"""Studio: staff create a user and get a one-time link; the link's page sets the first password, once."""
import re

import pytest
from django.contrib.auth import get_user_model

from workspaces.models import Invitation

PASSWORD = "a-long-and-unusual-passphrase-42"


@pytest.fixture
def staff_client(client, make_user):
    client.force_login(make_user("sam", staff=True))
    return client


def created_link(response) -> str:
    return re.search(r'id="invitation-link" value="http://testserver(/invitation/[^"]+/)"', response.content.decode()).group(1)


def test_only_staff_reach_the_new_user_page(client, owner, workspace):
    client.force_login(owner)
    assert client.get("/users/new/").status_code == 403
    assert client.post("/users/new/", {"username": "alice"}).status_code == 403
    assert not get_user_model().objects.filter(username="alice").exists()
    assert "/users/new/" not in client.get("/w/team-a/members/").content.decode()  # no link that would only 403


def test_staff_create_a_user_and_see_the_link_once(staff_client):
    page = staff_client.get("/users/new/?username=alice&ws=team-a")
    assert 'value="alice"' in page.content.decode()  # prefilled from the members page's link

    response = staff_client.post("/users/new/?ws=team-a", {"username": "alice", "email": "alice@example.com"})

    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    link = created_link(response)
    assert Invitation.objects.get(user__username="alice").key_hash not in link
    assert 'href="/w/team-a/members/?username=alice"' in response.content.decode()
    assert "invitation-link" not in staff_client.get("/users/new/").content.decode()


def test_bad_fields_show_at_their_input(staff_client, owner):
    response = staff_client.post("/users/new/", {"username": "olivia", "email": "nope"})
    body = response.content.decode()
    assert re.search(r'is-invalid" id="id_email".*?invalid-feedback">[^<]*is not an e-mail address', body, re.S)
    assert get_user_model().objects.count() == 2


def test_the_link_sets_the_password_once_then_says_it_is_spent(staff_client, client):
    link = created_link(staff_client.post("/users/new/", {"username": "alice"}))
    staff_client.logout()

    page = client.get(link)
    assert page.status_code == 200 and "alice" in page.content.decode()
    assert (page["Referrer-Policy"], "no-store" in page["Cache-Control"]) == ("same-origin", True)
    differ = client.post(link, {"password": PASSWORD, "password_again": PASSWORD + "x"})
    assert "The two passwords differ." in differ.content.decode()
    weak = client.post(link, {"password": "alice", "password_again": "alice"})
    assert re.search(r'is-invalid" id="id_password".*?invalid-feedback">', weak.content.decode(), re.S)

    done = client.post(link, {"password": PASSWORD, "password_again": PASSWORD})

    assert (done.status_code, done["Location"]) == (302, "/login/?username=alice")
    assert get_user_model().objects.get(username="alice").check_password(PASSWORD)
    spent = client.get(link)
    assert spent.status_code == 404 and "cannot be used" in spent.content.decode()
    assert client.post(link, {"password": "x-other-long-pass-77", "password_again": "x-other-long-pass-77"}).status_code == 404
    assert client.get("/invitation/made-up-token/").status_code == 404
