"""Command jobs: the record (desired state + observed status), its log lines and its events."""
from django.conf import settings
from django.db import models

from assets.models import Snapshot
from compute.models import ComputeTarget
from controlplane.text import StoredCharField, StoredTextField
from workspaces.models import Workspace

from .choices import TERMINAL, JobStatus, Target

LOGS_BEHIND = "logs_behind"  # runner key: a pod's log read failed transiently; later looks catch the lines up


class Job(models.Model):
    """A command job: the validated spec, where it runs, and the status reconcile observes."""

    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=255)
    display_name = models.CharField(max_length=255, blank=True)
    experiment_name = models.CharField(max_length=255, default="Default")
    description = models.TextField(blank=True)
    tags = models.JSONField(default=dict, blank=True)
    # The job as Azure ML YAML fields, validated and with defaults filled in (see jobs/spec.py).
    spec = models.JSONField(default=dict)
    # As written: "" (serverless), "local", or a compute name; `compute` is where it actually runs.
    compute_name = models.CharField(max_length=64, blank=True)
    target = models.CharField(max_length=16, choices=Target.choices)
    # SET_NULL: a finished job outlives its compute (compute_name keeps the name); active jobs block the delete.
    compute = models.ForeignKey(ComputeTarget, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    instance_type = models.CharField(max_length=253, blank=True)
    # Data inputs resolved at submit, by input name: what the runner fetches before the command starts. One of
    #   {"snapshot": <sha256>, "file": <path in it> | None}  a workspace snapshot (uploaded, a Data/Model asset, a
    #                                                        job's output); `file` names the one file of a uri_file
    #   {"url": "https://...", "file": <basename>}           a single file fetched from the URL
    # Inputs given to the command as written (literals, mode direct, local paths on the host) are not listed.
    resolved_inputs = models.JSONField(default=dict, blank=True)
    # The job's outputs (./outputs and declared outputs/<name>) collected into storage when it ended.
    outputs_snapshot = models.ForeignKey(Snapshot, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.NOT_STARTED)
    status_reason = StoredTextField(blank=True)  # may quote the cluster or the process: any character is stored
    exit_code = models.IntegerField(null=True, blank=True)
    start_time = models.DateTimeField(null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True)

    generation = models.PositiveBigIntegerField(default=1)
    observed_generation = models.PositiveBigIntegerField(default=0)
    deleting = models.BooleanField(default=False)  # a finalizer: the row goes once the cluster objects are gone
    # What the runner needs to find the work again after a crash (pid/pgid/host, Kubernetes names, log marks).
    runner = models.JSONField(default=dict, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # last time a worker looked at the running job
    manifests = models.JSONField(default=list, blank=True)  # the Kubernetes objects as rendered, for the studio
    log_line_count = models.PositiveIntegerField(default=0)

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="job_unique_name")]
        indexes = [
            models.Index(fields=["workspace", "-created_at", "-id"], name="job_ws_created"),
            models.Index(fields=["status"], name="job_status"),
        ]

    def __str__(self):
        return f"{self.workspace_id}/{self.name}"

    @property
    def logs_complete(self) -> bool:
        """The job has ended and every line is in (none of its pods' logs is still to be caught up)."""
        return self.status in TERMINAL and not (self.runner or {}).get(LOGS_BEHIND)

    @property
    def duration(self) -> float | None:
        if self.start_time is None:
            return None
        end = self.end_time
        if end is None:
            from django.utils import timezone

            end = timezone.now()
        return round((end - self.start_time).total_seconds(), 3)


class JobLogLine(models.Model):
    """One line of a job's output, numbered from 0; `source` names the rank or pod it came from.

    Output may hold any bytes: invalid UTF-8 is decoded with U+FFFD where it is read, and NUL (which PostgreSQL
    refuses) and lone surrogates become U+FFFD when stored (controlplane/text.py).
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="log_lines")
    seq = models.PositiveIntegerField()
    source = StoredCharField(max_length=253, blank=True)
    text = StoredTextField()
    time = models.DateTimeField()

    class Meta:
        ordering = ["seq"]
        constraints = [models.UniqueConstraint(fields=["job", "seq"], name="joblog_unique_seq")]


class JobEvent(models.Model):
    """Something that happened to a job: a status change, a Kubernetes event, a placement."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    time = models.DateTimeField()
    type = models.CharField(max_length=16, default="Normal")  # Normal | Warning, as Kubernetes events
    reason = models.CharField(max_length=64)
    message = StoredTextField(blank=True)

    class Meta:
        ordering = ["time", "id"]


class JobSync(models.Model):
    """The observation loop of one compute's Kubernetes jobs: its row lock keeps one loop per compute."""

    compute = models.OneToOneField(ComputeTarget, on_delete=models.CASCADE, related_name="+")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
