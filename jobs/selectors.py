"""Read paths for jobs: lists, one job, log pages, events and a local job's output files."""
from typing import BinaryIO

from django.conf import settings
from django.db.models import F, Q, QuerySet

from workspaces.models import Workspace

from . import files
from .choices import Target
from .files import FileRefused  # what output_list and output_file raise (transports catch it from here)
from .filters import JobFilter
from .models import Job, JobEvent, JobLogLine

__all__ = ["FileRefused"]

MAX_LOG_PAGE = 5000


def job_none() -> QuerySet[Job]:
    """No jobs: what schema generation lists (it has no user and no {ws})."""
    return Job.objects.none()


def job_list(*, workspace: Workspace) -> QuerySet[Job]:
    """A workspace's jobs (newest first) without the heavy columns a list does not show."""
    return (Job.objects.filter(workspace=workspace, deleting=False)
            .defer("manifests", "runner").annotate(created_by_name=F("created_by__username"), compute_ref=F("compute__name")))


def job_list_filtered(*, workspace: Workspace, filters: dict) -> QuerySet[Job]:
    """A workspace's jobs newest first, filtered as the list's filters say (status, compute, experiment_name)."""
    return JobFilter(filters, queryset=job_list(workspace=workspace)).qs.order_by("-created_at", "-id")


def job_page(*, workspace: Workspace, filters: dict, before: str, size: int) -> list[Job]:
    """Up to `size` filtered jobs listed after the one with pk `before` (from the newest when it is none)."""
    jobs = job_list_filtered(workspace=workspace, filters=filters)
    anchor = jobs.filter(pk=before).values("created_at", "pk").first() if before.isdigit() else None
    if anchor is not None:
        jobs = jobs.filter(Q(created_at__lt=anchor["created_at"]) | Q(created_at=anchor["created_at"], pk__lt=anchor["pk"]))
    return list(jobs[:size])


def job_count(*, workspace: Workspace, filters: dict) -> int:
    return job_list_filtered(workspace=workspace, filters=filters).count()


def experiment_list(*, workspace: Workspace) -> list[str]:
    """The experiment names the workspace's jobs were filed under, alphabetically."""
    return list(job_list(workspace=workspace).order_by("experiment_name").values_list("experiment_name", flat=True).distinct())


def job_get(*, workspace: Workspace, name: str) -> Job:
    return Job.objects.select_related("workspace", "compute", "created_by").get(workspace=workspace, name=name)


def log_lines(*, job: Job, after: int, limit: int) -> list[JobLogLine]:
    """Lines with seq ≥ `after`, oldest first."""
    return list(JobLogLine.objects.filter(job=job, seq__gte=after).order_by("seq")[: min(limit, MAX_LOG_PAGE)])


def log_text(*, job: Job) -> str:
    """The whole log as text (download)."""
    rows = JobLogLine.objects.filter(job=job).order_by("seq").values_list("source", "text")
    return "".join(f"[{source}] {text}\n" if source else f"{text}\n" for source, text in rows.iterator(chunk_size=2000))


def event_list(*, job: Job) -> QuerySet[JobEvent]:
    return JobEvent.objects.filter(job=job).order_by("time", "id")


def outputs_kept(*, job: Job) -> bool:
    """Only local jobs keep their ./outputs folder (a Kubernetes pod's files go with it, until output storage lands)."""
    return job.target == Target.LOCAL


def output_list(*, job: Job) -> list[dict]:
    """The files the job left in ./outputs (its declared outputs are folders in it): [{name, path, size}]."""
    return files.output_files(job, settings.DOCKYARD_JOB_OUTPUTS_MAX_LIST)


def output_file(*, job: Job, path: str) -> BinaryIO:
    """One output file, opened without following links (files.FileRefused / FileNotFoundError say why not)."""
    return files.open_output(job, files.check_output_path(path))
