"""Seeded fault injection and the request log."""
import json

import pytest
import urllib3
from kubernetes import client

from tests.fake_kube.fixtures import api_client
from tests.fake_kube.helpers import job_manifest


def _outcomes(kube, calls=40):
    results = []
    with api_client(kube) as api:
        core = client.CoreV1Api(api)
        for _ in range(calls):
            try:
                core.list_namespaced_config_map("default")
                results.append(200)
            except client.ApiException as error:
                results.append(error.status)
    return results


def test_fault_rate_is_reproducible_for_a_seed(make_fake_kube):
    runs = []
    for _ in range(2):
        kube = make_fake_kube(seed=7)
        kube.faults.add(0.3, kinds=("500", "503", "429"), verb="list", resource="configmaps")
        runs.append(_outcomes(kube))
    assert runs[0] == runs[1]
    failures = [code for code in runs[0] if code != 200]
    assert 0.1 <= len(failures) / len(runs[0]) <= 0.5 and set(failures) <= {500, 503, 429}
    other = make_fake_kube(seed=8)
    other.faults.add(0.3, kinds=("500", "503", "429"), verb="list", resource="configmaps")
    assert _outcomes(other) != runs[0]


def test_429_carries_retry_after(fake_kube, kube_api):
    fake_kube.faults.once("429", verb="create", retry_after=3)
    with pytest.raises(client.ApiException) as caught:
        client.BatchV1Api(kube_api).create_namespaced_job("default", job_manifest("x"))
    error = caught.value
    assert error.status == 429 and error.headers["Retry-After"] == "3"
    body = json.loads(error.body)
    assert body["reason"] == "TooManyRequests" and body["details"] == {"retryAfterSeconds": 3}
    record = fake_kube.requests.find(verb="create", resource="jobs")[0]
    assert (record.status, record.fault, record.retry_after) == (429, "429", 3)
    assert fake_kube.get("jobs", "x", "default", group="batch") is None  # nothing was created


def test_timeout_hangs_longer_than_the_client_waits(fake_kube, kube_api):
    fake_kube.faults.once("timeout", verb="get", hang=1.0)
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        client.CoreV1Api(kube_api).read_namespace("default", _request_timeout=0.2)
    record = fake_kube.requests.find(verb="get", resource="namespaces")[0]
    assert record.fault == "timeout" and record.status is None


@pytest.mark.parametrize("kind", ["reset", "drop"])
def test_dropped_connections(fake_kube, kube_api, kind):
    fake_kube.faults.once(kind, verb="get")
    with pytest.raises(urllib3.exceptions.ProtocolError):
        client.CoreV1Api(kube_api).read_namespace("default")
    assert client.CoreV1Api(kube_api).read_namespace("default").metadata.name == "default"


def test_fault_after_the_write_committed_makes_a_retry_see_already_exists(fake_kube, kube_api):
    fake_kube.faults.once("500", verb="create", after=True)
    batch = client.BatchV1Api(kube_api)
    with pytest.raises(client.ApiException) as caught:
        batch.create_namespaced_job("default", job_manifest("once"))
    assert caught.value.status == 500
    with pytest.raises(client.ApiException) as again:
        batch.create_namespaced_job("default", job_manifest("once"))
    assert again.value.status == 409
    assert len(fake_kube.list("jobs", "default", group="batch")) == 1


def test_default_urllib3_retries_resend_idempotent_requests_silently(fake_kube):
    """Why fixtures turn retries off, and why Dockyard's kube client must configure them deliberately."""
    fake_kube.faults.once("503", verb="get", retry_after=0)
    fake_kube.faults.once("reset", verb="get")
    with api_client(fake_kube, retries=True) as api:
        client.CoreV1Api(api).read_namespace("default")
    gets = fake_kube.requests.find(verb="get", resource="namespaces")
    assert [r.fault for r in gets] == ["503", "reset", None]


def test_the_request_log_supports_no_duplicates_and_read_only_assertions(fake_kube, kube_api):
    fake_kube.requests.clear()
    client.BatchV1Api(kube_api).list_namespaced_job("default", label_selector="app.kubernetes.io/managed-by=dockyard")
    client.CoreV1Api(kube_api).list_namespaced_pod("default")
    lists = fake_kube.requests.find(verb="list")
    assert [(r.group, r.resource) for r in lists] == [("batch", "jobs"), ("", "pods")]
    assert lists[0].query == {"labelSelector": "app.kubernetes.io/managed-by=dockyard"}
    assert fake_kube.requests.writes() == []
    client.CoreV1Api(kube_api).create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    write = fake_kube.requests.writes()[0]
    assert (write.method, write.path, write.status, write.user) == (
        "POST", "/api/v1/namespaces/default/configmaps", 201, "fake-kube-admin")
    assert write.body == {"metadata": {"name": "c"}} and write.content_type == "application/json"
    assert write.time > 0 and write.monotonic > lists[-1].monotonic
