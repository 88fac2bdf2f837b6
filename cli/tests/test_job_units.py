"""The job commands' pure parts and the log follower's reconnects, without a server (httpx's MockTransport stands in)."""
import json

import httpx
import pytest
import yaml

from cli.client import ApiClient
from cli.config import Connection
from cli.errors import ApiError, CliError, ConnectionFailed
from cli.logstream import RECONNECT_DELAYS, LogFollower
from cli.resources.job import (
    display_changes,
    ended_badly,
    job_yaml,
    line_text,
    spec_changes,
    status_filter,
    status_text,
    where_cell,
)
from cli.sse import ServerEvent, parse_events

LOGS = "workspaces/team-a/jobs/j/logs/"


# Server-Sent Events


def test_events_are_split_on_blank_lines_and_keep_the_last_id():
    lines = ["id: 0", "event: line", 'data: {"seq": 0}', "", ": keepalive", "", "event: end", "data: {}", ""]

    assert list(parse_events(lines)) == [ServerEvent("line", '{"seq": 0}', "0"), ServerEvent("end", "{}", "0")]


def test_event_data_lines_join_and_an_unfinished_last_event_is_dropped():
    lines = ["data:first", "data: second", "", "event: line", "data: cut off"]

    assert list(parse_events(lines)) == [ServerEvent("message", "first\nsecond", None)]


def test_an_event_without_data_is_not_dispatched():
    assert list(parse_events(["event: ping", "", "id: 7", ""])) == []


# statuses, cells, lines, results


def test_status_filter_accepts_any_case_commas_and_repeats():
    assert status_filter(("running,QUEUED", "Running", " failed ")) == "Running,Queued,Failed"
    assert status_filter(()) is None


def test_status_filter_refuses_unknown_statuses_as_a_usage_error():
    with pytest.raises(CliError) as error:
        status_filter(("Running,Done",))
    assert error.value.exit_code == 2
    assert error.value.message.startswith("Unknown status 'Done': use NotStarted, Queued,")


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"compute": "local", "placement": {"target": "local", "compute": "local"}}, "local"),
        ({"compute": "azureml:k8s", "placement": {"target": "kubernetes", "compute": "k8s"}}, "k8s"),
        ({"compute": None, "placement": {"target": "serverless", "compute": None}}, "serverless"),
        ({"compute": None, "placement": {"target": "serverless", "compute": "k8s"}}, "serverless: k8s"),
        ({"compute": "azureml:gone", "placement": {"target": "kubernetes", "compute": None}}, "gone"),
    ],
)
def test_where_a_job_runs(row, expected):
    assert where_cell(row) == expected


def test_line_text_prefixes_the_source():
    assert line_text({"source": "rank1", "text": "epoch 1"}) == "[rank1] epoch 1"
    assert line_text({"source": "", "text": "hello"}) == "hello"


def test_job_yaml_is_the_users_text_until_an_override_changes_it():
    text = "# my job\ncommand: echo hi\ncompute: local\n"
    body = yaml.safe_load(text)
    assert job_yaml(text, body) == text

    body["name"] = "renamed"
    assert yaml.safe_load(job_yaml(text, body)) == {"command": "echo hi", "compute": "local", "name": "renamed"}
    assert yaml.safe_load(job_yaml("---\ncommand: a\n---\n", {"command": "a"})) == {"command": "a"}


@pytest.mark.parametrize(
    ("end", "code", "exit_code", "message"),
    [
        ({"status": "Failed", "status_reason": "The command exited with code 3.", "exit_code": 3},
         "JobFailed", 5, "Job 'j' failed: The command exited with code 3."),
        ({"status": "Failed", "status_reason": "", "exit_code": 2}, "JobFailed", 5, "Job 'j' failed: exit code 2."),
        ({"status": "Canceled", "status_reason": "Canceled by request.", "exit_code": None},
         "JobCanceled", 6, "Job 'j' was canceled: Canceled by request."),
    ],
)
def test_how_a_job_ended_becomes_the_exit_code(end, code, exit_code, message):
    error = ended_badly("j", end)
    assert (error.code, error.exit_code, error.message) == (code, exit_code, message)
    assert ended_badly("j", {"status": "Completed", "exit_code": 0}) is None


# comparing a document with a submitted job (apply)

SUBMITTED = {
    "name": "train", "type": "command", "display_name": "train", "experiment_name": "Default", "description": "",
    "tags": {"team": "vision", "run": "1"}, "command": "python train.py",
    "environment": {"image": "python:3.11"}, "environment_variables": {"DEBUG": "true"},
    "resources": {"instance_count": 2, "shm_size": "2g"},
    "distribution": {"type": "pytorch", "process_count_per_instance": 1},
    "compute": "azureml:k8s", "status": "Running", "placement": {"target": "kubernetes", "compute": "k8s"},
}
DOCUMENT = {
    "$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "name": "train", "type": "command",
    "command": "python train.py", "environment": {"image": "python:3.11"}, "environment_variables": {"DEBUG": True},
    "resources": {"instance_count": 2}, "distribution": {"type": "pytorch"}, "compute": "k8s",
    "tags": {"team": "vision", "run": 1},
}


def test_a_document_the_api_normalised_is_the_same_job():
    assert spec_changes(DOCUMENT, SUBMITTED) == []


def test_enum_case_and_untyped_inputs_as_the_api_stores_them_are_the_same_job():
    document = {"command": "x", "inputs": {"d": {"path": "data", "mode": "RO_MOUNT"}},
                "outputs": {"m": {"type": "URI_FOLDER"}}, "distribution": {"type": "PyTorch"}}
    submitted = {"command": "x", "inputs": {"d": {"type": "uri_folder", "path": "data", "mode": "ro_mount"}},
                 "outputs": {"m": {"type": "uri_folder"}}, "distribution": {"type": "pytorch", "process_count_per_instance": 1},
                 "experiment_name": "Default", "resources": {"instance_count": 1, "shm_size": "2g"}}
    assert spec_changes(document, submitted) == []
    assert display_changes(DOCUMENT, SUBMITTED) == []


def test_fixed_fields_that_differ_or_are_left_out_are_changes():
    document = {**DOCUMENT, "command": "python train.py --fast", "resources": {"instance_count": 1}}
    assert spec_changes(document, SUBMITTED) == ["command", "resources"]
    assert spec_changes({key: value for key, value in DOCUMENT.items() if key != "distribution"}, SUBMITTED) == ["distribution"]
    assert spec_changes({**DOCUMENT, "experiment_name": "other"}, SUBMITTED) == ["experiment_name"]


def test_display_fields_left_out_are_left_alone():
    assert display_changes({**DOCUMENT, "display_name": "Train v2", "tags": {"team": "nlp"}}, SUBMITTED) == ["display_name", "tags"]
    assert display_changes({"name": "train"}, SUBMITTED) == []


# following a log stream

def sse(*events: tuple[str, dict, int | None]) -> bytes:
    chunks = []
    for name, data, event_id in events:
        head = f"id: {event_id}\n" if event_id is not None else ""
        chunks.append(f"{head}event: {name}\ndata: {json.dumps(data)}\n\n")
    return "".join(chunks).encode()


def line(seq: int, text: str, source: str = "") -> tuple[str, dict, int]:
    return "line", {"seq": seq, "source": source, "text": text, "time": "2026-01-01T00:00:00Z"}, seq


END_COMPLETED = ("end", {"status": "Completed", "status_reason": "", "exit_code": 0}, None)


class Broken(httpx.SyncByteStream):
    """A body that sends some bytes and then loses the connection."""

    def __init__(self, data: bytes):
        self.data = data

    def __iter__(self):
        yield self.data
        raise httpx.ReadError("connection reset by peer")


def follower(answers: list, sleeps: list | None = None) -> tuple[LogFollower, list[dict], list[httpx.Request]]:
    """A follower whose server answers each connection with the next of `answers` (bytes, a Response, or an exception)."""
    requests: list[httpx.Request] = []
    printed: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx.Response):
            return answer
        if isinstance(answer, Broken):
            return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, stream=answer)
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=answer)

    client = ApiClient(Connection(url="http://dock.test", token="dy_secret"), transport=httpx.MockTransport(handler))
    sleep = sleeps.append if sleeps is not None else (lambda seconds: None)
    return LogFollower(client, LOGS, printed.append, sleep=sleep), printed, requests


def test_follow_reconnects_after_the_servers_timeout_with_the_last_event_id():
    run, printed, requests = follower([
        sse(line(0, "a"), line(1, "b", "rank0"), ("timeout", {"status": "Running", "next_id": 2}, None)),
        sse(("timeout", {"status": "Running", "next_id": 2}, None)),
        sse(line(2, "c"), END_COMPLETED),
    ])

    assert run.run() == {"status": "Completed", "status_reason": "", "exit_code": 0}
    assert [entry["text"] for entry in printed] == ["a", "b", "c"]
    assert [request.headers.get("Last-Event-ID") for request in requests] == [None, "1", "1"]
    assert all(request.url.params["follow"] == "true" for request in requests)
    assert requests[0].headers["Accept"] == "text/event-stream"


def test_follow_resumes_after_a_dropped_connection_without_repeating_lines():
    sleeps: list = []
    run, printed, requests = follower([
        Broken(sse(line(0, "a"), line(1, "b"))),
        httpx.ConnectError("connection refused"),
        sse(line(2, "c"), END_COMPLETED),
    ], sleeps)

    assert run.run()["status"] == "Completed"
    assert [entry["text"] for entry in printed] == ["a", "b", "c"]
    assert [request.headers.get("Last-Event-ID") for request in requests] == [None, "1", "1"]
    assert sleeps == [RECONNECT_DELAYS[0]]  # the drop after lines reconnects at once; the refusal waits


def test_follow_gives_up_when_the_stream_keeps_breaking_without_progress():
    sleeps: list = []
    answers = [sse(line(0, "a"))] + [httpx.ReadTimeout("nothing")] * (len(RECONNECT_DELAYS) + 1)
    run, printed, _ = follower(answers, sleeps)

    with pytest.raises(ConnectionFailed) as error:
        run.run()
    assert error.value.exit_code == 3 and error.value.code == "Timeout"
    assert sleeps == list(RECONNECT_DELAYS) and len(printed) == 1


def test_follow_fails_at_once_when_the_server_cannot_be_reached():
    run, _, requests = follower([httpx.ConnectError("connection refused")])

    with pytest.raises(ConnectionFailed):
        run.run()
    assert len(requests) == 1


def test_follow_raises_the_apis_error_statuses():
    not_found = httpx.Response(404, json={"error": {"code": "NotFound", "message": "Not found."}})
    run, _, _ = follower([not_found])

    with pytest.raises(ApiError) as error:
        run.run()
    assert error.value.status == 404


def test_follow_reports_each_new_status_once_across_reconnects():
    queued = {"status": "Queued", "status_reason": "Waiting for a node: insufficient cpu"}
    run, printed, _ = follower([
        sse(("status", queued, None), ("timeout", {"status": "Queued", "next_id": 0}, None)),
        sse(("status", queued, None), ("status", {"status": "Running", "status_reason": ""}, None), line(0, "a"),
            ("status", {"status": "Completed", "status_reason": ""}, None), END_COMPLETED),
    ])
    statuses: list[dict] = []
    run.on_status = statuses.append

    assert run.run()["status"] == "Completed"
    assert [status_text(status) for status in statuses] == ["[Queued] Waiting for a node: insufficient cpu", "[Running]", None]
    assert [entry["text"] for entry in printed] == ["a"]
