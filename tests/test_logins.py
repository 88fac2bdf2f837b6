"""Sign-ins and API authentication under attack: lockout per address and per user, throttled bad tokens, validators."""
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.management.commands import changepassword
from django.contrib.auth.password_validation import validate_password
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from conftest import client_for
from tests.support import assert_error

PASSWORD = "correct-horse-battery"
LOCKED = "sign-in is locked for 15 minutes"


def sign_in(address: str, username: str, password: str, url: str = "/login/"):
    client = Client(REMOTE_ADDR=address)
    response = client.post(url, {"username": username, "password": password})
    return response, client


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_300_wrong_passwords_then_the_right_one_is_refused(owner):
    statuses = [sign_in("198.51.100.1", "olivia", f"guess-{n}")[0].status_code for n in range(300)]
    assert statuses[:4] == [200] * 4  # the form again, "Please enter a correct user name and password"
    assert set(statuses[4:]) == {429}

    response, client = sign_in("198.51.100.1", "olivia", PASSWORD)
    assert response.status_code == 429 and not signed_in(client)
    page = response.content.decode()
    assert LOCKED in page and 'id="locked-out"' in page and 'name="password"' in page


def test_lockout_counts_per_address_and_per_user_name_separately(owner, make_user):
    make_user("peter")
    for n in range(5):
        sign_in("198.51.100.2", "olivia", f"guess-{n}")
    # The same user from an address that never failed: the user name is locked.
    response, client = sign_in("198.51.100.3", "olivia", PASSWORD)
    assert response.status_code == 429 and not signed_in(client)
    # Another user from the failing address: the address is locked.
    response, client = sign_in("198.51.100.2", "peter", PASSWORD)
    assert response.status_code == 429 and not signed_in(client)
    # Another user from another address is not affected.
    response, client = sign_in("198.51.100.4", "peter", PASSWORD)
    assert response.status_code == 302 and signed_in(client)


def test_the_lockout_ends_after_the_cool_off(owner):
    from axes.models import AccessAttempt

    for n in range(5):
        sign_in("198.51.100.5", "olivia", f"guess-{n}")
    assert sign_in("198.51.100.5", "olivia", PASSWORD)[0].status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    response, client = sign_in("198.51.100.5", "olivia", PASSWORD)
    assert response.status_code == 302 and signed_in(client)


def test_a_good_sign_in_forgets_earlier_typos(owner):
    for n in range(4):
        sign_in("198.51.100.6", "olivia", f"typo-{n}")
    assert sign_in("198.51.100.6", "olivia", PASSWORD)[0].status_code == 302
    for n in range(4):
        assert sign_in("198.51.100.6", "olivia", f"typo-again-{n}")[0].status_code == 200
    assert signed_in(sign_in("198.51.100.6", "olivia", PASSWORD)[1])


def test_the_admin_sign_in_is_locked_out_too(make_user):
    make_user("sam", staff=True)
    for n in range(5):
        sign_in("198.51.100.7", "sam", f"guess-{n}", url="/admin/login/")
    response, client = sign_in("198.51.100.7", "sam", PASSWORD, url="/admin/login/")
    assert response.status_code == 429 and LOCKED in response.content.decode() and not signed_in(client)


def test_the_limit_and_cool_off_are_settings(owner, settings):
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = timedelta(minutes=30)
    assert sign_in("198.51.100.8", "olivia", "guess-1")[0].status_code == 200
    response = sign_in("198.51.100.8", "olivia", "guess-2")[0]
    assert response.status_code == 429 and "sign-in is locked for 30 minutes" in response.content.decode()


# password validators


@pytest.mark.parametrize("password, why", [
    ("short-pw", "too short"),
    ("123456789012", "entirely numeric"),
    ("1qaz2wsx3edc", "too common"),
    ("olivia.newton.example", "too similar"),
])
def test_weak_passwords_are_refused(owner, password, why):
    owner.email = "olivia.newton@example.com"
    with pytest.raises(ValidationError) as refused:
        validate_password(password, owner)
    assert why in " ".join(refused.value.messages)


def test_the_fixtures_password_passes(owner):
    validate_password(PASSWORD, owner)


def test_changepassword_applies_the_validators_then_the_new_password_signs_in(owner, monkeypatch):
    offered = iter(["short"] * 6)  # asked twice each time, three times
    monkeypatch.setattr(changepassword.Command, "_get_pass", lambda self, prompt="": next(offered))
    with pytest.raises(CommandError, match="Aborting password change"):
        call_command("changepassword", "olivia")
    new = "a much longer passphrase"
    offered = iter([new, new])
    call_command("changepassword", "olivia")
    assert get_user_model().objects.get(username="olivia").check_password(new)
    assert sign_in("198.51.100.9", "olivia", new)[0].status_code == 302


# API tokens


@pytest.fixture
def clean_failure_counts():
    yield
    cache.clear()  # the counts live in the shared cache (Redis in the tests), keyed by address


def test_300_bad_tokens_get_429_and_a_good_token_from_elsewhere_still_works(owner, clean_failure_counts):
    attacker = APIClient(REMOTE_ADDR="203.0.113.9")
    statuses = []
    for n in range(300):
        attacker.credentials(HTTP_AUTHORIZATION=f"Bearer dy_guess-{n}")
        statuses.append(attacker.get("/api/v1/workspaces/").status_code)
    assert statuses[:30] == [401] * 30 and set(statuses[30:]) == {429}
    response = attacker.get("/api/v1/workspaces/")
    error = assert_error(response, 429, "TooManyRequests")
    assert 0 < int(response["Retry-After"]) <= 60 and "retry in" in error["message"]

    good = client_for(owner)
    good.defaults["REMOTE_ADDR"] = "203.0.113.10"
    assert good.get("/api/v1/workspaces/").status_code == 200
    # From the blocked address even a good token waits: otherwise its answer would tell a hit from a miss.
    good.defaults["REMOTE_ADDR"] = "203.0.113.9"
    assert_error(good.get("/api/v1/workspaces/"), 429, "TooManyRequests")


def test_malformed_bearer_headers_count_as_failures(db, settings, clean_failure_counts):
    settings.DOCKYARD_THROTTLE_FAILED_AUTH = "2/min"
    client = APIClient(REMOTE_ADDR="203.0.113.11")
    for header in ("Bearer", "Bearer two words"):
        client.credentials(HTTP_AUTHORIZATION=header)
        assert_error(client.get("/api/v1/workspaces/"), 401, "Unauthorized")
    client.credentials(HTTP_AUTHORIZATION="Bearer dy_guess")
    assert_error(client.get("/api/v1/workspaces/"), 429, "TooManyRequests")


def test_requests_without_a_token_are_not_counted_as_failures(owner, settings, clean_failure_counts):
    settings.DOCKYARD_THROTTLE_FAILED_AUTH = "2/min"
    anonymous = APIClient(REMOTE_ADDR="203.0.113.12")
    for _ in range(5):
        assert_error(anonymous.get("/api/v1/workspaces/"), 401, "Unauthorized")
    good = client_for(owner)
    good.defaults["REMOTE_ADDR"] = "203.0.113.12"
    assert good.get("/api/v1/workspaces/").status_code == 200


def test_the_lockout_holds_under_asgi_too(owner):
    """bin/run and the image serve ASGI: axes' middleware then takes its async path."""
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    client = AsyncClient(REMOTE_ADDR="198.51.100.10")
    post = async_to_sync(client.post)
    statuses = [post("/login/", {"username": "olivia", "password": f"guess-{n}"}).status_code for n in range(6)]
    assert statuses == [200] * 4 + [429] * 2
    response = post("/login/", {"username": "olivia", "password": PASSWORD})
    assert response.status_code == 429 and LOCKED in response.content.decode()
    assert "sessionid" not in response.cookies
