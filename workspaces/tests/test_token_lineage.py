"""A token minted with another token dies with it: revoked with its parent (transitively), never outliving its expiry."""
from datetime import timedelta

from django.utils import timezone
from rest_framework.test import APIClient

from tests.support import assert_error
from workspaces.models import ApiToken, AuditEvent
from workspaces.services import token_create

URL = "/api/v1/tokens/"


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def mint(raw: str, name: str, **extra) -> dict:
    response = bearer(raw).post(URL, {"name": name, **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_revoking_the_parent_makes_the_child_and_grandchild_answer_401(owner):
    parent, parent_raw = token_create(user=owner, name="laptop")
    child = mint(parent_raw, "ci")
    grandchild = mint(child["token"], "ci-job")
    assert ApiToken.objects.get(pk=child["id"]).parent_id == parent.pk
    assert ApiToken.objects.get(pk=grandchild["id"]).parent_id == child["id"]
    assert bearer(grandchild["token"]).get("/api/v1/workspaces/").status_code == 200

    assert bearer(parent_raw).delete(f"{URL}{parent.pk}/").status_code == 204

    for raw in (parent_raw, child["token"], grandchild["token"]):
        response = bearer(raw).get("/api/v1/workspaces/")
        assert_error(response, 401, "Unauthorized")
    assert not ApiToken.objects.filter(pk__in=[parent.pk, child["id"], grandchild["id"]]).exists()
    revoked = set(AuditEvent.objects.filter(action="delete", target_type="token").values_list("target_name", flat=True))
    assert revoked == {parent.prefix, child["prefix"], grandchild["prefix"]}


def test_revoking_a_child_leaves_the_parent_working(owner):
    parent, parent_raw = token_create(user=owner, name="laptop")
    child = mint(parent_raw, "ci")
    assert bearer(parent_raw).delete(f"{URL}{child['id']}/").status_code == 204
    assert_error(bearer(child["token"]).get("/api/v1/workspaces/"), 401, "Unauthorized")
    assert bearer(parent_raw).get("/api/v1/workspaces/").status_code == 200


def test_a_child_never_outlives_its_parents_expiry(owner):
    soon = timezone.now() + timedelta(days=2)
    _, parent_raw = token_create(user=owner, name="short", expires_at=soon)
    child = mint(parent_raw, "long", expires_in_days=3650)
    assert ApiToken.objects.get(pk=child["id"]).expires_at == soon
    ApiToken.objects.filter(name="short").update(expires_at=timezone.now() - timedelta(seconds=1))
    ApiToken.objects.filter(pk=child["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))  # as time passes
    assert_error(bearer(child["token"]).get("/api/v1/workspaces/"), 401, "Unauthorized")


def test_a_token_made_in_a_browser_session_has_no_parent(client, owner):
    client.force_login(owner)
    response = client.post(URL, {"name": "from the studio"}, content_type="application/json")
    assert response.status_code == 201, response.content
    assert ApiToken.objects.get(pk=response.json()["id"]).parent_id is None
