"""Staff create users; a new user sets the first password through a one-time, expiring link whose token is stored hashed."""
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.exceptions import PermissionDenied, ValidationError

from controlplane.api import Conflict
from tests.support import assert_error
from workspaces.authentication import hash_token
from workspaces.models import AuditEvent, Invitation
from workspaces.services import INVITATION_GONE, invitation_accept, user_create

URL = "/api/v1/users/"
GOOD_PASSWORD = "a-long-and-unusual-passphrase-42"


@pytest.fixture
def staff(make_user):
    return make_user("sam", staff=True)


def test_staff_create_a_user_without_a_password_and_get_a_link_token_once(staff):
    user, invitation, raw = user_create(actor=staff, username="alice", email="alice@example.com")

    assert (user.username, user.email, user.has_usable_password(), user.is_staff) == ("alice", "alice@example.com", False, False)
    assert invitation.key_hash == hash_token(raw) and raw not in invitation.key_hash  # only the hash is kept
    assert len(raw) >= 40
    assert timezone.now() + timedelta(hours=71) < invitation.expires_at <= timezone.now() + timedelta(hours=72)
    event = AuditEvent.objects.get(target_type="user")
    assert (event.actor_name, event.action, event.target_name) == ("sam", "create", "alice")
    assert raw not in str(event.changes)


def test_only_staff_create_users(owner):
    with pytest.raises(PermissionDenied):
        user_create(actor=owner, username="alice")
    assert not get_user_model().objects.filter(username="alice").exists()


@pytest.mark.parametrize("username, email, target", [
    ("", "", "username"), ("   ", "", "username"), ("has space", "", "username"), ("x" * 151, "", "username"),
    ("alice", "not-an-address", "email"),
])
def test_bad_fields_are_refused_at_their_field_and_nothing_is_written(staff, username, email, target):
    with pytest.raises(ValidationError) as refused:
        user_create(actor=staff, username=username, email=email)
    assert list(refused.value.detail) == [target]
    assert not get_user_model().objects.exclude(pk=staff.pk).exists() and not Invitation.objects.exists()


def test_a_taken_name_in_any_letter_case_is_a_conflict(staff, make_user):
    make_user("Alice")
    with pytest.raises(Conflict):
        user_create(actor=staff, username="alice")


def test_the_link_sets_the_password_once(staff):
    user, _, raw = user_create(actor=staff, username="alice")
    other_user, _, other_raw = user_create(actor=staff, username="bob")

    invitation_accept(raw=raw, password=GOOD_PASSWORD)

    user.refresh_from_db()
    assert user.check_password(GOOD_PASSWORD)
    with pytest.raises(ValidationError) as again:
        invitation_accept(raw=raw, password="another-long-passphrase-99")
    assert again.value.detail == {"token": [INVITATION_GONE]}
    user.refresh_from_db()
    assert user.check_password(GOOD_PASSWORD)  # unchanged by the second try
    other_user.refresh_from_db()
    assert not other_user.has_usable_password()  # one link, one account
    assert AuditEvent.objects.filter(target_name="alice", verb="set password").count() == 1


def test_an_expired_a_wrong_or_a_deactivated_users_link_sets_nothing(staff):
    expired_user, expired, expired_raw = user_create(actor=staff, username="late")
    Invitation.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    off_user, _, off_raw = user_create(actor=staff, username="off")
    get_user_model().objects.filter(pk=off_user.pk).update(is_active=False)

    for raw in (expired_raw, "not-a-token", off_raw):
        with pytest.raises(ValidationError):
            invitation_accept(raw=raw, password=GOOD_PASSWORD)
    for user in (expired_user, off_user):
        user.refresh_from_db()
        assert not user.has_usable_password()


def test_a_weak_password_is_refused_and_the_link_still_works(staff):
    user, _, raw = user_create(actor=staff, username="alice")
    with pytest.raises(ValidationError) as weak:
        invitation_accept(raw=raw, password="alice")
    assert list(weak.value.detail) == ["password"]
    invitation_accept(raw=raw, password=GOOD_PASSWORD)
    user.refresh_from_db()
    assert user.check_password(GOOD_PASSWORD)


# REST: POST /api/v1/users/ (staff)


def test_the_api_creates_a_user_and_answers_with_the_link_once(api_as, users):
    response = api_as("staff").post(URL, {"username": "alice", "email": "alice@example.com"}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"username", "email", "invitation_url", "invitation_expires_at"}
    assert (body["username"], body["email"]) == ("alice", "alice@example.com")
    assert body["invitation_url"].startswith("http://testserver/invitation/")
    raw = body["invitation_url"].rstrip("/").rsplit("/", 1)[1]
    assert Invitation.objects.get(user__username="alice").key_hash == hash_token(raw)


def test_the_api_refuses_bad_input_naming_the_field_and_a_taken_name(api_as, users):
    staff = api_as("staff")
    assert_error(staff.post(URL, {"username": "alice", "email": "nope"}, format="json"), 400, "ValidationError", "email")
    assert_error(staff.post(URL, {"email": "a@example.com"}, format="json"), 400, "ValidationError", "username")
    assert_error(staff.post(URL, {"username": "olivia"}, format="json"), 409, "Conflict")
    assert not get_user_model().objects.filter(username="alice").exists()


def test_the_api_refuses_non_staff_before_reading_the_body(api_as, users):
    for role in ("owner", "reader", "outsider"):
        refused = assert_error(api_as(role).post(URL, {"email": "not an address"}, format="json"), 403, "Forbidden")
        assert refused["message"] == "Only staff can create users."
    assert_error(api_as("anonymous").post(URL, {"username": "alice"}, format="json"), 401, "Unauthorized")
