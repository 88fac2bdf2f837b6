"""A local job's data before and after its command: resolved inputs written into its run folder's `inputs/<name>`
(shown read-only in the sandbox), and its ./outputs collected into storage when it ends.

Crash-safe: an input is written under a temporary name and renamed into place once whole, so a worker that restarts
finds each input either complete (kept) or not there (written again); outputs are content-addressed, so collecting
them twice gives the same snapshot.
"""
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from assets import delivery, folders
from assets.models import Snapshot

from . import fetch
from .files import FileRefused, open_outputs
from .outputs import record_outputs

INPUTS = "inputs"


@dataclass(frozen=True)
class Arrived:
    """What one input brought: files and bytes (`kept`: it was already there from an earlier start)."""

    name: str
    files: int
    size: int
    kept: bool = False

    def __str__(self) -> str:
        again = " (already there)" if self.kept else ""
        return f"{self.name}: {self.files} file{'s' * (self.files != 1)}, {self.size} bytes{again}"


def inputs_folder(folder: Path) -> Path:
    return folder / INPUTS


def stage_inputs(job, folder: Path) -> list[Arrived]:
    """Write each resolved input to `<run folder>/inputs/<name>`; FileRefused with the reason when one cannot be."""
    if not job.resolved_inputs:
        return []
    top = inputs_folder(folder)
    top.mkdir(exist_ok=True)
    return [_stage(job, top, name, resolved) for name, resolved in sorted(job.resolved_inputs.items())]


def _stage(job, top: Path, name: str, resolved: dict) -> Arrived:
    final, partial = top / name, top / f".{name}.partial"
    if final.is_dir() and not final.is_symlink():
        files = [path for path in final.rglob("*") if path.is_file()]
        return Arrived(name, len(files), sum(path.stat().st_size for path in files), kept=True)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    if "url" in resolved:
        arrived = _download(name, resolved, partial)
    else:
        arrived = _materialise(job, name, resolved, partial)
    os.rename(partial, final)
    return arrived


def _download(name: str, resolved: dict, partial: Path) -> Arrived:
    try:
        size = fetch.fetch(resolved["url"], partial / resolved["file"], settings.DOCKYARD_JOB_INPUT_URL_MAX_BYTES,
                           settings.DOCKYARD_JOB_INPUT_URL_SECONDS)
    except fetch.FetchRefused as exc:
        raise FileRefused(f"Input {name} was not fetched: {exc}") from None
    return Arrived(name, 1, size)


def _materialise(job, name: str, resolved: dict, partial: Path) -> Arrived:
    snapshot = Snapshot.objects.filter(workspace_id=job.workspace_id, sha256=resolved["snapshot"]).first()
    if snapshot is None:
        raise FileRefused(f"Input {name}: its files ({resolved['snapshot']}) are no longer stored in workspace "
                          f"'{job.workspace.name}'.")
    try:
        written = delivery.materialise(snapshot, partial, settings.DOCKYARD_SNAPSHOT_MAX_FILES,
                                       settings.DOCKYARD_SNAPSHOT_MAX_BYTES)
    except delivery.DeliveryRefused as exc:
        raise FileRefused(f"Input {name}: {exc}") from None
    return Arrived(name, written.files, written.size)


# Outputs, when the job ends


def keep_outputs(job) -> list[tuple[str, str, str]]:
    """Collect the job's ./outputs into a snapshot kept with it (record_outputs); returns events to write about it
    as (type, reason, message)."""
    try:
        top = open_outputs(job)
    except FileRefused as exc:
        return [("Warning", "OutputsNotKept", str(exc))]
    if top is None:
        return []
    try:
        collected = folders.collect_folder(job.workspace, top)
    finally:
        os.close(top)
    said = [("Warning", "OutputsLeftOut", message) for message in collected.left_out]
    if collected.snapshot is None:
        return [("Normal", "OutputsKept", "./outputs held no files: nothing was kept."), *said]
    record_outputs(job, collected.snapshot)
    kept = f"Kept {collected.snapshot.file_count} files ({collected.snapshot.size} bytes) of ./outputs in storage."
    return [("Normal", "OutputsKept", kept), *said]
