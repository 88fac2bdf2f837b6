"""A job's outputs as assets: the subtree of its outputs snapshot that `azureml://jobs/<job>/outputs/<name>[/paths/<p>]`
names, as a snapshot of its own (derived from the manifest: no blob is copied, the same files give the same snapshot).

Read by job submission (an input naming another job's output) and by model/data registration (`--path
azureml://jobs/...`). Only jobs of the same workspace are found; a job that has not ended, or kept no outputs, is
said so.
"""
from django.apps import apps

from controlplane.api import BadRequest
from workspaces.models import Workspace

from . import storage
from .models import Blob, Snapshot
from .specs import snapshots as spec
from .specs.references import InvalidReference, Reference, parse_reference

ARTIFACTS = "artifacts"  # Azure ML's run artifact root: its outputs/ is the job's ./outputs
DEFAULT = "default"  # Azure ML's name of the run's own outputs folder


def job_output_snapshot(workspace: Workspace, reference: str | Reference, target: str) -> Snapshot:
    """The snapshot of the job output a reference names (400 at `target` when there is none)."""
    if isinstance(reference, str):
        try:
            reference = parse_reference(reference)
        except InvalidReference as exc:
            raise BadRequest(str(exc), code="InvalidReference", target=target) from None
    # Found by the app registry, not imported: jobs stand on assets (and jobs and endpoints stay independent).
    job_model = apps.get_model("jobs", "Job")
    job = job_model.objects.filter(workspace=workspace, name=reference.name).select_related("outputs_snapshot").first()
    if job is None:
        raise BadRequest(f"Workspace '{workspace.name}' has no job '{reference.name}'.", code="UnknownReference",
                         target=target)
    if job.end_time is None or job.outputs_snapshot is None:
        why = "has not ended yet" if job.end_time is None else "kept no outputs"
        raise BadRequest(f"Job '{job.name}' {why}: its outputs can be used once it has ended with outputs kept.",
                         code="OutputsNotKept", target=target)
    prefix = _prefix(job, reference, target)
    snapshot = subtree(job.outputs_snapshot, prefix)
    if snapshot is None:
        where = f"outputs/{prefix}" if prefix else "outputs"
        raise BadRequest(f"Job '{job.name}' left nothing at {where}.", code="UnknownReference", target=target)
    return snapshot


def _prefix(job, reference: Reference, target: str) -> str:
    """Where in the job's ./outputs the reference points."""
    inside = _parts(reference.path or "", target)
    if reference.output == DEFAULT:
        return "/".join(inside)
    if reference.output == ARTIFACTS:
        return "/".join(inside[1:] if inside[:1] == ["outputs"] else inside)
    declared = job.spec.get("outputs") or {}
    if reference.output not in declared:
        shown = ", ".join(sorted(declared)) or "none declared"
        raise BadRequest(f"Job '{job.name}' has no output '{reference.output}' (its outputs: {shown}; 'default' is its "
                         "whole ./outputs).", code="UnknownReference", target=target)
    return "/".join([reference.output, *inside])


def _parts(path: str, target: str) -> list[str]:
    parts = [part for part in path.strip("/").split("/") if part]
    if any(part in (".", "..") or "\0" in part for part in parts):
        raise BadRequest("A path inside a job's outputs has no '.' or '..' parts.", code="InvalidReference", target=target)
    return parts


def subtree(snapshot: Snapshot, prefix: str) -> Snapshot | None:
    """The files under `prefix/` (or the one file `prefix`) as a snapshot of the same workspace; None if none."""
    if not prefix:
        return snapshot if snapshot.file_count else None
    entries = []
    for path, sha256, mode in snapshot.files:
        if path == prefix:
            entries.append(spec.Entry(prefix.rsplit("/", 1)[-1], sha256, mode))
        elif path.startswith(prefix + "/"):
            entries.append(spec.Entry(path[len(prefix) + 1:], sha256, mode))
    if not entries:
        return None
    return derived(snapshot, entries)


def derived(source: Snapshot, entries: list[spec.Entry]) -> Snapshot:
    """A snapshot of the source's workspace made of some of its files (their blobs are the workspace's already)."""
    sizes = _sizes(source)
    rows = sorted([entry.path, entry.sha256, entry.mode] for entry in entries)
    snapshot, _ = Snapshot.objects.get_or_create(
        workspace_id=source.workspace_id, sha256=spec.snapshot_id(entries),
        defaults={"files": rows, "size": sum(_size(sizes, entry.sha256) for entry in entries), "file_count": len(rows),
                  "created_by_id": source.created_by_id})
    return snapshot


def _size(sizes: dict[str, int], sha256: str) -> int:
    """A blob's size from the workspace's records, else from storage (a blob stored without this workspace's row)."""
    return sizes[sha256] if sha256 in sizes else storage.artifacts().size(storage.blob_key(sha256))


def _sizes(source: Snapshot) -> dict[str, int]:
    hashes = {sha256 for _, sha256, _ in source.files}
    return dict(Blob.objects.filter(workspace_id=source.workspace_id, sha256__in=hashes).values_list("sha256", "size"))
