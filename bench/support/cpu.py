"""CPU accounting from /proc: the seconds each party of a measurement spent (CpuMeter)."""
import os
from pathlib import Path

from django.db import connection

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


class CpuMeter:
    """CPU seconds spent by the parties of one measurement: the worker (main and pool processes), the fake, this
    process (clients and the watch) and the PostgreSQL backends of the benchmark's database. Wall times on a shared
    2-core machine swing with others' load; CPU seconds much less."""

    def __init__(self, worker_pid: int | None, fake_pid: int):
        self.worker_pid, self.fake_pid = worker_pid, fake_pid

    def _pids(self) -> dict[str, list[int]]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
            backends = [row[0] for row in cursor.fetchall()]
        pool = children(self.worker_pid) if self.worker_pid else []
        main = [self.worker_pid] if self.worker_pid else []
        return {"worker main": main, "worker pool": pool, "fake": [self.fake_pid], "bench": [os.getpid()],
                "postgres": backends}

    def snapshot(self) -> dict[str, dict[int, float]]:
        return {party: {pid: process_cpu(pid) for pid in pids} for party, pids in self._pids().items()}

    def __enter__(self):
        self.start = self.snapshot()
        return self

    def stop(self) -> dict[str, float]:
        end = self.snapshot()
        self.spent = {party: sum(max(cpu - self.start[party].get(pid, 0.0), 0.0) for pid, cpu in pids.items())
                      for party, pids in end.items()}
        return self.spent

    def __exit__(self, *exc):
        if not hasattr(self, "spent"):
            self.stop()
