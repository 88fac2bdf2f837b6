"""(a) POST latency of a command job through the Django test client, no worker running."""
import gc
import statistics
import time

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.jobs_parts.cluster import retire
from bench.jobs_parts.submitter import Submitter
from bench.support.report import ms, profiled
from bench.support.report import nearest_rank as percentile
from bench.support.seeding import WORKSPACE
from compute.models import ComputeTarget
from controlplane.celery import app


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
        with profiled(profile, 25, f"\ncProfile of 100 POSTs, sorted by {profile}:"):
            for number in range(100):
                submitter.post(client, f"a-p-{number:04d}", compute.name)
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
