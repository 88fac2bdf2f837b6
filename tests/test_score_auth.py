"""Scoring's authentication (issue 9, item 9): one 401 for every refusal, a throttle on failures, readers may not score.

Before: an unknown endpoint's 401 read differently from a wrong key's (names leaked), failures were never counted
(keys could be guessed at full speed), any member's token scored an aml_token endpoint, and an oversized body got
Django's HTML page.
"""
import pytest
from rest_framework.test import APIClient

from endpoints.services import endpoint_create
from tests.support import assert_error
from workspaces.services import token_create, workspace_create

EP = "/api/v1/workspaces/team-a/online-endpoints"


@pytest.fixture
def keys(owner, workspace):
    """Local key endpoint `adder` (no deployment: a right key gets 404 NoTraffic) and aml_token endpoint `tok`."""
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])
    endpoint_create(user=owner, workspace=workspace, data={"name": "tok", "compute": "local", "auth_mode": "aml_token"})
    return endpoint_create(user=owner, workspace=workspace, data={"name": "adder", "compute": "local"})[1]


@pytest.fixture
def score_rate(settings):
    """Three failed scoring authentications a minute per address."""
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "score_auth": "3/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}


def score(path: str, key: str | None = None, address: str = "10.1.1.1", **headers):
    if key:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    return APIClient().post(f"{EP}/{path}/score", {"numbers": [1]}, format="json", REMOTE_ADDR=address, **headers)


def test_every_refusal_reads_the_same_byte_for_byte(keys, users, make_user, owner):
    bob = make_user("bob")
    workspace_create(user=bob, name="team-b")
    outsider = token_create(user=users["outsider"], name="t")[1]
    refusals = {
        "wrong key": score("adder", "wrong"),
        "no key": score("adder"),
        "unknown endpoint": score("nope", "wrong"),
        "unknown endpoint, a key of another": score("nope", keys["primaryKey"]),
        "aml_token, outsider's token": score("tok", outsider),
        "aml_token, a key": score("tok", keys["primaryKey"]),
        "missing workspace": APIClient().post("/api/v1/workspaces/no-such-team/online-endpoints/adder/score", {}, format="json"),
        "another team's workspace": APIClient().post("/api/v1/workspaces/team-b/online-endpoints/adder/score", {}, format="json"),
    }
    first = refusals["wrong key"]
    assert_error(first, 401, "Unauthorized")
    for what, response in refusals.items():
        assert (response.status_code, response.content) == (401, first.content), what
        assert dict(response.headers) == dict(first.headers), what
    assert b"adder" not in first.content  # nothing that depends on the endpoint asked for


def test_failed_scoring_authentications_are_throttled_per_address(keys, score_rate):
    for _ in range(3):
        assert_error(score("adder", "wrong"), 401, "Unauthorized")
    blocked = score("adder", keys["primaryKey"])  # the right key too: a different answer would confirm a guess
    assert_error(blocked, 429, "TooManyRequests")
    assert 1 <= int(blocked["Retry-After"]) <= 60
    assert_error(score("nope", "wrong"), 429, "TooManyRequests")
    # another address is not blocked, and a client-written X-Forwarded-For does not make one
    assert_error(score("adder", keys["primaryKey"], address="10.2.2.2"), 404, "NoTraffic")
    assert_error(score("adder", keys["primaryKey"], HTTP_X_FORWARDED_FOR="10.3.3.3"), 429, "TooManyRequests")


def test_unknown_endpoints_count_as_failures(keys, score_rate):
    for _ in range(3):
        assert_error(score("nope"), 401, "Unauthorized")
    assert_error(score("adder", keys["primaryKey"]), 429, "TooManyRequests")


def test_successful_authentications_are_not_counted(keys, score_rate):
    for _ in range(5):
        assert_error(score("adder", keys["primaryKey"]), 404, "NoTraffic")
    assert_error(score("adder", "wrong"), 401, "Unauthorized")


@pytest.mark.parametrize("role, status, code", [
    ("reader", 403, "Forbidden"),
    ("contributor", 404, "NoTraffic"),
    ("owner", 404, "NoTraffic"),
    ("staff", 404, "NoTraffic"),
    ("outsider", 401, "Unauthorized"),
])
def test_aml_token_endpoints_are_scored_by_contributors_and_up(role, status, code, keys, users):
    token = token_create(user=users[role], name="score")[1]
    assert_error(score("tok", token), status, code)


def test_an_oversized_score_body_is_413_in_the_error_shape(keys, settings):
    big = b'{"data": "' + b"x" * (settings.DOCKYARD_MAX_SCORE_BYTES + 1) + b'"}'
    for key in (keys["primaryKey"], None):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
        response = APIClient().generic("POST", f"{EP}/adder/score", big, content_type="application/json", **headers)
        assert response["Content-Type"] == "application/json"
        assert_error(response, 413, "PayloadTooLarge")


def test_the_score_limit_is_its_own_setting(keys, settings):
    settings.DOCKYARD_MAX_SCORE_BYTES = 10 * 1024 * 1024
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = settings.DOCKYARD_MAX_SCORE_BYTES
    big = b'{"data": "' + b"x" * (3 * 1024 * 1024) + b'"}'
    headers = {"HTTP_AUTHORIZATION": f"Bearer {keys['primaryKey']}"}
    response = APIClient().generic("POST", f"{EP}/adder/score", big, content_type="application/json", **headers)
    assert_error(response, 404, "NoTraffic")  # past the size check and the key check
    assert_error(APIClient().generic("POST", "/api/v1/tokens/", big, content_type="application/json"), 413, "PayloadTooLarge")
