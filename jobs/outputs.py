"""A job's outputs once they are in storage: kept with the job (listed, downloadable, registrable as assets)."""
from assets.models import Snapshot

from .models import Job


def record_outputs(job: Job, snapshot: Snapshot) -> None:
    """Keep the snapshot the job's outputs were collected into (./outputs and outputs/<name>) with the job."""
    Job.objects.filter(pk=job.pk).update(outputs_snapshot=snapshot)
    job.outputs_snapshot = snapshot
