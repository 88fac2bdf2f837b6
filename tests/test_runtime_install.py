"""The runtime install as the image makes it: a venv from requirements.txt alone, production mode, web + worker + beat.

The tests' own venv holds the dev set, which would hide a package that only requirements-dev.txt brings in. This one
is built from requirements.txt and nothing else (under .venv-runtime, rebuilt when requirements.txt changes), then
runs the ASGI web server, a Celery worker and beat on PostgreSQL (a database of its own) and Redis, as production does.
"""
import contextlib
import hashlib
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest

from controlplane.install_keys import new_field_key
from tests.e2e_support import wait_for

pytestmark = pytest.mark.runtime

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-runtime"
STAMP = VENV / ".requirements-sha256"


def requirements_hash() -> str:
    return hashlib.sha256((ROOT / "requirements.txt").read_bytes()).hexdigest()


def runtime_venv() -> Path:
    """.venv-runtime with exactly requirements.txt installed; kept while requirements.txt is unchanged."""
    wanted = requirements_hash()
    if STAMP.exists() and STAMP.read_text() == wanted and (VENV / "bin/python").exists():
        return VENV / "bin"
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(VENV / "bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-r", str(ROOT / "requirements.txt")], check=True, timeout=900)
    STAMP.write_text(wanted)
    return VENV / "bin"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def own_database():
    """A database of this test's own on the tests' PostgreSQL server, dropped afterwards."""
    server = urlsplit(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dockyard"))
    name = f"dockyard_runtime_{secrets.token_hex(4)}"
    admin = urlunsplit(server._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(server._replace(path=f"/{name}"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def processes():
    """Start background processes; each is stopped (TERM, then KILL) after the test, its log kept for failures."""
    started: list[tuple[subprocess.Popen, Path]] = []

    def start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
        with open(log, "wb") as out:
            process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        started.append((process, log))
        return process

    yield start
    for process, _ in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15)
    for process, _ in started:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


def production_env(database_url: str, var_dir: Path) -> dict:
    broker = urlsplit(os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/6"))
    redis_url = urlunsplit(broker._replace(path="/6"))
    return {
        "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
        "DOCKYARD_MODE": "production", "SECRET_KEY": secrets.token_urlsafe(50), "FIELD_ENCRYPTION_KEYS": new_field_key(),
        "DATABASE_URL": database_url, "CELERY_BROKER_URL": redis_url, "REDIS_URL": redis_url,
        "DOCKYARD_QUEUE": f"dockyard-runtime-{secrets.token_hex(4)}", "ALLOWED_HOSTS": "127.0.0.1",
        "DOCKYARD_VAR_DIR": str(var_dir),
        "DOCKYARD_ALLOW_LOOPBACK": "1",  # the fake API server listens on 127.0.0.1
        "DOCKYARD_RESYNC_SECONDS": "3",  # so that beat's schedule is seen within the test
    }


def test_requirements_txt_alone_runs_web_worker_and_beat_in_production_mode(own_database, processes, fake_kube, tmp_path):
    bin_dir = runtime_venv()
    env = production_env(own_database, tmp_path / "var")
    python = str(bin_dir / "python")

    def manage(*args: str) -> str:
        result = subprocess.run([python, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    manage("migrate", "--noinput", "-v0")
    token = manage("create_api_token", "admin", "--create-user", "--staff").strip()

    port = free_port()
    web = processes([str(bin_dir / "gunicorn"), "controlplane.asgi:application", "-k", "uvicorn_worker.UvicornWorker",
                     "--bind", f"127.0.0.1:{port}", "--workers", "1"], env, tmp_path / "web.log")
    worker = processes([str(bin_dir / "celery"), "-A", "controlplane", "worker", "--loglevel=INFO", "--concurrency=1"],
                       env, tmp_path / "worker.log")
    beat = processes([str(bin_dir / "celery"), "-A", "controlplane", "beat", "--loglevel=INFO",
                      "--schedule", str(tmp_path / "celerybeat-schedule")], env, tmp_path / "beat.log")

    api = httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", headers={"Authorization": f"Bearer {token}"},
                       timeout=30)

    def web_up() -> bool:
        assert web.poll() is None, (tmp_path / "web.log").read_text()[-3000:]
        try:
            return api.get("/workspaces/").status_code == 200
        except httpx.TransportError:
            return False

    wait_for(web_up, timeout=60, interval=0.5, what="the ASGI web server")
    assert api.post("/workspaces/", json={"name": "team-a"}).status_code == 201
    response = api.post("/workspaces/team-a/computes/", json={
        "name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml()})
    assert response.status_code == 201, response.text  # the enqueue went through the Redis transport

    def reconciled():
        for process, log in ((worker, "worker.log"), (beat, "beat.log")):
            assert process.poll() is None, (tmp_path / log).read_text()[-3000:]
        row = api.get("/workspaces/team-a/computes/k8s/").json()
        assert row["provisioning_state"] != "Failed", row
        return row["provisioning_state"] == "Succeeded"

    wait_for(reconciled, timeout=120, interval=0.5, what="the worker's reconcile to Succeeded")
    # Beat sends the resync on its schedule and the worker runs it.
    wait_for(lambda: "Sending due task resync (compute.tasks.resync)" in (tmp_path / "beat.log").read_text(),
             timeout=60, what="beat sending the resync")
    resync_ran = re.compile(r"Task compute\.tasks\.resync\[[0-9a-f-]+\] succeeded")
    wait_for(lambda: resync_ran.search((tmp_path / "worker.log").read_text()), timeout=60,
             what="the worker running the resync")
