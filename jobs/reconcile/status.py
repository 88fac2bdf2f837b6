"""Writing a job's observed state: status transitions with their events, timestamps and log lines."""
from django.db.models import F
from django.utils import timezone

from ..choices import TERMINAL, JobStatus
from ..models import Job, JobEvent, JobLogLine
from ..outputs import register_outputs

WARNING_STATUSES = {JobStatus.FAILED}


def event(job: Job, reason: str, message: str, type: str = "Normal") -> None:
    JobEvent.objects.create(job=job, time=timezone.now(), type=type, reason=reason, message=message)


def transition(job: Job, status: str, reason: str = "", *, exit_code: int | None = None, when=None) -> list[str]:
    """Move the job to `status` (recording an event when it changes); returns the fields changed, unsaved."""
    changed = []
    now = when or timezone.now()
    if job.status != status:
        event(job, status, reason, "Warning" if status in WARNING_STATUSES else "Normal")
        job.status = status
        changed.append("status")
        if status == JobStatus.COMPLETED and job.outputs_snapshot_id:
            register_outputs(job)  # its outputs were kept before it completed: their named ones become assets now
    if job.status_reason != reason:
        job.status_reason = reason
        changed.append("status_reason")
    if status == JobStatus.RUNNING and job.start_time is None:
        job.start_time = now
        changed.append("start_time")
    if status in TERMINAL and job.end_time is None:
        job.end_time = now
        changed.append("end_time")
    if exit_code is not None and job.exit_code != exit_code:
        job.exit_code = exit_code
        changed.append("exit_code")
    return changed


def generation_seen(job: Job) -> list[str]:
    """The step acted on the job's current generation: record it with the step's own write (unsaved, like transition)."""
    if job.observed_generation == job.generation:
        return []
    job.observed_generation = job.generation
    return ["observed_generation"]


def save(job: Job, fields: list[str]) -> None:
    if fields:
        job.save(update_fields=sorted(set(fields) | {"updated_at"}))


def append_lines(job: Job, lines: list[tuple[str, str]], when=None) -> None:
    """Store (source, text) lines after the job's last one; the count moves in the same statement as the insert."""
    if not lines:
        return
    now = when or timezone.now()
    start = job.log_line_count
    JobLogLine.objects.bulk_create(
        [JobLogLine(job=job, seq=start + index, source=source, text=text, time=now) for index, (source, text) in enumerate(lines)]
    )
    Job.objects.filter(pk=job.pk).update(log_line_count=F("log_line_count") + len(lines))
    job.log_line_count = start + len(lines)
