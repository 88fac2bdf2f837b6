"""Benchmark: POST score through Dockyard against a direct call to the same inference server (issue #5).

Run:  .venv/bin/python bench/score.py [--rounds N] [--warmup N] [--model-ms MS] [--gunicorn OPTIONS] [--profile [tottime]]
Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/dy_ep_bench; a throwaway test_<name> database
is created next to it, migrated, and dropped at the end), CELERY_BROKER_URL (default redis://127.0.0.1:6379/13; the
Celery messages go to a private queue, dockyard-bench-score-<pid>) and REDIS_URL (default redis://127.0.0.1:6379/5).

Production-like: `gunicorn controlplane.wsgi --workers 2 --threads 4 --access-logfile -` and `celery -A controlplane
worker --concurrency=2` as bin/run starts them (subprocesses on the throwaway database, PostgreSQL and Redis). Through
the REST API the benchmark creates a local endpoint and one deployment of the test adder script; the worker starts its
inference server (azureml-inference-server-http under gunicorn, as for any local deployment); traffic goes 100 % to it.
Then it sends the same JSON body, interleaved and rotating which goes first, from one persistent httpx.Client
(keep-alive pools per origin; the inference server's sync workers close every connection, so the direct calls connect
each time, as Dockyard's forward does):
  - through Dockyard:   POST /api/v1/workspaces/bench/online-endpoints/bench/score  (the endpoint's key)
  - directly:           POST /score on the server's Unix socket (local servers have no TCP port)
  - and, to split Dockyard's share: the score URL with a wrong key (routing query, key check, a 401: everything but the
    forward) and a URL no route matches (a 404 without the database: the floor of any answer from Dockyard's gunicorn
    and Django middleware).
It prints p50/p90/p99 of each, the ratio of the p50s (goal ≤ 1.5×) and the ratio per block of rounds.
--model-ms N makes the model sleep N ms per request (Dockyard's share against real work); --gunicorn replaces Dockyard's
gunicorn options (to compare worker types). Everything it starts is stopped at the end (the endpoint is deleted through
the API, which stops the server; the servers' process groups are killed if that failed), also on an error, Ctrl-C or
--timeout.

--profile: also times the score path inside this process (Django's test client on the same database, forwarding to the
same server): SQL queries of one request, and a cProfile of 200 requests.
"""
import argparse
import cProfile
import json
import logging
import os
import pstats
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dy_ep_bench")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/13")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/5")
QUEUE = os.environ["DOCKYARD_QUEUE"] = f"dockyard-bench-score-{os.getpid()}"  # private: never eat others' tasks
DEPLOYMENT_DIR = Path(tempfile.mkdtemp(prefix="dy-bench-score-"))
os.environ["DOCKYARD_DEPLOYMENT_DIR"] = str(DEPLOYMENT_DIR)
SHARED_DIR = Path(tempfile.mkdtemp(prefix="dy-bench-code-"))  # code the sandbox may read (DOCKYARD_LOCAL_PATHS)
os.environ["DOCKYARD_LOCAL_PATHS"] = os.pathsep.join([str(SHARED_DIR), str(ROOT / "endpoints" / "tests" / "data")])
os.environ["DOCKYARD_LOCAL_COMPUTE"] = "true"
os.environ.setdefault("DOCKYARD_THROTTLE_SCORE_AUTH", "1000000/min")  # the "refused" calls are wrong keys on purpose
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

import django  # noqa: E402

django.setup()
logging.getLogger("httpx").setLevel(logging.WARNING)  # this process's own calls: one INFO line each otherwise

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import (  # noqa: E402
    CaptureQueriesContext,
    setup_databases,
    setup_test_environment,
    teardown_databases,
)

from compute.runners import local as runner  # noqa: E402
from controlplane.celery import app  # noqa: E402
from workspaces.services import token_create, workspace_create  # noqa: E402

GOAL = 1.5
WORKSPACE, ENDPOINT, DEPLOYMENT = "bench", "bench", "blue"
ADDER = ROOT / "endpoints" / "tests" / "data" / "adder"
BODY = json.dumps({"numbers": [1, 2, 3, 4]}).encode()
WEB_ARGS = "--workers 2 --threads 4 --access-logfile -"  # as bin/run starts Dockyard
BLOCKS = 5  # the measured rounds are also reported in this many consecutive blocks (drift on a shared machine)
STARTED: list[subprocess.Popen] = []


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spawn(command: list[str], log_path: Path) -> subprocess.Popen:
    """A service on the throwaway database and the private queue (everything else from this environment)."""
    url = urlsplit(os.environ["DATABASE_URL"])
    env = {**os.environ, "DATABASE_URL": url._replace(path="/" + connection.settings_dict["NAME"]).geturl()}
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    STARTED.append(process)
    return process


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process's own session (it and its children, nothing else); SIGKILL if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


def stop_servers() -> None:
    """Kill every inference server this run started (their process groups are detached from the worker)."""
    for pid_file in DEPLOYMENT_DIR.glob(f"*/*/*/{runner.PID_FILE}"):
        process = runner.adopt(pid_file.parent)
        if process and runner.group_alive(process.pid):
            runner.kill_group(process, grace=1.0)


class Services:
    """gunicorn and a Celery worker as bin/run starts them; an API client with the bench user's token."""

    def __init__(self, log_path: Path, web_args: list[str]):
        venv = ROOT / ".venv/bin"
        self.port = free_port()
        app.control.purge()  # only our private queue: it is this app's default queue
        self.worker = spawn([str(venv / "celery"), "-A", "controlplane", "worker", "--loglevel=WARNING", "--concurrency=2",
                             "--without-mingle", "--without-gossip", "--without-heartbeat", "-n", f"{QUEUE}@%h"], log_path)
        self.web = spawn([str(venv / "gunicorn"), "controlplane.wsgi", "--bind", f"127.0.0.1:{self.port}", *web_args], log_path)
        self.base = f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.worker.poll() is None and self.web.poll() is None


def api_call(http: httpx.Client, method: str, url: str, token: str, body: dict | None = None) -> httpx.Response:
    return http.request(method, url, json=body, headers={"Authorization": f"Bearer {token}"})


def slow_adder(milliseconds: int) -> Path:
    """The adder with a model that takes `milliseconds` per request (time.sleep), to see the overhead against real work."""
    folder = SHARED_DIR / "slow-adder"
    folder.mkdir()
    source = (ADDER / "score.py").read_text()
    (folder / "score.py").write_text(source.replace("def run(raw_data):\n", f"def run(raw_data):\n    time.sleep({milliseconds / 1000!r})\n")
                                     .replace("import json\n", "import json\nimport time\n"))
    return folder


def set_up(http: httpx.Client, services: Services, token: str, code: Path) -> tuple[str, str]:
    """The endpoint and its deployment through the API; returns the endpoint's key and the server's socket."""
    def up():
        try:
            return http.get(f"{services.base}/api/v1/compute-types/").status_code < 500
        except httpx.HTTPError:
            return not services.alive()

    wait_for(up, 60, "the web server")
    assert services.alive(), "a service exited"
    endpoints = f"{services.base}/api/v1/workspaces/{WORKSPACE}/online-endpoints"
    response = api_call(http, "POST", f"{endpoints}/", token, {"name": ENDPOINT, "compute": "local"})
    assert response.status_code == 201, response.text[:500]
    key = response.json()["keys"]["primaryKey"]
    body = {"name": DEPLOYMENT, "code_configuration": {"code": str(code), "scoring_script": "score.py"},
            "environment_variables": {"DEPLOYMENT_NAME": DEPLOYMENT}}
    response = api_call(http, "POST", f"{endpoints}/{ENDPOINT}/deployments/", token, body)
    assert response.status_code == 201, response.text[:500]

    def serving():
        row = api_call(http, "GET", f"{endpoints}/{ENDPOINT}/deployments/{DEPLOYMENT}/", token).json()
        assert row["provisioning_state"] != "Failed" and services.alive(), row
        return row if row["provisioning_state"] == "Succeeded" and row["status"].get("state") == "Running" else None

    wait_for(serving, 120, "the deployment's server", 0.25)
    response = api_call(http, "PATCH", f"{endpoints}/{ENDPOINT}/", token, {"traffic": {DEPLOYMENT: 100}})
    assert response.status_code == 200, response.text[:500]
    from endpoints.models import OnlineDeployment

    path = OnlineDeployment.objects.get(name=DEPLOYMENT).runner["socket"]
    connection.close()
    return key, path


def tear_down(http: httpx.Client, services: Services, token: str) -> None:
    """Delete the endpoint through the API: the worker stops the server and removes the rows."""
    url = f"{services.base}/api/v1/workspaces/{WORKSPACE}/online-endpoints/{ENDPOINT}/"
    if api_call(http, "DELETE", url, token).status_code == 202:
        wait_for(lambda: api_call(http, "GET", url, token).status_code == 404, 60, "the endpoint's removal", 0.25)


def call(http: httpx.Client, url: str, headers: dict, expected: int = 200, client: httpx.Client | None = None) -> tuple[float, bytes]:
    http = client or http
    started = time.perf_counter()
    response = http.post(url, content=BODY, headers=headers)
    elapsed = time.perf_counter() - started
    assert response.status_code == expected, (url, response.status_code, response.text[:300])
    return elapsed, response.content


def measure(http: httpx.Client, calls: dict[str, tuple[str, dict, int]], rounds: int, warmup: int) -> dict:
    """Interleave the calls, rotating which goes first, so drift on a noisy machine hits all alike."""
    samples = {name: [] for name in calls}
    order = list(calls.items())
    answers = {}
    for number in range(warmup + rounds):
        shift = number % len(order)
        for name, (url, headers, expected, *client) in order[shift:] + order[:shift]:
            elapsed, content = call(http, url, headers, expected, *client)
            answers.setdefault(expected, set()).add(content)
            if number >= warmup:
                samples[name].append(elapsed)
    assert len(answers[200]) == 1, f"the two paths answered differently: {answers[200]}"
    return samples


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return statistics.median(samples), cuts[89], cuts[98]


def report(samples: dict) -> float:
    through, direct, refused, floor = samples["dockyard"], samples["direct"], samples["refused"], samples["floor"]
    print(f"\nPOST score, {len(through)} interleaved rounds (load average {load()}, {os.cpu_count()} CPUs)")
    rows = (("through Dockyard", through), ("direct to the server", direct),
            ("Dockyard, wrong key", refused), ("Dockyard, unknown URL", floor))
    for label, values in rows:
        p50, p90, p99 = percentiles(values)
        print(f"  {label:22}: p50 {p50 * 1000:7.2f} ms   p90 {p90 * 1000:7.2f} ms   p99 {p99 * 1000:7.2f} ms")
    (t50, t90, t99), (d50, d90, d99), (r50, _, _) = percentiles(through), percentiles(direct), percentiles(refused)
    ratio = t50 / d50
    print(f"  Dockyard's share     : p50 +{(t50 - d50) * 1000:.2f} ms   p90 +{(t90 - d90) * 1000:.2f} ms   "
          f"p99 +{(t99 - d99) * 1000:.2f} ms   (of the p50: its own work up to the 401 {r50 * 1000:.2f} ms, "
          f"the rest {(t50 - d50 - r50) * 1000:.2f} ms: the forward beyond a direct call)")
    size = len(through) // BLOCKS
    blocks = [statistics.median(through[i * size:(i + 1) * size]) / statistics.median(direct[i * size:(i + 1) * size])
              for i in range(BLOCKS)] if size >= 10 else []
    print(f"  ratio of p50s        : {ratio:.2f}x (goal <= {GOAL}x) {'OK' if ratio <= GOAL else 'ABOVE GOAL'}"
          f"   (p90 {t90 / d90:.2f}x, p99 {t99 / d99:.2f}x)")
    if blocks:
        print(f"  per block of {size:<5}   : " + ", ".join(f"{value:.2f}x" for value in blocks))
    return ratio


def profile(key: str, sort: str, requests: int = 200) -> None:
    """The score path inside this process: its SQL, and where its time goes (Django's handler, no gunicorn)."""
    client = Client()
    url = f"/api/v1/workspaces/{WORKSPACE}/online-endpoints/{ENDPOINT}/score"
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    for _ in range(20):
        assert client.post(url, BODY, content_type="application/json", **headers).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        client.post(url, BODY, content_type="application/json", **headers)
    print(f"\nIn-process score path: {len(queries)} SQL queries per request")
    for query in queries:
        print(f"  {query['sql'][:160]}")
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        client.post(url, BODY, content_type="application/json", **headers)
        timings.append(time.perf_counter() - started)
    print(f"  Django test client, no profiler: p50 {statistics.median(timings) * 1000:.2f} ms")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(requests):
        client.post(url, BODY, content_type="application/json", **headers)
    profiler.disable()
    pstats.Stats(profiler).sort_stats(sort).print_stats(30)
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--timeout", type=int, default=900, help="give up (and clean up) after this many seconds")
    parser.add_argument("--model-ms", type=int, default=0,
                        help="make the model take this long per request (default 0: the adder as it is, the issue's figure)")
    parser.add_argument("--gunicorn", default=WEB_ARGS, help=f"Dockyard's gunicorn options (default, as bin/run: {WEB_ARGS!r})")
    parser.add_argument("--profile", nargs="?", const="cumulative", choices=["cumulative", "tottime"],
                        help="also profile the score path in this process, sorted by cumulative (default) or own time")
    args = parser.parse_args()

    def give_up(signum, frame):
        raise TimeoutError(f"the benchmark took longer than {args.timeout} s")

    signal.signal(signal.SIGALRM, give_up)
    signal.alarm(args.timeout)
    setup_test_environment()  # ALLOWED_HOSTS gets "testserver", for --profile's test client
    databases = setup_databases(verbosity=0, interactive=False)
    log_path = Path(tempfile.gettempdir()) / f"{QUEUE}.log"
    services = None
    http = httpx.Client(timeout=30)
    direct = None
    try:
        print(f"database {connection.settings_dict['NAME']}; queue {QUEUE}; {os.cpu_count()} CPUs, load average {load()}",
              flush=True)
        user = get_user_model().objects.create_user("bench", password="not-used-for-anything")
        workspace = workspace_create(user=user, name=WORKSPACE)
        workspace.local_compute_enabled = True  # off by default: as staff would enable it
        workspace.save()
        token = token_create(user=user, name="bench")[1]
        connection.close()  # nothing of ours holds the database while the services run
        services = Services(log_path, args.gunicorn.split())
        try:
            key, path = set_up(http, services, token, slow_adder(args.model_ms) if args.model_ms else ADDER)
            direct = httpx.Client(timeout=30, transport=httpx.HTTPTransport(uds=path))  # the server's own socket
            score_url = f"{services.base}/api/v1/workspaces/{WORKSPACE}/online-endpoints/{ENDPOINT}/score"
            calls = {
                "dockyard": (score_url, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}, 200),
                "direct": ("http://localhost/score", {"Content-Type": "application/json"}, 200, direct),
                # Dockyard's own work without the forward: routing query, key check, a 401 (same length of key).
                "refused": (score_url, {"Authorization": f"Bearer {'x' * len(key)}", "Content-Type": "application/json"}, 401),
                # The floor of any answer from Dockyard's gunicorn and Django: a URL no route matches (no database).
                "floor": (f"{services.base}/api/v1/no-such-path/", {"Content-Type": "application/json"}, 404),
            }
            print(f"deployment serving on {path}; {args.warmup} warm-up and {args.rounds} measured rounds "
                  f"(load {load()}) ...", flush=True)
            samples = measure(http, calls, args.rounds, args.warmup)
            report(samples)
            if args.profile:
                profile(key, args.profile)
            tear_down(http, services, token)
        except BaseException:
            print(f"service log ({log_path}):\n" + log_path.read_text(errors="replace")[-3000:], file=sys.stderr)
            raise
    finally:
        signal.alarm(0)
        http.close()
        if direct is not None:
            direct.close()
        if services is not None:
            stop(services.web)
            stop(services.worker)
        for process in STARTED:
            stop(process)
        stop_servers()
        connection.close()
        teardown_databases(databases, verbosity=0)
        try:
            with app.connection_for_write() as broker:  # our private queue's keys only
                broker.default_channel.client.delete(QUEUE, f"_kombu.binding.{QUEUE}", f"_kombu.binding_permanent.{QUEUE}")
        except Exception as exc:  # noqa: BLE001 - cleanup must not hide the real error
            print(f"could not delete the Redis keys of {QUEUE}: {exc}", file=sys.stderr)
        log_path.unlink(missing_ok=True)
        shutil.rmtree(DEPLOYMENT_DIR, ignore_errors=True)
        shutil.rmtree(SHARED_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
