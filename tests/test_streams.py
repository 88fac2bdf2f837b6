"""Followed logs do not take the web tier down: gunicorn with uvicorn workers, as bin/run and the image serve it.

A real `gunicorn controlplane.asgi:application -k uvicorn_worker.UvicornWorker` on a free loopback port, on the test
database and cache. With fifty open `logs?follow=true` streams (five users, each at the per-user cap of ten) an
ordinary API call still answers; the eleventh stream of one user is refused with 429 and closing streams
gives the slots back. The latencies of the ordinary call with no stream and with fifty open are printed (`-s`).
"""
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from jobs.models import Job, JobLogLine
from jobs.views import KEEPALIVE_SECONDS
from tests.e2e_support import wait_for
from tests.support import assert_error
from tests.test_worker_kill import worker_environment
from workspaces.choices import Role
from workspaces.models import Membership
from workspaces.services import token_create, workspace_create

ROOT = Path(__file__).resolve().parent.parent
WORKSPACE = "streams"
JOBS = f"/api/v1/workspaces/{WORKSPACE}/jobs"
CAP = 10
USERS = 5  # 5 users x CAP streams = 50 open streams, each user exactly at the cap


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class WebServer:
    """The web tier as deployed, in its own process group; `url` once it answers."""

    def __init__(self, log: Path, **env: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        gunicorn = Path(sys.executable).parent / "gunicorn"
        command = [str(gunicorn), "controlplane.asgi:application", "-k", "uvicorn_worker.UvicornWorker",
                   "--bind", f"127.0.0.1:{self.port}", "--workers", "2"]
        environment = {**worker_environment(), "DOCKYARD_LOG_STREAMS_PER_USER": str(CAP), **env}
        with open(log, "wb") as out:
            self.process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> None:
        def answers():
            assert self.process.poll() is None, self.output()[-3000:]
            try:
                return httpx.get(f"{self.url}/api/v1/", timeout=2).status_code < 500
            except httpx.TransportError:
                return False

        wait_for(answers, 60, 0.2, "the web server's start")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


@pytest.fixture
def start_server(transactional_db, tmp_path):
    started = []

    def start(**env: str) -> WebServer:
        server = WebServer(tmp_path / f"web-{len(started)}.log", **env)
        started.append(server)
        server.wait_ready()
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def readers(transactional_db) -> list[str]:
    """The bearer tokens of the workspace's owner and of USERS - 1 readers."""
    users = [get_user_model().objects.create_user(username=f"follower-{index}") for index in range(USERS)]
    workspace = workspace_create(user=users[0], name=WORKSPACE, display_name="Streams")
    for user in users[1:]:
        Membership.objects.create(workspace=workspace, user=user, role=Role.READER)
    return [token_create(user=user, name="streams")[1] for user in users]


def make_job(name: str, status: str, lines: list[str]) -> Job:
    from workspaces.models import Workspace

    workspace = Workspace.objects.get(name=WORKSPACE)
    job = Job.objects.create(workspace=workspace, name=name, spec={"command": "x"}, target="local", status=status,
                             exit_code=0 if status == "Completed" else None, log_line_count=len(lines))
    JobLogLine.objects.bulk_create(JobLogLine(job=job, seq=seq, text=text, time=timezone.now())
                                   for seq, text in enumerate(lines))
    return job


class Follower:
    """One open `logs?follow=true` stream, read up to its first event (so the server is surely in its polling loop)."""

    def __init__(self, url: str, token: str, job: str, **headers: str):
        self.client = httpx.Client(timeout=10, headers={"Authorization": f"Bearer {token}", **headers})
        self.response = self.client.send(self.client.build_request("GET", f"{url}{JOBS}/{job}/logs/?follow=true"),
                                         stream=True)
        self.status = self.response.status_code
        self.text = ""
        self._chunks = self.response.iter_text() if self.status == 200 else iter(())

    def read_until(self, marker: str) -> str:
        while marker not in self.text:
            self.text += next(self._chunks)
        return self.text

    def close(self) -> None:
        self.response.close()
        self.client.close()


def events(text: str) -> list[tuple[str, str | None, dict]]:
    """(event, id, data) of each complete Server-Sent Event."""
    found = []
    for block in text.split("\n\n")[:-1]:
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        if fields:
            found.append((fields["event"], fields.get("id"), json.loads(fields["data"])))
    return found


def ordinary_call_seconds(url: str, token: str, times: int = 20, warm_up: int = 4) -> list[float]:
    """Latencies of an ordinary API call (the job list); each must answer 200 within 10 s: the server is alive."""
    seconds = []
    with httpx.Client(timeout=10, headers={"Authorization": f"Bearer {token}"}) as client:
        for _ in range(warm_up):  # each worker's first requests load what Django loads lazily
            assert client.get(f"{url}{JOBS}/").status_code == 200
        for _ in range(times):
            started = time.perf_counter()
            response = client.get(f"{url}{JOBS}/")
            seconds.append(time.perf_counter() - started)
            assert response.status_code == 200, response.text
    return seconds


def database_connections() -> int:
    """Connections to the test database other than this process's own."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def test_fifty_open_streams_leave_the_api_answering(start_server, readers):
    for index in range(USERS * CAP):
        make_job(f"running-{index}", "Running", [f"started {index}"])
    server = start_server()
    idle = ordinary_call_seconds(server.url, readers[0])
    followers = []
    try:
        for index in range(USERS * CAP):
            follower = Follower(server.url, readers[index % USERS], f"running-{index}")
            followers.append(follower)
            assert follower.status == 200, follower.response.read()
            follower.read_until("event: line")
        busy = ordinary_call_seconds(server.url, readers[0])
        # Not a connection per stream: the streams of a worker process read through its small pool of threads.
        assert database_connections() < USERS * CAP / 2
        print(f"\njob list latency (median of {len(idle)}): no stream {statistics.median(idle) * 1000:.1f} ms, "
              f"{len(followers)} open streams {statistics.median(busy) * 1000:.1f} ms "
              f"(max {max(idle) * 1000:.1f} / {max(busy) * 1000:.1f} ms); "
              f"the server's database connections: {database_connections()}")
        assert [events(follower.text)[1][:2] for follower in followers[:2]] == [("line", "0"), ("line", "0")]
    finally:
        for follower in followers:
            follower.close()


def test_the_eleventh_stream_of_a_user_gets_429_and_closing_streams_frees_slots(start_server, readers):
    make_job("long", "Running", ["first"])
    server = start_server()
    followers = [Follower(server.url, readers[0], "long") for _ in range(CAP)]
    try:
        assert [follower.status for follower in followers] == [200] * CAP
        for follower in followers:
            follower.read_until("event: line")
        refused = Follower(server.url, readers[0], "long")
        assert refused.status == 429 and refused.response.headers["Retry-After"] == "60"
        refused.response.read()
        assert "DOCKYARD_LOG_STREAMS_PER_USER" in assert_error(refused.response, 429, "TooManyRequests")["message"]
        refused.close()
        other_user = Follower(server.url, readers[1], "long")  # the cap is per user
        assert other_user.status == 200
        other_user.close()

        for follower in followers[:3]:
            follower.close()
        # The server sees the disconnects and gives the three slots back: three new streams, and no fourth.
        reopened = []
        for _ in range(3):
            reopened.append(wait_for(lambda: _opened(server.url, readers[0], "long"), 10, 0.2, "a freed slot"))
        followers[:3] = reopened
        assert Follower(server.url, readers[0], "long").status == 429
    finally:
        for follower in followers:
            follower.close()


def _opened(url: str, token: str, job: str) -> "Follower | None":
    follower = Follower(url, token, job)
    if follower.status == 200:
        return follower
    follower.close()
    return None


def test_streams_under_asgi_keep_the_event_format_resume_and_end(start_server, readers):
    make_job("done", "Completed", ["one", "two", "three"])
    make_job("busy", "Running", ["a", "b"])
    server = start_server(DOCKYARD_LOG_FOLLOW_SECONDS="2")

    ended = Follower(server.url, readers[1], "done")
    assert ended.response.headers["Content-Type"] == "text/event-stream"
    assert events(ended.read_until("event: end")) == [
        ("status", None, {"status": "Completed", "status_reason": ""}),
        ("line", "0", {"seq": 0, "source": "", "text": "one", "time": _time(ended.text, 0)}),
        ("line", "1", {"seq": 1, "source": "", "text": "two", "time": _time(ended.text, 1)}),
        ("line", "2", {"seq": 2, "source": "", "text": "three", "time": _time(ended.text, 2)}),
        ("end", None, {"status": "Completed", "status_reason": "", "exit_code": 0}),
    ]
    ended.close()

    resumed = Follower(server.url, readers[1], "busy", **{"Last-Event-ID": "0"})
    found = events(resumed.read_until("event: timeout"))  # DOCKYARD_LOG_FOLLOW_SECONDS ends it
    assert [(event, event_id) for event, event_id, _ in found] == [("status", None), ("line", "1"), ("timeout", None)]
    assert found[-1][2] == {"status": "Running", "next_id": 2}
    resumed.close()
    assert_error(httpx.get(f"{server.url}{JOBS}/busy/logs/?follow=true&cursor=garbage",
                           headers={"Authorization": f"Bearer {readers[1]}"}), 400, "InvalidCursor", "cursor")


def _time(text: str, seq: int) -> str:
    return next(data["time"] for event, _, data in events(text) if event == "line" and data["seq"] == seq)


def test_a_queued_job_without_output_says_why_at_once_under_asgi(start_server, readers):
    job = make_job("waiting", "Queued", [])
    Job.objects.filter(pk=job.pk).update(status_reason="Waiting for a node: insufficient cpu")
    server = start_server()

    started = time.perf_counter()
    follower = Follower(server.url, readers[1], "waiting")
    try:
        found = events(follower.read_until("\n\n"))
        waited = time.perf_counter() - started
    finally:
        follower.close()
    assert found == [("status", None, {"status": "Queued", "status_reason": "Waiting for a node: insufficient cpu"})]
    print(f"\nfirst event of a silent queued job after {waited * 1000:.0f} ms")
    assert waited < KEEPALIVE_SECONDS / 3  # not the first keepalive's 15 s of "Connecting…"
