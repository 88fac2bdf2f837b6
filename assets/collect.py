"""Garbage collection of artifact storage: abandoned uploads, snapshots nothing names, blobs no snapshot lists.

Rows go first, stored objects after, so a crash in between leaves objects no row names (the next run finds them by
listing the store), never a row naming nothing. What others may be using at the same moment is guarded:
- an upload is collected only when no chunk came for DOCKYARD_UPLOAD_ABANDON_SECONDS, under its row lock (a chunk
  being written holds it: the row is skipped);
- a snapshot only when older than DOCKYARD_ARTIFACT_GRACE_SECONDS and named by no registered provider
  (assets/references.py); foreign keys to it (models, data, job outputs) are PROTECT, so one added meanwhile refuses
  the delete;
- a workspace's blob row only when older than the grace and listed by none of its snapshots, checked under the rows'
  locks: a snapshot being made locks the rows it lists first (services._held_blobs), so either it waits and then finds
  the row gone (400 MissingBlobs: upload again), or the collector skips the row it holds;
- a stored object only when no workspace has a row for it, checked and deleted under the store's exclusive lock,
  which every writer of content holds shared from its check of the key to its rows' commit (assets/locks.py).
"""
import logging
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from . import locks, references, storage
from .models import Blob, BlobPart, BlobUpload, Snapshot

logger = logging.getLogger("dockyard.artifacts")

BATCH = 500  # rows (or stored objects) decided in one transaction: its locks stay short


@dataclass
class Freed:
    """What one collection freed (or, in a dry run, would free)."""

    uploads: int = 0
    parts: int = 0
    snapshots: int = 0
    blob_rows: int = 0
    objects: int = 0
    bytes: int = 0
    sizes: dict[str, int] = field(default_factory=dict, repr=False)  # sha256 -> size of the blob rows deleted

    def summary(self) -> str:
        return (f"{self.uploads} abandoned uploads ({self.parts} parts), {self.snapshots} snapshots, "
                f"{self.blob_rows} blob records, {self.objects} stored blobs; {self.bytes} bytes")


def collect(*, dry_run: bool = False, now: datetime | None = None) -> Freed:
    """Collect what nothing needs any more; a dry run decides the same and deletes nothing (its rows roll back)."""
    now = now or timezone.now()
    grace = now - timedelta(seconds=settings.DOCKYARD_ARTIFACT_GRACE_SECONDS)
    freed = Freed()
    with transaction.atomic() if dry_run else nullcontext():  # else each batch commits on its own
        _leftover_parts(freed, dry_run)
        _abandoned_uploads(freed, now - timedelta(seconds=settings.DOCKYARD_UPLOAD_ABANDON_SECONDS), dry_run)
        _unnamed_snapshots(freed, grace)
        _unlisted_blobs(freed, grace)
        _unrecorded_objects(freed, dry_run)
        if dry_run:
            transaction.set_rollback(True)
    logger.info("Artifact collection%s: %s.", " (dry run, nothing deleted)" if dry_run else "", freed.summary())
    return freed


def _batches(items: Iterable, size: int = BATCH) -> Iterator[list]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


# Uploads


def _leftover_parts(freed: Freed, dry_run: bool) -> None:
    """Parts in storage whose upload has no row (a crash after the row went, or a chunk whose transaction failed)."""
    listed = [name for name in storage.stored_uploads() if name.isdigit()]
    alive = set(BlobUpload.objects.filter(pk__in=[int(name) for name in listed]).values_list("pk", flat=True))
    for name in listed:
        if int(name) not in alive:
            count, size = storage.upload_parts_size(name)
            freed.parts, freed.bytes = freed.parts + count, freed.bytes + size
            if not dry_run:
                storage.delete_upload_parts(name)


def _abandoned_uploads(freed: Freed, cutoff: datetime, dry_run: bool) -> None:
    """Uploads no chunk came to since `cutoff`: the row (and its parts' rows) first, then the stored parts."""
    ids = list(BlobUpload.objects.filter(updated_at__lt=cutoff).values_list("pk", flat=True))
    for batch in _batches(ids):
        with transaction.atomic():
            locked = list(BlobUpload.objects.select_for_update(skip_locked=True)
                          .filter(pk__in=batch, updated_at__lt=cutoff).values_list("pk", flat=True))
            parts = list(BlobPart.objects.filter(upload_id__in=locked).values_list("size", flat=True))
            BlobUpload.objects.filter(pk__in=locked).delete()
        freed.uploads += len(locked)
        freed.parts += len(parts)
        freed.bytes += sum(parts)
        if not dry_run:
            for upload_id in locked:
                storage.delete_upload_parts(str(upload_id))


# Snapshots and blob rows


def _unnamed_snapshots(freed: Freed, cutoff: datetime) -> None:
    """Snapshots older than the grace that no provider names; one named by a foreign key meanwhile stays."""
    in_use = references.snapshots_in_use()
    old = Snapshot.objects.filter(created_at__lt=cutoff).values_list("pk", "workspace_id", "sha256")
    for pk in [pk for pk, workspace_id, sha256 in old.iterator() if (workspace_id, sha256) not in in_use]:
        try:
            with transaction.atomic():
                snapshot = Snapshot.objects.select_for_update(skip_locked=True).filter(pk=pk).first()
                if snapshot is not None:
                    snapshot.delete()
                    freed.snapshots += 1
        except ProtectedError:
            continue  # a model, data asset or job output was registered on it since the providers were asked


def _unlisted_blobs(freed: Freed, cutoff: datetime) -> None:
    """Each workspace's blob rows older than the grace that none of its snapshots lists."""
    old = Blob.objects.filter(created_at__lt=cutoff)
    for workspace_id in old.values_list("workspace_id", flat=True).distinct().order_by():
        rows = dict(old.filter(workspace_id=workspace_id).values_list("sha256", "pk"))
        listed = set().union(*(listed_blobs(workspace_id, batch) for batch in _batches(rows)))
        unlisted = [rows[sha256] for sha256 in set(rows) - listed]
        for batch in _batches(unlisted):
            with transaction.atomic():
                held = dict(Blob.objects.select_for_update(skip_locked=True).filter(pk__in=batch)
                            .values_list("sha256", "size"))
                listed = listed_blobs(workspace_id, list(held))  # again, now that no snapshot can start to list them
                gone = {sha256: size for sha256, size in held.items() if sha256 not in listed}
                Blob.objects.filter(workspace_id=workspace_id, sha256__in=list(gone)).delete()
            freed.blob_rows += len(gone)
            freed.sizes.update(gone)


def listed_blobs(workspace_id: int, sha256s: list[str]) -> set[str]:
    """Which of these blobs some snapshot of the workspace lists (the database reads the manifests, one query)."""
    if not sha256s:
        return set()
    table = connection.ops.quote_name(Snapshot._meta.db_table)
    if connection.vendor == "postgresql":
        sql = (f"SELECT DISTINCT entry->>1 FROM {table}, jsonb_array_elements({table}.files) AS entry "
               "WHERE workspace_id = %s AND entry->>1 = ANY(%s)")
        parameters = [workspace_id, sha256s]
    else:  # SQLite's JSON1
        sql = (f"SELECT DISTINCT json_extract(entry.value, '$[1]') FROM {table}, json_each({table}.files) AS entry "
               f"WHERE workspace_id = %s AND json_extract(entry.value, '$[1]') IN ({', '.join(['%s'] * len(sha256s))})")
        parameters = [workspace_id, *sha256s]
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters)
        return {row[0] for row in cursor.fetchall()}


# Stored objects


def _unrecorded_objects(freed: Freed, dry_run: bool) -> None:
    """Stored blobs no workspace has a row for, deleted under the store's exclusive lock (no writer in flight)."""
    for batch in _batches(storage.stored_blobs()):
        with transaction.atomic():
            if not dry_run:
                locks.hold_store_exclusive()
            recorded = set(Blob.objects.filter(sha256__in=batch).values_list("sha256", flat=True))
            for sha256 in batch:
                if sha256 not in recorded:
                    freed.objects += 1
                    freed.bytes += freed.sizes[sha256] if sha256 in freed.sizes else storage.blob_size(sha256)
                    if not dry_run:
                        storage.delete([storage.blob_key(sha256)])
