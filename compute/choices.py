from django.db import models


class ComputeType(models.TextChoices):
    KUBERNETES = "kubernetes", "Kubernetes cluster"
    AMLCOMPUTE = "amlcompute", "Compute cluster"
    COMPUTEINSTANCE = "computeinstance", "Compute instance"
    VIRTUALMACHINE = "virtualmachine", "Virtual machine"
    DATABRICKS = "databricks", "Azure Databricks"
    HDINSIGHT = "hdinsight", "HDInsight"
    DATALAKEANALYTICS = "datalakeanalytics", "Data Lake Analytics"
    SYNAPSESPARK = "synapsespark", "Synapse Spark pool"
    BATCH = "batch", "Azure Batch"


SSH_TYPES = (ComputeType.VIRTUALMACHINE, ComputeType.HDINSIGHT)  # hosts Dockyard logs in to over SSH

class Tier(models.TextChoices):
    DEDICATED = "dedicated"
    LOW_PRIORITY = "low_priority"


# Studio tabs (Azure ML's compute hub): which records each tab lists.
STUDIO_TABS = {
    "instances": [ComputeType.COMPUTEINSTANCE],
    "clusters": [ComputeType.AMLCOMPUTE],
    "kubernetes": [ComputeType.KUBERNETES],
    "attached": [
        ComputeType.VIRTUALMACHINE,
        ComputeType.DATABRICKS,
        ComputeType.HDINSIGHT,
        ComputeType.DATALAKEANALYTICS,
        ComputeType.SYNAPSESPARK,
        ComputeType.BATCH,
    ],
}


class InstanceState(models.TextChoices):
    """A compute instance's observed state (API.md: GET adds `state`)."""

    CREATING = "Creating"
    RUNNING = "Running"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    STARTING = "Starting"
    FAILED = "Failed"


class DesiredState(models.TextChoices):
    """What the owner (or idle shutdown, or a schedule) last asked a compute instance to be."""

    RUNNING = "running"
    STOPPED = "stopped"


class StopCause(models.TextChoices):
    """Why a compute instance was last asked to stop (shown with its state)."""

    NONE = ""
    USER = "user"
    IDLE = "idle"
    SCHEDULE = "schedule"
