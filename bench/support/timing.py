"""Timing inside this process: a block (Stopwatch), a function's calls (timed), every SQL statement (timed_sql)."""
import time


class Stopwatch:
    """Wall time, and CPU time of this whole process (client and fake; PostgreSQL's own time is not in it)."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def timed(function, record):
    """`function` wrapped so that `record(seconds)` is called with the wall time of each call."""

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            record(time.perf_counter() - started)
    return wrapper


def timed_sql(record):
    """A `connection.execute_wrapper` calling `record(sql, seconds)` after each statement (execute only)."""

    def execute_timed(execute, sql, params, many, context):
        return timed(execute, lambda seconds: record(sql, seconds))(sql, params, many, context)
    return execute_timed
