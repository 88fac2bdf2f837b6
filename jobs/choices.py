from django.db import models


class JobStatus(models.TextChoices):
    """Azure ML's job statuses (the subset a command job goes through here)."""

    NOT_STARTED = "NotStarted"
    QUEUED = "Queued"
    STARTING = "Starting"
    RUNNING = "Running"
    CANCEL_REQUESTED = "CancelRequested"
    COMPLETED = "Completed"
    FAILED = "Failed"
    CANCELED = "Canceled"


TERMINAL = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELED})
ACTIVE = frozenset(set(JobStatus) - TERMINAL)
CANCELABLE = frozenset({JobStatus.NOT_STARTED, JobStatus.QUEUED, JobStatus.STARTING, JobStatus.RUNNING})


class Target(models.TextChoices):
    """Where a job runs: decided at submission (local, a named compute) or by placement (serverless)."""

    LOCAL = "local"
    KUBERNETES = "kubernetes"
    SERVERLESS = "serverless"
    SSH = "ssh"  # an attached VM (virtualmachine compute), over SSH


class DistributionType(models.TextChoices):
    PYTORCH = "pytorch"
    MPI = "mpi"
    TENSORFLOW = "tensorflow"
