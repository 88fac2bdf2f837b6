"""Subprocesses a benchmark starts (services, fakes): each in its own session, stopped with its children at the end."""
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from django.db import connection

from bench.support.bootstrap import ROOT

STARTED: list[subprocess.Popen] = []


def on_this_database(env: dict | None = None) -> dict:
    """`env` (default: this environment) with DATABASE_URL naming the database this process uses (the throwaway one)."""
    env = dict(os.environ if env is None else env)
    url = urlsplit(env["DATABASE_URL"])
    env["DATABASE_URL"] = url._replace(path="/" + connection.settings_dict["NAME"]).geturl()
    return env


def spawn(command: list[str], log_path: Path, env: dict | None = None) -> subprocess.Popen:
    """Start `command` in the repository, on the benchmark's database, its output appended to `log_path`."""
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=on_this_database(env), stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    STARTED.append(process)
    return process


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process's own session (it and its children, nothing else); SIGKILL if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
    if process in STARTED:
        STARTED.remove(process)


def stop_all() -> None:
    """Stop every process this benchmark started and has not stopped yet."""
    for process in list(STARTED):
        stop(process)


def wait_for(predicate, timeout: float, what: str, every: float = 0.02):
    """Poll `predicate` until it returns something true (returned), or raise TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def time_limit(seconds: int):
    """Raise TimeoutError in the main thread after `seconds` in the block (the callers' finally blocks then clean up)."""

    def give_up(signum, frame):
        raise TimeoutError(f"the benchmark took longer than {seconds} s")

    signal.signal(signal.SIGALRM, give_up)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)


def print_tail(label: str, path: Path, chars: int = 3000) -> None:
    """The end of a service's log on stderr, when a benchmark fails."""
    print(f"{label} ({path}):\n" + path.read_text(errors="replace")[-chars:], file=sys.stderr)
