"""Benchmark: submitting Kubernetes command jobs through the API until they exist as batch/v1 Jobs in the (fake) cluster.

Run:  .venv/bin/python bench/jobs.py [--jobs 500] [--rounds-default 1] [--rounds-raised 2] [--rate 20] [--seconds 30]
                                     [--post-rounds 200] [--parts abc] [--split] [--profile [tottime]] (see --help)
Environment (defaults in brackets): DATABASE_URL [postgres://postgres@127.0.0.1:5432/dy_bench] — the database is
dropped, created and migrated by the script, and dropped at the end unless --keep-db; CELERY_BROKER_URL
[redis://127.0.0.1:6379/6] and REDIS_URL [redis://127.0.0.1:6379/7] — both Redis databases are the benchmark's own and
are flushed at the start and at the end. The Celery messages go to a private queue (dockyard-bench-jobs-<pid>).

It prints, in one run:
  (a) the median (and p90) latency of POST /api/v1/workspaces/bench/jobs/ with a command-job YAML naming a
      Kubernetes compute, through the Django test client (the same middleware, authentication, throttling,
      parser, service and renderer as a real request; no socket), as bench/api_list.py measures requests;
      no worker runs meanwhile (the reconcile messages wait in Redis and are purged).
  (b) queued → exist: N jobs are submitted through the API while the Celery worker (a `celery -A controlplane worker`
      subprocess, prefork, concurrency 2 as bin/run starts it) is not consuming; the clock starts when the worker's
      consumer is turned back on and stops when the N-th batch/v1 Job is seen (a watch on the fake) — divided by the
      time to create the same N manifests with controlplane.kube.client.apply in this process over a Connection built the same
      way (connection_for), on a fresh fake, seen by the same watch. Goal <= 1.3x. Twice: with the limiter as
      shipped (DOCKYARD_KUBE_QPS/BURST 20/40, per cluster per process) and with it raised (1000/1000). Also the CPU
      seconds per job of each party (worker, fake, this process, PostgreSQL backends) and the task times Celery logged.
  (c) submit → Job exists at a steady RATE submits/s for SECONDS (open loop, a few client threads), the worker
      consuming; p50/p90/p99, and the pool's time in reconcile_job and in the observation loop. Goal p99 <= 1 s.
  --split: the reconcile_job task's code per job in this process, stage by stage, as it is and as it was before the
      changes in bench/README.md, and a what-if of submits batched per transaction.
Every fake API server is tests.fake_kube's FakeKube in a separate process, a fresh one per measurement, so its cost is
the same for both sides and not in this process; its controllers (Job → pods, scheduler, kubelet) are off unless
--pods, see bench/README.md. Worker and fakes are stopped at the end, also on an error, Ctrl-C or --timeout.
"""
import argparse
import contextlib
import cProfile
import gc
import json
import os
import pstats
import queue
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import urllib3
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dy_bench")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/6")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/7")
os.environ.setdefault("DOCKYARD_THROTTLE_USER", "1000000/min")  # the check still runs; 500 POSTs in seconds must pass
QUEUE = os.environ["DOCKYARD_QUEUE"] = f"dockyard-bench-jobs-{os.getpid()}"  # private: never eat others' tasks
WORK = Path(tempfile.mkdtemp(prefix="dy-bench-jobs-"))
os.environ.setdefault("DOCKYARD_JOB_DIR", str(WORK / "jobs"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
os.environ.pop("DEBUG", None)

GOAL_B, GOAL_C = 1.3, 1.0
SHIPPED = (20.0, 40)  # DOCKYARD_KUBE_QPS / BURST defaults (checked against settings below)
WORKSPACE = "bench"
NAMESPACE = "default"
WORKER_NAME = f"bench-jobs-{os.getpid()}"
PROCESSES: list[subprocess.Popen] = []


def recreate_database() -> None:
    """DROP and CREATE the benchmark's own database (before Django connects to it)."""
    import psycopg

    url = urlsplit(os.environ["DATABASE_URL"])
    name = url.path.lstrip("/")
    assert name and url.scheme.startswith("postgres"), "DATABASE_URL must name a PostgreSQL database"
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database() -> None:
    import psycopg

    url = urlsplit(os.environ["DATABASE_URL"])
    with psycopg.connect(url._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.path.lstrip("/")}" WITH (FORCE)')


import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from compute import reconcile as compute_reconcile  # noqa: E402
from compute import services as compute_services  # noqa: E402
from compute.connections import connection_for  # noqa: E402
from compute.models import ComputeTarget  # noqa: E402
from controlplane.celery import app  # noqa: E402
from controlplane.kube import client as kube  # noqa: E402
from controlplane.reconciling import ProvisioningState  # noqa: E402
from jobs import tasks as job_tasks  # noqa: E402
from jobs.manifests import kube_job_name  # noqa: E402
from jobs.models import Job  # noqa: E402
from tests.fake_kube.server import ADMIN_TOKEN  # noqa: E402
from workspaces.services import token_create, workspace_create  # noqa: E402

JOB_YAML = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
name: {name}
display_name: bench {name}
experiment_name: bench
description: A benchmark job.
tags:
  team: bench
command: python train.py --epochs ${{{{inputs.epochs}}}} --lr 0.01
inputs:
  epochs: 3
environment:
  image: python:3.11-slim
environment_variables:
  PYTHONUNBUFFERED: "1"
compute: azureml:{compute}
resources:
  instance_count: 1
"""


# --- processes -----------------------------------------------------------------------------------------------------


def spawn(command: list[str], log_path: Path, env: dict | None = None) -> subprocess.Popen:
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env or os.environ.copy(), stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    PROCESSES.append(process)
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
    if process in PROCESSES:
        PROCESSES.remove(process)


def wait_for(predicate, timeout: float, what: str, every: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


FAKE_SERVER = r"""
import signal, sys, threading
from tests.fake_kube.server import FakeKube

kubeconfig, pods, job_seconds, tick = sys.argv[1], sys.argv[2] == "pods", float(sys.argv[3]), float(sys.argv[4])
# Controllers (Job → pods, scheduler, kubelet) off unless asked: they run in the API server's process and GIL here,
# O(objects) per pass, and would be most of what is measured. Roomy nodes, so pods (when on) never wait for room.
kube = FakeKube(nodes=0, auto=pods, reactive=False, tick=tick, job_pod_seconds=job_seconds)
for number in range(2):
    kube.add_node(f"node-{number}", cpu="1000", memory="10000Gi", pods=100000)
kube.start()
attached = threading.Event()  # until SIGUSR1 (the attach is done) controller passes run anyway: the CRD gets Established


def setup_passes():
    while not attached.wait(0.1) and not kube.store.view(("batch", "jobs")):  # never once Jobs arrive, signal or not
        kube.sim.run()
    print("controller passes stopped", flush=True)


if not pods:
    threading.Thread(target=setup_passes, daemon=True).start()
kube.write_kubeconfig(kubeconfig)
print(f"fake kube-apiserver listening on {kube.url}", flush=True)
done = threading.Event()
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda *_: done.set())
signal.signal(signal.SIGUSR1, lambda *_: attached.set())
done.wait()
kube.stop()
for error in kube.server_errors:
    print("fake server error:", error, flush=True)
"""


class Fake:
    """tests.fake_kube's FakeKube serving in its own process (started as `python -m tests.fake_kube` does, with the
    controllers off unless --pods), and its kubeconfig."""

    count = 0

    def __init__(self, args):
        Fake.count += 1
        self.kubeconfig_path = WORK / f"fake-{Fake.count}.kubeconfig"
        self.log = WORK / f"fake-{Fake.count}.log"
        self.pods = args.pods
        mode = "pods" if args.pods else "api"
        self.process = spawn([sys.executable, "-c", FAKE_SERVER, str(self.kubeconfig_path), mode, str(args.job_seconds),
                              str(args.fake_tick)], self.log)
        wait_for(lambda: "listening on" in self.log.read_text() or self.process.poll() is not None, 30, "the fake", 0.05)
        assert self.process.poll() is None, self.log.read_text()
        self.kubeconfig_yaml = self.kubeconfig_path.read_text()
        self.url = yaml.safe_load(self.kubeconfig_yaml)["clusters"][0]["cluster"]["server"]

    def attached(self) -> None:
        """The attachment is checked: no more controller passes (unless --pods)."""
        os.kill(self.process.pid, signal.SIGUSR1)
        if not self.pods:
            wait_for(lambda: "controller passes stopped" in self.log.read_text(), 10, "the fake's controllers to stop", 0.05)

    def stop(self) -> None:
        stop(self.process)
        errors = self.log.read_text(errors="replace").count("fake server error:")
        assert not errors, f"the fake API server failed internally ({self.log}):\n" + self.log.read_text()[-3000:]


class Watch(threading.Thread):
    """A watch on the namespace's batch/v1 Jobs: name → time.monotonic() when the ADDED event arrived here."""

    def __init__(self, fake: Fake):
        super().__init__(name="job-watch", daemon=True)
        self.fake, self.added, self.ready, self.done, self.error = fake, {}, threading.Event(), False, None
        self.http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=None))
        self.response = None
        self.start()
        assert self.ready.wait(10), f"the watch did not start: {self.error}"

    def run(self) -> None:
        version = ""
        try:
            while not self.done:
                query = "watch=true&allowWatchBookmarks=true&timeoutSeconds=900" + (f"&resourceVersion={version}" if version else "")
                self.response = self.http.request(
                    "GET", f"{self.fake.url}/apis/batch/v1/namespaces/{NAMESPACE}/jobs?{query}",
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": "application/json"}, preload_content=False)
                assert self.response.status == 200, self.response.status
                self.ready.set()
                pending = b""
                for chunk in self.response.stream(1 << 16):
                    now = time.monotonic()
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        metadata = event["object"].get("metadata", {})
                        version = metadata.get("resourceVersion", version)
                        if event["type"] == "ADDED":  # (BOOKMARKs every second keep the stream going)
                            self.added.setdefault(metadata["name"], now)
        except Exception as exc:  # noqa: BLE001 - reported by whoever waits on it
            if not self.done:
                self.error = exc
                self.ready.set()

    def wait_all(self, names, timeout: float) -> float:
        names = list(names)
        wait_for(lambda: self.error or all(name in self.added for name in names), timeout,
                 f"{len(names)} Jobs (have {sum(name in self.added for name in names)})", 0.005)
        assert self.error is None, self.error
        return max(self.added[name] for name in names)

    def close(self) -> None:
        """Stop listening (the fake's stop then ends the stream; the thread is a daemon either way)."""
        self.done = True
        try:
            self.response.shutdown()
        except (AttributeError, RuntimeError, OSError):
            pass


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
        command = [*celery, "-A", "controlplane", "worker", *pool, f"--hostname={WORKER_NAME}@%h", "--without-gossip",
                   "--without-mingle", "--without-heartbeat", f"--loglevel={loglevel}", f"--queues={QUEUE}"]
        self.process = spawn(command, self.log, env)
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


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


class CpuMeter:
    """CPU seconds spent by the parties of one measurement: the worker (main and pool processes), the fake, this
    process (clients and the watch) and the PostgreSQL backends of the benchmark's database. Wall times on a shared
    2-core machine swing with others' load; CPU seconds much less."""

    def __init__(self, worker: "Worker | None", fake: "Fake"):
        self.worker, self.fake = worker, fake

    def _pids(self) -> dict[str, list[int]]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
            backends = [row[0] for row in cursor.fetchall()]
        pool = children(self.worker.process.pid) if self.worker else []
        main = [self.worker.process.pid] if self.worker else []
        return {"worker main": main, "worker pool": pool, "fake": [self.fake.process.pid], "bench": [os.getpid()],
                "postgres": backends}

    def snapshot(self) -> dict[str, dict[int, float]]:
        return {party: {pid: process_cpu(pid) for pid in pids} for party, pids in self._pids().items()}

    def __enter__(self):
        self.start = self.snapshot()
        return self

    def stop(self) -> dict[str, float]:
        end = self.snapshot()
        self.spent = {party: sum(max(cpu - self.start[party].get(pid, 0.0), 0.0) for pid, cpu in pids.items())
                      for party, pids in end.items()}
        return self.spent

    def __exit__(self, *exc):
        if not hasattr(self, "spent"):
            self.stop()


def broker_client():
    import redis

    return redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])


def queued() -> int:
    return broker_client().llen(QUEUE)


def flush_redis() -> None:
    import redis

    for url in (os.environ["CELERY_BROKER_URL"], os.environ["REDIS_URL"]):
        redis.Redis.from_url(url).flushdb()


# --- setup ---------------------------------------------------------------------------------------------------------


@contextmanager
def patched(obj, name: str, value):
    original = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, original)


def seed() -> tuple:
    user = get_user_model().objects.create_user("bench", password="not-used-for-anything")
    workspace = workspace_create(user=user, name=WORKSPACE)
    return user, workspace, token_create(user=user, name="bench")[1]


def attach(user, workspace, fake: Fake, name: str) -> ComputeTarget:
    """A Kubernetes compute on `fake`, checked and synced in this process (as the worker would, once)."""
    with patched(compute_services, "_enqueue", lambda compute: None):
        compute = compute_services.compute_create(
            user=user, workspace=workspace, data={"name": name, "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml})
    compute_reconcile.reconcile_compute(compute)
    compute = ComputeTarget.objects.select_related("cluster").get(pk=compute.pk)
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    compute_reconcile.sync_cluster(compute.cluster)
    fake.attached()
    return compute


def set_limit(qps: float, burst: int) -> None:
    """This process's client-side limit (fresh buckets: each measurement starts with a full burst, as a new cluster does)."""
    for pinned in kube._clients.values():  # each holds its ApiClient (bound to the checked address)
        pinned.api.close()
    kube._clients.clear()
    kube._buckets.clear()
    kube.QPS, kube.BURST = qps, burst


# --- the API ---------------------------------------------------------------------------------------------------------


class Submitter:
    """POSTs of job YAML through the Django test client, from `threads` threads (each its own client and DB connection)."""

    def __init__(self, token: str, threads: int):
        self.auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        self.threads = threads
        self.url = f"/api/v1/workspaces/{WORKSPACE}/jobs/"

    def post(self, client: Client, name: str, compute: str):
        response = client.post(self.url, data=JOB_YAML.format(name=name, compute=compute),
                               content_type="application/yaml", **self.auth)
        assert response.status_code == 201, (response.status_code, response.content[:300])
        return response

    def run(self, names: list[str], compute: str, rate: float | None = None) -> dict:
        """POST every name (open loop at `rate`/s when given, else as fast as the threads go); times per name."""
        work: queue.Queue = queue.Queue()
        sent, answered, failures = {}, {}, []

        def poster():
            client = Client()
            try:
                while (item := work.get()) is not None:
                    number, name = item
                    sent[name] = time.monotonic()
                    try:
                        self.post(client, name, compute)
                    except BaseException as exc:  # noqa: BLE001 - reported below
                        failures.append((name, repr(exc)[:300]))
                    answered[name] = time.monotonic()
            finally:
                connection.close()

        threads = [threading.Thread(target=poster, name=f"poster-{n}", daemon=True) for n in range(self.threads)]
        for thread in threads:
            thread.start()
        start = time.monotonic() + 0.05
        try:
            for number, name in enumerate(names):
                if rate:
                    delay = start + number / rate - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                work.put((number, name))
        finally:
            for _ in threads:
                work.put(None)
            for thread in threads:
                thread.join(timeout=120)
        assert not failures, failures[:3]
        lag = max(sent[name] - (start + number / rate) for number, name in enumerate(names)) if rate else 0.0
        return {"sent": sent, "answered": answered, "lag": lag, "start": start}


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


# --- (a) ---------------------------------------------------------------------------------------------------------------


def part_a(submitter: Submitter, compute: ComputeTarget, rounds: int, warmup: int, profile: str | None) -> dict:
    client = Client()
    names = [f"a-{number:05d}" for number in range(warmup + rounds + 1)]
    samples = []
    gc.collect()
    for number, name in enumerate(names[:-1]):
        started = time.perf_counter()
        submitter.post(client, name, compute.name)
        if number >= warmup:
            samples.append(time.perf_counter() - started)
    with CaptureQueriesContext(connection) as queries:
        submitter.post(client, names[-1], compute.name)
    sql = [query["sql"] for query in queries.captured_queries]
    if profile:
        profiler = cProfile.Profile()
        extra = [f"a-p-{number:04d}" for number in range(100)]
        profiler.enable()
        for name in extra:
            submitter.post(client, name, compute.name)
        profiler.disable()
        print(f"\ncProfile of 100 POSTs, sorted by {profile}:")
        pstats.Stats(profiler).sort_stats(profile).print_stats(25)
    app.control.purge()  # the reconciles these POSTs queued: no worker runs them
    retire(compute)
    return {"samples": samples, "sql": sql}


def report_a(a: dict) -> list[str]:
    samples = a["samples"]
    median = statistics.median(samples)
    print(f"\n(a) POST /api/v1/workspaces/{WORKSPACE}/jobs/ (command-job YAML, a Kubernetes compute), Django test client, "
          f"{len(samples)} requests, one after another, no worker running")
    print(f"    median {ms(median)}   p90 {ms(percentile(samples, 90))}   p99 {ms(percentile(samples, 99))}   "
          f"({len(a['sql'])} SQL statements per request)")
    for statement in a["sql"]:
        print(f"      {statement[:150]}")
    return [f"(a) POST job median {ms(median)} (p90 {ms(percentile(samples, 90))}), test client, {len(a['sql'])} queries"]


# --- (b) ---------------------------------------------------------------------------------------------------------------


def retire(compute: ComputeTarget) -> None:
    """Remove a measurement's jobs from the database (its fake is going away): the compute's observation loop then
    stops, and the resync the worker runs when it starts finds nothing behind to re-enqueue."""
    Job.objects.filter(compute=compute).delete()


def drain(timeout: float = 60) -> None:
    """Wait for the queue to empty and the observation loop to stop asking (its ticks are ETA tasks in the worker)."""
    wait_for(lambda: queued() == 0, timeout, "the queue to drain", 0.1)
    time.sleep(job_tasks.OBSERVE_EVERY + 0.5)
    wait_for(lambda: queued() == 0, timeout, "the queue to drain", 0.1)


def dockyard_run(ctx, worker: Worker, n: int, tag: str) -> dict:
    """Submit n jobs with the worker paused; time from resuming it until the n-th Job is seen."""
    fake = Fake(ctx.args)
    compute = attach(ctx.user, ctx.workspace, fake, f"k8s-{tag}")
    watch = Watch(fake)
    try:
        worker.pause()
        names = [f"{tag}-{number:05d}" for number in range(n)]
        posted = ctx.submitter.run(names, compute.name)
        post_seconds = max(posted["answered"].values()) - posted["start"]
        assert queued() >= n, queued()
        offset = worker.log.stat().st_size
        with CpuMeter(worker, fake) as cpu:
            started = time.monotonic()
            worker.resume()
            last = watch.wait_all([kube_job_name(WORKSPACE, name) for name in names], ctx.args.wait)
            cpu.stop()
        elapsed = last - started
        runtimes = worker.runtimes(offset)
        wait_for(lambda: Job.objects.filter(compute=compute, runner__submitted=True).count() == n, 60, "the statuses")
        manifests = [job.manifests for job in Job.objects.filter(compute=compute).order_by("name")]
        retire(compute)
        drain()
    finally:
        watch.close()
        fake.stop()
    assert not watch.error, watch.error
    return {"seconds": elapsed, "post_seconds": post_seconds, "manifests": manifests, "cpu": cpu.spent,
            "runtimes": runtimes}


def raw_run(ctx, manifests: list[list[dict]], limit: tuple[float, int], tag: str) -> float:
    """Create the same manifests with controlplane.kube.client.apply over connection_for() of a compute on a fresh fake."""
    fake = Fake(ctx.args)
    compute = attach(ctx.user, ctx.workspace, fake, f"k8s-{tag}")
    conn = connection_for(compute)
    watch = Watch(fake)
    names = [objects[-1]["metadata"]["name"] for objects in manifests]
    set_limit(*limit)
    gc.collect()
    try:
        with CpuMeter(None, fake) as cpu:
            started = time.monotonic()
            for objects in manifests:
                for manifest in objects:
                    kube.apply(conn, manifest)
            last = watch.wait_all(names, ctx.args.wait)
            cpu.stop()
    finally:
        set_limit(*SHIPPED)
        watch.close()
        fake.stop()
    return {"seconds": last - started, "cpu": cpu.spent}


def cpu_text(cpu: dict[str, float], n: int) -> str:
    return ", ".join(f"{party} {seconds / n * 1000:.1f}" for party, seconds in cpu.items() if seconds) + " ms"


def part_b(ctx, worker: Worker, limit: tuple[float, int], rounds: int, label: str) -> dict:
    warm = dockyard_run(ctx, worker, ctx.args.warmup_jobs, f"w{label[0]}")  # both pool processes' first tasks
    raw_run(ctx, warm["manifests"], limit, f"w{label[0]}-raw")
    samples = []
    n = ctx.args.jobs
    for number in range(rounds):
        tag = f"{label[0]}{number}"
        dock = dockyard_run(ctx, worker, n, tag)
        raw = raw_run(ctx, dock["manifests"], limit, f"{tag}-raw")
        samples.append({"dock": dock["seconds"], "raw": raw["seconds"], "post": dock["post_seconds"],
                        "dock_cpu": dock["cpu"], "raw_cpu": raw["cpu"], "runtimes": dock["runtimes"]})
        print(f"    (b) {label} round {number + 1}: Dockyard {dock['seconds']:.2f} s, raw {raw['seconds']:.2f} s → "
              f"{dock['seconds'] / raw['seconds']:.2f}x  (submitting the {n} through the API took "
              f"{dock['post_seconds']:.2f} s; load {load()})", flush=True)
        print(f"        CPU per job, Dockyard: {cpu_text(dock['cpu'], n)}; raw: {cpu_text(raw['cpu'], n)}", flush=True)
        if dock["runtimes"]:
            busy = sum(dock["runtimes"]) / (ctx.args.concurrency * dock["seconds"])
            print(f"        reconcile_job as Celery timed it: median {ms(statistics.median(dock['runtimes']))}, "
                  f"{len(dock['runtimes'])} logged in the window; the pool was inside tasks {busy:.0%} of the time",
                  flush=True)
    return {"samples": samples, "limit": limit, "label": label}


def report_b(b: dict, n: int, concurrency: int) -> list[str]:
    samples = b["samples"]
    dock = statistics.median(s["dock"] for s in samples)
    raw = statistics.median(s["raw"] for s in samples)
    paired = statistics.median(s["dock"] / s["raw"] for s in samples)
    posting = statistics.median(s["post"] for s in samples)
    parties = ("worker main", "worker pool", "fake", "bench", "postgres")
    dock_cpu = {party: statistics.median(s["dock_cpu"][party] for s in samples) for party in parties}
    raw_cpu = {party: statistics.median(s["raw_cpu"][party] for s in samples) for party in parties}
    qps, burst = b["limit"]
    print(f"\n(b) {n} queued jobs → {n} Jobs in the cluster, limit {b['label']} (QPS {qps:g}, burst {burst}), "
          f"{len(samples)} rounds, medians")
    print(f"    Dockyard (worker, concurrency {concurrency}): {dock:6.2f} s  ({dock / n * 1000:.2f} ms per job)")
    print(f"    raw kube.apply, one process             : {raw:6.2f} s  ({raw / n * 1000:.2f} ms per Job)")
    rounds = ", ".join(f"{s['dock'] / s['raw']:.2f}" for s in samples)
    print(f"    ratio {dock / raw:.2f}x (median of per-round ratios {paired:.2f}x; goal <= {GOAL_B}x)  [per round: {rounds}]")
    print(f"    CPU per job (median), Dockyard: {cpu_text(dock_cpu, n)} = {sum(dock_cpu.values()) / n * 1000:.1f} ms; "
          f"raw: {cpu_text(raw_cpu, n)} = {sum(raw_cpu.values()) / n * 1000:.1f} ms; "
          f"ratio of total CPU {sum(dock_cpu.values()) / sum(raw_cpu.values()):.2f}x")
    runtimes = [value for sample in samples for value in sample["runtimes"]]
    if runtimes:
        print(f"    reconcile_job as Celery timed it (worker log, INFO): median {ms(statistics.median(runtimes))}, "
              f"p90 {ms(percentile(runtimes, 90))}; {concurrency} pool processes → at best "
              f"{statistics.median(runtimes) / concurrency * 1000:.1f} ms per job")
    if qps < 1000:
        print(f"    the limiter alone: raw >= {max(n - burst, 0) / qps:.1f} s (one bucket); Dockyard >= "
              f"{max(n - concurrency * burst, 0) / (concurrency * qps):.1f} s ({concurrency} pool processes, a bucket each)")
    print(f"    (submitting the {n} through the API beforehand took {posting:.2f} s, {n / posting:.0f}/s from "
          f"the client threads; not in the ratio)")
    verdict = "PASS" if dock / raw <= GOAL_B else "MISS"
    return [f"(b) limit {b['label']:8s} (QPS {qps:g}/burst {burst}): Dockyard {dock:.2f} s / raw {raw:.2f} s = "
            f"{dock / raw:.2f}x (per-round {paired:.2f}x) goal <= {GOAL_B}x: {verdict}"]


# --- (c) ---------------------------------------------------------------------------------------------------------------


def part_c(ctx, worker: Worker, label: str) -> dict:
    args = ctx.args
    fake = Fake(args)
    compute = attach(ctx.user, ctx.workspace, fake, f"k8s-c{label[0]}")
    watch = Watch(fake)
    try:
        names = [f"c{label[0]}-{number:05d}" for number in range(int(args.rate * args.seconds))]
        offset = worker.log.stat().st_size
        with CpuMeter(worker, fake) as cpu:
            posted = ctx.submitter.run(names, compute.name, rate=args.rate)
            kube_names = {name: kube_job_name(WORKSPACE, name) for name in names}
            watch.wait_all(kube_names.values(), args.wait)
            cpu.stop()
        window = max(watch.added.values()) - posted["start"]
        tasks = {task: worker.runtimes(offset, task) for task in ("reconcile_job", "observe_jobs")}
        latencies = [watch.added[kube_names[name]] - posted["sent"][name] for name in names]
        answered = [posted["answered"][name] - posted["sent"][name] for name in names]
        sent = posted["sent"]
        retire(compute)
        drain()
    finally:
        watch.close()
        fake.stop()
    return {"latencies": latencies, "answered": answered, "lag": posted["lag"], "label": label, "cpu": cpu.spent,
            "tasks": tasks, "window": window, "concurrency": args.concurrency,
            "rate": (len(names) - 1) / (max(sent.values()) - min(sent.values()))}


def report_c(c: dict, rate: float) -> list[str]:
    lat = c["latencies"]
    quarter = len(lat) // 4
    p99 = percentile(lat, 99)
    print(f"\n(c) submit → Job exists, {len(lat)} jobs at {c['rate']:.1f}/s (asked {rate:g}/s), limit {c['label']}")
    print(f"    p50 {ms(percentile(lat, 50))}   p90 {ms(percentile(lat, 90))}   p99 {ms(p99)}   max {ms(max(lat))}")
    print(f"    POST answered: median {ms(statistics.median(c['answered']))}, p99 {ms(percentile(c['answered'], 99))}; "
          f"POSTs sent at most {ms(c['lag'])} behind schedule")
    print(f"    median of the first quarter {ms(statistics.median(lat[:quarter]))}, of the last quarter "
          f"{ms(statistics.median(lat[-quarter:]))}")
    print(f"    CPU per job (bench = the API requests and the watch): {cpu_text(c['cpu'], len(lat))}")
    pool = c["concurrency"] * c["window"]
    for task, runtimes in c["tasks"].items():
        if runtimes:
            print(f"    {task}: {len(runtimes)} runs, median {ms(statistics.median(runtimes))}, max {ms(max(runtimes))}, "
                  f"{sum(runtimes):.1f} s in all = {sum(runtimes) / pool:.0%} of the pool's time in the window")
    verdict = "PASS" if p99 <= GOAL_C else "MISS"
    return [f"(c) limit {c['label']:8s}: p50 {ms(percentile(lat, 50))}, p99 {ms(p99)} at {c['rate']:.1f}/s "
            f"(goal p99 <= {GOAL_C:g} s): {verdict}"]


# --- profile: one worker's per-job cost, in this process ----------------------------------------------------------------


class Spent:
    def __init__(self):
        self.totals = Counter()
        self.statements = Counter()


STAGES = [  # (module, attribute, label): timed inclusively (they nest) in the per-job split
    ("controlplane.reconciling", "locked_run", "locked_run (lock, reconcile, commit)"),
    ("jobs.reconcile.kubernetes", "render", "  render (instance type + manifests)"),
    ("jobs.reconcile.kubernetes", "instance_type_shape", "    instance_type_shape"),
    ("jobs.reconcile.kubernetes", "connection_for", "  connection_for"),
    ("controlplane.kube.client", "request", "  kube.request (the apply)"),
    ("jobs.reconcile.kubernetes", "transition", "  transition (+ event INSERT)"),
    ("jobs.reconcile.kubernetes", "save", "  save (status UPDATE)"),
    ("jobs.reconcile", "save", "  save (observed_generation UPDATE)"),
    ("jobs.tasks", "ensure_observed", "ensure_observed"),
]


def as_before(stack: contextlib.ExitStack) -> None:
    """The submit path as it was before bench/README's jobs changes: the whole instance_type_get row, and the generation
    written by reconcile_job in an UPDATE of its own."""
    from compute.selectors import instance_type_get
    from controlplane.kube.resources import Shape
    from jobs.reconcile import kubernetes

    def whole_row(compute, name):
        row = instance_type_get(compute=compute, name=name)
        spec = row and {"nodeSelector": row["nodeSelector"], "resources": row["resources"]}
        return row and Shape.from_spec(row["name"], spec).on(compute.properties.get("node_selector"))

    if hasattr(kubernetes, "instance_type_shape"):
        stack.enter_context(patched(kubernetes, "instance_type_shape", whole_row))
    if hasattr(kubernetes, "generation_seen"):
        stack.enter_context(patched(kubernetes, "generation_seen", lambda job: []))


def in_process_split(ctx, n: int, profile: str | None, before: bool = False) -> dict:
    """The reconcile_job task's code for n queued jobs in this process (no Celery), its time split and queries."""
    import importlib

    fake = Fake(ctx.args)
    compute = attach(ctx.user, ctx.workspace, fake, "k8s-prof-before" if before else "k8s-prof")
    names = [f"p{'b' if before else ''}-{number:05d}" for number in range(n)]
    ctx.submitter.run(names, compute.name)
    app.control.purge()  # no worker runs: the reconciles are run below, directly
    ids = list(Job.objects.filter(compute=compute).order_by("pk").values_list("pk", flat=True))
    set_limit(1e9, 10**9)
    spent, statements = Counter(), Counter()

    def timed(label, function):
        def wrapper(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - wall
                spent["cpu " + label] += time.thread_time() - cpu
                spent["calls " + label] += 1
        return wrapper

    def timed_execute(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent["SQL"] += time.perf_counter() - started
            spent["calls SQL"] += 1
            statements[" ".join(sql.split()[:4])[:70]] += 1

    patches = [(connection, "_commit", timed("COMMIT", connection._commit)),
               (job_tasks.observe_jobs, "delay", lambda *a, **k: None)]
    for module, attribute, label in STAGES:
        target = importlib.import_module(module)
        if hasattr(target, attribute):
            patches.append((target, attribute, timed(label, getattr(target, attribute))))
    profiler = cProfile.Profile() if profile else None
    try:
        with contextlib.ExitStack() as stack:
            for target, attribute, value in patches:
                stack.enter_context(patched(target, attribute, value))
            stack.enter_context(connection.execute_wrapper(timed_execute))
            if before:
                as_before(stack)
            job_tasks.reconcile_job(ids[0])  # warm: the client, the first queries
            spent.clear()
            statements.clear()
            if profiler:
                profiler.enable()
            started, cpu = time.perf_counter(), time.thread_time()
            for pk in ids[1:]:
                job_tasks.reconcile_job(pk)
            spent["total"], spent["cpu total"] = time.perf_counter() - started, time.thread_time() - cpu
            if profiler:
                profiler.disable()
        assert Job.objects.filter(pk__in=ids, runner__submitted=True).count() == n
    finally:
        set_limit(*SHIPPED)
        retire(compute)
        fake.stop()
    if profiler:
        print(f"\ncProfile of reconcile_job for {n - 1} jobs (in this process), sorted by {profile}:")
        pstats.Stats(profiler).sort_stats(profile).print_stats(45)
    return {"spent": spent, "statements": statements, "n": n - 1, "before": before}


UPDATE_ROW = "(%s::bigint, %s::text, %s::text, %s::jsonb, %s::jsonb, %s::bigint, %s::timestamptz)"


def batched_submit_whatif(ctx, n: int, batch: int) -> dict:
    """What-if (not Dockyard's code): submit queued jobs `batch` per transaction, as compute.tasks batches instance
    types — one locking SELECT per batch, the instance type looked up once, the applies, one INSERT of the events and
    one UPDATE … FROM (VALUES …) of the rows; the same manifests, statuses and events as reconcile_job writes."""
    from django.db import transaction
    from django.utils import timezone

    from compute import shapes
    from compute.models import InstanceType
    from jobs.choices import JobStatus
    from jobs.manifests import job_manifests
    from jobs.models import JobEvent

    fake = Fake(ctx.args)
    compute = attach(ctx.user, ctx.workspace, fake, f"k8s-batch{batch}")
    ctx.submitter.run([f"bw{batch}-{number:05d}" for number in range(n)], compute.name)
    app.control.purge()
    ids = list(Job.objects.filter(compute=compute).order_by("pk").values_list("pk", flat=True))
    set_limit(1e9, 10**9)
    try:
        wall, cpu = time.perf_counter(), time.thread_time()
        for start in range(0, n, batch):
            with transaction.atomic():
                rows = Job.objects.select_for_update(skip_locked=True, of=("self",)).select_related("workspace", "compute")
                jobs = list(rows.filter(pk__in=ids[start:start + batch]).order_by("pk"))
                target = jobs[0].compute
                conn = connection_for(target)
                shapes_by_name = {}
                for name in {job.instance_type for job in jobs}:
                    record = InstanceType.objects.filter(cluster_id=target.cluster_id, name=name).first()
                    extension = target.properties.get("node_selector")
                    shapes_by_name[name] = shapes.DEFAULT_SHAPE.on(extension) if record is None else record.shape(extension)
                events, params = [], []
                for job in jobs:
                    shape = shapes_by_name[job.instance_type]
                    kube_name = kube_job_name(job.workspace.name, job.name)
                    manifests = job_manifests(
                        spec=job.spec, job_name=kube_name, namespace=target.properties.get("namespace", "default"),
                        workspace=job.workspace.name, shape=shape)
                    for manifest in manifests:
                        kube.apply(conn, manifest)
                    now = timezone.now()
                    reason = f"Submitted as Job {kube_name}; waiting for its pods to be scheduled."
                    events.append(JobEvent(job=job, time=now, type="Normal", reason=JobStatus.QUEUED, message=reason))
                    runner = {"namespace": manifests[-1]["metadata"]["namespace"], "job": kube_name, "submitted": True,
                              "pods": {}}
                    params += [job.pk, JobStatus.QUEUED, reason, json.dumps(manifests), json.dumps(runner),
                               job.generation, now]
                JobEvent.objects.bulk_create(events)
                with connection.cursor() as cursor:
                    cursor.execute(
                        f"UPDATE {Job._meta.db_table} AS t SET status = v.status, status_reason = v.reason, "
                        "manifests = v.manifests, runner = v.runner, observed_generation = v.generation, updated_at = v.at "
                        f"FROM (VALUES {', '.join([UPDATE_ROW] * len(jobs))}) AS v(id, status, reason, manifests, runner, "
                        "generation, at) WHERE t.id = v.id", params)
        spent = {"total": time.perf_counter() - wall, "cpu": time.thread_time() - cpu}
        assert Job.objects.filter(pk__in=ids, runner__submitted=True, status=JobStatus.QUEUED).count() == n
    finally:
        set_limit(*SHIPPED)
        retire(compute)
        fake.stop()
    return {**spent, "n": n, "batch": batch}


def report_split(split: dict) -> None:
    spent, n = split["spent"], split["n"]
    per = lambda key: spent[key] / n * 1000  # noqa: E731
    what = "as it was before the changes in bench/README (monkeypatched back)" if split["before"] else "as it is"
    print(f"\nWhere one reconcile_job goes, {what}: its task code run in this process (no Celery, no worker), "
          f"limit off, {n} jobs; ms per job, wall (CPU of this thread)")
    print(f"    {'the whole task':40s} {per('total'):7.2f} ({per('cpu total'):6.2f})")
    for label in dict.fromkeys(label for _, _, label in STAGES):
        print(f"    {label:40s} {per(label):7.2f} ({per('cpu ' + label):6.2f})  x{spent['calls ' + label] / n:.1f}")
    print(f"    {'COMMIT':40s} {per('COMMIT'):7.2f} ({per('cpu COMMIT'):6.2f})")
    print(f"    {'SQL (every statement)':40s} {per('SQL'):7.2f}           x{spent['calls SQL'] / n:.1f}")
    for statement, count in split["statements"].most_common():
        print(f"      {count / n:4.1f} x {statement}")


# --- main --------------------------------------------------------------------------------------------------------------


class Context:
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500, help="(b) jobs per measurement (default 500)")
    parser.add_argument("--rounds-default", type=int, default=1, help="(b) rounds with the shipped limit (default 1)")
    parser.add_argument("--rounds-raised", type=int, default=2, help="(b) rounds with the limit raised (default 2)")
    parser.add_argument("--raised", default="1000/1000", help="QPS/BURST of the raised limit (default 1000/1000)")
    parser.add_argument("--warmup-jobs", type=int, default=40, help="(b) warm-up jobs after each worker start")
    parser.add_argument("--rate", type=float, default=20.0, help="(c) submits per second (default 20)")
    parser.add_argument("--seconds", type=float, default=30.0, help="(c) how long (default 30)")
    parser.add_argument("--c-limits", default="shipped", help="(c) with which limits: shipped, raised or both")
    parser.add_argument("--post-rounds", type=int, default=200, help="(a) measured POSTs (default 200)")
    parser.add_argument("--post-warmup", type=int, default=20)
    parser.add_argument("--posters", type=int, default=4, help="client threads posting in (b) and (c) (default 4)")
    parser.add_argument("--concurrency", type=int, default=2, help="worker pool processes (default 2, as bin/run)")
    parser.add_argument("--worker-loglevel", default="INFO", help="as bin/run (INFO)")
    parser.add_argument("--pods", action="store_true",
                        help="run the fake's controllers (pods for the Jobs, wall clock): realistic for the observation "
                             "loop, but the fake's own O(objects) passes then dominate on 2 cores")
    parser.add_argument("--job-seconds", type=float, default=10.0, help="with --pods: how long Job pods run (default 10)")
    parser.add_argument("--fake-tick", type=float, default=0.5, help="with --pods: seconds between controller passes")
    parser.add_argument("--wait", type=float, default=120.0, help="longest wait for the Jobs of one measurement")
    parser.add_argument("--parts", default="abc", help="which parts to run (default abc)")
    parser.add_argument("--profile", nargs="?", const="tottime", choices=["cumulative", "tottime"],
                        help="print cProfiles: of 100 POSTs (a) and of the per-job split (implies --split)")
    parser.add_argument("--split", action="store_true",
                        help="also time the reconcile_job task's code per job in this process, stage by stage")
    parser.add_argument("--split-jobs", type=int, default=201, help="jobs for the per-job split (default 201)")
    parser.add_argument("--profile-worker", metavar="FILE",
                        help="run the worker as one process (solo pool) under cProfile, stats to FILE-<qps>")
    parser.add_argument("--worker-db-reuse", type=int, default=0, metavar="N",
                        help="what-if: start the worker with CELERY_DB_REUSE_MAX=N (Celery then keeps the DB connection "
                             "for N tasks instead of opening one per task)")
    parser.add_argument("--keep-db", action="store_true", help="keep the database at the end")
    parser.add_argument("--timeout", type=int, default=900, help="give up (and clean up) after this many seconds")
    args = parser.parse_args()
    raised_qps, raised_burst = args.raised.split("/")
    raised = (float(raised_qps), int(raised_burst))
    assert (settings.DOCKYARD_KUBE_QPS, settings.DOCKYARD_KUBE_BURST) == SHIPPED, "DOCKYARD_KUBE_QPS/BURST are set here"

    def give_up(signum, frame):
        raise TimeoutError(f"the benchmark took longer than {args.timeout} s")

    signal.signal(signal.SIGALRM, give_up)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.alarm(args.timeout)
    started = time.monotonic()
    workers = []
    try:
        recreate_database()  # (Django is set up but not connected yet)
        flush_redis()
        call_command("migrate", verbosity=0, interactive=False)
        setup_test_environment()  # ALLOWED_HOSTS gets "testserver", as for the test client
        ctx = Context()
        ctx.args = args
        ctx.user, ctx.workspace, token = seed()
        ctx.submitter = Submitter(token, args.posters)
        print(f"database {connection.settings_dict['NAME']}, broker {os.environ['CELERY_BROKER_URL']}, queue {QUEUE}; "
              f"{os.cpu_count()} CPUs, load average {load()}", flush=True)
        summary = []
        if "a" in args.parts:
            fake = Fake(args)
            try:
                compute = attach(ctx.user, ctx.workspace, fake, "k8s-a")
                summary += report_a(part_a(ctx.submitter, compute, args.post_rounds, args.post_warmup, args.profile))
            finally:
                fake.stop()
        c_limits = {"shipped": ["shipped"], "raised": ["raised"], "both": ["shipped", "raised"]}[args.c_limits]
        reports = []
        for label, limit, rounds in (("shipped", SHIPPED, args.rounds_default), ("raised", raised, args.rounds_raised)):
            want_b, want_c = "b" in args.parts and rounds > 0, "c" in args.parts and label in c_limits
            if not (want_b or want_c):
                continue
            worker = Worker(*limit, args.concurrency, args.worker_loglevel, args.profile_worker, args.worker_db_reuse)
            workers.append(worker)
            try:
                if want_b:
                    print(f"\n(b) running, limit {label} (load {load()}) ...", flush=True)
                    b = part_b(ctx, worker, limit, rounds, label)
                    reports.append(lambda b=b: report_b(b, args.jobs, args.concurrency))
                if want_c:
                    print(f"\n(c) running, limit {label}: {args.rate:g}/s for {args.seconds:g} s (load {load()}) ...",
                          flush=True)
                    if not want_b:
                        dockyard_run(ctx, worker, args.warmup_jobs, f"w{label[0]}")
                    c = part_c(ctx, worker, label)
                    reports.append(lambda c=c: report_c(c, args.rate))
            finally:
                worker.stop()
        for report in reports:
            summary += report()
        if args.split or args.profile:
            report_split(in_process_split(ctx, args.split_jobs, None, before=True))
            report_split(in_process_split(ctx, args.split_jobs, args.profile))
            for batch in (1, 50):
                whatif = batched_submit_whatif(ctx, args.split_jobs - 1, batch)
                print(f"    what-if, submits batched {batch} per transaction (one lock SELECT, one event INSERT, one "
                      f"UPDATE … FROM VALUES): {whatif['total'] / whatif['n'] * 1000:.2f} ms per job "
                      f"({whatif['cpu'] / whatif['n'] * 1000:.2f} ms CPU)", flush=True)
        print(f"\nSummary ({time.monotonic() - started:.0f} s; load average at the end {load()}, {os.cpu_count()} CPUs)")
        for line in summary:
            print(f"  {line}")
    except BaseException:
        for worker in workers:
            print(f"worker log ({worker.log}):\n" + worker.log.read_text(errors="replace")[-3000:], file=sys.stderr)
        for log in sorted(WORK.glob("fake-*.log"))[-2:]:
            print(f"fake log ({log}):\n" + log.read_text(errors="replace")[-2000:], file=sys.stderr)
        raise
    finally:
        signal.alarm(0)
        for process in list(PROCESSES):
            stop(process)
        set_limit(*SHIPPED)
        connection.close()
        try:
            flush_redis()
        except Exception as exc:  # noqa: BLE001 - cleanup must not hide the real error
            print(f"could not flush the benchmark's Redis databases: {exc}", file=sys.stderr)
        if not args.keep_db:
            drop_database()
        subprocess.run(["rm", "-rf", str(WORK)], check=False)


if __name__ == "__main__":
    main()
