"""Writes of asset versions (environments, models, data) from Azure ML's YAML, archiving, and the resolution of the
references jobs and deployments give (`azureml:name:version`, `azureml:name@latest`, curated environments).

A model's or data's `path` is what the workspace uploaded (`azureml://uploads/<sha256>`, API.md uploads/), or for data
an https:// URL: the server reads no local files (the CLI uploads them first) and follows no other workspace's
uploads. Every refusal comes before anything is written.
"""
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from controlplane.api import BadRequest, Conflict
from controlplane.specs import SpecErrors
from workspaces.audit import audit_record
from workspaces.choices import AuditAction
from workspaces.models import Workspace

from . import curated, outputs
from .models import AssetVersion, Data, Environment, Model, Snapshot
from .specs.data import parse_data
from .specs.environment import parse_environment
from .specs.model import parse_model
from .specs.references import LATEST, InvalidReference, Reference, parse_reference
from .specs.versions import next_version, sort_key

RECORDS: dict[str, type[AssetVersion]] = {"environment": Environment, "model": Model, "data": Data}
CODES = {"environment": "InvalidEnvironment", "model": "InvalidModel", "data": "InvalidData"}
LOCAL_PATH = ("{path!r} is a path on your machine: upload it first (dockyard {kind} create -f packs and uploads it; "
              "the API takes the azureml://uploads/<sha256> that uploads/ answers).")


@dataclass(frozen=True)
class ResolvedEnvironment:
    """What an environment reference runs: an image, the conda file to realise on it (if any), and the reference."""

    image: str
    conda_file: dict | None
    reference: str


def _invalid(kind: str, errors: list[tuple[str, str]]) -> BadRequest:
    details = [{"target": path, "message": message} for path, message in errors]
    first = details[0]
    message = f"{first['target']}: {first['message']}" if first["target"] else first["message"]
    return BadRequest(message, code=CODES[kind], details=details)


def _parsed(kind: str, parse, data: object) -> dict:
    try:
        return parse(data)
    except SpecErrors as exc:
        raise _invalid(kind, exc.errors) from None


# creating versions


def environment_create(*, user, workspace: Workspace, data: object) -> Environment:
    """Register an environment version: an image, optionally with an inline conda file."""
    spec = _parsed("environment", parse_environment, data)
    return _save("environment", user, workspace, spec, image=spec["image"], conda_file=spec.get("conda_file"))


def model_create(*, user, workspace: Workspace, data: object) -> Model:
    """Register a model version whose `path` is an upload of this workspace."""
    spec = _parsed("model", parse_model, data)
    snapshot = _uploaded(workspace, spec["path"], "model")
    spec["path"] = snapshot.path
    return _save("model", user, workspace, spec, type=spec["type"], path=snapshot.path, snapshot=snapshot)


def data_create(*, user, workspace: Workspace, data: object) -> Data:
    """Register a data version: an upload of this workspace (uri_file, uri_folder) or an https:// URL."""
    spec = _parsed("data", parse_data, data)
    if "url" in spec["path"]:
        spec["path"] = spec["path"]["url"]
        return _save("data", user, workspace, spec, type=spec["type"], path=spec["path"], snapshot=None)
    snapshot = _uploaded(workspace, spec["path"], "data")
    if spec["type"] == "uri_file" and snapshot.file_count != 1:
        raise _invalid("data", [("path", f"A uri_file is one file; {snapshot.path} holds {snapshot.file_count}.")])
    spec["path"] = snapshot.path
    return _save("data", user, workspace, spec, type=spec["type"], path=snapshot.path, snapshot=snapshot)


def _uploaded(workspace: Workspace, path: dict, kind: str) -> Snapshot:
    """The workspace's snapshot a parsed `path` names; a 400 at `path` for anything else."""
    if "local" in path:
        problem = LOCAL_PATH.format(path=path["local"], kind=kind)
    elif "job" in path:
        reference = Reference("job_output", path["job"], output=path["output"], path=path["path"])
        try:
            return outputs.job_output_snapshot(workspace, reference, "path")
        except BadRequest as exc:
            problem = str(exc.detail)
    else:
        snapshot = Snapshot.objects.filter(workspace=workspace, sha256=path["upload"]).defer("files").first()
        if snapshot is not None:
            return snapshot
        problem = (f"azureml://uploads/{path['upload']} is not an upload of workspace '{workspace.name}': upload the "
                   "folder or file here first (uploads/).")
    raise _invalid(kind, [("path", problem)])


def _save(kind: str, user, workspace: Workspace, spec: dict, **columns) -> AssetVersion:
    """Store the version (the next whole number when none is given); 409 when the name and version exist."""
    record_type = RECORDS[kind]
    with transaction.atomic():
        versions = record_type.objects.filter(workspace=workspace, name=spec["name"])
        version = spec["version"] or next_version(list(versions.values_list("version", flat=True)))
        if versions.filter(version=version).exists():
            raise _taken(kind, spec["name"], version, workspace)
        spec = {**spec, "version": version}
        try:
            with transaction.atomic():
                record = record_type.objects.create(
                    workspace=workspace, name=spec["name"], version=version, sort_key=sort_key(version),
                    description=spec.get("description", ""), tags=spec.get("tags", {}), spec=spec, created_by=user,
                    **columns)
        except IntegrityError:  # the same version, created by another request in the meantime
            raise _taken(kind, spec["name"], version, workspace) from None
        audit_record(actor=user, action=AuditAction.CREATE, target_type=kind, target_name=str(record),
                     workspace=workspace)
    return record


def _taken(kind: str, name: str, version: str, workspace: Workspace) -> Conflict:
    return Conflict(f"{kind.capitalize()} '{name}' already has a version {version} in workspace '{workspace.name}': "
                    "versions are never replaced; give another version (or leave version out for the next one).")


def asset_archive(*, user, record: AssetVersion) -> AssetVersion:
    """Archive a version (API.md DELETE): it leaves lists and @latest, but its explicit reference still resolves."""
    return _set_archived(user, record, True)


def asset_restore(*, user, record: AssetVersion) -> AssetVersion:
    """Restore an archived version (Azure ML's `restore`): it is listed again and counts for @latest."""
    return _set_archived(user, record, False)


@transaction.atomic
def _set_archived(user, record: AssetVersion, archived: bool) -> AssetVersion:
    if record.archived != archived:  # again is no change, and no audit row
        record.archived = archived
        record.save(update_fields=["archived", "updated_at"])
        kind = next(kind for kind, record_type in RECORDS.items() if isinstance(record, record_type))
        audit_record(actor=user, action=AuditAction.ACTION, verb="archive" if archived else "restore", target_type=kind,
                     target_name=str(record), workspace=record.workspace)
    return record


# references


def version_of(record_type: type[AssetVersion], workspace: Workspace, name: str, version: str) -> AssetVersion | None:
    """A version by its number, or by `latest`: the highest one not archived."""
    versions = record_type.objects.filter(workspace=workspace, name=name)
    if version == LATEST:
        return versions.filter(archived=False).order_by("-sort_key").first()
    return versions.filter(version=version).first()


def resolve_environment(workspace: Workspace, ref: str, target: str = "environment") -> ResolvedEnvironment:
    """The image (and conda file) an environment reference runs: registered here, or one of Azure ML's curated ones."""
    reference = _reference(ref, "environment", target)
    if curated.is_curated(reference):
        try:
            return ResolvedEnvironment(curated.curated_image(reference), None, ref)
        except curated.UnknownCuratedEnvironment as exc:
            raise BadRequest(str(exc), code="UnknownEnvironment", target=target) from None
    record = _registered(Environment, workspace, reference, target)
    return ResolvedEnvironment(record.image, record.conda_file, ref)


def resolve_model(workspace: Workspace, ref: str, target: str = "model") -> Model:
    """The model version a reference names (`azureml:name:version`, `azureml:name@latest`); 400 at `target` if none."""
    return _registered(Model, workspace, _reference(ref, "model", target), target)


def resolve_data(workspace: Workspace, ref: str, target: str = "data") -> Data:
    """The data version a reference names (`azureml:name:version`, `azureml:name@latest`); 400 at `target` if none."""
    return _registered(Data, workspace, _reference(ref, "data", target), target)


def _reference(ref: object, kind: str, target: str) -> Reference:
    try:
        return parse_reference(ref, kind)
    except InvalidReference as exc:
        raise BadRequest(str(exc), code="InvalidReference", target=target) from None


def _registered(record_type: type[AssetVersion], workspace: Workspace, reference: Reference,
                target: str) -> AssetVersion:
    kind = record_type.__name__.lower()
    if reference.kind not in (None, kind):
        raise BadRequest(f"This reference names a {reference.kind}, not a {kind}.", code="InvalidReference", target=target)
    if reference.registry is not None:
        raise BadRequest(f"Registry '{reference.registry}' is not available here: only this workspace's {kind}s (and "
                         "Azure ML's curated environments) are.", code="InvalidReference", target=target)
    if reference.workspace not in (None, workspace.name):
        raise BadRequest(f"This reference names workspace '{reference.workspace}': only {kind}s of workspace "
                         f"'{workspace.name}' are used here.", code="InvalidReference", target=target)
    record = version_of(record_type, workspace, reference.name, reference.version or reference.label)
    if record is None:
        which = "no version that is not archived" if reference.label else f"no version {reference.version}"
        raise BadRequest(f"Workspace '{workspace.name}' has {which} of {kind} '{reference.name}'.",
                         code="UnknownReference", target=target)
    return record
