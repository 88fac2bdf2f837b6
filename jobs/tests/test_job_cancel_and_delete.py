"""Cancelling a job (asks reconcile to stop it; idempotent; refused once ended) and deleting one (marked, hidden)."""
import pytest

from jobs.models import Job, JobEvent
from jobs.tests.support import URL, counts, set_state, submit
from tests.support import assert_error
from workspaces.models import AuditEvent

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would


# cancel


@pytest.mark.parametrize("status", ["NotStarted", "Queued", "Starting", "Running"])
def test_cancel_asks_reconcile_to_stop_the_job(status, owner_api, workspace, django_capture_on_commit_callbacks):
    submit(owner_api, name="stop-me")
    set_state("stop-me", status=status)
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.post(f"{URL}stop-me/cancel/")
    assert response.status_code == 202, response.json()
    assert (response.json()["status"], response.json()["status_reason"]) == ("CancelRequested", "Cancel requested by olivia.")
    job = Job.objects.get(name="stop-me")
    assert (job.status, job.generation) == ("CancelRequested", 2)
    assert len(callbacks) == 1
    assert list(JobEvent.objects.filter(job=job).values_list("reason", flat=True)) == ["NotStarted", "CancelRequested"]
    event = AuditEvent.objects.get(action="action", target_type="job")
    assert (event.verb, event.target_name, event.actor_name) == ("cancel", "stop-me", "olivia")


def test_cancel_without_the_trailing_slash(owner_api, workspace):
    submit(owner_api, name="stop-me")
    assert owner_api.post(f"{URL}stop-me/cancel").status_code == 202


def test_cancel_twice_is_idempotent(owner_api, workspace):
    submit(owner_api, name="stop-me")
    assert owner_api.post(f"{URL}stop-me/cancel/").status_code == 202
    before = counts()
    again = owner_api.post(f"{URL}stop-me/cancel/")
    assert again.status_code == 202 and again.json()["status"] == "CancelRequested"
    assert counts() == before
    assert Job.objects.get(name="stop-me").generation == 2


@pytest.mark.parametrize("status", ["Completed", "Failed", "Canceled"])
def test_cancel_of_an_ended_job_is_refused(status, owner_api, workspace):
    submit(owner_api, name="over")
    set_state("over", status=status)
    before = counts()
    error = assert_error(owner_api.post(f"{URL}over/cancel/"), 400, "JobNotCancelable", "status")
    assert status in error["message"]
    assert counts() == before and Job.objects.get(name="over").status == status


# delete


def test_delete_marks_the_job_and_hides_it_from_the_list(owner_api, workspace, django_capture_on_commit_callbacks):
    submit(owner_api, name="bye")
    submit(owner_api, name="stays")
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.delete(f"{URL}bye/")
    assert response.status_code == 202
    assert (response.json()["name"], response.json()["deleting"]) == ("bye", True)
    assert len(callbacks) == 1
    job = Job.objects.get(name="bye")
    assert (job.deleting, job.generation) == (True, 2)
    listed = owner_api.get(URL).json()
    assert [row["name"] for row in listed["results"]] == ["stays"] and listed["count"] == 1
    event = AuditEvent.objects.get(action="delete", target_type="job")
    assert (event.target_name, event.actor_name) == ("bye", "olivia")


def test_delete_twice_records_one_delete(owner_api, workspace):
    submit(owner_api, name="bye")
    assert owner_api.delete(f"{URL}bye/").status_code == 202
    assert owner_api.delete(f"{URL}bye/").status_code == 202
    assert AuditEvent.objects.filter(action="delete", target_type="job").count() == 1
    assert Job.objects.get(name="bye").generation == 2


def test_delete_with_a_stale_if_match_is_refused(owner_api, workspace):
    submit(owner_api, name="raced")
    stale = owner_api.get(f"{URL}raced/")["ETag"]
    set_state("raced", status="Running")
    assert_error(owner_api.delete(f"{URL}raced/", HTTP_IF_MATCH=stale), 412, "PreconditionFailed")
    assert Job.objects.get(name="raced").deleting is False
