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
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.support.bootstrap import bootstrap  # noqa: E402

QUEUE = bootstrap(database="postgres://postgres@127.0.0.1:5432/dockyard_bench_rc", queue="dockyard-bench-rc",
                  broker="redis://127.0.0.1:6379/2")

from django.db import connection  # noqa: E402

from bench.reconcile_parts import CREATES, WARMUP_CREATES  # noqa: E402
from bench.reconcile_parts.apply_all import part_a  # noqa: E402
from bench.reconcile_parts.cluster import CONFIGURED, seed, stop_fakes  # noqa: E402
from bench.reconcile_parts.creates import part_c  # noqa: E402
from bench.reconcile_parts.report import report_a, report_b, report_c  # noqa: E402
from bench.reconcile_parts.resync import part_b  # noqa: E402
from bench.support.broker import delete_queue  # noqa: E402
from bench.support.databases import throwaway_database  # noqa: E402
from bench.support.processes import print_tail, stop_all, time_limit  # noqa: E402
from bench.support.report import load  # noqa: E402
from bench.support.seeding import set_kube_limit  # noqa: E402
from compute.models import InstanceType  # noqa: E402


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

    log_path = Path(tempfile.gettempdir()) / f"{QUEUE}.log"
    try:
        with time_limit(args.timeout), throwaway_database():
            try:
                run(args, log_path)
            finally:
                stop_fakes()
                set_kube_limit(*CONFIGURED)
    finally:
        stop_all()
        delete_queue(QUEUE)
        log_path.unlink(missing_ok=True)


def run(args, log_path: Path) -> None:
    """The parts asked for, each printing its report; the summary lines at the end."""
    print(f"N={args.records} records; database {connection.settings_dict['NAME']}; queue {QUEUE}; "
          f"{os.cpu_count()} CPUs, load average {load()}", flush=True)
    token, cluster = seed(args.records)
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
            c = part_c(token, QUEUE, log_path)
        except BaseException:
            print_tail("service log", log_path)
            raise
        summary += report_c(c)
    print(f"\nSummary (load average at the end {load()}, {os.cpu_count()} CPUs)")
    for line in summary:
        print(f"  {line}")


if __name__ == "__main__":
    main()
