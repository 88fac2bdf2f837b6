"""Tokens, SelfSubjectAccessReviews and 403s."""
import pytest
from kubernetes import client

from tests.fake_kube import RESTRICTED_TOKEN, Rule
from tests.fake_kube.fixtures import api_client
from tests.fake_kube.helpers import job_manifest, status_of


def _review(api, verb, resource, group="", namespace="default"):
    body = {"spec": {"resourceAttributes": {"verb": verb, "resource": resource, "group": group,
                                            "namespace": namespace}}}
    return client.AuthorizationV1Api(api).create_self_subject_access_review(body).status


def test_admin_is_allowed_everything(kube_api):
    status = _review(kube_api, "create", "jobs", "batch")
    assert status.allowed is True


def test_restricted_token_reads_but_may_not_write(fake_kube):
    with api_client(fake_kube, token=RESTRICTED_TOKEN) as api:
        assert _review(api, "list", "jobs", "batch").allowed is True
        assert _review(api, "create", "jobs", "batch").allowed is False
        batch = client.BatchV1Api(api)
        assert batch.list_namespaced_job("default").items == []
        code, body = status_of(batch.create_namespaced_job, "default", job_manifest("x"))
        assert code == 403 and body["reason"] == "Forbidden"
        assert body["message"] == ('jobs.batch is forbidden: User "restricted-user" cannot create resource "jobs" '
                                   'in API group "batch" in the namespace "default"')


def test_custom_token_with_namespace_scoped_rules(fake_kube):
    fake_kube.add_token("team-a-token", "team-a-bot", [Rule(verbs=("*",), groups=("batch",), resources=("jobs",),
                                                            namespaces=("team-a",))])
    with api_client(fake_kube, token="team-a-token") as api:
        assert _review(api, "create", "jobs", "batch", "team-a").allowed is True
        assert _review(api, "create", "jobs", "batch", "default").allowed is False
        assert _review(api, "get", "pods", "", "team-a").allowed is False


def test_forbid_hook_denies_even_the_admin(fake_kube, kube_api):
    fake_kube.forbid(verb="create", resource="jobs", group="batch")
    assert _review(kube_api, "create", "jobs", "batch").allowed is False
    code, body = status_of(client.BatchV1Api(kube_api).create_namespaced_job, "default", job_manifest("x"))
    assert code == 403 and body["details"] == {"group": "batch", "kind": "jobs"}
    fake_kube.allow_all()
    client.BatchV1Api(kube_api).create_namespaced_job("default", job_manifest("x"))


@pytest.mark.parametrize("token", ["", "not-a-token"])
def test_missing_or_wrong_tokens_are_401(fake_kube, token):
    with api_client(fake_kube, token=token or "x") as api:
        if not token:
            api.configuration.api_key = {}
        code, body = status_of(client.CoreV1Api(api).list_namespace)
        assert code == 401 and body["message"] == "Unauthorized"
