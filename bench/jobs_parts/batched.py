"""--split's what-if (not Dockyard's code): submits batched per transaction, as compute.tasks batches instance types."""
import json
import time

from django.db import connection, transaction
from django.utils import timezone

from bench.jobs_parts.cluster import queued_jobs
from compute import shapes
from compute.connections import connection_for
from compute.models import InstanceType
from controlplane.kube import client as kube
from jobs.choices import JobStatus
from jobs.manifests import job_manifests, kube_job_name
from jobs.models import Job, JobEvent

UPDATE_ROW = "(%s::bigint, %s::text, %s::text, %s::jsonb, %s::jsonb, %s::bigint, %s::timestamptz)"


def batched_submit_whatif(ctx, n: int, batch: int) -> dict:
    """What-if (not Dockyard's code): submit queued jobs `batch` per transaction, as compute.tasks batches instance
    types — one locking SELECT per batch, the instance type looked up once, the applies, one INSERT of the events and
    one UPDATE … FROM (VALUES …) of the rows; the same manifests, statuses and events as reconcile_job writes."""
    names = [f"bw{batch}-{number:05d}" for number in range(n)]
    with queued_jobs(ctx, f"k8s-batch{batch}", names) as (_, ids):
        wall, cpu = time.perf_counter(), time.thread_time()
        for start in range(0, n, batch):
            submit_batch(ids[start:start + batch])
        spent = {"total": time.perf_counter() - wall, "cpu": time.thread_time() - cpu}
        assert Job.objects.filter(pk__in=ids, runner__submitted=True, status=JobStatus.QUEUED).count() == n
    return {**spent, "n": n, "batch": batch}


def submit_batch(ids: list[int]) -> None:
    """One transaction: lock the batch, look each instance type up once, apply, one event INSERT, one row UPDATE."""
    with transaction.atomic():
        rows = Job.objects.select_for_update(skip_locked=True, of=("self",)).select_related("workspace", "compute")
        jobs = list(rows.filter(pk__in=ids).order_by("pk"))
        target = jobs[0].compute
        conn = connection_for(target)
        shapes_by_name = {name: instance_type_shape(target, name) for name in {job.instance_type for job in jobs}}
        events, params = [], []
        for job in jobs:
            event, row = submit(conn, target, job, shapes_by_name[job.instance_type])
            events.append(event)
            params += row
        JobEvent.objects.bulk_create(events)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Job._meta.db_table} AS t SET status = v.status, status_reason = v.reason, "
                "manifests = v.manifests, runner = v.runner, observed_generation = v.generation, updated_at = v.at "
                f"FROM (VALUES {', '.join([UPDATE_ROW] * len(jobs))}) AS v(id, status, reason, manifests, runner, "
                "generation, at) WHERE t.id = v.id", params)


def instance_type_shape(target, name: str):
    record = InstanceType.objects.filter(cluster_id=target.cluster_id, name=name).first()
    extension = target.properties.get("node_selector")
    return shapes.DEFAULT_SHAPE.on(extension) if record is None else record.shape(extension)


def submit(conn, target, job: Job, shape) -> tuple[JobEvent, list]:
    """Apply one job's manifests; its event (unsaved) and its row's values for the UPDATE."""
    kube_name = kube_job_name(job.workspace.name, job.name)
    manifests = job_manifests(
        spec=job.spec, job_name=kube_name, namespace=target.properties.get("namespace", "default"),
        workspace=job.workspace.name, shape=shape)
    for manifest in manifests:
        kube.apply(conn, manifest)
    now = timezone.now()
    reason = f"Submitted as Job {kube_name}; waiting for its pods to be scheduled."
    event = JobEvent(job=job, time=now, type="Normal", reason=JobStatus.QUEUED, message=reason)
    runner = {"namespace": manifests[-1]["metadata"]["namespace"], "job": kube_name, "submitted": True, "pods": {}}
    return event, [job.pk, JobStatus.QUEUED, reason, json.dumps(manifests), json.dumps(runner), job.generation, now]
