"""A job's data inputs resolved at submit: what each names (an upload, a Data or Model asset, another job's output,
an https file) → `Job.resolved_inputs`, the snapshot or URL the runner fetches before the command starts.

Only this workspace's uploads, assets and jobs are found; anything else is a 400 at `inputs.<name>` and nothing is
written. Inputs given as written (literals, mode `direct`, folders on the Dockyard host) are not listed.
"""
from assets import outputs as job_outputs
from assets import registry
from assets.models import Snapshot
from controlplane.api import BadRequest
from workspaces.models import Workspace

from .spec_io import MODEL_TYPES, input_source


def resolve_inputs(workspace: Workspace, spec: dict) -> tuple[dict, list[tuple[str, str]]]:
    """(resolved_inputs, errors): every fetched data input of the spec, by name."""
    resolved, errors = {}, []
    for name, item in (spec.get("inputs") or {}).items():
        source = input_source(item)
        if source is None or "host" in source:
            continue
        target = f"inputs.{name}"
        try:
            resolved[name] = _resolved(workspace, item, source, target)
        except BadRequest as exc:
            errors.append((target, str(exc.detail)))
    return resolved, errors


def _resolved(workspace: Workspace, item: dict, source: dict, target: str) -> dict:
    if "refused" in source:
        raise BadRequest(source["refused"], target=target)
    if "url" in source:
        return {"url": source["url"], "file": source["file"]}
    if "upload" in source:
        snapshot = Snapshot.objects.filter(workspace=workspace, sha256=source["upload"]).defer("files").first()
        if snapshot is None:
            raise BadRequest(f"{item['path']} is not an upload of workspace '{workspace.name}': upload the files "
                             "first (uploads/; the CLI does it for a local path).", target=target)
    elif "job_output" in source:
        snapshot = job_outputs.job_output_snapshot(workspace, source["job_output"], target)
    else:
        return _asset(workspace, item, source["asset"], target)
    return _snapshot_input(snapshot, item["type"], target)


def _asset(workspace: Workspace, item: dict, reference: str, target: str) -> dict:
    """A Model for the model types, a Data asset otherwise: its snapshot, or (a uri_file Data) its https URL."""
    if item["type"] in MODEL_TYPES:
        model = registry.resolve_model(workspace, reference, target)
        return _snapshot_input(model.snapshot, item["type"], target)
    data = registry.resolve_data(workspace, reference, target)
    if data.snapshot is not None:
        return _snapshot_input(data.snapshot, item["type"], target)
    source = input_source({"type": item["type"], "path": data.path})
    if source is None or "url" not in source:
        raise BadRequest(f"Data {data.name}:{data.version} is the URL {data.path}: " +
                         (source or {}).get("refused", "it cannot be fetched as this input."), target=target)
    return {"url": source["url"], "file": source["file"]}


def _snapshot_input(snapshot: Snapshot, kind: str, target: str) -> dict:
    """A snapshot to fetch; for a uri_file, the one file it must hold."""
    if kind != "uri_file":
        return {"snapshot": snapshot.sha256, "file": None}
    if snapshot.file_count != 1:
        raise BadRequest(f"A uri_file input is one file, but {snapshot.path} holds {snapshot.file_count}: use "
                         "type uri_folder, or name the file.", target=target)
    files = Snapshot.objects.filter(pk=snapshot.pk).values_list("files", flat=True).first()
    return {"snapshot": snapshot.sha256, "file": files[0][0]}
