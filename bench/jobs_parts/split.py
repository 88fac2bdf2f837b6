"""--split: the reconcile_job task's code per job in this process, stage by stage, as it is and as it was."""
import contextlib
import importlib
import time
from collections import Counter

from django.db import connection

from bench.jobs_parts.cluster import queued_jobs
from bench.support.report import profiled
from bench.support.seeding import patched
from bench.support.timing import timed_sql
from jobs import tasks as job_tasks
from jobs.models import Job

STAGES = [  # (module, attribute, label): timed inclusively (they nest) in the per-job split
    ("controlplane.reconciling", "locked_run", "locked_run (lock, reconcile, commit)"),
    ("jobs.reconcile.kubernetes", "render", "  render (instance type + manifests)"),
    ("jobs.reconcile.kubernetes", "instance_type_shape", "    instance_type_shape"),
    ("jobs.reconcile.kubernetes", "connection_for", "  connection_for"),
    ("controlplane.kube.client", "request", "  kube.request (the apply)"),
    ("jobs.reconcile.kubernetes", "transition", "  transition (+ event INSERT)"),
    ("jobs.reconcile.kubernetes", "save", "  save (status UPDATE)"),
    ("jobs.reconcile", "save", "  save (observed_generation UPDATE)"),
    ("jobs.tasks", "ensure_observed", "ensure_observed"),
]


def as_before(stack: contextlib.ExitStack) -> None:
    """The submit path as it was before bench/README's jobs changes: the whole instance_type_get row, and the generation
    written by reconcile_job in an UPDATE of its own."""
    from compute.selectors import instance_type_get
    from controlplane.kube.resources import Shape
    from jobs.reconcile import kubernetes

    def whole_row(compute, name):
        row = instance_type_get(compute=compute, name=name)
        spec = row and {"nodeSelector": row["nodeSelector"], "resources": row["resources"]}
        return row and Shape.from_spec(row["name"], spec).on(compute.properties.get("node_selector"))

    if hasattr(kubernetes, "instance_type_shape"):
        stack.enter_context(patched(kubernetes, "instance_type_shape", whole_row))
    if hasattr(kubernetes, "generation_seen"):
        stack.enter_context(patched(kubernetes, "generation_seen", lambda job: []))


class StageTimer:
    """Wall time, CPU time of this thread and calls per stage (STAGES, COMMIT), and every SQL statement's time."""

    def __init__(self):
        self.spent, self.statements = Counter(), Counter()

    def timed(self, label, function):
        spent = self.spent

        def wrapper(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - wall
                spent["cpu " + label] += time.thread_time() - cpu
                spent["calls " + label] += 1
        return wrapper

    def statement_done(self, sql: str, seconds: float) -> None:
        self.spent["SQL"] += seconds
        self.spent["calls SQL"] += 1
        self.statements[" ".join(sql.split()[:4])[:70]] += 1

    def install(self, stack: contextlib.ExitStack) -> None:
        """Wrap the stages that exist in this version of the code, COMMIT and every statement; no observation loop."""
        patches = [(connection, "_commit", self.timed("COMMIT", connection._commit)),
                   (job_tasks.observe_jobs, "delay", lambda *a, **k: None)]
        for module, attribute, label in STAGES:
            target = importlib.import_module(module)
            if hasattr(target, attribute):
                patches.append((target, attribute, self.timed(label, getattr(target, attribute))))
        for target, attribute, value in patches:
            stack.enter_context(patched(target, attribute, value))
        stack.enter_context(connection.execute_wrapper(timed_sql(self.statement_done)))

    def clear(self) -> None:
        self.spent.clear()
        self.statements.clear()


def in_process_split(ctx, n: int, profile: str | None, before: bool = False) -> dict:
    """The reconcile_job task's code for n queued jobs in this process (no Celery), its time split and queries."""
    names = [f"p{'b' if before else ''}-{number:05d}" for number in range(n)]
    timer = StageTimer()
    with queued_jobs(ctx, "k8s-prof-before" if before else "k8s-prof", names) as (compute, ids):
        with contextlib.ExitStack() as stack:
            timer.install(stack)
            if before:
                as_before(stack)
            job_tasks.reconcile_job(ids[0])  # warm: the client, the first queries
            timer.clear()
            title = f"\ncProfile of reconcile_job for {n - 1} jobs (in this process), sorted by {profile}:"
            with profiled(profile, 45, title) if profile else contextlib.nullcontext():
                started, cpu = time.perf_counter(), time.thread_time()
                for pk in ids[1:]:
                    job_tasks.reconcile_job(pk)
                timer.spent["total"], timer.spent["cpu total"] = time.perf_counter() - started, time.thread_time() - cpu
        assert Job.objects.filter(pk__in=ids, runner__submitted=True).count() == n
    return {"spent": timer.spent, "statements": timer.statements, "n": n - 1, "before": before}


def report_split(split: dict) -> None:
    spent, n = split["spent"], split["n"]
    per = lambda key: spent[key] / n * 1000  # noqa: E731
    what = "as it was before the changes in bench/README (monkeypatched back)" if split["before"] else "as it is"
    print(f"\nWhere one reconcile_job goes, {what}: its task code run in this process (no Celery, no worker), "
          f"limit off, {n} jobs; ms per job, wall (CPU of this thread)")
    print(f"    {'the whole task':40s} {per('total'):7.2f} ({per('cpu total'):6.2f})")
    for label in dict.fromkeys(label for _, _, label in STAGES):
        print(f"    {label:40s} {per(label):7.2f} ({per('cpu ' + label):6.2f})  x{spent['calls ' + label] / n:.1f}")
    print(f"    {'COMMIT':40s} {per('COMMIT'):7.2f} ({per('cpu COMMIT'):6.2f})")
    print(f"    {'SQL (every statement)':40s} {per('SQL'):7.2f}           x{spent['calls SQL'] / n:.1f}")
    for statement, count in split["statements"].most_common():
        print(f"      {count / n:4.1f} x {statement}")
