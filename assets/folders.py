"""A folder a job wrote (hostile: the tenant's process made it) read into a snapshot of its workspace (its outputs).

Read through a directory descriptor, one component at a time, never following a link (a link, FIFO, socket or
device is left out and counted), within the snapshot limits: what is over them is not stored and is said in
`Collected.left_out`, never dropped silently. Content-addressed: collecting the same files again (a worker that
restarts after a crash) finds the same blobs and the same snapshot.
"""
import os
import stat
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from . import locks, storage
from .models import Blob, Snapshot
from .specs import snapshots as spec

REGULAR = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CHUNK = 1024 * 1024


@dataclass
class Collected:
    """The snapshot made (None when the folder held no file), and sentences about what was left out."""

    snapshot: Snapshot | None
    left_out: list[str] = field(default_factory=list)


@dataclass
class _Walk:
    entries: list[spec.Entry] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    total: int = 0
    special: int = 0
    bad_paths: int = 0
    over: list[str] = field(default_factory=list)


def limits() -> spec.Limits:
    return spec.Limits(settings.DOCKYARD_SNAPSHOT_MAX_FILES, settings.DOCKYARD_SNAPSHOT_MAX_BYTES,
                       settings.DOCKYARD_SNAPSHOT_MAX_DEPTH, settings.DOCKYARD_SNAPSHOT_MAX_PATH_CHARS)


def collect_folder(workspace, top: int, bounds: spec.Limits | None = None) -> Collected:
    """Store the regular files under the directory descriptor `top` as a snapshot of `workspace` (top is not closed)."""
    bounds = bounds or limits()
    with transaction.atomic():
        locks.hold_store_shared()  # from storing each blob to the rows' commit: the collector must not take them between
        return _collect(workspace, top, bounds)


def _collect(workspace, top: int, bounds: spec.Limits) -> Collected:
    walk = _Walk()
    for folder, dirs, names, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
        links = [name for name in dirs if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)]
        walk.special += len(links)  # fwalk lists a link to a folder among the folders (and does not enter it)
        dirs[:] = sorted(name for name in dirs if name not in links)
        depth = 0 if folder == "." else folder.count("/")
        if depth + 1 >= bounds.max_depth and dirs:
            walk.over.append(f"folders deeper than {bounds.max_depth} levels under {folder[2:]}")
            dirs[:] = []
        for name in sorted(names):
            _take(walk, folder, name, fd, bounds)
    return Collected(_save(workspace, walk), _said(walk))


def _take(walk: _Walk, folder: str, name: str, fd: int, bounds: spec.Limits) -> None:
    path = name if folder == "." else f"{folder[2:]}/{name}"
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode):
        walk.special += 1
        return
    if spec.path_problem(path, bounds):
        walk.bad_paths += 1
        return
    if len(walk.entries) >= bounds.max_files:
        walk.over.append(f"{path} and later files (more than {bounds.max_files} files)")
        return
    if walk.total + info.st_size > bounds.max_total_bytes:
        walk.over.append(f"{path} ({info.st_size} bytes: the files would pass {bounds.max_total_bytes} bytes)")
        return
    stored = _store_file(name, fd, bounds.max_total_bytes - walk.total)
    if stored is None:
        walk.special += 1
        return
    sha256, size = stored
    walk.entries.append(spec.Entry(path, sha256, spec.file_mode(info.st_mode)))
    walk.sizes[sha256] = size
    walk.total += size


def _store_file(name: str, fd: int, room: int) -> tuple[str, int] | None:
    """Hash the file while spooling it (at most `room` bytes), then store it under its hash: (sha256, size)."""
    try:
        handle = os.open(name, REGULAR, dir_fd=fd)
    except OSError:
        return None  # swapped for a link or a FIFO since it was listed
    with os.fdopen(handle, "rb") as reader:
        if not stat.S_ISREG(os.fstat(reader.fileno()).st_mode):
            return None
        os.set_blocking(reader.fileno(), True)
        try:
            spooled, size, sha256 = storage.spool(reader, room)
        except storage.TooLarge:
            return None  # it grew past the bound while read
    with spooled:
        storage.blob_put(sha256, spooled, size)
    return sha256, size


def _save(workspace, walk: _Walk) -> Snapshot | None:
    if not walk.entries:
        return None
    rows = sorted([entry.path, entry.sha256, entry.mode] for entry in walk.entries)
    with transaction.atomic():
        Blob.objects.bulk_create([Blob(workspace=workspace, sha256=sha256, size=size)
                                  for sha256, size in walk.sizes.items()], ignore_conflicts=True)
        snapshot, _ = Snapshot.objects.get_or_create(
            workspace=workspace, sha256=spec.snapshot_id(walk.entries),
            defaults={"files": rows, "size": walk.total, "file_count": len(rows)})
    return snapshot


def _said(walk: _Walk) -> list[str]:
    said = [f"Not kept (over the snapshot limits): {item}." for item in walk.over[:20]]
    if len(walk.over) > 20:
        said.append(f"... and {len(walk.over) - 20} more left out over the limits.")
    if walk.special:
        said.append(f"{walk.special} links, special files or files changed while read were left out (only regular "
                    "files are kept).")
    if walk.bad_paths:
        said.append(f"{walk.bad_paths} files whose names cannot be stored (control characters, backslashes, over-long "
                    "or not UTF-8) were left out.")
    return said
