"""API tokens: shown once, stored as a SHA-256, listed without the secret, revocable, expiring."""
import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from tests.support import assert_error
from workspaces.models import ApiToken, AuditEvent
from workspaces.services import token_create
from workspaces.tests.factories import ApiTokenFactory

URL = "/api/v1/tokens/"


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_create_returns_the_token_once_and_stores_only_its_hash(owner_api, owner):
    response = owner_api.post(URL, {"name": "ci"}, format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    raw = created["token"]
    assert raw.startswith("dy_") and len(raw) > 40
    assert created["prefix"] == raw[:10]
    assert created["name"] == "ci"
    stored = ApiToken.objects.get(pk=created["id"])
    assert stored.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in str(ApiToken.objects.filter(pk=stored.pk).values().get())
    assert bearer(raw).get("/api/v1/workspaces/").status_code == 200


def test_list_never_shows_a_token(owner_api, owner):
    raw = owner_api.post(URL, {"name": "ci"}, format="json").json()["token"]
    response = owner_api.get(URL)
    assert response.status_code == 200
    assert raw not in response.content.decode()
    rows = response.json()["results"]
    assert {row["name"] for row in rows} == {"ci", "test"}
    assert all(set(row) == {"id", "name", "prefix", "created_at", "expires_at", "last_used_at"} for row in rows)


def test_list_shows_only_my_tokens(owner_api, owner, make_user):
    ApiTokenFactory(user=make_user("someone"), name="theirs")
    assert [row["name"] for row in owner_api.get(URL).json()["results"]] == ["test"]


def test_expiry_defaults_to_the_setting_and_can_be_chosen(owner_api, settings):
    settings.API_TOKEN_DEFAULT_DAYS = 30
    before = timezone.now()
    default = ApiToken.objects.get(pk=owner_api.post(URL, {}, format="json").json()["id"])
    chosen = ApiToken.objects.get(pk=owner_api.post(URL, {"expires_in_days": 7}, format="json").json()["id"])
    assert timedelta(days=30) <= default.expires_at - before < timedelta(days=30, minutes=1)
    assert timedelta(days=7) <= chosen.expires_at - before < timedelta(days=7, minutes=1)


@pytest.mark.parametrize(
    "data, target",
    [
        ({"expires_in_days": 0}, "expires_in_days"),
        ({"expires_in_days": 3651}, "expires_in_days"),
        ({"expires_in_days": "soon"}, "expires_in_days"),
        ({"name": "n" * 101}, "name"),
    ],
)
def test_invalid_create_is_refused(owner_api, owner, data, target):
    before = ApiToken.objects.count()
    assert_error(owner_api.post(URL, data, format="json"), 400, "ValidationError", target)
    assert ApiToken.objects.count() == before


def test_revoked_token_is_refused(owner, owner_api):
    token, raw = token_create(user=owner, name="short-lived")
    client = bearer(raw)
    assert client.get(URL).status_code == 200
    assert owner_api.delete(f"{URL}{token.pk}/").status_code == 204
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert_error(client.get(URL), 401, "Unauthorized")
    assert AuditEvent.objects.filter(action="delete", target_type="token", target_name=token.prefix).exists()


def test_a_token_can_revoke_itself(owner):
    token, raw = token_create(user=owner)
    client = bearer(raw)
    assert client.delete(f"{URL}{token.pk}/").status_code == 204
    assert_error(client.get(URL), 401, "Unauthorized")


def test_someone_elses_token_cannot_be_revoked(owner_api, make_user):
    theirs, raw = token_create(user=make_user("someone"))
    assert_error(owner_api.delete(f"{URL}{theirs.pk}/"), 404, "NotFound")
    assert ApiToken.objects.filter(pk=theirs.pk).exists()
    assert bearer(raw).get(URL).status_code == 200


def test_expired_token_is_refused(owner):
    _, raw = token_create(user=owner, expires_at=timezone.now() - timedelta(seconds=1))
    response = bearer(raw).get(URL)
    assert_error(response, 401, "Unauthorized")
    assert response["WWW-Authenticate"] == "Bearer"


def test_token_of_an_inactive_user_is_refused(owner):
    _, raw = token_create(user=owner)
    owner.is_active = False
    owner.save()
    assert_error(bearer(raw).get(URL), 401, "Unauthorized")


@pytest.mark.parametrize(
    "header",
    ["Bearer dy_not-a-real-token", "Bearer", "Bearer two words", "bearer dy_not-a-real-token"],
)
def test_bad_credentials_are_401(db, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert_error(client.get(URL), 401, "Unauthorized")


def test_no_credentials_is_401(db):
    response = APIClient().get(URL)
    assert_error(response, 401, "Unauthorized")
    assert response["WWW-Authenticate"] == "Bearer"


def test_last_used_is_recorded_at_a_minutes_precision(owner):
    token, raw = token_create(user=owner)
    assert token.last_used_at is None
    client = bearer(raw)
    client.get(URL)
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=30)
    client.get(URL)
    token.refresh_from_db()
    assert token.last_used_at == first  # a second use within the minute writes nothing
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now() - timedelta(minutes=5))
    client.get(URL)
    token.refresh_from_db()
    assert timezone.now() - token.last_used_at < timedelta(seconds=30)


def test_creating_a_token_is_audited(owner_api, owner):
    prefix = owner_api.post(URL, {"name": "ci"}, format="json").json()["prefix"]
    event = AuditEvent.objects.get(action="create", target_type="token", target_name=prefix)
    assert event.actor_name == "olivia"


# manage.py create_api_token


def run_command(*args) -> str:
    out, err = StringIO(), StringIO()
    call_command("create_api_token", *args, stdout=out, stderr=err)
    assert err.getvalue() == ""
    return out.getvalue()


def test_command_prints_only_a_working_token(owner):
    raw = run_command("olivia").strip()
    assert raw.startswith("dy_") and " " not in raw and "\n" not in raw
    assert ApiToken.objects.get(key_hash=hashlib.sha256(raw.encode()).hexdigest()).user == owner
    assert bearer(raw).get(URL).status_code == 200


def test_command_creates_a_staff_user(db):
    from django.contrib.auth import get_user_model

    raw = run_command("root", "--create-user", "--staff").strip()
    user = get_user_model().objects.get(username="root")
    assert user.is_staff and user.is_superuser
    response = bearer(raw).get("/api/v1/workspaces/")
    assert response.status_code == 200


def test_command_can_make_an_existing_user_staff(owner):
    raw = run_command("olivia", "--staff").strip()
    owner.refresh_from_db()
    assert owner.is_staff
    assert bearer(raw).get(URL).status_code == 200


def test_command_refuses_an_unknown_user_without_create_user(db):
    with pytest.raises(CommandError, match="no user named 'ghost'"):
        run_command("ghost")
    assert not ApiToken.objects.exists()


def test_command_sets_the_expiry(owner):
    raw = run_command("olivia", "--days", "2", "--name", "deploy").strip()
    token = ApiToken.objects.get(key_hash=hashlib.sha256(raw.encode()).hexdigest())
    assert token.name == "deploy"
    assert timedelta(days=1, hours=23) < token.expires_at - timezone.now() <= timedelta(days=2)
