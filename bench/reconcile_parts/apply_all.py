"""(a) reconcile-all of the records (the resync's batched path, or per record) ÷ a raw server-side apply of the same."""
import cProfile
import gc
import json
import pstats
from collections import Counter

from django.db import connection
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from bench.reconcile_parts import RAISED, WRITE_SQL
from bench.reconcile_parts.cluster import (
    CONFIGURED,
    live_count,
    new_fake,
    point_cluster,
    reset_records,
    stop_fake,
)
from bench.support.seeding import Task, patched, set_kube_limit
from bench.support.timing import Stopwatch, timed, timed_sql
from compute import reconcile
from compute.manifests import instance_type_crd
from compute.models import Cluster, InstanceType
from compute.reconcile.instancetypes import desired_manifest
from compute.tasks import BATCH, locked_batch
from controlplane.kube import client as kube
from controlplane.kube.objects import FIELD_MANAGER
from controlplane.reconciling import ProvisioningState, locked_run


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
    set_kube_limit(*limit)
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
        set_kube_limit(*CONFIGURED)
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

    def request_done(seconds: float) -> None:
        spent["kube"] += seconds
        spent["calls"] += 1

    def statement_done(sql: str, seconds: float) -> None:
        spent["sql"] += seconds
        spent["queries"] += 1
        spent["writes"] += sql.lstrip().upper().startswith(WRITE_SQL)

    def commit_done(seconds: float) -> None:
        spent["commit"] += seconds

    with patched(kube, "request", timed(kube.request, request_done)), \
            patched(connection, "_commit", timed(connection._commit, commit_done)), \
            connection.execute_wrapper(timed_sql(statement_done)):
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
