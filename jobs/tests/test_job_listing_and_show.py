"""Listing jobs (newest first, cursor pages, filters by status, compute and experiment) and showing one (ETag, times)."""
import pytest

from jobs.tests.support import IMAGE, URL, set_state, submit
from tests.support import assert_error
from workspaces.services import workspace_create

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would


# list


def test_list_is_newest_first_in_a_cursor_envelope(owner_api, workspace):
    names = [submit(owner_api, name=f"job-{index}")["name"] for index in range(5)]
    response = owner_api.get(URL, {"page_size": 2})
    assert response.status_code == 200
    first = response.json()
    assert set(first) == {"count", "next", "previous", "results"}
    assert (first["count"], first["previous"]) == (5, None)
    assert [row["name"] for row in first["results"]] == ["job-4", "job-3"]
    assert "cursor=" in first["next"]
    second = owner_api.get(first["next"]).json()
    assert [row["name"] for row in second["results"]] == ["job-2", "job-1"]
    assert second["previous"] and second["count"] == 5
    third = owner_api.get(second["next"]).json()
    assert [row["name"] for row in third["results"]] == ["job-0"] and third["next"] is None
    assert sorted(names) == sorted(row["name"] for page in (first, second, third) for row in page["results"])


def test_a_new_job_does_not_shift_the_pages_already_handed_out(owner_api, workspace):
    for index in range(4):
        submit(owner_api, name=f"job-{index}")
    first = owner_api.get(URL, {"page_size": 2}).json()
    submit(owner_api, name="job-new")
    second = owner_api.get(first["next"]).json()
    assert [row["name"] for row in second["results"]] == ["job-1", "job-0"]


def test_list_rows_are_the_single_job_without_its_manifests(owner_api, workspace, k8s):
    submit(owner_api, name="local-one")
    submit(owner_api, name="k8s-one", compute="azureml:k8s", environment={"image": IMAGE})
    rows = {row["name"]: row for row in owner_api.get(URL).json()["results"]}
    for name in ("local-one", "k8s-one"):
        single = owner_api.get(f"{URL}{name}/").json()
        assert "manifests" in single and "manifests" not in rows[name]
        assert rows[name] == {key: value for key, value in single.items() if key != "manifests"}


def test_list_shows_only_this_workspaces_jobs(owner_api, workspace, owner):
    workspace_create(user=owner, name="team-b")
    owner_api.post("/api/v1/workspaces/team-b/jobs/", {"name": "elsewhere", "command": "x", "compute": "local"}, format="json")
    submit(owner_api, name="here")
    assert [row["name"] for row in owner_api.get(URL).json()["results"]] == ["here"]


@pytest.fixture
def fleet(owner_api, k8s):
    """Jobs on every kind of target in several states and experiments."""
    submit(owner_api, name="local-done", experiment_name="cifar")
    submit(owner_api, name="local-failed")
    submit(owner_api, name="k8s-running", compute="azureml:k8s", environment={"image": IMAGE}, experiment_name="cifar")
    submit(owner_api, name="k8s-queued", compute="k8s", environment={"image": IMAGE})
    submit(owner_api, name="serverless-new", compute=None, environment={"image": IMAGE}, experiment_name="mnist")
    set_state("local-done", status="Completed")
    set_state("local-failed", status="Failed")
    set_state("k8s-running", status="Running")
    set_state("k8s-queued", status="Queued")


@pytest.mark.parametrize(
    "query, names",
    [
        ({}, ["serverless-new", "k8s-queued", "k8s-running", "local-failed", "local-done"]),
        ({"status": "Running"}, ["k8s-running"]),
        ({"status": "Completed,Failed"}, ["local-failed", "local-done"]),
        ({"status": " Queued , Running "}, ["k8s-queued", "k8s-running"]),
        ({"status": "NotStarted"}, ["serverless-new"]),
        ({"status": "Canceled"}, []),
        ({"compute": "k8s"}, ["k8s-queued", "k8s-running"]),
        ({"compute": "azureml:k8s"}, ["k8s-queued", "k8s-running"]),
        ({"compute": "local"}, ["local-failed", "local-done"]),
        ({"compute": "serverless"}, ["serverless-new"]),
        ({"compute": "nope"}, []),
        ({"experiment_name": "cifar"}, ["k8s-running", "local-done"]),
        ({"experiment_name": "Default"}, ["k8s-queued", "local-failed"]),
        ({"experiment_name": "cifar", "compute": "local"}, ["local-done"]),
        ({"status": "Running,Completed", "experiment_name": "cifar", "compute": "k8s"}, ["k8s-running"]),
    ],
)
def test_filters(owner_api, fleet, query, names):
    response = owner_api.get(URL, query)
    assert response.status_code == 200
    assert [row["name"] for row in response.json()["results"]] == names
    assert response.json()["count"] == len(names)


# show


def test_show_has_an_etag_and_the_manifests(owner_api, workspace):
    submit(owner_api, name="shown")
    manifests = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "shown-x"}}]
    set_state("shown", manifests=manifests)
    first, again = owner_api.get(f"{URL}shown/"), owner_api.get(f"{URL}shown")
    assert first.status_code == again.status_code == 200
    assert first["ETag"] and first["ETag"] == again["ETag"]
    assert first.json()["manifests"] == manifests
    set_state("shown", status="Running")
    assert owner_api.get(f"{URL}shown/")["ETag"] != first["ETag"]


def test_show_reports_times_and_duration(owner_api, workspace):
    from datetime import UTC, datetime

    submit(owner_api, name="timed")
    set_state("timed", status="Completed", exit_code=0, start_time=datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
              end_time=datetime(2026, 1, 1, 12, 1, 30, tzinfo=UTC))
    job = owner_api.get(f"{URL}timed/").json()
    assert (job["status"], job["exit_code"], job["duration"]) == ("Completed", 0, 90.0)
    assert job["start_time"].startswith("2026-01-01T12:00:00") and job["end_time"].startswith("2026-01-01T12:01:30")


@pytest.mark.parametrize("method, suffix", [
    ("get", ""), ("patch", ""), ("delete", ""), ("post", "cancel/"), ("get", "logs/"), ("get", "events/"),
])
def test_an_unknown_job_is_404(method, suffix, owner_api, workspace):
    assert_error(getattr(owner_api, method)(f"{URL}nope/{suffix}", {}, format="json"), 404, "NotFound")
