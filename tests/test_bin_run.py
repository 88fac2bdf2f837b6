"""bin/run as a developer starts it: its own keys under var/, a crashed worker restarted, TERM stops every process."""
import contextlib
import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e_support import wait_for

ROOT = Path(__file__).resolve().parent.parent
# The embedded default (SQLite and the filesystem broker in the var folder), with no keys from the environment.
NOT_INHERITED = ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "SECRET_KEY", "FIELD_ENCRYPTION_KEYS", "DOCKYARD_QUEUE",
                 "DOCKYARD_MODE", "HOST", "PORT", "DOCKYARD_ALLOW_REMOTE", "DJANGO_SETTINGS_MODULE")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_env(var_dir: Path, port: int, **extra) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    return {**env, "DOCKYARD_VAR_DIR": str(var_dir), "PORT": str(port), **extra}


class BinRun:
    """One bin/run in a session of its own, so that every process it started can be found afterwards."""

    def __init__(self, var_dir: Path, port: int, log_dir: Path):
        self.var_dir, self.port = var_dir, port
        self.stdout_path, self.stderr_path = log_dir / f"run-{port}.out", log_dir / f"run-{port}.err"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen([str(ROOT / "bin/run")], cwd=ROOT, env=run_env(var_dir, port),
                                            stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text()

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def answers(self) -> bool:
        assert self.process.poll() is None, f"bin/run ended early:\n{self.stderr[-3000:]}"
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/login/", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def pid_of(self, name: str) -> int | None:
        path = self.var_dir / "run" / f"{name}.pid"
        return int(path.read_text()) if path.exists() and path.read_text().strip() else None

    def session_processes(self) -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.getsid(int(entry.name)) == self.process.pid and not is_zombie(int(entry.name)):
                        found.append(int(entry.name))
                except ProcessLookupError:
                    pass
        return found

    def worker_log(self) -> str:
        return (self.var_dir / "worker.log").read_text()

    def command_lines(self) -> list[str]:
        lines = []
        for pid in self.session_processes():
            with contextlib.suppress(FileNotFoundError):
                lines.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        return lines

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=90)

    def kill_leftovers(self) -> None:
        for pid in self.session_processes():
            os.kill(pid, signal.SIGKILL)


def is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def alive(pid: int | None) -> bool:
    return pid is not None and Path(f"/proc/{pid}").exists() and not is_zombie(pid)


@pytest.fixture
def start_bin_run(tmp_path):
    started: list[BinRun] = []

    def start(var_dir: Path) -> BinRun:
        run = BinRun(var_dir, free_port(), tmp_path)
        started.append(run)
        wait_for(run.answers, timeout=240, interval=0.5, what="bin/run's web server answering")
        return run

    yield start
    for run in started:
        try:
            run.stop()
        finally:
            run.kill_leftovers()


def test_a_killed_worker_is_restarted_and_term_stops_every_process(start_bin_run, tmp_path):
    run = start_bin_run(tmp_path / "var")
    worker = wait_for(lambda: alive(run.pid_of("worker")) and run.pid_of("worker"), what="the worker's pid file")
    wait_for(lambda: run.worker_log().count(" ready.") == 1, timeout=60, what="the worker ready")
    beat = run.pid_of("beat")

    os.kill(worker, signal.SIGKILL)
    restarted = wait_for(lambda: alive(run.pid_of("worker")) and run.pid_of("worker") != worker and run.pid_of("worker"),
                         timeout=30, what="a new worker")
    assert "the worker exited (status 137); restarting it in 1s" in run.stderr
    assert run.answers(), "the web server went down with the worker"
    assert run.pid_of("beat") == beat and alive(beat), "the beat was restarted too"
    wait_for(lambda: run.worker_log().count(" ready.") == 2, timeout=60,
             what="the restarted worker ready")
    assert alive(run.pid_of("worker")) and run.pid_of("worker") in (restarted, *run.session_processes())

    run.stop()
    assert run.process.returncode == 143
    assert run.session_processes() == [], f"bin/run left processes behind: {run.command_lines()}"


def test_keys_and_the_admin_login_are_made_once_and_the_password_is_printed_once(start_bin_run, tmp_path):
    var_dir = tmp_path / "var"
    first = start_bin_run(var_dir)
    keys = {name: (var_dir / name).read_text() for name in ("secret-key", "field-keys", "admin-credentials.txt")}
    assert all((var_dir / name).stat().st_mode & 0o777 == 0o600 for name in keys)
    password = re.search(r"^password: (\S+)$", keys["admin-credentials.txt"], re.M).group(1)
    assert password in first.stdout
    first.stop()

    second = start_bin_run(var_dir)
    assert {name: (var_dir / name).read_text() for name in keys} == keys
    assert second.answers()
    assert password not in second.stdout and "api token: dy_" not in second.stdout
    assert "login: admin" in second.stdout


def test_development_mode_refuses_a_network_host(tmp_path):
    result = subprocess.run([str(ROOT / "bin/run")], cwd=ROOT, env=run_env(tmp_path, free_port(), HOST="0.0.0.0"),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "HOST=0.0.0.0 would open development mode" in result.stderr
    assert "DOCKYARD_ALLOW_REMOTE=1" in result.stderr
    assert not (tmp_path / "secret-key").exists()  # refused before anything was set up


def test_ctrl_c_stops_every_process_without_restarting_any(start_bin_run, tmp_path):
    run = start_bin_run(tmp_path / "var")
    wait_for(lambda: alive(run.pid_of("worker")) and alive(run.pid_of("beat")), what="the worker and beat")
    os.killpg(run.process.pid, signal.SIGINT)  # what a terminal sends to the whole foreground group
    run.process.wait(timeout=90)
    assert run.process.returncode == 130
    assert run.session_processes() == [], f"bin/run left processes behind: {run.command_lines()}"
    assert "restarting" not in run.stderr
