"""A job's log lines in cursor pages or as one download, and its events, oldest first."""
import pytest

from jobs.models import Job, JobEvent
from jobs.reconcile.status import append_lines
from jobs.tests.support import URL, set_state, submit
from jobs.views import encode_cursor
from tests.support import assert_error

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would


# logs


def lines_of(page: dict) -> list[tuple[int, str, str]]:
    return [(line["seq"], line["source"], line["text"]) for line in page["results"]]


def test_logs_first_page(owner_api, logged):
    response = owner_api.get(f"{URL}logged/logs/")
    assert response.status_code == 200
    page = response.json()
    assert set(page) == {"count", "next", "previous", "status", "complete", "results"}
    assert lines_of(page) == [(0, "rank-0", "epoch 1"), (1, "rank-1", "epoch 1"), (2, "rank-0", "epoch 2"), (3, "", "saved"),
                              (4, "rank-0", "done")]
    assert (page["count"], page["status"], page["complete"], page["next"], page["previous"]) == (5, "Completed", True, None, None)
    assert all(line["time"] for line in page["results"])


def test_logs_pages_follow_the_cursor(owner_api, logged):
    first = owner_api.get(f"{URL}logged/logs/", {"limit": 2}).json()
    assert [seq for seq, _, _ in lines_of(first)] == [0, 1] and first["complete"] is False and first["previous"] is None
    second = owner_api.get(first["next"]).json()
    assert [seq for seq, _, _ in lines_of(second)] == [2, 3] and second["previous"]
    third = owner_api.get(second["next"]).json()
    assert [seq for seq, _, _ in lines_of(third)] == [4]
    assert (third["next"], third["complete"]) == (None, True)
    back = owner_api.get(third["previous"]).json()
    assert [seq for seq, _, _ in lines_of(back)] == [2, 3]


def test_logs_of_a_running_job_always_point_past_the_last_line(owner_api, logged):
    set_state("logged", status="Running")
    page = owner_api.get(f"{URL}logged/logs/").json()
    assert (page["complete"], page["status"]) == (False, "Running")
    assert f"cursor={encode_cursor(5)}" in page["next"]
    assert owner_api.get(page["next"]).json()["results"] == []
    job = Job.objects.get(name="logged")
    append_lines(job, [("rank-0", "epoch 3")])
    assert lines_of(owner_api.get(page["next"]).json()) == [(5, "rank-0", "epoch 3")]


def test_logs_of_a_job_without_output(owner_api, workspace):
    submit(owner_api, name="quiet")
    set_state("quiet", status="Completed")
    page = owner_api.get(f"{URL}quiet/logs").json()
    assert (page["results"], page["count"], page["complete"], page["next"]) == ([], 0, True, None)


@pytest.mark.parametrize("cursor", ["garbage", "!!!", encode_cursor(3).upper(), "cGFnZTox", "bGluZTotMQ", "bGluZTo"])
def test_logs_bad_cursor(cursor, owner_api, logged):
    assert_error(owner_api.get(f"{URL}logged/logs/", {"cursor": cursor}), 400, "InvalidCursor", "cursor")


@pytest.mark.parametrize("limit", ["0", "-1", "abc", "1.5", "5001", "99999999999999999999"])
def test_logs_bad_limit(limit, owner_api, logged):
    assert_error(owner_api.get(f"{URL}logged/logs/", {"limit": limit}), 400, "InvalidLimit", "limit")


def test_logs_download_is_the_whole_text(owner_api, logged):
    response = owner_api.get(f"{URL}logged/logs/", {"download": "true"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="logged.log"'
    assert response.content.decode() == "[rank-0] epoch 1\n[rank-1] epoch 1\n[rank-0] epoch 2\nsaved\n[rank-0] done\n"


# events


def test_events_tell_the_jobs_story(owner_api, workspace):
    submit(owner_api, name="story")
    owner_api.post(f"{URL}story/cancel/")
    response = owner_api.get(f"{URL}story/events/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 2 and body["next"] is None
    assert [set(event) for event in body["results"]] == [{"time", "type", "reason", "message"}] * 2
    assert [(event["type"], event["reason"], event["message"]) for event in body["results"]] == [
        ("Normal", "NotStarted", "Submitted, on the worker's host (local)."),
        ("Normal", "CancelRequested", "Cancel requested by olivia."),
    ]


def test_events_are_oldest_first_across_pages(owner_api, workspace):
    from datetime import timedelta

    submit(owner_api, name="busy")
    job = Job.objects.get(name="busy")
    start = JobEvent.objects.get(job=job).time
    JobEvent.objects.bulk_create([JobEvent(job=job, time=start + timedelta(seconds=index), reason=f"Step{index}") for index in range(1, 5)])
    first = owner_api.get(f"{URL}busy/events/", {"page_size": 3}).json()
    second = owner_api.get(first["next"]).json()
    assert [event["reason"] for event in first["results"] + second["results"]] == ["NotStarted", "Step1", "Step2", "Step3", "Step4"]
    assert first["count"] == second["count"] == 5
