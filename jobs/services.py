"""Changes to jobs: validate the YAML, resolve where it runs, save, audit, enqueue reconcile after commit."""
import secrets
from pathlib import Path

from django.db import transaction

from assets import services as assets
from assets.selectors import snapshot_exists
from assets.specs.conda import inline_conda_file
from assets.specs.snapshots import upload_sha256
from compute import capabilities, vmsizes
from compute.choices import ComputeType
from compute.connections import host_attachment
from compute.models import ComputeTarget
from compute.runners import sandbox
from compute.selectors import instance_type_list, instance_type_shape
from controlplane.api import BadRequest, Conflict
from controlplane.celery import enqueue_on_commit
from controlplane.reconciling import ProvisioningState
from controlplane.specs import SpecErrors
from workspaces import access
from workspaces.audit import audit_record, changed_fields
from workspaces.choices import AuditAction
from workspaces.models import Workspace

from .choices import CANCELABLE, JobStatus, Target
from .clusters import request_problems as cluster_request_problems
from .inputs import resolve_inputs
from .models import Job, JobEvent
from .spec import DEFAULT_SHM, parse_job
from .spec_io import input_source

EDITABLE = ("display_name", "description", "tags")
ADJECTIVES = "amber brave calm eager fair gentle honest jolly keen lively mellow nimble proud quiet rapid shy tidy vivid witty zesty".split()
NOUNS = "otter maple heron comet river cedar falcon lantern meadow pebble quartz harbor willow ember orchid glacier".split()


def _invalid(errors: list[tuple[str, str]]) -> BadRequest:
    details = [{"target": path, "message": message} for path, message in errors]
    first = details[0]
    return BadRequest(f"{first['target']}: {first['message']}" if first["target"] else first["message"], code="InvalidJob", details=details)


def _generated_name(workspace: Workspace) -> str:
    """Azure ML style: two words and a random suffix, unique in the workspace."""
    while True:
        name = f"{secrets.choice(ADJECTIVES)}_{secrets.choice(NOUNS)}_{secrets.token_hex(4)}"
        if not Job.objects.filter(workspace=workspace, name=name).exists():
            return name


def _resolve_local(workspace: Workspace, spec: dict) -> tuple[str, None, str]:
    refusal = access.local_compute_refusal(workspace)
    if refusal:
        raise _invalid([("compute", refusal)])
    errors = []
    if spec["resources"]["instance_count"] > 1:
        errors.append(("resources.instance_count", "A local job runs one process on the worker's host: instance_count must be 1."))
    if spec.get("distribution"):
        errors.append(("distribution", "Distributed training needs a Kubernetes compute; a local job runs one process."))
    errors += _local_only_fields(spec)
    if {"conda_file", "venv"} <= set(spec.get("environment") or {}):
        errors.append(("environment.venv", "A local job runs in a venv or in its conda_file realised on the host's "
                                           "python3, not both: leave one out."))
    venv = (spec.get("environment") or {}).get("venv")
    try:
        venv and sandbox.venv_binds(venv)  # said now, not when the worker starts it (it checks again then)
    except sandbox.Refused as exc:
        errors.append(("environment.venv", str(exc)))
    errors += _code_problems(workspace, spec.get("code"))
    if errors:
        raise _invalid(errors)
    return Target.LOCAL, None, ""


def _local_only_fields(spec: dict) -> list[tuple[str, str]]:
    """Fields that shape a Kubernetes pod and mean nothing to a process on the worker's host."""
    errors = []
    if (spec.get("environment") or {}).get("reference"):
        errors.append(("environment", "A local job runs on the worker's host, not in a container: a registered or "
                                      "curated environment (an image) cannot run there; use environment.venv."))
    elif (spec.get("environment") or {}).get("image"):
        errors.append(("environment.image", "A local job runs on the worker's host, not in a container: leave image out "
                                            "(use environment.venv for a Python environment)."))
    if spec["resources"].get("instance_type"):
        errors.append(("resources.instance_type", "A local job runs on the worker's host: instance types shape "
                                                  "Kubernetes pods; leave instance_type out."))
    if spec["resources"]["shm_size"] != DEFAULT_SHM:
        errors.append(("resources.shm_size", "A local job's /dev/shm is its sandbox's own, not sized per job: shm_size "
                                             "applies to Kubernetes jobs; leave it out."))
    return errors


def _upload_problems(workspace: Workspace, code: str) -> list[tuple[str, str]]:
    """An uploaded code folder must be one of this workspace's (nothing of another workspace is reachable by hash)."""
    if snapshot_exists(workspace=workspace, reference=code):
        return []
    return [("code", f"{code} is not an upload of workspace '{workspace.name}': upload the folder first "
                     "(POST uploads/; the CLI does it for `code: ./src`).")]


def _code_problems(workspace: Workspace, code: str | None) -> list[tuple[str, str]]:
    """A local job's code: an upload of this workspace, or a folder on this host the server shares (DOCKYARD_LOCAL_PATHS)."""
    if not code:
        return []
    if upload_sha256(code):
        return _upload_problems(workspace, code)
    if not Path(code).is_absolute():  # the API and the worker may run in different folders
        return [("code", f"Give the code folder as an absolute path on the Dockyard host (not {code!r}); the CLI "
                         "resolves a relative one against the YAML file's folder.")]
    try:
        sandbox.local_path_bind(code, "code folder")
    except sandbox.Refused as exc:
        return [("code", str(exc))]
    if not Path(code).is_dir():
        return [("code", f"The code folder {code} does not exist on the Dockyard host.")]
    return []


def _resolve_compute(workspace: Workspace, spec: dict) -> tuple[str, ComputeTarget, str]:
    name = spec["compute"]
    compute = ComputeTarget.objects.select_related("cluster").filter(workspace=workspace, name=name).first()
    if compute is None or compute.provisioning_state == ProvisioningState.DELETING:
        known = sorted(ComputeTarget.objects.filter(workspace=workspace).values_list("name", flat=True))
        offered = ["local"] * access.local_compute_allowed(workspace) + known
        hint = f" Computes here: {', '.join(offered)}." if offered else " Attach a compute first."
        raise _invalid([("compute", f"There is no compute '{name}' in workspace '{workspace.name}'.{hint}")])
    if not capabilities.supports(compute.type, "command_jobs"):
        raise _invalid([("compute", f"A {compute.get_type_display()} ({compute.type}) compute cannot run command jobs.")])
    if compute.type == ComputeType.AMLCOMPUTE:
        return _resolve_compute_cluster(workspace, spec, compute)
    if compute.type == ComputeType.VIRTUALMACHINE:
        return _resolve_virtual_machine(workspace, spec, compute)
    if compute.type != ComputeType.KUBERNETES:
        raise _invalid([("compute", f"Dockyard runs command jobs on kubernetes computes, compute clusters, attached "
                                    f"VMs and on local; '{name}' is a {compute.type} record without a backend here yet.")])
    _check_container_job(workspace, spec)
    wanted = spec["resources"].get("instance_type")
    if wanted and instance_type_shape(compute=compute, name=wanted) is None:
        size = vmsizes.vm_size(wanted)
        if size is not None:  # a VM size's shape, on the nodes of that size (see jobs/reconcile/kubernetes.render)
            return Target.KUBERNETES, compute, size.name
        known = ", ".join(row["name"] for row in instance_type_list(compute=compute))
        raise _invalid([("resources.instance_type", f"Compute '{name}' has no instance type '{wanted}' (it has: {known}); "
                                                    "a VM size name (Standard_DS3_v2) is taken too.")])
    return Target.KUBERNETES, compute, wanted or "defaultinstancetype"


def _resolve_compute_cluster(workspace: Workspace, spec: dict, compute: ComputeTarget) -> tuple[str, ComputeTarget, str]:
    """A compute cluster runs the job on whole nodes of its size, on the Kubernetes compute it lives on; it may not
    be ready yet (the job then waits Queued), but it must name where it lives."""
    if host_attachment(compute) is None:
        raise _invalid([("compute", f"'{compute.name}' is a compute cluster without a backend here yet: it names no "
                                    "kubernetes compute of this workspace to run on (kubernetes_compute).")])
    _check_container_job(workspace, spec)
    properties = compute.properties
    size = properties.get("size") or "Standard_DS3_v2"
    errors = cluster_request_problems(compute.name, size, spec["resources"].get("instance_type"),
                                      spec["resources"]["instance_count"], int(properties.get("max_instances") or 1))
    if errors:
        raise _invalid(errors)
    known = vmsizes.vm_size(size)
    return Target.KUBERNETES, compute, known.name if known else size


def _resolve_virtual_machine(workspace: Workspace, spec: dict, compute: ComputeTarget) -> tuple[str, ComputeTarget, str]:
    """An attached VM runs one process (or one `docker run` with an image) over SSH; a VM not ready yet is not a
    refusal: the job waits Queued until it is."""
    errors = []
    environment = spec.get("environment") or {}
    resources = spec["resources"]
    where = f"An attached VM ('{compute.name}') runs one process"
    if resources["instance_count"] > 1:
        errors.append(("resources.instance_count", f"{where} per job: instance_count must be 1."))
    if spec.get("distribution"):
        errors.append(("distribution", f"{where} per job: distributed training needs a Kubernetes compute."))
    if "venv" in environment:
        errors.append(("environment.venv", "environment.venv names a folder of the Dockyard host: it applies to local "
                                           "jobs only; on a VM use environment.image or what the VM has installed."))
    if environment.get("conda_file"):
        errors.append(("environment.conda_file", "A conda file is not realised on attached VMs: use an image with "
                                                 "the packages, or install them on the VM."))
    if resources["shm_size"] != DEFAULT_SHM and not environment.get("image"):
        errors.append(("resources.shm_size", "shm_size sizes a container's /dev/shm: without environment.image the "
                                             "job is a process on the VM; leave it out."))
    wanted = resources.get("instance_type")
    size = vmsizes.vm_size(wanted) if wanted else None
    if wanted and size is None:
        errors.append(("resources.instance_type", f"On vm '{compute.name}' instance_type is a VM size name (such as "
                                                  "Standard_NC6s_v3: its GPU count is what the job gets); leave it "
                                                  "out for all the VM's GPUs."))
    errors += _shipped_code_problems(workspace, spec.get("code"), "an attached VM")
    errors += [(f"inputs.{name}", "A folder on the Dockyard host is not shipped to an attached VM: upload it (the "
                                  "CLI uploads a local path).")
               for name, item in (spec.get("inputs") or {}).items() if "host" in (input_source(item) or {})]
    if errors:
        raise _invalid(errors)
    return Target.SSH, compute, size.name if size else ""


def _shipped_code_problems(workspace: Workspace, code: str | None, where: str, also: str = "") -> list[tuple[str, str]]:
    """Code that leaves the Dockyard host (to a cluster or a VM) must be an upload of this workspace."""
    if code and upload_sha256(code):
        return _upload_problems(workspace, code)
    if code:
        return [("code", f"A folder on the Dockyard host is not shipped to {where}: upload it (the CLI uploads "
                         f"`code: ./src` and sends azureml://uploads/<sha256>){also}.")]
    return []


def _check_container_job(workspace: Workspace, spec: dict) -> None:
    errors = []
    environment = spec.get("environment") or {}
    if not environment.get("image"):
        errors.append(("environment.image", "A job on Kubernetes runs in a container: environment.image is required."))
    if "venv" in environment:
        errors.append(("environment.venv", "environment.venv applies to local jobs only."))
    errors += _shipped_code_problems(workspace, spec.get("code"), "Kubernetes", ", or put the code in the image")
    distribution = spec.get("distribution") or {}
    if distribution.get("type") == "tensorflow":
        if distribution.get("parameter_server_count"):
            errors.append(("distribution.parameter_server_count", "Parameter servers are not supported; use workers only."))
        if distribution.get("worker_count") != spec["resources"]["instance_count"]:
            errors.append(("distribution.worker_count", "worker_count must equal resources.instance_count (one worker per pod)."))
    if errors:
        raise _invalid(errors)


def _resolve_environment(workspace: Workspace, spec: dict) -> None:
    """A registered or curated environment runs its image: kept in the spec with the reference it came from."""
    reference = (spec.get("environment") or {}).get("reference")
    if not reference:
        return
    try:
        resolved = assets.resolve_environment(workspace, reference)
    except BadRequest as exc:  # said as every other problem of the body is
        raise _invalid([("environment", str(exc.detail))]) from None
    spec["environment"] = {"image": resolved.image, "reference": reference}
    if resolved.conda_file:  # realised on top of the image when the job starts
        spec["environment"]["conda_file"] = _registered_conda_file(reference, resolved.conda_file)


def _registered_conda_file(reference: str, conda: dict) -> dict:
    """A registered environment's conda file, checked again by today's rules (it may have been kept before them)."""
    errors: list[tuple[str, str]] = []
    checked = inline_conda_file(conda, errors)
    if errors:
        raise _invalid([("environment", f"{reference}'s conda_file cannot be realised: {errors[0][1]}")])
    return checked


def _placement(workspace: Workspace, spec: dict) -> tuple[str, ComputeTarget | None, str]:
    if spec["compute"] == "local":
        return _resolve_local(workspace, spec)
    if spec["compute"]:
        return _resolve_compute(workspace, spec)
    _check_container_job(workspace, spec)
    return Target.SERVERLESS, None, ""


def _enqueue(job: Job) -> None:
    """Ask for a reconcile once the change is committed; if the broker is down the resync catches up."""
    from .tasks import reconcile_job

    enqueue_on_commit(reconcile_job, job.pk)


@transaction.atomic
def job_create(*, user, workspace: Workspace, data: dict) -> Job:
    """Submit a command job; reconcile places, starts and follows it."""
    try:
        spec = parse_job(data)
    except SpecErrors as exc:
        raise _invalid(exc.errors) from None
    _resolve_environment(workspace, spec)
    target, compute, instance_type = _placement(workspace, spec)
    resolved_inputs, errors = resolve_inputs(workspace, spec)
    if errors:
        raise _invalid(errors)
    if spec["name"] and Job.objects.filter(workspace=workspace, name=spec["name"]).exists():
        raise Conflict(f"A job named '{spec['name']}' already exists in workspace '{workspace.name}'.")
    spec["name"] = spec["name"] or _generated_name(workspace)
    job = Job.objects.create(
        workspace=workspace, name=spec["name"], display_name=spec.get("display_name") or spec["name"],
        experiment_name=spec["experiment_name"], description=spec.get("description", ""), tags=spec.get("tags", {}),
        spec=spec, compute_name=spec["compute"], target=target, compute=compute, instance_type=instance_type,
        resolved_inputs=resolved_inputs, created_by=user,
    )
    JobEvent.objects.create(job=job, time=job.created_at, reason=JobStatus.NOT_STARTED, message=_submitted(job))
    audit_record(actor=user, action=AuditAction.CREATE, target_type="job", target_name=job.name, workspace=workspace,
                 changes={"compute": [None, job.compute_name or "serverless"]})
    _enqueue(job)
    return job


def _submitted(job: Job) -> str:
    where = {Target.LOCAL: "on the worker's host (local)", Target.SERVERLESS: "serverless: Dockyard picks the compute"}
    if job.target == Target.SSH:
        sized = f" as a {job.instance_type}" if job.instance_type else ", with all its GPUs"
        return f"Submitted to vm '{job.compute_name}'{sized}, over SSH."
    return "Submitted, " + where.get(job.target, f"to compute '{job.compute_name}' with instance type '{job.instance_type}'") + "."


@transaction.atomic
def job_update(*, user, job: Job, patch: dict) -> Job:
    """Change a job's display fields (the rest of a submitted job is fixed)."""
    if not isinstance(patch, dict):
        raise _invalid([("", "The body must be a mapping of fields.")])
    errors = [(key, f"{key} cannot be changed after submission; only {', '.join(EDITABLE)} can.")
              for key in patch if key not in EDITABLE and patch[key] != _current(job, key)]
    if "tags" in patch and not isinstance(patch["tags"], dict):
        errors.append(("tags", "tags must be a mapping of names to values."))
    for key in ("display_name", "description"):
        if key in patch and not isinstance(patch[key], str):
            errors.append((key, f"{key} must be a string."))
    edited = {}
    if not errors:  # the submit rules for these fields too (display_name ≤ 255 characters, tag values are scalars)
        try:
            edited = parse_job({"command": "-", **{key: patch[key] for key in EDITABLE if key in patch}})
        except SpecErrors as exc:
            errors = exc.errors
    if errors:
        raise _invalid(errors)
    before = {key: getattr(job, key) for key in EDITABLE}
    for key in EDITABLE:
        if key in patch:
            setattr(job, key, edited.get(key, {} if key == "tags" else ""))
    changes = changed_fields(before, {key: getattr(job, key) for key in EDITABLE})
    if changes:
        job.spec = {**job.spec, **{key: getattr(job, key) for key in EDITABLE}}
        job.save(update_fields=[*EDITABLE, "spec", "updated_at"])
        audit_record(actor=user, action=AuditAction.UPDATE, target_type="job", target_name=job.name,
                     workspace=job.workspace, changes=changes)
    return job


def _current(job: Job, key: str):
    return getattr(job, key, job.spec.get(key, object()))


@transaction.atomic
def job_cancel(*, user, job: Job) -> Job:
    """Ask for a job to stop: reconcile kills the process group or deletes the Kubernetes Job."""
    job = Job.objects.select_for_update().get(pk=job.pk)
    if job.status == JobStatus.CANCEL_REQUESTED:
        return job
    if job.status not in CANCELABLE:
        raise BadRequest(f"Job '{job.name}' has already ended ({job.status}); there is nothing to cancel.",
                         code="JobNotCancelable", target="status")
    job.status = JobStatus.CANCEL_REQUESTED
    job.status_reason = f"Cancel requested by {user.username}."
    job.generation += 1
    job.save(update_fields=["status", "status_reason", "generation", "updated_at"])
    JobEvent.objects.create(job=job, time=job.updated_at, reason=JobStatus.CANCEL_REQUESTED, message=job.status_reason)
    audit_record(actor=user, action=AuditAction.ACTION, verb="cancel", target_type="job", target_name=job.name, workspace=job.workspace)
    _enqueue(job)
    return job


@transaction.atomic
def job_delete(*, user, job: Job) -> Job:
    """Mark a job for deletion: reconcile stops it, removes its cluster objects and then the row (a finalizer)."""
    job = Job.objects.select_for_update().get(pk=job.pk)
    if not job.deleting:
        job.deleting = True
        job.generation += 1
        job.save(update_fields=["deleting", "generation", "updated_at"])
        audit_record(actor=user, action=AuditAction.DELETE, target_type="job", target_name=job.name, workspace=job.workspace)
    _enqueue(job)
    return job

