"""`celery -A controlplane worker` on the benchmark's database, broker and private queue, paused and resumed."""
import os
import re
import sys
from pathlib import Path

from bench.jobs_parts import WORK, WORKER_NAME
from bench.support.processes import spawn, stop, wait_for
from bench.support.services import worker_command
from controlplane.celery import app

QUEUE = os.environ["DOCKYARD_QUEUE"]


class Worker:
    """`celery -A controlplane worker` on the benchmark's database, broker and private queue."""

    def __init__(self, qps: float, burst: int, concurrency: int, loglevel: str, profile_to: str | None = None,
                 db_reuse: int = 0):
        self.log = WORK / f"worker-{int(qps)}.log"
        env = {**os.environ, "DOCKYARD_KUBE_QPS": str(qps), "DOCKYARD_KUBE_BURST": str(burst),
               "PYTHONUNBUFFERED": "1"}
        if db_reuse:  # what-if: Celery's Django fixup closes the DB connection around every task unless this is set
            (WORK / "bench_worker_settings.py").write_text(
                f"from controlplane.settings import *  # noqa\nCELERY_DB_REUSE_MAX = {db_reuse}\n")
            env.update(PYTHONPATH=str(WORK), DJANGO_SETTINGS_MODULE="bench_worker_settings")
        celery = [str(Path(sys.executable).parent / "celery")]
        pool = ["--pool=prefork", f"--concurrency={concurrency}"]
        if profile_to:  # one process under cProfile: the solo pool runs the tasks in the main process
            celery, pool = [sys.executable, "-m", "cProfile", "-o", f"{profile_to}-{int(qps)}", celery[0]], ["--pool=solo"]
        self.process = spawn(worker_command(WORKER_NAME, pool, loglevel, QUEUE, celery), self.log, env)
        wait_for(lambda: self.destination() or self.process.poll() is not None, 60, "the worker", 0.2)
        assert self.process.poll() is None, self.log.read_text()[-3000:]

    def runtimes(self, offset: int, task: str = "reconcile_job") -> list[float]:
        """Seconds of each `task` the worker logged as succeeded after `offset` (INFO level), as Celery times them."""
        with open(self.log, "rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
        return [float(value) for value in re.findall(rf"\.{task}\[[^\]]+\] succeeded in ([0-9.e-]+)s", text)]

    def destination(self) -> list[str]:
        replies = app.control.ping(timeout=0.5)
        return [name for reply in replies for name in reply if name.startswith(WORKER_NAME + "@")]

    def pause(self) -> None:
        assert app.control.cancel_consumer(QUEUE, destination=self.destination(), reply=True, timeout=5), "no reply"

    def resume(self) -> None:
        app.control.add_consumer(QUEUE, destination=self.destination(), reply=False)

    def stop(self) -> None:
        stop(self.process)
