"""Jobs as the API shows them: Azure ML command-job fields plus status, placement and timestamps."""
from rest_framework import serializers

from .models import Job, JobEvent, JobLogLine

SPEC_FIELDS = ("command", "code", "environment", "environment_variables", "resources", "distribution", "limits",
               "inputs", "outputs", "queue_settings", "identity", "services", "properties")


def compute_reference(job: Job) -> str | None:
    if job.compute_name == "local":
        return "local"
    return f"azureml:{job.compute_name}" if job.compute_name else None


def job_as_dict(job: Job, detail: bool = False) -> dict:
    """One job in the API's shape (the list's rows skip the rendered manifests)."""
    spec = job.spec
    body = {
        "name": job.name, "type": "command", "display_name": job.display_name, "experiment_name": job.experiment_name,
        "description": job.description, "tags": job.tags,
        **{key: spec[key] for key in SPEC_FIELDS if key in spec},
        "compute": compute_reference(job),
        "status": job.status, "status_reason": job.status_reason, "exit_code": job.exit_code,
        "placement": {
            "target": job.target,
            "compute": getattr(job, "compute_ref", None) if not detail else (job.compute.name if job.compute_id else None),
            "instance_type": job.instance_type or None,
        },
        "start_time": job.start_time, "end_time": job.end_time,
        "duration": round((job.end_time - job.start_time).total_seconds(), 3) if job.start_time and job.end_time else None,
        "log_lines": job.log_line_count,
        "deleting": job.deleting,
        "created_by": getattr(job, "created_by_name", None) if not detail else (job.created_by.username if job.created_by else None),
        "created_on": job.created_at, "updated_on": job.updated_at,
    }
    if job.target == "local":
        body["placement"]["compute"] = "local"
    if detail:
        body["manifests"] = job.manifests
    return body


class JobSerializer(serializers.Serializer):
    """The job body and what Dockyard adds (read-only). Writes go through jobs/spec.py, one validation path."""

    name = serializers.CharField(required=False, help_text="Unique in the workspace; generated when omitted.")
    type = serializers.CharField(required=False, default="command")
    display_name = serializers.CharField(required=False)
    experiment_name = serializers.CharField(required=False, default="Default")
    description = serializers.CharField(required=False)
    tags = serializers.DictField(child=serializers.CharField(), required=False)
    command = serializers.CharField(help_text="Shell command; ${{inputs.x}} and ${{outputs.y}} are substituted.")
    environment = serializers.DictField(required=False, help_text="{image, conda_file} (Kubernetes, serverless), {venv} "
                                        "or {conda_file} (local), or azureml:<name>:<version>.")
    environment_variables = serializers.DictField(child=serializers.CharField(), required=False)
    compute = serializers.CharField(required=False, allow_null=True, help_text="azureml:<name>, <name> or local; omit for serverless.")
    resources = serializers.DictField(required=False, help_text="instance_type, instance_count (1), shm_size (2g).")
    distribution = serializers.DictField(required=False, help_text="type pytorch|mpi (process_count_per_instance) or tensorflow (worker_count).")
    limits = serializers.DictField(required=False, help_text="timeout: seconds until the job is stopped.")
    inputs = serializers.DictField(required=False)
    outputs = serializers.DictField(required=False)
    status = serializers.CharField(read_only=True)
    status_reason = serializers.CharField(read_only=True)
    exit_code = serializers.IntegerField(read_only=True, allow_null=True)
    placement = serializers.DictField(read_only=True, help_text="Where it runs: target, compute, instance_type.")
    start_time = serializers.DateTimeField(read_only=True, allow_null=True)
    end_time = serializers.DateTimeField(read_only=True, allow_null=True)
    duration = serializers.FloatField(read_only=True, allow_null=True, help_text="Seconds, once the job has ended.")
    log_lines = serializers.IntegerField(read_only=True)
    deleting = serializers.BooleanField(read_only=True)
    created_by = serializers.CharField(read_only=True, allow_null=True)
    created_on = serializers.DateTimeField(read_only=True)
    updated_on = serializers.DateTimeField(read_only=True)
    manifests = serializers.ListField(child=serializers.DictField(), read_only=True, required=False,
                                      help_text="The Kubernetes objects as rendered (single GET only).")

    def to_representation(self, instance):
        return job_as_dict(instance, detail=self.context.get("detail", False))


class JobListItemSerializer(JobSerializer):
    """A row of the job list: the job without its rendered manifests (schema only; rows come from job_as_dict)."""

    manifests = None


class JobLogLineSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobLogLine
        fields = ["seq", "source", "text", "time"]


class JobLogPageSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="Lines stored so far.")
    next = serializers.CharField(allow_null=True, help_text="The next page; while the job runs it points past the last line.")
    previous = serializers.CharField(allow_null=True)
    status = serializers.CharField()
    complete = serializers.BooleanField(help_text="The job has ended and every line is in.")
    results = JobLogLineSerializer(many=True)


class JobEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobEvent
        fields = ["time", "type", "reason", "message"]


class JobOutputFileSerializer(serializers.Serializer):
    """One file a job left in ./outputs."""

    name = serializers.CharField()
    path = serializers.CharField(help_text="relative to ./outputs; GET outputs/?path=... downloads it")
    size = serializers.IntegerField()
    output = serializers.CharField(allow_null=True, help_text="the declared output the file belongs to (outputs/<name>)")


class OutputsReceivedSerializer(serializers.Serializer):
    """What an outputs upload stored: the rank's part and the job's (merged) outputs."""

    sha256 = serializers.CharField(help_text="the snapshot this rank's files were stored as")
    files = serializers.IntegerField()
    size = serializers.IntegerField()
    outputs = serializers.CharField(help_text="the job's outputs snapshot: every rank's files merged, the lowest rank "
                                              "winning a path two ranks wrote")
