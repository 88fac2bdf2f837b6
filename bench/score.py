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
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.support.bootstrap import bootstrap  # noqa: E402

DEPLOYMENT_DIR = Path(tempfile.mkdtemp(prefix="dy-bench-score-"))
os.environ["DOCKYARD_DEPLOYMENT_DIR"] = str(DEPLOYMENT_DIR)
SHARED_DIR = Path(tempfile.mkdtemp(prefix="dy-bench-code-"))  # code the sandbox may read (DOCKYARD_LOCAL_PATHS)
os.environ["DOCKYARD_LOCAL_PATHS"] = os.pathsep.join([str(SHARED_DIR), str(ROOT / "endpoints" / "tests" / "data")])
os.environ["DOCKYARD_LOCAL_COMPUTE"] = "true"
QUEUE = bootstrap(database="postgres://postgres@127.0.0.1:5432/dy_ep_bench", queue="dockyard-bench-score",
                  broker="redis://127.0.0.1:6379/13", cache="redis://127.0.0.1:6379/5",
                  defaults={"DOCKYARD_THROTTLE_SCORE_AUTH": "1000000/min"})  # the "refused" calls: wrong keys on purpose
logging.getLogger("httpx").setLevel(logging.WARNING)  # this process's own calls: one INFO line each otherwise

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench.support.broker import delete_queue  # noqa: E402
from bench.support.databases import throwaway_database  # noqa: E402
from bench.support.processes import print_tail, stop_all, time_limit, wait_for  # noqa: E402
from bench.support.report import interleaved, load, percentile, profiled  # noqa: E402
from bench.support.seeding import WORKSPACE, seed_workspace  # noqa: E402
from bench.support.services import Services  # noqa: E402
from compute.runners import local as runner  # noqa: E402

GOAL = 1.5
ENDPOINT, DEPLOYMENT = "bench", "blue"
ADDER = ROOT / "endpoints" / "tests" / "data" / "adder"
BODY = json.dumps({"numbers": [1, 2, 3, 4]}).encode()
WEB_ARGS = "--workers 2 --threads 4 --access-logfile -"  # as bin/run starts Dockyard
BLOCKS = 5  # the measured rounds are also reported in this many consecutive blocks (drift on a shared machine)


def stop_servers() -> None:
    """Kill every inference server this run started (their process groups are detached from the worker)."""
    for pid_file in DEPLOYMENT_DIR.glob(f"*/*/*/{runner.PID_FILE}"):
        process = runner.adopt(pid_file.parent)
        if process and runner.group_alive(process.pid):
            runner.kill_group(process, grace=1.0)


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
    services.wait_up()
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
    answers = {}

    def timed(url, headers, expected, *client):
        elapsed, content = call(http, url, headers, expected, *client)
        answers.setdefault(expected, set()).add(content)
        return elapsed

    samples = interleaved({name: lambda spec=spec: timed(*spec) for name, spec in calls.items()}, rounds, warmup)
    assert len(answers[200]) == 1, f"the two paths answered differently: {answers[200]}"
    return samples


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    return statistics.median(samples), percentile(samples, 90), percentile(samples, 99)


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
    with profiled(sort, 30):
        for _ in range(requests):
            client.post(url, BODY, content_type="application/json", **headers)
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

    log_path = Path(tempfile.gettempdir()) / f"{QUEUE}.log"
    try:
        with time_limit(args.timeout), throwaway_database():
            run(args, log_path)
    finally:
        stop_all()
        stop_servers()
        delete_queue(QUEUE)
        log_path.unlink(missing_ok=True)
        shutil.rmtree(DEPLOYMENT_DIR, ignore_errors=True)
        shutil.rmtree(SHARED_DIR, ignore_errors=True)


def run(args, log_path: Path) -> None:
    """Services up, the deployment serving, the interleaved rounds and their report; the endpoint deleted at the end."""
    print(f"database {connection.settings_dict['NAME']}; queue {QUEUE}; {os.cpu_count()} CPUs, load average {load()}",
          flush=True)
    _, _, token = seed_workspace(local_compute=True)
    services = Services(QUEUE, log_path, args.gunicorn.split())
    with httpx.Client(timeout=30) as http:
        try:
            key, path = set_up(http, services, token, slow_adder(args.model_ms) if args.model_ms else ADDER)
            with httpx.Client(timeout=30, transport=httpx.HTTPTransport(uds=path)) as direct:  # the server's own socket
                print(f"deployment serving on {path}; {args.warmup} warm-up and {args.rounds} measured rounds "
                      f"(load {load()}) ...", flush=True)
                samples = measure(http, score_calls(services.base, key, direct), args.rounds, args.warmup)
            report(samples)
            if args.profile:
                profile(key, args.profile)
            tear_down(http, services, token)
        except BaseException:
            print_tail("service log", log_path)
            raise
        finally:
            services.stop()


def score_calls(base: str, key: str, direct: httpx.Client) -> dict[str, tuple]:
    """The four calls of a round: through Dockyard, direct to the server, a wrong key (401), an unknown URL (404)."""
    score_url = f"{base}/api/v1/workspaces/{WORKSPACE}/online-endpoints/{ENDPOINT}/score"
    return {
        "dockyard": (score_url, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}, 200),
        "direct": ("http://localhost/score", {"Content-Type": "application/json"}, 200, direct),
        # Dockyard's own work without the forward: routing query, key check, a 401 (same length of key).
        "refused": (score_url, {"Authorization": f"Bearer {'x' * len(key)}", "Content-Type": "application/json"}, 401),
        # The floor of any answer from Dockyard's gunicorn and Django: a URL no route matches (no database).
        "floor": (f"{base}/api/v1/no-such-path/", {"Content-Type": "application/json"}, 404),
    }


if __name__ == "__main__":
    main()
