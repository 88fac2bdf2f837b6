"""(b) a resync of the converged, unchanged set: its cluster calls, cluster writes and database writes."""
import time
from collections import Counter

from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.reconcile_parts import RAISED, WRITE_SQL
from bench.reconcile_parts.apply_all import reconcile_all
from bench.reconcile_parts.cluster import CONFIGURED, stop_fake
from bench.support.seeding import patched, set_kube_limit
from compute import reconcile
from compute.models import Cluster
from controlplane.kube import client as kube
from tests.fake_kube import FakeKube


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
        set_kube_limit(*CONFIGURED)
        stop_fake(fake)
        Cluster.objects.filter(pk=cluster.pk).update(server="https://bench-a.invalid")  # a port the OS may reuse
    return first, steady
