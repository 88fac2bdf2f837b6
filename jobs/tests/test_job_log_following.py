"""Following a job's logs as server-sent events: lines with ids, status changes, resume, the end or a timeout."""
import json

import pytest

from jobs.models import Job
from jobs.reconcile.status import append_lines
from jobs.tests.support import URL, set_state, submit
from jobs.views import encode_cursor
from tests.support import assert_error

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would


def sse(response) -> list[dict]:
    """The events of a text/event-stream response: [{event, data (parsed), id?}]."""
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    text = b"".join(response.streaming_content).decode()
    events = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        if fields:
            events.append({**fields, "data": json.loads(fields["data"])})
    assert text.endswith("\n\n")
    return events


def test_follow_an_ended_job_streams_its_lines_then_ends(owner_api, logged):
    status, *events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}))
    assert (status["event"], status["data"]) == ("status", {"status": "Completed", "status_reason": ""})
    assert "id" not in status  # only lines carry ids: a reconnect resumes after the last line
    assert [event["event"] for event in events] == ["line"] * 5 + ["end"]
    assert [event["id"] for event in events[:5]] == ["0", "1", "2", "3", "4"]
    assert [(e["data"]["seq"], e["data"]["source"], e["data"]["text"]) for e in events[:5]] == [
        (0, "rank-0", "epoch 1"), (1, "rank-1", "epoch 1"), (2, "rank-0", "epoch 2"), (3, "", "saved"), (4, "rank-0", "done")]
    assert events[-1]["data"] == {"status": "Completed", "status_reason": "", "exit_code": 0}
    assert "id" not in events[-1]


def test_follow_resumes_after_the_last_event_id(owner_api, logged):
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}, HTTP_LAST_EVENT_ID="2"))
    assert [event.get("id") for event in events] == [None, "3", "4", None]
    assert events[-1]["event"] == "end"


def test_follow_starts_at_the_cursor(owner_api, logged):
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true", "cursor": encode_cursor(4)}))
    assert [(event["event"], event.get("id")) for event in events] == [("status", None), ("line", "4"), ("end", None)]


def test_follow_with_an_event_stream_accept_header(owner_api, logged):
    # what a browser's EventSource sends
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}, HTTP_ACCEPT="text/event-stream"))
    assert events[-1]["event"] == "end"


def test_follow_a_running_job_ends_with_a_timeout_to_reconnect(owner_api, logged, settings):
    settings.DOCKYARD_LOG_FOLLOW_SECONDS = 1
    set_state("logged", status="Running")
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}, HTTP_LAST_EVENT_ID="3"))
    assert [(event["event"], event.get("id")) for event in events] == [("status", None), ("line", "4"), ("timeout", None)]
    assert events[-1]["data"] == {"status": "Running", "next_id": 5}


def next_event(chunks) -> tuple[str, dict]:
    """The next event of a stream being read (keepalives skipped): (event, data)."""
    while (chunk := next(chunks)).startswith(":"):
        pass
    fields = dict(line.split(": ", 1) for line in chunk.splitlines() if line)
    return fields["event"], json.loads(fields["data"])


def test_follow_says_the_status_and_its_reason_at_once_and_again_at_each_change(owner_api, workspace):
    submit(owner_api, name="waiting")
    set_state("waiting", status="Queued", status_reason="Waiting for a node: insufficient cpu")
    chunks = (chunk.decode() for chunk in owner_api.get(f"{URL}waiting/logs/", {"follow": "true"}).streaming_content)

    assert next_event(chunks) == ("status", {"status": "Queued", "status_reason": "Waiting for a node: insufficient cpu"})
    set_state("waiting", status_reason="Waiting for a node: insufficient nvidia.com/gpu")
    assert next_event(chunks) == ("status", {"status": "Queued",
                                             "status_reason": "Waiting for a node: insufficient nvidia.com/gpu"})
    set_state("waiting", status="Running", status_reason="")
    assert next_event(chunks) == ("status", {"status": "Running", "status_reason": ""})
    append_lines(Job.objects.get(name="waiting"), [("", "hello")])
    assert next_event(chunks)[0] == "line"
    set_state("waiting", status="Failed", status_reason="The command exited with code 3.", exit_code=3)
    assert next_event(chunks) == ("end", {"status": "Failed", "status_reason": "The command exited with code 3.", "exit_code": 3})


def test_follow_refuses_a_bad_cursor_before_streaming(owner_api, logged):
    assert_error(owner_api.get(f"{URL}logged/logs/", {"follow": "true", "cursor": "garbage"}), 400, "InvalidCursor", "cursor")


def test_unicode_digits_are_not_a_limit_or_an_event_id(owner_api, logged):
    assert_error(owner_api.get(f"{URL}logged/logs/", {"limit": "²"}), 400, "InvalidLimit", "limit")
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}, HTTP_LAST_EVENT_ID="²"))
    assert [event.get("id") for event in events] == [None, "0", "1", "2", "3", "4", None]  # ignored: from the start
