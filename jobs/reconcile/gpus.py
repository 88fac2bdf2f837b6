"""GPUs of an attached VM allotted to its jobs (placeholder: the GPU helper's module replaces it at merge)."""
from ..models import Job


def allot(job: Job) -> tuple[list[int] | None, str]:
    """The GPU indexes the job may use, or (None, why it waits Queued); the caller holds the job's row lock."""
    return [], ""
