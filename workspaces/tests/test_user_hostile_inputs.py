"""Hostile bodies against POST users/ (staff only): each answers 4xx in the error shape and creates no account or link.

tests/test_hostile_inputs.py walks the create routes an owner may call; this route is staff's, so it has its own walk.
"""
import json

import pytest
from django.contrib.auth import get_user_model

from conftest import client_for
from tests.support import assert_error
from tests.test_hostile_inputs import alias_bomb, post_raw
from workspaces.models import AuditEvent, Invitation

URL = "/api/v1/users/"


@pytest.fixture
def staff_api(make_user):
    return client_for(make_user("sam", staff=True))


def counts() -> tuple:
    return get_user_model().objects.count(), Invitation.objects.count(), AuditEvent.objects.count()


def test_the_valid_body_is_accepted(staff_api):
    assert staff_api.post(URL, {"username": "alice"}, format="json").status_code == 201


@pytest.mark.parametrize("raw, content_type, status, code", [
    (alias_bomb({"username": "alice"}), "application/yaml", 400, "ValidationError"),
    ("username: alice\nemail: &x a@example.com\n", "application/yaml", 400, "ValidationError"),
    (json.dumps({"username": "alice", "email": "e" * 3_000_000}), "application/json", 413, "PayloadTooLarge"),
    ('{"username": "alice", "email": ' + "[" * 10000 + "]" * 10000 + "}", "application/json", 400, "ValidationError"),
    ('{"username": "a\\u0000b"}', "application/json", 400, "InvalidBody"),
    ('{"username": "\\ud800"}', "application/json", 400, "InvalidBody"),
    ('{"username": "alice", "x": "' + "s" * (256 * 1024 + 1) + '"}', "application/json", 400, "InvalidBody"),
], ids=["alias-bomb", "one-anchor", "3-mb", "deep", "nul", "lone-surrogate", "huge-string"])
def test_hostile_bodies_are_refused_and_write_nothing(staff_api, raw, content_type, status, code):
    before = counts()
    assert_error(post_raw(staff_api, URL, raw, content_type), status, code)
    assert counts() == before


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a/../../b", "..", ".", "x" * 151, "has space"])
def test_names_that_are_paths_or_no_user_name_are_400_at_username(staff_api, name):
    before = counts()
    assert_error(staff_api.post(URL, {"username": name}, format="json"), 400, "ValidationError", target="username")
    assert counts() == before
