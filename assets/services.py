"""Writes of artifacts: blob uploads (started, continued chunk by chunk, verified), snapshots from a manifest or an archive.

A workspace knows a blob only once it has sent the bytes itself: storage keeps one copy per hash for everyone, but
"already known, skip it" is answered only from the workspace's own records, so no tenant can learn what another
stored, or claim another's content by its hash. Every refusal comes before anything is written.
"""
import io
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from workspaces.models import Workspace

from . import archives, locks, storage
from .choices import ArchiveType
from .errors import BodyTooLarge, Missing, OffsetConflict, Refused, UnsupportedArchive  # noqa: F401 (views raise them)
from .models import Blob, BlobPart, BlobUpload, Snapshot
from .registry import (  # noqa: F401 (what jobs and deployments call)
    ResolvedEnvironment,
    resolve_environment,
    resolve_model,
)
from .specs import snapshots as spec


@dataclass
class BlobState:
    """What the API shows of a blob: complete, or how many bytes of it have arrived."""

    sha256: str
    size: int
    received: int
    complete: bool


def snapshot_limits() -> spec.Limits:
    return spec.Limits(max_files=settings.DOCKYARD_SNAPSHOT_MAX_FILES, max_total_bytes=settings.DOCKYARD_SNAPSHOT_MAX_BYTES,
                       max_depth=settings.DOCKYARD_SNAPSHOT_MAX_DEPTH, max_path_chars=settings.DOCKYARD_SNAPSHOT_MAX_PATH_CHARS)


def state_of(record: Blob | BlobUpload) -> BlobState:
    if isinstance(record, Blob):
        return BlobState(record.sha256, record.size, record.size, True)
    return BlobState(record.sha256, record.size, record.received, False)


# blobs


def blob_upload_start(*, user, workspace: Workspace, sha256: str, size: int) -> tuple[BlobState, bool]:
    """Start (or resume) the upload of a blob; (its state, whether anything new began). Known blobs need no bytes."""
    known = Blob.objects.filter(workspace=workspace, sha256=sha256).first()
    if known is not None:
        if known.size != size:
            raise Refused(f"Blob {sha256} has {known.size} bytes, not {size}.", code="SizeMismatch", target="size")
        return state_of(known), False
    if size > settings.DOCKYARD_ARTIFACT_MAX_BYTES:
        raise Refused(f"A blob has at most {settings.DOCKYARD_ARTIFACT_MAX_BYTES} bytes.", code="BlobTooLarge", target="size")
    if size == 0:
        return _empty_blob(user, workspace, sha256), True
    with transaction.atomic():
        upload, created = BlobUpload.objects.select_for_update().get_or_create(
            workspace=workspace, sha256=sha256, defaults={"size": size, "created_by": user})
        if not created and upload.size != size:  # a different claim about the same hash: begin again with this one
            _discard(upload)
            upload = BlobUpload.objects.create(workspace=workspace, sha256=sha256, size=size, created_by=user)
            created = True
    return state_of(upload), created


def _empty_blob(user, workspace: Workspace, sha256: str) -> BlobState:
    if sha256 != spec.EMPTY_SHA256:
        raise Refused("An empty blob's sha256 is that of no bytes.", code="HashMismatch", target="sha256")
    with transaction.atomic():
        locks.hold_store_shared()  # from the check of the key to the row's commit (assets/locks.py)
        storage.blob_put(sha256, io.BytesIO(b""))
        blob, _ = Blob.objects.get_or_create(workspace=workspace, sha256=sha256, defaults={"size": 0, "created_by": user})
    return state_of(blob)


def blob_chunk_write(*, user, workspace: Workspace, sha256: str, offset: int, body: BinaryIO) -> BlobState:
    """Append one chunk at `offset` (= the bytes received so far); the last one is verified against the sha256."""
    known = Blob.objects.filter(workspace=workspace, sha256=sha256).first()
    if known is not None:  # a retry after the last chunk's answer was lost
        return state_of(known)
    upload = _resumable(workspace, sha256, offset)
    chunk, length, _ = _read_chunk(body, upload.size - offset)
    with chunk, transaction.atomic():
        upload = _resumable(workspace, sha256, offset, lock=True)
        if length:
            key = storage.part_put(upload.pk, offset, chunk)
            BlobPart.objects.create(upload=upload, offset=offset, size=length, key=key)
            upload.received += length
            upload.save(update_fields=["received", "updated_at"])
        if upload.received < upload.size:
            return state_of(upload)
        blob = _complete(user, upload)
    if blob is None:
        raise Refused(f"The bytes received do not hash to {sha256}: the upload was discarded; start it again.",
                      code="HashMismatch", target="sha256")
    return state_of(blob)


def _resumable(workspace: Workspace, sha256: str, offset: int, lock: bool = False) -> BlobUpload:
    """The upload in progress, if the chunk continues it exactly; 404 without one, 409 at another offset."""
    uploads = BlobUpload.objects.select_for_update() if lock else BlobUpload.objects.all()
    upload = uploads.filter(workspace=workspace, sha256=sha256).first()
    if upload is None:
        raise Missing(f"No upload of blob {sha256} was started here: POST it to blobs/ first.", code="NotFound")
    if offset != upload.received:
        raise OffsetConflict(f"The upload has {upload.received} bytes; send the next chunk at offset {upload.received}.",
                             code="OffsetMismatch", target="offset")
    return upload


def _read_chunk(body: BinaryIO, room: int) -> tuple[BinaryIO, int, str]:
    try:
        return storage.spool(body, room)
    except storage.TooLarge:
        raise Refused(f"The chunk goes past the blob's announced size ({room} bytes are left from this offset).",
                      code="ChunkTooLarge", target="body") from None


def _complete(user, upload: BlobUpload) -> Blob | None:
    """Join the parts, check the hash, store the blob once; None when the bytes do not match (the upload is discarded)."""
    keys = list(upload.parts.order_by("offset").values_list("key", flat=True))
    joined, size, digest = storage.parts_joined(keys, upload.size)
    with joined:
        if (digest, size) != (upload.sha256, upload.size):
            _discard(upload)
            return None
        locks.hold_store_shared()  # (the caller's transaction) from the check of the key to the row's commit
        storage.blob_put(upload.sha256, joined)
    blob, _ = Blob.objects.get_or_create(workspace=upload.workspace, sha256=upload.sha256,
                                         defaults={"size": upload.size, "created_by": user})
    _discard(upload)
    return blob


def _discard(upload: BlobUpload) -> None:
    keys = list(upload.parts.values_list("key", flat=True))
    upload.delete()
    storage.delete(keys)


# snapshots


def snapshot_create(*, user, workspace: Workspace, data: object) -> tuple[Snapshot, bool]:
    """A snapshot from a manifest `{files: [{path, sha256, mode}]}` whose blobs this workspace has; (it, whether new)."""
    limits = snapshot_limits()
    entries = _manifest_entries(data, limits)
    with transaction.atomic():
        sizes = dict(_held_blobs(workspace, {entry.sha256 for entry in entries}).values_list("sha256", "size"))
        missing = [{"target": f"files.{index}.sha256", "message": f"Blob {entry.sha256} is not uploaded ({entry.path})."}
                   for index, entry in enumerate(entries) if entry.sha256 not in sizes]
        if missing:
            raise Refused(f"{len(missing)} of the files' blobs are not uploaded here: upload them (blobs/), then send "
                          "the manifest again.", code="MissingBlobs", details=missing)
        return _snapshot_save(user, workspace, entries, sizes, limits)


def _held_blobs(workspace: Workspace, sha256s) -> QuerySet[Blob]:
    """The workspace's blobs among these, locked until the transaction ends: the collector skips them meanwhile.

    Locked in the order of their hashes, so two snapshots sharing blobs wait for each other instead of deadlocking.
    """
    return (Blob.objects.select_for_update(no_key=True).filter(workspace=workspace, sha256__in=sha256s)
            .order_by("sha256"))


def _manifest_entries(data: object, limits: spec.Limits) -> list[spec.Entry]:
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise Refused("The body is {\"files\": [{\"path\", \"sha256\", \"mode\"}, ...]}.", code="InvalidManifest",
                      target="files")
    if len(files) > limits.max_files:
        raise Refused(f"A snapshot has at most {limits.max_files} files.", code="TooManyFiles", target="files")
    entries, errors = [], []
    for index, item in enumerate(files):
        entry = _entry(item, index, errors)
        if entry is not None:
            entries.append(entry)
    if not errors:
        errors = [{"target": f"files.{index}.{name}", "message": message}
                  for index, name, message in spec.entries_problems(entries, limits)]
    if errors:
        raise Refused(f"{errors[0]['target']}: {errors[0]['message']}", code="InvalidManifest", details=errors)
    return entries


def _entry(item: object, index: int, errors: list) -> spec.Entry | None:
    where = f"files.{index}"
    if not isinstance(item, dict) or set(item) - {"path", "sha256", "mode"}:
        errors.append({"target": where, "message": "A file is {path, sha256, mode} and nothing else."})
        return None
    mode = item.get("mode", spec.REGULAR)
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o7777:
        errors.append({"target": f"{where}.mode", "message": "A mode is a number of permission bits (0 to 4095)."})
        return None
    return spec.Entry(item.get("path"), item.get("sha256"), spec.file_mode(mode))


def _snapshot_save(user, workspace: Workspace, entries: list[spec.Entry], sizes: dict[str, int],
                   limits: spec.Limits) -> tuple[Snapshot, bool]:
    total = sum(sizes[entry.sha256] for entry in entries)
    if total > limits.max_total_bytes:
        raise Refused(f"A snapshot's files add up to at most {limits.max_total_bytes} bytes (these: {total}).",
                      code="SnapshotTooLarge", target="files")
    rows = sorted([entry.path, entry.sha256, entry.mode] for entry in entries)
    return Snapshot.objects.get_or_create(
        workspace=workspace, sha256=spec.snapshot_id(entries),
        defaults={"files": rows, "size": total, "file_count": len(rows), "created_by": user})


def snapshot_merge(*, workspace: Workspace, snapshots: list[Snapshot]) -> tuple[Snapshot, list[tuple[int, str]]]:
    """One snapshot of several of the workspace's (their blobs are its already), the first given winning where two
    hold the same path (assets.specs.snapshots.merge); returns it and (which, path) of the files left out."""
    manifests = [[spec.Entry(path, sha256, mode) for path, sha256, mode in snapshot.files] for snapshot in snapshots]
    wanted = {entry.sha256 for entries in manifests for entry in entries}
    sizes = dict(Blob.objects.filter(workspace=workspace, sha256__in=wanted).values_list("sha256", "size"))
    limits = snapshot_limits()
    entries, dropped = spec.merge(manifests, sizes, limits)
    snapshot, _ = _snapshot_save(None, workspace, entries, sizes, limits)
    return snapshot, dropped


def upload_create(*, user, workspace: Workspace, body: BinaryIO, content_type: str) -> tuple[Snapshot, bool]:
    """A snapshot from a `.tar.gz` or `.zip` of the folder (API.md `uploads/`): every member checked before a byte is stored."""
    media_type = content_type.split(";")[0].strip().lower()
    if media_type not in ArchiveType.values:
        raise UnsupportedArchive("uploads/ takes a .tar.gz (Content-Type: application/gzip) or a .zip "
                                 "(Content-Type: application/zip).", code="UnsupportedMediaType")
    kind = archives.ZIP if media_type == ArchiveType.ZIP else archives.TAR_GZ
    limits = snapshot_limits()
    try:
        spooled, _, _ = storage.spool(body, settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES)
        with spooled:
            archive = archives.read_archive(spooled, limits, settings.DOCKYARD_ARTIFACT_MAX_BYTES, kind)
    except storage.TooLarge:
        raise BodyTooLarge(f"The archive is larger than {settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES} bytes.",
                           code="PayloadTooLarge") from None
    except archives.ArchiveRefused as exc:
        raise Refused(str(exc), code=exc.code, target="") from None
    try:
        return _archive_save(user, workspace, archive, limits)
    finally:
        archive.folder.cleanup()


def _archive_save(user, workspace: Workspace, archive: archives.Archive, limits: spec.Limits) -> tuple[Snapshot, bool]:
    """Store the archive's contents this workspace does not have yet, then record them and the snapshot."""
    with transaction.atomic():
        locks.hold_store_shared()  # from the check of the keys to the rows' commit (assets/locks.py)
        known = set(_held_blobs(workspace, list(archive.sizes)).values_list("sha256", flat=True))
        new = [sha256 for sha256 in archive.sizes if sha256 not in known]
        storage.blobs_put({sha256: (partial(archive.open, sha256), archive.sizes[sha256]) for sha256 in new})
        Blob.objects.bulk_create([Blob(workspace=workspace, sha256=sha256, size=archive.sizes[sha256], created_by=user)
                                  for sha256 in new], ignore_conflicts=True)
        return _snapshot_save(user, workspace, archive.entries, archive.sizes, limits)
