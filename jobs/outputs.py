"""A job's outputs once they are in storage: kept with the job (listed, downloadable), and a declared output with
`name` (and `version`) registered as a Data asset or a Model when the job completes, as Azure ML does."""
from django.utils import timezone

from assets import registry
from assets.models import Data, Model, Snapshot
from assets.outputs import subtree
from controlplane.api import BadRequest, Conflict

from .choices import JobStatus
from .models import Job, JobEvent
from .spec_io import MODEL_TYPES


def record_outputs(job: Job, snapshot: Snapshot) -> None:
    """Keep the snapshot the job's outputs were collected into (./outputs and outputs/<name>) with the job, and
    register its named outputs (each said as an event; a clash with an existing version too, never an error)."""
    Job.objects.filter(pk=job.pk).update(outputs_snapshot=snapshot)
    job.outputs_snapshot = snapshot
    if job.status == JobStatus.COMPLETED:  # else when it completes (reconcile's transition calls register_outputs)
        register_outputs(job)


def register_outputs(job: Job) -> None:
    """Register the completed job's outputs that have a `name` (idempotent: a version with the same files is kept)."""
    if job.outputs_snapshot is None:
        return
    for name, output in sorted((job.spec.get("outputs") or {}).items()):
        if output and output.get("name"):
            _event(job, *_register(job, job.outputs_snapshot, name, output))


def _register(job: Job, snapshot: Snapshot, name: str, output: dict) -> tuple[str, str, str]:
    """(type, reason, message) of registering one output."""
    files = subtree(snapshot, name)
    if files is None:
        return "Warning", "OutputNotRegistered", f"Output {name} was not registered as {output['name']}: the job wrote " \
                                                 f"nothing at outputs/{name}."
    kind = output.get("type", "uri_folder")
    record_type = Model if kind in MODEL_TYPES else Data
    existing = record_type.objects.filter(workspace_id=job.workspace_id, name=output["name"], snapshot=files).first()
    if existing is not None and output.get("version") in (None, existing.version):
        return "Normal", "OutputRegistered", f"Output {name} is {existing.reference} (registered before)."
    body = {"name": output["name"], "type": kind, "path": files.path,
            "description": f"Output {name} of job {job.name}.", "tags": {"job": job.name}}
    if output.get("version"):
        body["version"] = output["version"]
    create = registry.model_create if kind in MODEL_TYPES else registry.data_create
    try:
        record = create(user=job.created_by, workspace=job.workspace, data=body)
    except (BadRequest, Conflict) as exc:  # a version that exists, a uri_file output that is a folder...
        return "Warning", "OutputNotRegistered", f"Output {name} was not registered as {output['name']}: {exc.detail}"
    return "Normal", "OutputRegistered", f"Output {name} is registered as {record.reference}."


def _event(job: Job, type: str, reason: str, message: str) -> None:
    JobEvent.objects.create(job=job, time=timezone.now(), type=type, reason=reason, message=message)
