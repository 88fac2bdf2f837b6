"""Jobs on attached VMs over SSH: a detached process (or `docker run`) in a folder of its own on the host, followed by
short looks that read its state and new log bytes; everything needed to adopt it again lives on the host."""
from ..models import Job


def reconcile_ssh(job: Job) -> float | None:
    """Start, follow, time out or cancel a job on an attached VM; returns seconds until the next look (None: done)."""
    raise NotImplementedError  # contract stub: issue 15's SSH runner replaces it


def stop_ssh(job: Job) -> bool:
    """Stop what the job runs on its host (cancel, delete); True once nothing of it runs there any more."""
    return True  # contract stub
