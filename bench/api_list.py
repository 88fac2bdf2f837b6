"""Benchmark: the compute list through the whole API stack, against bare Django views serving the same page.

Run:  DATABASE_URL=postgres://... .venv/bin/python bench/api_list.py [--rounds N] [--profile [tottime]]
It creates a throwaway database (test_<name>), fills one workspace with 100 computes of mixed types, then times
GET /api/v1/workspaces/{ws}/computes/?page_size=100 with a bearer token against two plain Django views through the
same Django test client, interleaved: one reading the same rows and dumping them as JSON (the baseline of the goal),
and one answering the precomputed bytes (no database; a floor). The goal is API / same-rows view of at most 2: the
API's own work (auth, permissions, DRF, serializers, pagination) should cost no more than the data it serves.
"""
import argparse
import gc
import itertools
import json
import statistics
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.support.bootstrap import bootstrap  # noqa: E402

bootstrap(database="postgres://postgres@127.0.0.1:5432/dockyard_bench")

from django.core.serializers.json import DjangoJSONEncoder  # noqa: E402
from django.db import connection  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, override_settings  # noqa: E402
from django.urls import include, path  # noqa: E402

from bench.support.databases import throwaway_database  # noqa: E402
from bench.support.report import interleaved, profiled  # noqa: E402
from bench.support.seeding import WORKSPACE, seed_workspace  # noqa: E402
from bench.support.timing import timed_sql  # noqa: E402

GOAL = 2.0
COMPUTES = 100
API_URL = f"/api/v1/workspaces/{WORKSPACE}/computes/?page_size={COMPUTES}"
BARE_URL = "/bench/bare/"
BARE_DB_URL = "/bench/bare-rows/"
KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: dev
clusters: [{name: dev, cluster: {server: "https://10.0.0.1:6443"}}]
users: [{name: dev, user: {token: t0ken}}]
contexts: [{name: dev, context: {cluster: dev, user: dev, namespace: ml}}]
"""
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
RESOURCE_ID = "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Synapse/workspaces/syn/bigDataPools/pool"
# One valid body per type; names get a number appended.
BODIES = [
    {"type": "kubernetes", "kubeconfig": KUBECONFIG, "namespace": "ml", "node_selector": {"pool": "gpu"}},
    {"type": "amlcompute", "size": "Standard_DS3_v2", "max_instances": 4, "tags": {"team": "vision"},
     "kubernetes_compute": "kubernet-0"},  # the first body makes it
    {"type": "computeinstance", "idle_time_before_shutdown_minutes": 30, "kubernetes_compute": "kubernet-0",
     "schedules": {"compute_start_stop": [{"action": "stop", "trigger": {"type": "cron", "expression": "0 20 * * *"}}]}},
    {"type": "virtualmachine", "address": "10.0.0.5", "admin_username": "azureuser", "admin_password": "pw-123456"},
    {"type": "hdinsight", "address": "hdi.example.com", "admin_username": "sshuser", "ssh_private_key": KEY},
    {"type": "databricks", "workspace_url": "https://adb-1.azuredatabricks.net", "access_token": "dapi123"},
    {"type": "batch", "account_name": "mybatch", "account_key": "a2V5"},
    {"type": "synapsespark", "resource_id": RESOURCE_ID},
    {"type": "datalakeanalytics", "resource_id": RESOURCE_ID},
]


def bare_rows(request):
    """The same page from a plain Django view: one query for the rows, one count, json.dumps, no DRF."""
    from compute.models import ComputeTarget

    fields = ("name", "type", "description", "tags", "properties", "provisioning_state", "provisioning_errors",
              "secret_fields", "created_by__username", "created_at", "updated_at")
    rows = ComputeTarget.objects.filter(workspace__name=WORKSPACE).order_by("name").values(*fields)[:COMPUTES]
    results = [
        {**row.pop("properties"), **row, "created_by": row.pop("created_by__username"), "secrets_set": row.pop("secret_fields"),
         "created_on": row.pop("created_at"), "updated_on": row.pop("updated_at")}
        for row in rows
    ]
    count = ComputeTarget.objects.filter(workspace__name=WORKSPACE).count()
    body = {"count": count, "next": None, "previous": None, "results": results}
    return HttpResponse(json.dumps(body, cls=DjangoJSONEncoder), content_type="application/json")


def bare_urlconf(body: bytes) -> str:
    """A urlconf with the real API plus two plain views: the precomputed `body`, and the same rows read by hand."""

    def bare(request):
        return HttpResponse(body, content_type="application/json")

    module = types.ModuleType("bench_urls")
    module.urlpatterns = [
        path(BARE_URL.strip("/") + "/", bare), path(BARE_DB_URL.strip("/") + "/", bare_rows),
        path("", include("controlplane.urls")),
    ]
    sys.modules[module.__name__] = module
    return module.__name__


def seed() -> str:
    """A workspace with COMPUTES computes of mixed types, made the way the API makes them; returns a token."""
    from compute import services as compute_services

    compute_services._enqueue = lambda compute: None  # no workers here: do not queue 100 reconciles
    user, workspace, token = seed_workspace()
    bodies = itertools.cycle(BODIES)
    for number in range(COMPUTES):
        body = next(bodies)
        compute_services.compute_create(user=user, workspace=workspace, data={**body, "name": f"{body['type'][:8]}-{number}"})
    return token


def timed(client: Client, url: str, **headers) -> float:
    started = time.perf_counter()
    response = client.get(url, **headers)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, (url, response.status_code, response.content[:300])
    return elapsed


def measure(client: Client, auth: dict, rounds: int, warmup: int) -> dict[str, list[float]]:
    """Interleave the requests (rotating which goes first) so drift on a noisy machine hits all alike."""
    calls = {"api": lambda: timed(client, API_URL, **auth), "bare": lambda: timed(client, BARE_URL),
             "bare_rows": lambda: timed(client, BARE_DB_URL)}
    return interleaved(calls, rounds, warmup)


def sql_round_trips(client: Client, auth: dict, requests: int = 50) -> float:
    """Median time per API request spent waiting on PostgreSQL (execute only; decoding rows is not counted)."""
    totals = []

    def statement_done(sql: str, seconds: float) -> None:
        totals[-1] += seconds

    with connection.execute_wrapper(timed_sql(statement_done)):
        for _ in range(requests):
            totals.append(0.0)
            client.get(API_URL, **auth)
    return statistics.median(totals)


def p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1]


def report(samples: dict[str, list[float]], queries: int, sql: float) -> None:
    api, bare, rows = samples["api"], samples["bare"], samples["bare_rows"]
    print(f"GET {API_URL}  ({COMPUTES} computes, {len(api)} rounds, interleaved)")
    print(f"  API stack            : median {statistics.median(api) * 1000:7.2f} ms   p90 {p90(api) * 1000:7.2f} ms"
          f"   ({queries} SQL queries, {sql * 1000:.2f} ms waiting on PostgreSQL)")
    print(f"  bare view, same rows : median {statistics.median(rows) * 1000:7.2f} ms   p90 {p90(rows) * 1000:7.2f} ms"
          "   (plain Django: the query, a count, json.dumps)")
    print(f"  bare view, fixed body: median {statistics.median(bare) * 1000:7.2f} ms   p90 {p90(bare) * 1000:7.2f} ms"
          "   (no database: the floor)")
    ratio = statistics.median(api) / statistics.median(rows)
    print(f"  ratio API / same-rows view : {ratio:.2f}x (goal <= {GOAL:.0f}x) {'OK' if ratio <= GOAL else 'ABOVE GOAL'}")
    print(f"  ratio API / fixed body     : {statistics.median(api) / statistics.median(bare):.1f}x (for reference)")


def profile(client: Client, auth: dict, sort: str, requests: int = 100) -> None:
    """cProfile of the API path alone: the 25 most expensive functions."""
    with profiled(sort, 25):
        for _ in range(requests):
            client.get(API_URL, **auth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument(
        "--profile", nargs="?", const="cumulative", choices=["cumulative", "tottime"],
        help="also print a cProfile of the API path, sorted by cumulative (default) or own time",
    )
    args = parser.parse_args()

    with throwaway_database():
        auth = {"HTTP_AUTHORIZATION": f"Bearer {seed()}"}
        client = Client()
        first = client.get(API_URL, **auth)
        assert first.status_code == 200 and first.json()["count"] == COMPUTES, first.content[:300]
        with override_settings(ROOT_URLCONF=bare_urlconf(first.content)):
            assert client.get(BARE_URL).content == client.get(API_URL, **auth).content  # the same bytes
            with CaptureQueriesContext(connection) as queries:
                client.get(API_URL, **auth)
            query_count = len(queries)  # now: each request clears the connection's query log
            gc.collect()
            samples = measure(client, auth, args.rounds, args.warmup)
            report(samples, query_count, sql_round_trips(client, auth))
            if args.profile:
                profile(client, auth, args.profile)


if __name__ == "__main__":
    main()
