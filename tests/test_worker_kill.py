"""A worker killed with SIGKILL in the middle of a reconcile loses nothing.

Real `celery -A controlplane worker` subprocesses on the test database and the test broker. The fake
API server holds the reconcile's apply without answering (a `timeout` fault), so the kill lands while
the task is in flight: its row lock held, its message delivered but not acknowledged (acks_late).

- Only the pool process dies: the worker's main process sees WorkerLostError and, with
  reject_on_worker_lost, puts the message back; the record converges with no help.
- The whole process group dies: nobody is left to reject the message, and Redis hands an
  unacknowledged message out again only after the visibility timeout (an hour). A new worker does
  the messages that were still queued, and the resync re-enqueues the record that was in flight.
- A local job's process is detached from the worker: it outlives a killed worker, and the next worker (its
  worker_ready resync, once the dead chain's heartbeat is stale) follows it to a true end: the exit code it left,
  or "disappeared" when the process died too while no worker was there.
"""
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from django.conf import settings
from django.db import connection

from compute.models import InstanceType
from compute.runners import local as runner
from compute.tasks import resync
from jobs.choices import ACTIVE
from jobs.models import Job
from tests.e2e_support import BASE, attach, crs, fresh_client_state, settled, wait_for

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


def worker_environment() -> dict:
    """The test process's settings for a subprocess: the pytest database (not the configured one), broker, cache."""
    db = connection.settings_dict
    user = quote(db["USER"] or "", safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else "")
    url = f"postgres://{user}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{quote(db['NAME'], safe='')}"
    return {**os.environ, "DATABASE_URL": url, "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "REDIS_URL": settings.REDIS_URL, "DOCKYARD_QUEUE": settings.CELERY_TASK_DEFAULT_QUEUE,
            "DJANGO_SETTINGS_MODULE": "controlplane.settings", "PYTHONUNBUFFERED": "1"}


class Worker:
    """`celery -A controlplane worker` (prefork, one pool process) in its own process group."""

    def __init__(self, name: str, log: Path, env: dict | None = None):
        celery = Path(sys.executable).parent / "celery"
        command = [str(celery)] if celery.exists() else [sys.executable, "-m", "celery"]
        command += ["-A", "controlplane", "worker", "--pool=prefork", "--concurrency=1", f"--hostname={name}@%h",
                    "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO",
                    f"--queues={settings.CELERY_TASK_DEFAULT_QUEUE}"]
        self.log = log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(command, cwd=ROOT, env={**worker_environment(), **(env or {})}, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60.0) -> None:
        wait_for(lambda: " ready." in self.output() or self.process.poll() is not None, timeout, 0.2, "worker start")
        assert self.process.poll() is None, self.output()[-3000:]

    def pool_processes(self) -> list[int]:
        """Children of the main process (with --concurrency=1: the one pool process)."""
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == self.process.pid:
                children.append(int(stat.parent.name))
        return children

    def kill_group(self) -> None:
        """SIGKILL the main process and its pool process at once, as the OOM killer or a lost node would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)  # warm shutdown
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


@pytest.fixture
def fake(make_fake_kube):
    kube = make_fake_kube(seed=5)
    fresh_client_state(kube)
    yield kube
    fresh_client_state(kube)


@contextlib.contextmanager
def worker_starter(tmp_path: Path, env: dict | None = None):
    """start(name) starts a worker; all are stopped (and their stranded messages dropped) afterwards."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    stranded_before = set(broker.hkeys("unacked"))
    from controlplane.celery import app

    app.control.purge()
    started: list[Worker] = []

    def start(name: str) -> Worker:
        worker = Worker(name, tmp_path / f"{name}.log", env)
        started.append(worker)
        worker.wait_ready()
        return worker

    try:
        yield start
    finally:
        for worker in started:
            worker.stop()
        # A killed worker's unacknowledged message would come back in an hour, into some later test run.
        for tag in set(broker.hkeys("unacked")) - stranded_before:
            broker.hdel("unacked", tag)
            broker.zrem("unacked_index", tag)
        app.control.purge()


@pytest.fixture
def workers(transactional_db, fake, tmp_path):
    """Start workers with workers(name); all are stopped (and their stranded messages dropped) afterwards."""
    with worker_starter(tmp_path) as start:
        yield start


def hold_the_next_apply(fake):
    """The next apply of an InstanceType gets no answer for a minute (longer than the test)."""
    return fake.faults.add(1.0, ("timeout",), verb="patch", resource="instancetypes", hang=60.0, times=1)


def in_flight(fake, rule) -> str:
    """The name of the InstanceType whose apply is being held, once the worker has sent it."""
    wait_for(lambda: rule.fired == 1, 30, what="the held apply")
    (held,) = [r for r in fake.requests.find(verb="patch", resource="instancetypes") if r.fault == "timeout"]
    return held.name


def converged_on_the_cluster(fake, names) -> bool:
    live = crs(fake)
    return settled(names) and all(name in live and live[name]["spec"] == {"resources": RESOURCES} for name in names)


def test_a_killed_pool_process_gives_its_message_back(workers, owner_api, workspace, fake):
    worker = workers("pool")
    attach(owner_api, fake)
    rule = hold_the_next_apply(fake)
    assert owner_api.post(f"{BASE}/k8s/instancetypes/", {"name": "held", "resources": RESOURCES}, format="json").status_code == 201
    assert in_flight(fake, rule) == "held" and not settled(["held"])

    (pool_process,) = worker.pool_processes()
    os.kill(pool_process, signal.SIGKILL)

    wait_for(lambda: converged_on_the_cluster(fake, ["held"]), 30, what="the redelivered reconcile")
    assert "WorkerLostError" in worker.output()
    assert worker.process.poll() is None  # the main process lived on and started a new pool process
    assert len(fake.requests.find(verb="patch", resource="instancetypes", name="held")) >= 2
    assert len(crs(fake)) == 1 and InstanceType.objects.count() == 1


def test_a_killed_worker_loses_nothing_after_a_restart(workers, owner_api, workspace, fake):
    first = workers("first")
    attach(owner_api, fake)  # by the first worker
    rule = hold_the_next_apply(fake)
    names = ["alpha", "beta", "gamma"]
    items = [{"metadata": {"name": name}, "spec": {"resources": RESOURCES}} for name in names]
    body = {"apiVersion": "amlarc.azureml.com/v1alpha1", "kind": "InstanceTypeList", "items": items}
    assert owner_api.post(f"{BASE}/k8s/instancetypes/", body, format="json").status_code == 201
    held = in_flight(fake, rule)
    assert not settled([held])

    first.kill_group()
    assert first.process.returncode == -signal.SIGKILL and not first.pool_processes()

    workers("second")
    others = [name for name in names if name != held]
    # Prefetch is one message per pool process and the held one was not acknowledged: the rest was still queued.
    wait_for(lambda: converged_on_the_cluster(fake, others), 30, what="the queued reconciles")
    assert not settled([held])  # its message is stranded until the visibility timeout
    resync.delay()
    wait_for(lambda: converged_on_the_cluster(fake, names), 30, what="the resync's reconcile")

    assert sorted(crs(fake)) == sorted(names) and InstanceType.objects.count() == len(names)
    assert {r.verb for r in fake.requests.writes() if r.resource == "instancetypes"} == {"patch"}


# Local jobs: the job's process is not the worker's child.

STALE_SECONDS = 2  # the workers' DOCKYARD_JOB_STALE_SECONDS: a dead chain is taken over after this long


@pytest.fixture
def local_workers(transactional_db, settings, tmp_path, local_compute):
    """Workers that run local jobs in a folder of this test and take dead chains over quickly."""
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    env = {"DOCKYARD_JOB_DIR": str(settings.DOCKYARD_JOB_DIR), "DOCKYARD_JOB_STALE_SECONDS": str(STALE_SECONDS),
           "DOCKYARD_LOCAL_COMPUTE": "true"}
    try:
        with worker_starter(tmp_path, env) as start:
            yield start
    finally:
        for pid_file in Path(settings.DOCKYARD_JOB_DIR).glob(f"*/*/{runner.PID_FILE}"):
            process = runner.adopt(pid_file.parent)
            if process and runner.group_alive(process.pid):  # a test that failed half-way: stop what it started
                runner.kill_group(process, grace=0.5)


def submit_local(api, command: str) -> str:
    response = api.post("/api/v1/workspaces/team-a/jobs/", {"command": command, "compute": "local"}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["name"]


def running_process(name: str) -> runner.Process:
    job = wait_for(lambda: Job.objects.filter(name=name, status="Running").first(), 30, what=f"job {name} running")
    return runner.Process.from_dict(job.runner)


def ended_job(name: str, timeout: float = 30) -> Job:
    return wait_for(lambda: Job.objects.filter(name=name).exclude(status__in=ACTIVE).first(), timeout, what=f"the end of {name}")


def test_a_local_job_outlives_a_killed_worker_and_the_next_one_sees_it_end(local_workers, owner_api, workspace):
    first = local_workers("first")
    name = submit_local(owner_api, "echo start; sleep 4; echo done")
    process = running_process(name)

    first.kill_group()
    assert runner.is_running(process)  # its own session: the worker's group kill did not reach it
    assert Job.objects.get(name=name).status == "Running"  # and nobody follows it now

    second = local_workers("second")
    job = ended_job(name)
    assert (job.status, job.exit_code, job.status_reason) == ("Completed", 0, ""), job.status_reason
    assert [line.text for line in job.log_lines.all()] == ["start", "done"]  # followed, not started again
    assert job.runner["pid"] == process.pid and not runner.group_alive(process.pid)
    assert "jobs.tasks.resync_jobs" in second.output()  # taken over by the new worker's resync on start
    assert not Job.objects.filter(status__in=ACTIVE).exists()


def test_a_local_job_that_died_with_no_worker_around_fails_as_disappeared(local_workers, owner_api, workspace):
    first = local_workers("first")
    name = submit_local(owner_api, "echo start; sleep 600")
    process = running_process(name)
    wait_for(lambda: Job.objects.get(name=name).log_line_count == 1, 10, what="the first line")

    first.kill_group()
    os.killpg(process.pid, signal.SIGKILL)  # the OOM killer, say: no exit code is written
    wait_for(lambda: not runner.group_alive(process.pid), 10, what="the end of the job's processes")

    local_workers("second")
    job = ended_job(name)
    assert job.status == "Failed" and "disappeared" in job.status_reason, job.status_reason
    assert job.exit_code is None and job.end_time is not None
    assert [line.text for line in job.log_lines.all()] == ["start"]
    assert not Job.objects.filter(status__in=ACTIVE).exists()
