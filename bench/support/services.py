"""Dockyard's own processes as bin/run starts them: a Celery worker and gunicorn, on the benchmark's database."""
import sys
import urllib.error
import urllib.request
from pathlib import Path

from django.db import connection

from bench.support.processes import free_port, spawn, stop, wait_for
from controlplane.celery import app

BIN = Path(sys.executable).parent


def worker_command(hostname: str, pool: list[str], loglevel: str, queue: str | None = None,
                   celery: list[str] | None = None) -> list[str]:
    """`celery -A controlplane worker` named `hostname`@%h, without mingle, gossip and heartbeats."""
    queues = [f"--queues={queue}"] if queue else []
    return [*(celery or [str(BIN / "celery")]), "-A", "controlplane", "worker", *pool, f"--hostname={hostname}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat", f"--loglevel={loglevel}", *queues]


def answers(base: str) -> bool:
    """The web server answers (anything but a 5xx) at `base`."""
    try:
        with urllib.request.urlopen(f"{base}/api/v1/compute-types/", timeout=5):
            return True
    except urllib.error.HTTPError as error:
        return error.code < 500
    except OSError:
        return False


class Services:
    """A Celery worker (prefork, `concurrency`) and `gunicorn controlplane.wsgi` on a free loopback port."""

    def __init__(self, queue: str, log_path: Path, web_options: list[str], concurrency: int = 2):
        self.port = free_port()
        app.control.purge()  # only our private queue: it is this app's default queue
        connection.close()  # nothing of ours holds the database while the services run
        self.worker = spawn(worker_command(queue, [f"--concurrency={concurrency}"], "WARNING"), log_path)
        self.web = spawn([str(BIN / "gunicorn"), "controlplane.wsgi", "--bind", f"127.0.0.1:{self.port}", *web_options],
                         log_path)
        self.base = f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.worker.poll() is None and self.web.poll() is None

    def wait_up(self) -> None:
        wait_for(lambda: answers(self.base) or not self.alive(), 60, "the web server", 0.1)
        assert self.alive(), "a service exited"

    def stop(self) -> None:
        stop(self.web)
        stop(self.worker)
