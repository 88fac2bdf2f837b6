"""A folder sent as one `.tar.gz` (`uploads/`): read under limits into manifest entries and content-named files.

The archive is hostile input. Nothing of it reaches storage until every member has passed: it is expanded into a
temporary folder where files are named by their sha256 (never by the names the archive gives), its expanded size and
member count are bounded (a gzip bomb stops at the snapshot limit), links, devices and pipes are refused, and member
names follow the same path rules as a manifest (`assets.specs.snapshots`).
"""
import gzip
import hashlib
import io
import os
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from .specs import snapshots as spec

COPY_CHUNK = 1024 * 1024
# tarfile reads a pax or GNU long-name header whole, in one read: past this size it is refused, not read.
MAX_HEADER_READ = COPY_CHUNK
# What the expanded tar may hold beyond its files' bytes: headers (512 bytes a member, more for long names) and padding.
HEADER_ALLOWANCE = 64 * 1024 * 1024
# Small files (most of a code folder) stay in memory up to this much in all: a temporary file each costs more than
# hashing and storing it.
SMALL_FILE = 256 * 1024
MEMORY_BUDGET = 64 * 1024 * 1024


class ArchiveRefused(Exception):
    """The archive breaks a rule; the message says which, in a sentence for a person."""

    def __init__(self, message: str, code: str = "InvalidArchive"):
        super().__init__(message)
        self.code = code


@dataclass
class Archive:
    """What an archive holds: its files as manifest entries, each distinct content in memory or `folder/<sha256>`."""

    folder: tempfile.TemporaryDirectory
    entries: list[spec.Entry] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    in_memory: dict[str, bytes] = field(default_factory=dict)
    memory_used: int = 0

    def open(self, sha256: str) -> BinaryIO:
        if sha256 in self.in_memory:
            return io.BytesIO(self.in_memory[sha256])
        return open(Path(self.folder.name) / sha256, "rb")


def read_archive(body: BinaryIO, limits: spec.Limits, max_blob: int) -> Archive:
    """Expand a gzip-compressed tar (already bounded in size) into an Archive; raises ArchiveRefused."""
    archive = Archive(folder=tempfile.TemporaryDirectory(prefix="dockyard-upload-"))
    try:
        with _expanded(body, limits.max_total_bytes + HEADER_ALLOWANCE) as tar_file:
            _read_members(tar_file, archive, limits, max_blob)
    except BaseException:
        archive.folder.cleanup()
        raise
    return archive


def _expanded(body: BinaryIO, limit: int) -> BinaryIO:
    """The gzip body expanded into a temporary file, refused once it passes `limit` bytes."""
    expanded = tempfile.TemporaryFile()
    size = 0
    try:
        with gzip.GzipFile(fileobj=body, mode="rb") as unzipped:
            while chunk := unzipped.read(COPY_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise ArchiveRefused(f"The archive expands past {limit} bytes.", "SnapshotTooLarge")
                expanded.write(chunk)
    except (OSError, EOFError, zlib.error):
        expanded.close()
        raise ArchiveRefused("The body is not a gzip-compressed tar archive.") from None
    except BaseException:
        expanded.close()
        raise
    expanded.seek(0)
    return expanded


def _read_members(tar_file: BinaryIO, archive: Archive, limits: spec.Limits, max_blob: int) -> None:
    total, members = 0, 0
    try:
        with tarfile.open(fileobj=_HeaderGuard(tar_file), mode="r:") as tar:
            for member in tar:
                members += 1
                if members > 2 * limits.max_files + 16:  # folders count too: a tar of empty folders is work as well
                    raise ArchiveRefused(f"The archive has more than {limits.max_files} files.", "TooManyFiles")
                path = _member_path(member, limits)
                if path is None:
                    continue
                total += member.size
                _check_bounds(member, total, len(archive.entries) + 1, limits, max_blob)
                sha256 = _keep(tar, member, archive)
                archive.entries.append(spec.Entry(path, sha256, spec.file_mode(member.mode)))
    except tarfile.TarError as exc:
        raise ArchiveRefused(f"The body is not a readable tar archive ({exc}).") from None
    problems = spec.entries_problems(archive.entries, limits)
    if problems:
        index, _, message = problems[0]
        raise ArchiveRefused(f"{archive.entries[index].path}: {message}", "InvalidPath")


def _member_path(member: tarfile.TarInfo, limits: spec.Limits) -> str | None:
    """The member's path in the snapshot (`./` prefixes dropped); None for folders; refused for anything but files."""
    name = member.name
    while name.startswith("./"):
        name = name[2:]
    if member.isdir():
        name = name.rstrip("/")
        problem = spec.path_problem(name, limits) if name not in ("", ".") else None
        if problem:
            raise ArchiveRefused(f"{_shown(member.name)}: {problem}", "InvalidPath")
        return None
    if member.issym() or member.islnk():
        raise ArchiveRefused(f"{_shown(member.name)} is a link (to {_shown(member.linkname)}); links are not accepted: "
                             "send the file itself.", "LinkRefused")
    if not member.isreg():
        raise ArchiveRefused(f"{_shown(member.name)} is a device, pipe or other special file; only files and folders "
                             "are accepted.", "InvalidPath")
    problem = spec.path_problem(name, limits)
    if problem:
        raise ArchiveRefused(f"{_shown(member.name)}: {problem}", "InvalidPath")
    return name


def _check_bounds(member: tarfile.TarInfo, total: int, files: int, limits: spec.Limits, max_blob: int) -> None:
    if files > limits.max_files:
        raise ArchiveRefused(f"The archive has more than {limits.max_files} files.", "TooManyFiles")
    if member.size > max_blob:
        raise ArchiveRefused(f"{_shown(member.name)} is larger than {max_blob} bytes.", "BlobTooLarge")
    if total > limits.max_total_bytes:
        raise ArchiveRefused(f"The archive's files add up to more than {limits.max_total_bytes} bytes.", "SnapshotTooLarge")


def _keep(tar: tarfile.TarFile, member: tarfile.TarInfo, archive: Archive) -> str:
    """Keep the member's bytes once per content (in memory or in `folder/<sha256>`) and return the sha256."""
    source = tar.extractfile(member)
    if member.size <= SMALL_FILE and archive.memory_used + member.size <= MEMORY_BUDGET:
        data = source.read(member.size)
        sha256 = hashlib.sha256(data).hexdigest()
        if sha256 not in archive.sizes:
            archive.in_memory[sha256], archive.sizes[sha256] = data, member.size
            archive.memory_used += member.size
        return sha256
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=archive.folder.name, delete=False) as target:
        while chunk := source.read(COPY_CHUNK):
            digest.update(chunk)
            target.write(chunk)
    sha256 = digest.hexdigest()
    os.replace(target.name, Path(archive.folder.name) / sha256)
    archive.sizes[sha256] = member.size
    return sha256


def _shown(name: str) -> str:
    """A member name fit for a message: bounded, control characters escaped."""
    text = name[:200].encode("unicode_escape").decode("ascii")
    return text + ("…" if len(name) > 200 else "")


class _HeaderGuard:
    """The expanded tar as tarfile reads it, refusing a header read larger than MAX_HEADER_READ (a pax bomb)."""

    def __init__(self, file: BinaryIO):
        self.file = file

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > MAX_HEADER_READ:
            raise ArchiveRefused(f"The archive has a header larger than {MAX_HEADER_READ} bytes.")
        return self.file.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)

    def tell(self) -> int:
        return self.file.tell()
