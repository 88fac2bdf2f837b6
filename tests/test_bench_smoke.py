"""Each benchmark in bench/ still runs: at its smallest size it exits 0, prints its ratio lines and drops its database.

No timing is asserted. Every bench runs as `.venv/bin/python bench/<name>.py …` (as bench/README.md says) on
PostgreSQL database dy_bench_smoke_<name> next to the test run's DATABASE_URL (api_list, reconcile and score make
test_<that> next to it) and on two Redis databases of the test run's Redis server: BENCH_REDIS_DBS, "12,13" unless
set. bench/jobs.py FLUSHES both of them, so they must be no one else's; the test run's own Redis databases are
never handed to a bench. The benches run one at a time (a file lock per pair of Redis databases, so parallel test
workers or two suite runs on one machine wait for each other).
"""
import fcntl
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
REDIS_DBS = os.environ.get("BENCH_REDIS_DBS", "12,13").split(",")

# (bench, arguments: its smallest run, lines it must print). The parts that need a Celery worker of their own are
# left out where they cost most: reconcile's (c) is fixed at 240 creates at 20/s through gunicorn and a worker, jobs'
# (b) and (c) start a worker and wait out its observation loop after every measurement (≈ 25–35 s more each on
# 2 shared cores); jobs runs (a) and --split (reconcile_job's code in its own process), reconcile (a) and (b).
BENCHES = [
    ("api_list", ["--rounds", "2", "--warmup", "1"],
     ["ratio API / same-rows view :", "ratio API / fixed body     :"]),
    ("reconcile", ["--records", "5", "--rounds", "1", "--limited-rounds", "1", "--parts", "ab", "--timeout", "150"],
     ["(a) reconcile-all ÷ raw apply <= 1.2x, limit as configured :", "(a) reconcile-all ÷ raw apply <= 1.2x, limit raised",
      "(b) steady resync: one LIST per kind, 0 cluster writes, 0 DB writes :"]),
    ("score", ["--rounds", "2", "--warmup", "1", "--timeout", "150"],
     ["ratio of p50s        :", "Dockyard's share     :"]),
    ("jobs", ["--parts", "a", "--post-rounds", "2", "--post-warmup", "1", "--split", "--split-jobs", "2", "--timeout", "150"],
     ["(a) POST job median", "Where one reconcile_job goes, as it is:", "what-if, submits batched 50 per transaction"]),
    ("clusters", ["--clusters", "5", "--rounds", "1", "--timeout", "150"],
     ["(a) reconcile ÷ raw apply <= 1.2x :", "(b) steady observation: 0 DB writes, 0 cluster writes : PASS"]),
    ("uploads", ["--files", "40", "--megabytes", "0.5", "--rounds", "1"],
     ["ratio first submit ÷ (tar + copy)", "ratio second submit ÷ tar", "ratio resolve, written out ÷ copy",
      "ratio resolve, fetch stream ÷ tar", "second submit 0 (one GET"]),
]


def postgres_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("the benchmarks need PostgreSQL (DATABASE_URL)")
    return url


def redis_base() -> str:
    """scheme://host:port of the test run's Redis server (the benches get their own databases on it)."""
    url = urlsplit(os.environ.get("CELERY_BROKER_URL", ""))
    if not url.scheme.startswith("redis"):
        pytest.skip("the benchmarks need Redis (CELERY_BROKER_URL)")
    return f"{url.scheme}://{url.netloc}"


def existing_databases(url: str, names: list[str]) -> list[str]:
    import psycopg

    with psycopg.connect(urlsplit(url)._replace(path="/postgres").geturl(), autocommit=True) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname = ANY(%s)", [names]).fetchall()
    return [row[0] for row in rows]


@contextmanager
def one_bench_at_a_time():
    with open(Path(tempfile.gettempdir()) / f"dockyard-bench-smoke-redis-{'-'.join(REDIS_DBS)}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.mark.parametrize(("name", "arguments", "lines"), BENCHES, ids=[bench[0] for bench in BENCHES])
def test_the_bench_runs_at_its_smallest_size(name, arguments, lines):
    database = urlsplit(postgres_url())._replace(path=f"/dy_bench_smoke_{name}").geturl()
    redis, (broker_db, cache_db) = redis_base(), REDIS_DBS
    assert {f"{redis}/{broker_db}", f"{redis}/{cache_db}"}.isdisjoint(
        {os.environ.get("CELERY_BROKER_URL"), os.environ.get("REDIS_URL")}), "BENCH_REDIS_DBS are the test run's own"
    env = {**os.environ, "DATABASE_URL": database, "CELERY_BROKER_URL": f"{redis}/{broker_db}",
           "REDIS_URL": f"{redis}/{cache_db}"}
    env.pop("DOCKYARD_QUEUE", None)
    with one_bench_at_a_time():
        result = subprocess.run([sys.executable, f"bench/{name}.py", *arguments], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=240)
    output = result.stdout + result.stderr[-3000:]
    assert result.returncode == 0, output
    for line in lines:
        assert line in result.stdout, f"{line!r} not printed:\n{output}"
    left = existing_databases(database, [f"dy_bench_smoke_{name}", f"test_dy_bench_smoke_{name}"])
    assert not left, f"the bench left its database: {left}"
