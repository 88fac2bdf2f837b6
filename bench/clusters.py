"""Benchmark: compute clusters reconciled into Karpenter NodePools against the fake API server (issue #13).

Run:  .venv/bin/python bench/clusters.py [--clusters 100] [--rounds 5] [--timeout 600]
Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/dockyard_bench_cl; a throwaway test_<name>
database is created next to it and dropped at the end).

It prints, in one run, against tests/fake_kube (with its Karpenter installed) on loopback:
  (a) reconcile of N compute clusters (the resync's batched path: compute.tasks.pool_batch per BATCH records — one
      discovery, one LIST per kind, an apply per pool and per placeholder, one UPDATE of the statuses) ÷ a raw
      server-side apply of the same manifests (NodePools, the PriorityClass, the placeholders) through a kubernetes
      ApiClient built from the same kubeconfig; a fresh fake per measurement, rounds interleaved, medians, the
      client-side limit raised for both. Goal: ≤ 1.2×. For comparison the per-record path an API change takes.
  (b) one observation pass (compute.tasks.observe_batch, what the beat runs every DOCKYARD_POOL_OBSERVE_SECONDS) of the
      converged, unchanged set: its cluster calls and its database writes. Goal: 0 writes, no apply.
"""
import argparse
import gc
import json
import os
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.support.bootstrap import bootstrap  # noqa: E402

bootstrap(database="postgres://postgres@127.0.0.1:5432/dockyard_bench_cl")

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from kubernetes import client as k8s  # noqa: E402
from kubernetes import config as k8s_config  # noqa: E402

from bench.support.databases import throwaway_database  # noqa: E402
from bench.support.processes import time_limit  # noqa: E402
from bench.support.report import load, verdict  # noqa: E402
from bench.support.seeding import Task, patched, seed_workspace, set_kube_limit  # noqa: E402
from bench.support.timing import Stopwatch  # noqa: E402
from compute import reconcile, services  # noqa: E402
from compute.manifests import nodepool_manifest, placeholder_manifest, priority_class_manifest  # noqa: E402
from compute.models import ComputeTarget  # noqa: E402
from compute.reconcile.clusters import pool_of  # noqa: E402
from compute.tasks import BATCH, observe_batch, pool_batch  # noqa: E402
from controlplane.kube import client as kube  # noqa: E402
from controlplane.kube.objects import FIELD_MANAGER  # noqa: E402
from controlplane.kube.paths import path_for  # noqa: E402
from controlplane.reconciling import ProvisioningState, locked_run  # noqa: E402
from tests.fake_kube import FakeKube  # noqa: E402

GOAL = 1.2
RAISED = (1e9, 10**9)
CONFIGURED = (kube.QPS, kube.BURST)
SIZES = ("Standard_DS3_v2", "Standard_F4s_v2", "Standard_NC6s_v3", "Standard_ND96asr_v4")
WRITE_SQL = ("INSERT", "UPDATE", "DELETE")
FAKES: list[FakeKube] = []


def new_fake() -> FakeKube:
    """A fresh fake with Karpenter's CRDs (its simulation launches nothing here: no pod asks for a node)."""
    fake = FakeKube(nodes=2).start()
    FAKES.append(fake)
    fake.install_karpenter()
    return fake


def stop_fake(fake: FakeKube) -> None:
    fake.stop()
    FAKES.remove(fake)
    assert not fake.server_errors, "the fake API server failed internally:\n" + "\n".join(fake.server_errors)


def seed(count: int) -> ComputeTarget:
    """The bench workspace, a kubernetes compute attached to a fake, and `count` compute clusters living on it: sizes
    and tiers varied, max 1–4, every tenth with min_instances 1 (a placeholder)."""
    user, workspace, _ = seed_workspace()
    fake = new_fake()
    with patched(services, "_enqueue", lambda compute: None):
        host = services.compute_create(user=user, workspace=workspace, data={
            "name": "k8s", "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml(), "namespace": "default"})
        locked_run(Task, ComputeTarget, host.pk, reconcile.reconcile_compute)
        host.refresh_from_db()
        assert host.provisioning_state == ProvisioningState.SUCCEEDED, host.provisioning_errors
        for number in range(count):
            services.compute_create(user=user, workspace=workspace, data={
                "name": f"cluster-{number:03d}", "type": "amlcompute", "size": SIZES[number % len(SIZES)],
                "tier": ("dedicated", "low_priority")[number % 2], "max_instances": 1 + number % 4,
                "min_instances": int(number % 10 == 0), "idle_time_before_scale_down": 60 + number})
    stop_fake(fake)
    return host


def point_at(host: ComputeTarget, fake: FakeKube, ids: list[int]) -> None:
    """The attachment now reaches `fake`; its compute clusters are back to 'created, never reconciled'."""
    host.secrets = {**host.secrets, "kubeconfig": fake.kubeconfig_yaml()}
    host.properties = {**host.properties, "server": fake.url}
    host.save()
    ComputeTarget.objects.filter(pk__in=ids).update(provisioning_state=ProvisioningState.CREATING, provisioning_errors=[],
                                                    observed_generation=0, status={})


def batched(host: ComputeTarget, ids: list[int]) -> None:
    """What the resync enqueues: one reconcile_compute_clusters task's code per BATCH records."""
    for start in range(0, len(ids), BATCH):
        pool_batch(Task, host.pk, ids[start:start + BATCH])


def per_record(host: ComputeTarget, ids: list[int]) -> None:
    """What an API change enqueues: one reconcile_compute task's code per record."""
    for pk in ids:
        locked_run(Task, ComputeTarget, pk, reconcile.reconcile_compute)


def reconcile_all(host: ComputeTarget, ids: list[int], run=batched, keep: bool = False):
    fake = new_fake()
    point_at(host, fake, ids)
    set_kube_limit(*RAISED)
    gc.collect()
    try:
        with Stopwatch() as elapsed:
            run(host, ids)
        assert len(fake.list("nodepools", group="karpenter.sh")) == len(ids)
        states = Counter(ComputeTarget.objects.filter(pk__in=ids).values_list("provisioning_state", flat=True))
        assert states == {ProvisioningState.SUCCEEDED: len(ids)}, states
    finally:
        set_kube_limit(*CONFIGURED)
        if not keep:
            stop_fake(fake)
    return (elapsed, fake) if keep else elapsed


def manifests_of(host: ComputeTarget, ids: list[int]) -> list[dict]:
    """What the reconcile applies, in its order: each NodePool, then (min_instances > 0) the PriorityClass the first
    time and the pool's placeholder. The order matters on the fake: a placeholder's pending pod makes its Karpenter
    work on every later write."""
    manifests, priority = [], [priority_class_manifest()]
    for compute in ComputeTarget.objects.filter(pk__in=ids).select_related("workspace").order_by("pk"):
        pool = pool_of(compute, host)
        manifests.append(nodepool_manifest(pool))
        if pool.min_instances:
            manifests += [*priority, placeholder_manifest(pool, "karpenter", settings.DOCKYARD_PLACEHOLDER_IMAGE)]
            priority = []
    return manifests


def raw_apply_all(manifests: list[dict]) -> Stopwatch:
    """The same manifests applied through a plain ApiClient (no limiter, no database) on a fresh fake."""
    fake = new_fake()
    configuration = k8s.Configuration()
    k8s_config.load_kube_config_from_dict(fake.kubeconfig(), client_configuration=configuration)
    configuration.retries = False
    api = k8s.ApiClient(configuration)
    headers = {"Accept": "application/json", "Content-Type": "application/apply-patch+yaml"}
    query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
    paths = [path_for(m["apiVersion"], m["kind"], m["metadata"]["name"], m["metadata"].get("namespace")) for m in manifests]
    gc.collect()
    try:
        with Stopwatch() as elapsed:
            for path, manifest in zip(paths, manifests, strict=True):
                response = api.call_api(path, "PATCH", query_params=query, header_params=headers, body=manifest,
                                        auth_settings=["BearerToken"], _preload_content=False, _request_timeout=kube.TIMEOUT)
                json.loads((response[0] if isinstance(response, tuple) else response).data)
    finally:
        api.close()
        stop_fake(fake)
    return elapsed


def part_a(host: ComputeTarget, ids: list[int], rounds: int) -> dict:
    manifests = manifests_of(host, ids)
    reconcile_all(host, ids[:20]), raw_apply_all(manifests[:20])  # warm-up: imports, connections, query plans
    runs = {"reconcile": lambda: reconcile_all(host, ids), "raw": lambda: raw_apply_all(manifests),
            "per-record": lambda: reconcile_all(host, ids, run=per_record)}
    samples: dict[str, list[Stopwatch]] = {kind: [] for kind in runs}
    for number in range(rounds):
        kinds = list(runs)
        for kind in kinds[number % 3:] + kinds[: number % 3]:  # rotate which goes first
            samples[kind].append(runs[kind]())
        print(f"    round {number + 1}: " + ", ".join(f"{kind} {samples[kind][-1].wall:.2f} s" for kind in runs), flush=True)
    return {"samples": samples, "objects": len(manifests)}


def part_b(host: ComputeTarget, ids: list[int]) -> dict:
    """A converged set, observed once (nothing to change), then the measured pass."""
    _, fake = reconcile_all(host, ids, keep=True)
    try:
        set_kube_limit(*RAISED)
        for start in range(0, len(ids), BATCH):
            observe_batch(host.pk, ids[start:start + BATCH])
        fake.requests.clear()
        with CaptureQueriesContext(connection) as queries, Stopwatch() as elapsed:
            for start in range(0, len(ids), BATCH):
                observe_batch(host.pk, ids[start:start + BATCH])
        calls = Counter((record.verb, record.resource) for record in fake.requests.all())
        writes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(WRITE_SQL)]
        return {"calls": calls, "cluster_writes": len(fake.requests.writes()), "db_writes": writes,
                "queries": len(queries), "seconds": elapsed.wall}
    finally:
        set_kube_limit(*CONFIGURED)
        stop_fake(fake)


def report(n: int, a: dict, b: dict) -> list[str]:
    samples = a["samples"]
    wall = {kind: statistics.median(t.wall for t in runs) for kind, runs in samples.items()}
    cpu = {kind: statistics.median(t.cpu for t in runs) for kind, runs in samples.items()}
    ratio, per_record_ratio = wall["reconcile"] / wall["raw"], wall["per-record"] / wall["raw"]
    print(f"\n(a) reconcile of {n} compute clusters (batches of {BATCH}) ÷ raw server-side apply of their {a['objects']} "
          f"manifests (medians of {len(samples['raw'])} rounds; client-side limit raised for both)")
    print(f"    raw apply            : {wall['raw']:6.2f} s  (CPU of this process {cpu['raw']:.2f} s)")
    print(f"    reconcile, batched   : {wall['reconcile']:6.2f} s  ratio {ratio:5.2f}x  (CPU {cpu['reconcile']:.2f} s)")
    print(f"    per record (an API change's path, for comparison) : {wall['per-record']:6.2f} s  ratio {per_record_ratio:5.2f}x")
    calls = ", ".join(f"{verb or 'get'} {resource or '(discovery)'} x{count}" for (verb, resource), count in sorted(b["calls"].items()))
    print(f"\n(b) one observation pass of the converged set: {calls}; {b['cluster_writes']} cluster writes; "
          f"{len(b['db_writes'])} DB writes ({b['queries']} queries); {b['seconds'] * 1000:.0f} ms")
    for sql in b["db_writes"][:5]:
        print(f"      DB write: {sql[:160]}")
    steady = not b["db_writes"] and b["cluster_writes"] == 0
    return [f"(a) reconcile ÷ raw apply <= {GOAL}x : {ratio:6.2f}x  {verdict(ratio <= GOAL)}",
            f"(b) steady observation: 0 DB writes, 0 cluster writes : {verdict(steady)}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=int, default=600, help="give up (and clean up) after this many seconds")
    args = parser.parse_args()
    try:
        with time_limit(args.timeout), throwaway_database():
            print(f"N={args.clusters} compute clusters; database {connection.settings_dict['NAME']}; "
                  f"{os.cpu_count()} CPUs, load average {load()}", flush=True)
            host = seed(args.clusters)
            ids = list(ComputeTarget.objects.filter(type="amlcompute").order_by("pk").values_list("pk", flat=True))
            print(f"(a) interleaved rounds (load {load()}):", flush=True)
            summary = report(args.clusters, part_a(host, ids, args.rounds), part_b(host, ids))
            print(f"\nSummary (load average at the end {load()}, {os.cpu_count()} CPUs)")
            for line in summary:
                print(f"  {line}")
    finally:
        for fake in list(FAKES):
            fake.stop()


if __name__ == "__main__":
    main()
