"""Rules added after review: status filter values, compute filter by name as written, cursor errors, image and count limits."""
import pytest

from compute.tests.factories import create_compute
from jobs.models import Job
from tests.support import assert_error

BASE = "/api/v1/workspaces/team-a/jobs"


@pytest.fixture
def api(owner_api, workspace, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = True
    return owner_api


def test_an_unknown_status_filter_is_a_400(api):
    assert_error(api.get(f"{BASE}/?status=Running,Sleeping"), 400, "ValidationError", target="status")
    assert api.get(f"{BASE}/?status=Running,Queued").status_code == 200


def test_a_bad_cursor_on_the_job_list_is_a_400_naming_the_cursor(api):
    assert_error(api.get(f"{BASE}/?cursor=not-one-of-ours"), 400, "InvalidCursor", target="cursor")


def test_the_compute_filter_finds_jobs_by_the_name_written_after_the_compute_is_gone(api, workspace, owner):
    compute = create_compute(workspace, owner, "kubernetes", name="k8s")
    Job.objects.create(workspace=workspace, name="old", spec={"command": "x"}, compute_name="k8s", target="kubernetes", compute=compute)
    Job.objects.filter(name="old").update(compute=None, status="Completed")
    names = [row["name"] for row in api.get(f"{BASE}/?compute=azureml:k8s").json()["results"]]
    assert names == ["old"]


@pytest.mark.parametrize("body, target", [
    ({"command": "x", "environment": {"image": "python 3.11"}}, "environment.image"),
    ({"command": "x", "environment": {"image": "python:3.11"}, "resources": {"instance_count": 100_001}}, "resources.instance_count"),
])
def test_limits_a_real_api_server_would_refuse_are_400s(api, body, target):
    assert_error(api.post(f"{BASE}/", body, format="json"), 400, "InvalidJob", target=target)
    assert not Job.objects.exists()


def test_the_unknown_compute_hint_leaves_local_out_when_it_is_off(api, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = False
    response = api.post(f"{BASE}/", {"command": "x", "compute": "nope", "environment": {"image": "python:3.11"}}, format="json")
    assert_error(response, 400, "InvalidJob", target="compute")
    assert "local" not in response.json()["error"]["message"]


def test_a_followed_log_of_a_deleted_job_ends(api, workspace):
    job = Job.objects.create(workspace=workspace, name="gone", spec={"command": "x"}, target="local", status="Running")
    response = api.get(f"{BASE}/gone/logs?follow=true")
    Job.objects.filter(pk=job.pk).delete()
    text = b"".join(response.streaming_content).decode()
    assert "event: end" in text and '"Deleted"' in text
