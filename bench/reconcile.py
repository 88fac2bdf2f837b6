"""Benchmark: reconciling instance types into InstanceType CRs against the fake API server (issue #3).

Run:  .venv/bin/python bench/reconcile.py [--records N] [--rounds R] [--limited-rounds L] [--parts abc] [--profile [tottime]]
Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/dockyard_bench_rc; a throwaway test_<name>
database is created next to it and dropped at the end) and CELERY_BROKER_URL (default redis://127.0.0.1:6379/2;
the script uses a private queue, dockyard-bench-rc-<pid>, so it never takes anyone else's tasks).

It prints, in one run, against tests/fake_kube on loopback:
  (a) reconcile-all of N records (the resync's batched path: locked_batch + reconcile_instance_types per BATCH
      records, DB work included) ÷ a raw server-side apply of the same N manifests through a kubernetes ApiClient
      built from the same kubeconfig; a fresh fake per measurement, rounds interleaved, medians. Twice: with the
      per-cluster rate limit as configured (kube.QPS/BURST) and with the limit raised. Goal: ≤ 1.2×. For comparison
      also the per-record path (locked_run + reconcile_instance_type per record, as an API change runs), limit raised.
  (b) the cluster API calls (by verb and resource), cluster writes and DB writes of one sync_cluster of the
      converged, unchanged set. Goal: one LIST per kind, no writes.
  (c) POST → CR stored, p50/p99, for 200 creates at 20/s through the REST API (gunicorn, 2 workers × 4 threads)
      reconciled by a Celery worker (prefork, concurrency 2) on Redis: both subprocesses, started as bin/run starts
      them. This process is the cluster (the fake; a CR's time is when the fake stores it) and the HTTP clients.
"""
import argparse
import cProfile
import gc
import json
import os
import pstats
import queue
import signal
import socket
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dockyard_bench_rc")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/2")
QUEUE = os.environ["DOCKYARD_QUEUE"] = f"dockyard-bench-rc-{os.getpid()}"  # private: never eat others' tasks
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import (  # noqa: E402
    CaptureQueriesContext,
    setup_databases,
    setup_test_environment,
    teardown_databases,
)
from kubernetes import client as k8s  # noqa: E402
from kubernetes import config as k8s_config  # noqa: E402

from compute import reconcile, services  # noqa: E402
from compute.manifests import (  # noqa: E402
    INSTANCE_TYPE_API_VERSION,
    INSTANCE_TYPE_GROUP,
    instance_type_crd,
)
from compute.models import Cluster, ComputeTarget, InstanceType  # noqa: E402
from compute.reconcile.instancetypes import desired_manifest  # noqa: E402
from compute.tasks import BATCH, locked_batch  # noqa: E402
from controlplane.celery import app  # noqa: E402
from controlplane.kube import client as kube  # noqa: E402
from controlplane.kube.objects import FIELD_MANAGER  # noqa: E402
from controlplane.reconciling import ProvisioningState, locked_run  # noqa: E402
from tests.fake_kube import FakeKube  # noqa: E402
from workspaces.services import token_create, workspace_create  # noqa: E402

GOAL_A = 1.2
RAISED = (1e9, 10**9)  # QPS, BURST when the client-side limit is lifted for the measurement
CONFIGURED = (kube.QPS, kube.BURST)
NODES = {"nodes": 2, "gpu_nodes": 1}
WORKSPACE = "bench"
RATE, CREATES, WARMUP_CREATES = 20.0, 200, 40
POSTERS = 8  # client threads sending the POSTs (as many as gunicorn has threads)
WORKER_CONCURRENCY, WEB_WORKERS = 2, 2  # as bin/run starts them
WRITE_SQL = ("INSERT", "UPDATE", "DELETE")
FAKES: list[FakeKube] = []


class Stopwatch:
    """Wall time, and CPU time of this whole process (client and fake; PostgreSQL's own time is not in it)."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


class Task:
    """What locked_run needs of a bound Celery task; a transient cluster error ends the benchmark loudly."""

    class request:
        retries = 0

    @staticmethod
    def retry(countdown=None, exc=None, **kwargs):
        return RuntimeError(f"transient cluster error during the benchmark: {exc}")


def new_fake() -> FakeKube:
    fake = FakeKube(**NODES).start()
    FAKES.append(fake)
    return fake


def stop_fake(fake: FakeKube) -> None:
    fake.stop()
    FAKES.remove(fake)
    assert not fake.server_errors, "the fake API server failed internally:\n" + "\n".join(fake.server_errors)


def live_count(fake: FakeKube) -> int:
    return len(fake.store.view((INSTANCE_TYPE_GROUP, "instancetypes")))


@contextmanager
def patched(obj, name: str, value):
    original = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, original)


def shape(number: int, name: str) -> dict:
    """Varied but valid instance types (CR form): cpu/memory steps, a GPU on every 10th, a selector on every 3rd."""
    cpu, memory = ["100m", "500m", "1", "2", "4"][number % 5], ["256Mi", "1Gi", "2Gi", "4Gi"][number % 4]
    limits = {"cpu": cpu, "memory": memory, **({"nvidia.com/gpu": 1} if number % 10 == 0 else {})}
    spec = {"resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": limits}}
    if number % 3 == 0:
        spec["nodeSelector"] = {"pool": f"p{number % 4}"}
    return {"metadata": {"name": name}, "spec": spec}


# --- setup --------------------------------------------------------------------------------------------------------


def seed(records: int):
    """A user, a workspace, a Kubernetes compute attached to a fake cluster and `records` instance types on it."""
    user = get_user_model().objects.create_user("bench", password="not-used-for-anything")
    workspace = workspace_create(user=user, name=WORKSPACE)
    fake = new_fake()
    with patched(services, "_enqueue", lambda compute: None):  # nothing queued for the worker of part (c)
        compute = services.compute_create(
            user=user, workspace=workspace, data={"name": "k8s-a", "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml()})
    locked_run(Task, ComputeTarget, compute.pk, reconcile.reconcile_compute)
    compute.refresh_from_db()
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    body = {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceTypeList",
            "items": [shape(number, f"it-{number:04d}") for number in range(records)]}
    with patched(services, "_enqueue_instance_type", lambda *args: None):
        services.instance_types_create(user=user, compute=compute, body=body)
    stop_fake(fake)  # each measurement gets a fresh one
    return user, compute.cluster


def point_cluster(cluster: Cluster, fake: FakeKube) -> None:
    """Make `cluster` the fresh fake (its attachments' server and credentials) and install the InstanceType CRD there."""
    cluster.server = fake.url
    cluster.save()
    for compute in cluster.computes.all():  # each attachment acts with its own credentials
        compute.secrets = {**compute.secrets, "kubeconfig": fake.kubeconfig_yaml()}
        compute.properties = {**compute.properties, "server": fake.url}
        compute.save()
    fake.create(instance_type_crd())
    fake.advance(fake.settings.crd_establish_delay)


def reset_records(cluster: Cluster) -> None:
    """Back to 'created, never reconciled', so every reconcile does the work of a first apply (status write too)."""
    InstanceType.objects.filter(cluster=cluster).update(
        provisioning_state=ProvisioningState.CREATING, provisioning_errors=[], observed_generation=0, observed_spec=None)


def fresh_kube_clients(limit: tuple[float, int]) -> None:
    for pinned in kube._clients.values():  # each holds its ApiClient (bound to the checked address)
        pinned.api.close()
    kube._clients.clear()
    kube._buckets.clear()
    kube.QPS, kube.BURST = limit


# --- (a) reconcile-all vs raw server-side apply ----------------------------------------------------------------------


def batched(cluster: Cluster, pks: list[int]) -> None:
    """What the resync enqueues: one reconcile_cluster_instance_types task's code per BATCH records."""
    for start in range(0, len(pks), BATCH):
        locked_batch(Task, cluster.pk, pks[start:start + BATCH])


def per_record(cluster: Cluster, pks: list[int]) -> None:
    """What an API change enqueues: one reconcile_instance_type task's code per record."""
    for pk in pks:
        locked_run(Task, InstanceType, pk, reconcile.reconcile_instance_type, related=("cluster",))


def reconcile_all(cluster: Cluster, pks: list[int], limit: tuple[float, int], keep: bool = False, profiler=None,
                  run=batched):
    """Time (Stopwatch) to reconcile every record as the tasks do (row locks, applies, statuses) against a fresh fake."""
    fake = new_fake()
    point_cluster(cluster, fake)
    reset_records(cluster)
    fresh_kube_clients(limit)
    gc.collect()
    try:
        if profiler:
            profiler.enable()
        with Stopwatch() as elapsed:
            run(cluster, pks)
        if profiler:
            profiler.disable()
        assert live_count(fake) == len(pks), (live_count(fake), len(pks))
        states = Counter(InstanceType.objects.filter(pk__in=pks).values_list("provisioning_state", flat=True))
        assert states == {ProvisioningState.SUCCEEDED: len(pks)}, states
    finally:
        fresh_kube_clients(CONFIGURED)
        if not keep:
            stop_fake(fake)
    return (elapsed, fake) if keep else elapsed


def raw_apply_all(manifests: list[dict], profiler=None) -> Stopwatch:
    """Time to server-side apply the same manifests through a plain ApiClient (no limiter, no DB) on a fresh fake."""
    fake = new_fake()
    fake.create(instance_type_crd())
    fake.advance(fake.settings.crd_establish_delay)
    configuration = k8s.Configuration()
    k8s_config.load_kube_config_from_dict(fake.kubeconfig(), client_configuration=configuration)
    configuration.retries = False
    api = k8s.ApiClient(configuration)
    headers = {"Accept": "application/json", "Content-Type": "application/apply-patch+yaml"}
    query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
    paths = [f"/apis/{m['apiVersion']}/instancetypes/{m['metadata']['name']}" for m in manifests]
    gc.collect()
    try:
        if profiler:
            profiler.enable()
        with Stopwatch() as elapsed:
            for path, manifest in zip(paths, manifests, strict=True):
                response = api.call_api(path, "PATCH", query_params=query, header_params=headers, body=manifest,
                                        auth_settings=["BearerToken"], _preload_content=False, _request_timeout=kube.TIMEOUT)
                json.loads((response[0] if isinstance(response, tuple) else response).data)
        if profiler:
            profiler.disable()
        assert live_count(fake) == len(manifests)
    finally:
        api.close()
        stop_fake(fake)
    return elapsed


def breakdown(cluster: Cluster, pks: list[int]) -> dict:
    """One extra reconcile-all (limit raised) with its time split: HTTP calls, SQL, and the rest (Python)."""
    spent = Counter()
    original = kube.request

    def timed_request(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent["kube"] += time.perf_counter() - started
            spent["calls"] += 1

    def timed_execute(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent["sql"] += time.perf_counter() - started
            spent["queries"] += 1
            spent["writes"] += sql.lstrip().upper().startswith(WRITE_SQL)

    commit = connection._commit

    def timed_commit():
        started = time.perf_counter()
        try:
            return commit()
        finally:
            spent["commit"] += time.perf_counter() - started

    with patched(kube, "request", timed_request), patched(connection, "_commit", timed_commit), \
            connection.execute_wrapper(timed_execute):
        spent["total"] = reconcile_all(cluster, pks, RAISED).wall
    return spent


def part_a(cluster: Cluster, args) -> dict:
    pks = list(InstanceType.objects.filter(cluster=cluster).order_by("pk").values_list("pk", flat=True))
    manifests = [desired_manifest(record) for record in InstanceType.objects.filter(cluster=cluster).order_by("pk")]
    reconcile_all(cluster, pks[:50], RAISED)  # warm-up: imports, first connections, query plans
    raw_apply_all(manifests[:50])
    reconcile_all(cluster, pks[:50], RAISED, run=per_record)
    samples = {"limited": [], "raised": [], "raw": [], "per-record": []}
    runs = {
        "limited": lambda: reconcile_all(cluster, pks, CONFIGURED),
        "raised": lambda: reconcile_all(cluster, pks, RAISED),
        "raw": lambda: raw_apply_all(manifests),
        "per-record": lambda: reconcile_all(cluster, pks, RAISED, run=per_record),
    }
    for number in range(args.rounds):
        kinds = ["raised", "raw", "per-record"] + (["limited"] if number < args.limited_rounds else [])
        kinds = kinds[number % len(kinds):] + kinds[: number % len(kinds)]  # rotate which goes first
        for kind in kinds:
            samples[kind].append(runs[kind]())
        print(f"  round {number + 1}: " + ", ".join(
            f"{kind} {samples[kind][-1].wall:.2f} s (CPU {samples[kind][-1].cpu:.2f} s)" for kind in kinds), flush=True)
    split = breakdown(cluster, pks)
    if args.profile:
        profiler = cProfile.Profile()
        reconcile_all(cluster, pks, RAISED, profiler=profiler)
        print(f"\ncProfile of one reconcile-all (N={len(pks)}, limit raised), sorted by {args.profile}:")
        pstats.Stats(profiler).sort_stats(args.profile).print_stats(30)
        profiler = cProfile.Profile()
        raw_apply_all(manifests, profiler=profiler)
        print(f"\ncProfile of one raw apply of the same manifests, sorted by {args.profile}:")
        pstats.Stats(profiler).sort_stats(args.profile).print_stats(20)
    return {"samples": samples, "split": split, "n": len(pks)}


# --- (b) steady-state resync -----------------------------------------------------------------------------------------


def sync_once(cluster: Cluster, fake: FakeKube) -> dict:
    fake.requests.clear()
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        behind = reconcile.sync_cluster(Cluster.objects.get(pk=cluster.pk))
        elapsed = time.perf_counter() - started
    calls = Counter((record.verb, record.resource) for record in fake.requests.all())
    db_writes = [query["sql"] for query in queries.captured_queries if query["sql"].lstrip().upper().startswith(WRITE_SQL)]
    return {"calls": calls, "writes": len(fake.requests.writes()), "db_writes": db_writes, "queries": len(queries),
            "behind": behind, "seconds": elapsed}


def part_b(cluster: Cluster, pks: list[int]) -> tuple[dict, dict]:
    _, fake = reconcile_all(cluster, pks, RAISED, keep=True)  # everything converged...
    try:
        with patched(kube, "QPS", RAISED[0]), patched(kube, "BURST", RAISED[1]):
            first = sync_once(cluster, fake)  # ...and the cluster's nodes stored, as the first resync does
            steady = sync_once(cluster, fake)  # the measured one: nothing changed anywhere
    finally:
        fresh_kube_clients(CONFIGURED)
        stop_fake(fake)
        Cluster.objects.filter(pk=cluster.pk).update(server="https://bench-a.invalid")  # a port the OS may reuse
    return first, steady


# --- (c) POST → CR with a real worker ----------------------------------------------------------------------------


def stamp_instance_types(fake: FakeKube) -> dict[str, float]:
    """name → time.monotonic() when the fake stored the InstanceType (the moment it exists for any reader)."""
    stamps: dict[str, float] = {}
    write = fake.store.write

    def stamped(key, obj, event_type, old=None):
        result = write(key, obj, event_type, old)
        if key == (INSTANCE_TYPE_GROUP, "instancetypes") and event_type == "ADDED":
            stamps.setdefault(obj["metadata"]["name"], time.monotonic())
        return result

    fake.store.write = stamped
    return stamps


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def spawn(command: list[str], log_path: Path) -> subprocess.Popen:
    """A service on the throwaway database and the private queue (everything else from this environment)."""
    url = urlsplit(os.environ["DATABASE_URL"])
    env = {**os.environ, "DATABASE_URL": url._replace(path="/" + connection.settings_dict["NAME"]).geturl()}
    with open(log_path, "ab") as log:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process's own session (it and its pool children, nothing else); SIGKILL if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Api:
    """JSON POSTs to the web server with a bearer token; thread-safe (urllib3 pool)."""

    def __init__(self, base: str, token: str):
        self.base, self.token = base, token
        self.http = urllib3.PoolManager(maxsize=POSTERS, retries=False, timeout=urllib3.Timeout(connect=5, read=30))

    def post(self, path: str, body: dict) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", "Accept": "application/json"}
        response = self.http.request("POST", self.base + path, body=json.dumps(body).encode(), headers=headers)
        return response.status, response.data


def post_at_rate(api: Api, path: str, names: list[str]) -> tuple[dict, dict, float]:
    """Open loop: POST name i at start + i/RATE from a few client threads (one POST can take longer than 1/RATE).

    Returns when each POST was sent and answered (time.monotonic()) and how far sending fell behind the schedule.
    """
    jobs: queue.Queue = queue.Queue()
    posted, returned, failures = {}, {}, []

    def poster():
        while (job := jobs.get()) is not None:
            number, name = job
            posted[name] = time.monotonic()
            try:
                status, content = api.post(path, shape(number, name))
            except Exception as exc:  # noqa: BLE001 - reported below
                status, content = None, repr(exc)
            returned[name] = time.monotonic()
            if status != 201:
                failures.append((name, status, content[:300]))

    threads = [threading.Thread(target=poster, name=f"poster-{n}", daemon=True) for n in range(POSTERS)]
    for thread in threads:
        thread.start()
    start = time.monotonic() + 0.1
    try:
        for number, name in enumerate(names):
            delay = start + number / RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            jobs.put((number, name))
    finally:
        for _ in threads:
            jobs.put(None)
        for thread in threads:
            thread.join(timeout=60)
    assert not failures, failures[:3]
    assert len(returned) == len(names), f"{len(names) - len(returned)} POSTs did not finish"
    lag = max(posted[name] - (start + number / RATE) for number, name in enumerate(names))
    return posted, returned, lag


def part_c(user, log_path: Path) -> dict:
    """gunicorn and a Celery worker as bin/run starts them, this process as the cluster and as the clients."""
    token = token_create(user=user, name="bench")[1]
    fake = new_fake()
    stamps = stamp_instance_types(fake)
    port = free_port()
    app.control.purge()  # only our private queue: it is this app's default queue
    connection.close()  # nothing of ours holds the database while the services run
    venv = ROOT / ".venv/bin"
    worker = spawn([str(venv / "celery"), "-A", "controlplane", "worker", "--loglevel=WARNING",
                    f"--concurrency={WORKER_CONCURRENCY}", "--without-mingle", "--without-gossip", "--without-heartbeat",
                    "-n", f"{QUEUE}@%h"], log_path)
    web = spawn([str(venv / "gunicorn"), "controlplane.wsgi", "--bind", f"127.0.0.1:{port}",
                 "--workers", str(WEB_WORKERS), "--threads", "4"], log_path)
    api = Api(f"http://127.0.0.1:{port}", token)
    alive = lambda: worker.poll() is None and web.poll() is None  # noqa: E731
    try:
        def up():
            try:
                return api.http.request("GET", f"{api.base}/api/v1/compute-types/", retries=False).status < 500
            except urllib3.exceptions.HTTPError:
                return not alive()
        wait_for(up, 60, "the web server")
        assert alive(), "a service exited"
        status, content = api.post(f"/api/v1/workspaces/{WORKSPACE}/computes/",
                                   {"name": "k8s-c", "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml()})
        assert status == 201, content[:300]
        wait_for(lambda: not alive() or ComputeTarget.objects.filter(
            name="k8s-c", provisioning_state=ProvisioningState.SUCCEEDED).exists(), 90, "the worker to attach the cluster")
        connection.close()
        assert alive(), "a service exited"
        path = f"/api/v1/workspaces/{WORKSPACE}/computes/k8s-c/instancetypes/"
        warm = [f"warm-{number:04d}" for number in range(WARMUP_CREATES)]  # every web and worker process's first
        post_at_rate(api, path, warm)                                       # requests are slow (imports, clients)
        wait_for(lambda: all(name in stamps for name in warm), 60, "the warm-up CRs")

        names = [f"rate-{number:04d}" for number in range(CREATES)]
        posted, returned, lag = post_at_rate(api, path, names)
        wait_for(lambda: all(name in stamps for name in names) or not alive(), 60, "every CR")
        assert alive(), "a service exited"
    finally:
        stop(web)
        stop(worker)
        api.http.clear()
        stop_fake(fake)
    applies, statuses = {}, Counter()
    for record in fake.requests.find(verb="patch", resource="instancetypes"):
        statuses[record.status] += 1
        if record.status and 200 <= record.status < 300:
            applies.setdefault(record.name, record.monotonic)
    latencies = [stamps[name] - posted[name] for name in names]
    slowest = sorted(names, key=lambda name: stamps[name] - posted[name])[-3:]
    return {
        "latencies": latencies,
        "rate": (len(names) - 1) / (max(posted.values()) - min(posted.values())),
        "post": [returned[name] - posted[name] for name in names],
        "reached": [applies[name] - posted[name] for name in names],
        "served": [stamps[name] - applies[name] for name in names],
        "first": latencies[: len(names) // 4], "last": latencies[-len(names) // 4:], "lag": lag,
        "statuses": statuses,
        "slowest": [(name, stamps[name] - posted[name], returned[name] - posted[name], applies[name] - posted[name])
                    for name in slowest],
    }


# --- report ------------------------------------------------------------------------------------------------------------


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def percentile(samples: list[float], pct: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[pct - 1]


def report_a(a: dict) -> list[str]:
    n, samples, split = a["n"], a["samples"], a["split"]
    wall = {kind: statistics.median(t.wall for t in runs) for kind, runs in samples.items()}
    cpu = {kind: statistics.median(t.cpu for t in runs) for kind, runs in samples.items()}
    paired = {kind: statistics.median(t.wall / r.wall for t, r in zip(samples[kind], samples["raw"], strict=False))
              for kind in ("limited", "raised", "per-record")}
    raw, limited, raised = wall["raw"], wall["limited"], wall["raised"]
    qps, burst = CONFIGURED
    print(f"\n(a) reconcile-all of {n} instance types (batches of {BATCH}) ÷ raw server-side apply of the same {n} manifests "
          f"(medians; {len(samples['raw'])} raw, {len(samples['raised'])} raised, {len(samples['limited'])} limited rounds)")
    print(f"    raw apply (plain ApiClient, no limiter, no DB) : {raw:6.2f} s  ({raw / n * 1000:.2f} ms per object; "
          f"CPU of this process {cpu['raw']:.2f} s)")
    print(f"    reconcile-all, limit as configured (QPS={qps:g}, BURST={burst}) : {limited:6.2f} s  "
          f"ratio {limited / raw:5.2f}x  (the limiter alone needs >= {(n - burst) / qps:.1f} s)")
    print(f"    reconcile-all, limit raised (QPS/BURST monkeypatched to {RAISED[0]:g}/{RAISED[1]:g}) : {raised:6.2f} s  "
          f"ratio {raised / raw:5.2f}x  (median of per-round ratios {paired['raised']:.2f}x; "
          f"CPU of this process {cpu['raised']:.2f} s, {cpu['raised'] / cpu['raw']:.2f}x raw's)")
    per_record_wall = wall["per-record"]
    print(f"    for comparison, the per-record path (one locked_run per record), limit raised : {per_record_wall:6.2f} s  "
          f"ratio {per_record_wall / raw:5.2f}x  (median of per-round ratios {paired['per-record']:.2f}x; "
          f"CPU {cpu['per-record']:.2f} s)")
    rest = split["total"] - split["kube"] - split["sql"] - split["commit"]
    print(f"    where one more reconcile-all (limit raised) went, {split['total']:.2f} s: cluster calls {split['kube']:.2f} s "
          f"({int(split['calls'])} calls), SQL {split['sql']:.2f} s ({int(split['queries'])} queries, "
          f"{int(split['writes'])} writes), COMMIT {split['commit']:.2f} s, "
          f"the rest (Python: ORM, kubeconfig parsing, manifests) {rest:.2f} s")
    return [
        f"(a) reconcile-all ÷ raw apply <= {GOAL_A}x, limit as configured : {limited / raw:6.2f}x  {verdict(limited / raw <= GOAL_A)}",
        f"(a) reconcile-all ÷ raw apply <= {GOAL_A}x, limit raised        : {raised / raw:6.2f}x  {verdict(raised / raw <= GOAL_A)}",
    ]


def report_b(b: tuple[dict, dict]) -> list[str]:
    first, steady = b
    print("\n(b) sync_cluster of the converged, unchanged set")
    print(f"    first resync after the reconcile: {dict(first['calls'])}, {first['writes']} cluster writes, "
          f"{len(first['db_writes'])} DB writes (storing the nodes)")
    calls = ", ".join(f"{verb} {resource} x{count}" for (verb, resource), count in sorted(steady["calls"].items()))
    print(f"    steady resync: {calls}; {steady['writes']} cluster writes; {len(steady['db_writes'])} DB writes "
          f"({steady['queries']} queries); {len(steady['behind'])} records behind; {steady['seconds'] * 1000:.0f} ms")
    for sql in steady["db_writes"][:5]:
        print(f"      DB write: {sql[:160]}")
    steady_ok = (dict(steady["calls"]) == {("list", "instancetypes"): 1, ("list", "nodes"): 1}
                 and steady["writes"] == 0 and not steady["db_writes"] and not steady["behind"])
    return [f"(b) steady resync: one LIST per kind, 0 cluster writes, 0 DB writes : {verdict(steady_ok)}"]


def report_c(c: dict) -> list[str]:
    lat = c["latencies"]
    ms = lambda seconds: f"{seconds * 1000:.0f} ms"  # noqa: E731
    print(f"\n(c) POST → CR stored, {len(lat)} creates at {c['rate']:.1f}/s through the REST API (gunicorn, "
          f"{WEB_WORKERS} workers × 4 threads), Celery worker (prefork, concurrency {WORKER_CONCURRENCY}) on Redis")
    print(f"    p50 {ms(percentile(lat, 50))}   p90 {ms(percentile(lat, 90))}   p99 {ms(percentile(lat, 99))}   max {ms(max(lat))}")
    print(f"    POSTs from {POSTERS} client threads, sent at most {ms(c['lag'])} behind the 1/{RATE:g} s schedule")
    print(f"    medians: POST sent → its apply reached the cluster {ms(statistics.median(c['reached']))}; "
          f"apply received → stored {statistics.median(c['served']) * 1000:.1f} ms; POST answered "
          f"{ms(statistics.median(c['post']))} (p99 {ms(percentile(c['post'], 99))}; "
          f"the response is rendered after the commit that queues the task)")
    print(f"    apply requests by status: {dict(c['statuses'])}; slowest: " + ", ".join(
        f"{name} {ms(total)} (answered {ms(answered)}, apply reached {ms(reached)})"
        for name, total, answered, reached in c["slowest"]))
    print(f"    first quarter median {ms(statistics.median(c['first']))}, last quarter median {ms(statistics.median(c['last']))}")
    keeps_up = statistics.median(c["last"]) <= 2 * statistics.median(c["first"]) + 0.05 and c["rate"] >= RATE * 0.95
    return [f"(c) p50 {ms(percentile(lat, 50))}, p99 {ms(percentile(lat, 99))} at {c['rate']:.1f}/s (no numeric goal "
            f"given; keeps up — sent at >= 95 % of {RATE:g}/s, last-quarter median <= 2x first + 50 ms: {verdict(keeps_up)})"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of raw and limit-raised reconcile (default 5)")
    parser.add_argument("--limited-rounds", type=int, default=3,
                        help="of those, rounds that also run the limit-as-configured reconcile (default 3; ~25 s each)")
    parser.add_argument("--timeout", type=int, default=1200, help="give up (and clean up) after this many seconds")
    parser.add_argument("--profile", nargs="?", const="cumulative", choices=["cumulative", "tottime"],
                        help="also print a cProfile of one reconcile-all and one raw apply")
    parser.add_argument("--parts", default="abc", help="which parts to run, e.g. 'c' (default abc)")
    args = parser.parse_args()
    assert args.rounds >= 1 and 1 <= args.limited_rounds <= args.rounds

    def give_up(signum, frame):
        raise TimeoutError(f"the benchmark took longer than {args.timeout} s")

    signal.signal(signal.SIGALRM, give_up)
    signal.alarm(args.timeout)
    setup_test_environment()  # ALLOWED_HOSTS gets "testserver", as for the test client
    databases = setup_databases(verbosity=0, interactive=False)
    log_path = Path(tempfile.gettempdir()) / f"{QUEUE}.log"
    try:
        print(f"N={args.records} records; database {connection.settings_dict['NAME']}; queue {QUEUE}; "
              f"{os.cpu_count()} CPUs, load average {load()}", flush=True)
        user, cluster = seed(args.records)
        summary = []
        if "a" in args.parts:
            print(f"(a) interleaved rounds (seconds per reconcile-all / raw apply; load {load()}):", flush=True)
            summary += report_a(part_a(cluster, args))
        if "b" in args.parts:
            pks = list(InstanceType.objects.filter(cluster=cluster).values_list("pk", flat=True))
            summary += report_b(part_b(cluster, pks))
        if "c" in args.parts:
            print(f"\n(c) running: gunicorn, a Celery worker, {WARMUP_CREATES} warm-up and {CREATES} measured creates "
                  f"(load {load()}) ...", flush=True)
            try:
                c = part_c(user, log_path)
            except BaseException:
                print(f"service log ({log_path}):\n" + log_path.read_text(errors="replace")[-3000:], file=sys.stderr)
                raise
            summary += report_c(c)
        print(f"\nSummary (load average at the end {load()}, {os.cpu_count()} CPUs)")
        for line in summary:
            print(f"  {line}")
    finally:
        signal.alarm(0)
        for fake in list(FAKES):
            fake.stop()
        FAKES.clear()
        fresh_kube_clients(CONFIGURED)
        connection.close()
        teardown_databases(databases, verbosity=0)
        try:
            with app.connection_for_write() as broker:  # our private queue's keys only
                broker.default_channel.client.delete(
                    QUEUE, f"_kombu.binding.{QUEUE}", f"_kombu.binding_permanent.{QUEUE}")
        except Exception as exc:  # noqa: BLE001 - cleanup must not hide the real error
            print(f"could not delete the Redis keys of {QUEUE}: {exc}", file=sys.stderr)
        log_path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
