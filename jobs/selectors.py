"""Read paths for jobs: lists, one job, log pages, events and a job's output files (in storage, or a local job's folder)."""
from typing import BinaryIO

from django.conf import settings
from django.db.models import F, Q, QuerySet

from assets import storage
from assets.models import Blob, Snapshot
from workspaces.models import Workspace

from . import files
from .choices import TERMINAL, Target
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


def jobs_running_on(*, compute) -> QuerySet[Job]:
    """The jobs of a compute's workspace that run (or wait) on it, oldest first: every status but the terminal ones."""
    return (Job.objects.filter(workspace_id=compute.workspace_id, compute=compute, deleting=False)
            .exclude(status__in=TERMINAL).select_related("created_by").defer("manifests").order_by("created_at", "id"))


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
    """Outputs in storage (collected when the job ended, local or Kubernetes), or a local job's live ./outputs folder."""
    return job.outputs_snapshot_id is not None or job.target == Target.LOCAL


def output_list(*, job: Job) -> list[dict]:
    """The files of the job's ./outputs as [{name, path, size, output}] sorted by path: from storage once collected,
    else from a local job's folder. `output` is the declared output a file belongs to (None for the rest)."""
    limit = settings.DOCKYARD_JOB_OUTPUTS_MAX_LIST
    if job.outputs_snapshot_id is None:
        rows = files.output_files(job, limit)
    else:
        manifest = Snapshot.objects.filter(pk=job.outputs_snapshot_id).values_list("files", flat=True).first() or []
        manifest = manifest[:limit]
        sizes = dict(Blob.objects.filter(workspace_id=job.workspace_id, sha256__in={row[1] for row in manifest})
                     .values_list("sha256", "size"))
        rows = [{"name": path.rsplit("/", 1)[-1], "path": path, "size": sizes.get(sha256, 0)}
                for path, sha256, _ in manifest]
    declared = job.spec.get("outputs") or {}
    for row in rows:
        top = row["path"].split("/", 1)[0]
        row["output"] = top if top in declared else None
    return rows


def output_file(*, job: Job, path: str) -> BinaryIO:
    """One output file (files.FileRefused / FileNotFoundError say why not): from storage once collected, else opened
    in a local job's folder without following links."""
    checked = files.check_output_path(path)
    if job.outputs_snapshot_id is None:
        return files.open_output(job, checked)
    manifest = Snapshot.objects.filter(pk=job.outputs_snapshot_id).values_list("files", flat=True).first() or []
    sha256 = next((row[1] for row in manifest if row[0] == str(checked)), None)
    if sha256 is None:
        raise FileNotFoundError(path)
    return storage.blob_open(sha256)
