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
import os
import shutil
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.jobs_parts import QUEUE_PREFIX, SHIPPED, WORK  # noqa: E402
from bench.support.bootstrap import bootstrap  # noqa: E402

os.environ.pop("DEBUG", None)
QUEUE = bootstrap(database="postgres://postgres@127.0.0.1:5432/dy_bench", queue=QUEUE_PREFIX,
                  broker="redis://127.0.0.1:6379/6", cache="redis://127.0.0.1:6379/7",
                  defaults={"DOCKYARD_THROTTLE_USER": "1000000/min",  # the check still runs; 500 POSTs in seconds
                            "DOCKYARD_JOB_DIR": str(WORK / "jobs")})

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from bench.jobs_parts.at_rate import part_c, report_c  # noqa: E402
from bench.jobs_parts.batched import batched_submit_whatif  # noqa: E402
from bench.jobs_parts.cluster import attach, new_fake  # noqa: E402
from bench.jobs_parts.post import part_a, report_a  # noqa: E402
from bench.jobs_parts.queued import dockyard_run, part_b, report_b  # noqa: E402
from bench.jobs_parts.split import in_process_split, report_split  # noqa: E402
from bench.jobs_parts.submitter import Bench, Submitter  # noqa: E402
from bench.jobs_parts.worker import Worker  # noqa: E402
from bench.support.broker import flush_databases  # noqa: E402
from bench.support.databases import drop_database, recreate_database  # noqa: E402
from bench.support.processes import print_tail, stop_all, time_limit  # noqa: E402
from bench.support.report import load  # noqa: E402
from bench.support.seeding import seed_workspace, set_kube_limit  # noqa: E402


def parse_args() -> argparse.Namespace:
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
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    raised_qps, raised_burst = args.raised.split("/")
    raised = (float(raised_qps), int(raised_burst))
    assert (settings.DOCKYARD_KUBE_QPS, settings.DOCKYARD_KUBE_BURST) == SHIPPED, "DOCKYARD_KUBE_QPS/BURST are set here"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    workers = []
    try:
        with time_limit(args.timeout):
            recreate_database()  # (Django is set up but not connected yet)
            flush_databases()
            user, workspace, token = seed_workspace()
            ctx = Bench(args, user, workspace, Submitter(token, args.posters))
            print(f"database {connection.settings_dict['NAME']}, broker {os.environ['CELERY_BROKER_URL']}, queue {QUEUE}; "
                  f"{os.cpu_count()} CPUs, load average {load()}", flush=True)
            summary = run(ctx, raised, workers)
            print(f"\nSummary ({time.monotonic() - started:.0f} s; load average at the end {load()}, {os.cpu_count()} CPUs)")
            for line in summary:
                print(f"  {line}")
    except BaseException:
        for worker in workers:
            print_tail("worker log", worker.log)
        for log in sorted(WORK.glob("fake-*.log"))[-2:]:
            print_tail("fake log", log, 2000)
        raise
    finally:
        clean_up(args.keep_db)


def run(ctx: Bench, raised: tuple[float, int], workers: list) -> list[str]:
    """The parts asked for; their summary lines."""
    args = ctx.args
    summary = []
    if "a" in args.parts:
        fake = new_fake(args)
        try:
            compute = attach(ctx.user, ctx.workspace, fake, "k8s-a")
            summary += report_a(part_a(ctx.submitter, compute, args.post_rounds, args.post_warmup, args.profile))
        finally:
            fake.stop()
    reports = []
    for label, limit, rounds in (("shipped", SHIPPED, args.rounds_default), ("raised", raised, args.rounds_raised)):
        reports += with_worker(ctx, label, limit, rounds, workers)
    for report in reports:
        summary += report()
    if args.split or args.profile:
        split(ctx)
    return summary


def with_worker(ctx: Bench, label: str, limit: tuple[float, int], rounds: int, workers: list) -> list:
    """(b) and (c) with one worker started with `limit`, if asked; their reports, to print after all measurements."""
    args = ctx.args
    c_limits = {"shipped": ["shipped"], "raised": ["raised"], "both": ["shipped", "raised"]}[args.c_limits]
    want_b, want_c = "b" in args.parts and rounds > 0, "c" in args.parts and label in c_limits
    if not (want_b or want_c):
        return []
    worker = Worker(*limit, args.concurrency, args.worker_loglevel, args.profile_worker, args.worker_db_reuse)
    workers.append(worker)
    reports = []
    try:
        if want_b:
            print(f"\n(b) running, limit {label} (load {load()}) ...", flush=True)
            b = part_b(ctx, worker, limit, rounds, label)
            reports.append(lambda: report_b(b, args.jobs, args.concurrency))
        if want_c:
            print(f"\n(c) running, limit {label}: {args.rate:g}/s for {args.seconds:g} s (load {load()}) ...", flush=True)
            if not want_b:
                dockyard_run(ctx, worker, args.warmup_jobs, f"w{label[0]}")
            c = part_c(ctx, worker, label)
            reports.append(lambda: report_c(c, args.rate))
    finally:
        worker.stop()
    return reports


def split(ctx: Bench) -> None:
    """--split: reconcile_job's code stage by stage, as it was and as it is, and the batched what-if."""
    args = ctx.args
    report_split(in_process_split(ctx, args.split_jobs, None, before=True))
    report_split(in_process_split(ctx, args.split_jobs, args.profile))
    for batch in (1, 50):
        whatif = batched_submit_whatif(ctx, args.split_jobs - 1, batch)
        print(f"    what-if, submits batched {batch} per transaction (one lock SELECT, one event INSERT, one "
              f"UPDATE … FROM VALUES): {whatif['total'] / whatif['n'] * 1000:.2f} ms per job "
              f"({whatif['cpu'] / whatif['n'] * 1000:.2f} ms CPU)", flush=True)


def clean_up(keep_db: bool) -> None:
    """Every process stopped, the limit as shipped, both Redis databases flushed, the database dropped (unless kept)."""
    stop_all()
    set_kube_limit(*SHIPPED)
    connection.close()
    try:
        flush_databases()
    except Exception as exc:  # noqa: BLE001 - cleanup must not hide the real error
        print(f"could not flush the benchmark's Redis databases: {exc}", file=sys.stderr)
    if not keep_db:
        drop_database()
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
