"""A folder sent as one `.tar.gz` or `.zip` (`uploads/`): read under limits into manifest entries and content-named files.

The archive is hostile input. Nothing of it reaches storage until every member has passed: it is expanded into a
temporary folder where files are named by their sha256 (never by the names the archive gives), its expanded size and
member count are bounded (a gzip or zip bomb stops at the snapshot limit), links, devices and pipes are refused, and
member names follow the same path rules as a manifest (`assets.specs.snapshots`). A zip is checked further: its
central directory is counted before it is parsed, members may not overlap (the trick of bombs without recursion),
a member that expands to other than its declared size is refused, and so are encrypted members and names with NUL.
"""
import gzip
import hashlib
import io
import lzma
import os
import stat
import struct
import tarfile
import tempfile
import zipfile
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
TAR_GZ, ZIP = "tar.gz", "zip"


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


def read_archive(body: BinaryIO, limits: spec.Limits, max_blob: int, kind: str = TAR_GZ) -> Archive:
    """Expand a .tar.gz or a .zip (`kind`; a seekable body, already bounded in size) into an Archive; raises ArchiveRefused."""
    archive = Archive(folder=tempfile.TemporaryDirectory(prefix="dockyard-upload-"))
    try:
        if kind == ZIP:
            _read_zip(body, archive, limits, max_blob)
        else:
            with _expanded(body, limits.max_total_bytes + HEADER_ALLOWANCE) as tar_file:
                _read_members(tar_file, archive, limits, max_blob)
        _check_entries(archive, limits)
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
                _check_bounds(member.name, member.size, total, len(archive.entries) + 1, limits, max_blob)
                sha256 = _keep(tar.extractfile(member), member.size, member.name, archive)
                archive.entries.append(spec.Entry(path, sha256, spec.file_mode(member.mode)))
    except tarfile.TarError as exc:
        raise ArchiveRefused(f"The body is not a readable tar archive ({exc}).") from None


def _check_entries(archive: Archive, limits: spec.Limits) -> None:
    """The paths together: no duplicates, no file that is also another's folder."""
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


def _check_bounds(name: str, size: int, total: int, files: int, limits: spec.Limits, max_blob: int) -> None:
    """A member's declared size, the running total and the file count against the limits, before it is read."""
    if files > limits.max_files:
        raise ArchiveRefused(f"The archive has more than {limits.max_files} files.", "TooManyFiles")
    if size > max_blob:
        raise ArchiveRefused(f"{_shown(name)} is larger than {max_blob} bytes.", "BlobTooLarge")
    if total > limits.max_total_bytes:
        raise ArchiveRefused(f"The archive's files add up to more than {limits.max_total_bytes} bytes.", "SnapshotTooLarge")


def _keep(source: BinaryIO, size: int, name: str, archive: Archive) -> str:
    """Keep a member's bytes once per content (in memory or in `folder/<sha256>`) and return the sha256.

    `size` is what the archive declares: reading stops one byte past it, and any other count is refused, so a member
    cannot expand beyond what was checked against the limits.
    """
    small = size <= SMALL_FILE and archive.memory_used + size <= MEMORY_BUDGET
    digest, read, chunks = hashlib.sha256(), 0, []
    target = None if small else tempfile.NamedTemporaryFile(dir=archive.folder.name, delete=False)
    try:
        while chunk := source.read(min(COPY_CHUNK, size - read + 1)):
            read += len(chunk)
            if read > size:
                raise ArchiveRefused(f"{_shown(name)} expands past the {size} bytes its header declares.")
            digest.update(chunk)
            if small:
                chunks.append(chunk)
            else:
                target.write(chunk)
    finally:
        if target is not None:
            target.close()
    if read != size:
        raise ArchiveRefused(f"{_shown(name)} holds {read} bytes, not the {size} its header declares.")
    sha256 = digest.hexdigest()
    if target is not None:
        os.replace(target.name, Path(archive.folder.name) / sha256)
    elif sha256 not in archive.sizes:
        archive.in_memory[sha256] = b"".join(chunks)
        archive.memory_used += size
    archive.sizes[sha256] = size
    return sha256


def _shown(name: str) -> str:
    """A member name fit for a message: bounded, control characters escaped."""
    text = name[:200].encode("unicode_escape").decode("ascii")
    return text + ("…" if len(name) > 200 else "")


# .zip


ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
               zipfile.ZIP_LZMA: "lzma"}
ENCRYPTED_FLAGS = 0x0001 | 0x0040  # traditional PKWARE encryption, strong encryption
END_RECORD, END_RECORD_SIZE = b"PK\x05\x06", 22
ZIP64_LOCATOR, ZIP64_LOCATOR_SIZE = b"PK\x06\x07", 20
ZIP64_END_RECORD, ZIP64_END_RECORD_SIZE = b"PK\x06\x06", 56
DIRECTORY_ENTRY, DIRECTORY_ENTRY_SIZE = b"PK\x01\x02", 46
LOCAL_HEADER_SIZE = 30
MAX_COMMENT = 65535
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError, zlib.error,
              lzma.LZMAError, UnicodeDecodeError, struct.error)


def _read_zip(body: BinaryIO, archive: Archive, limits: spec.Limits, max_blob: int) -> None:
    """The members of a zip: its directory counted first, then each member checked and read within its declared size."""
    members_allowed = 2 * limits.max_files + 16  # folders count too, as in a tar
    try:
        _count_directory(body, members_allowed, limits)
        with zipfile.ZipFile(body) as bundle:
            infos = bundle.infolist()
            _check_overlaps(infos, bundle.start_dir)
            total = 0
            for info in infos:
                path = _zip_member_path(info, limits)
                if path is None:
                    continue
                total += info.file_size
                _check_bounds(info.filename, info.file_size, total, len(archive.entries) + 1, limits, max_blob)
                with bundle.open(info) as source:
                    sha256 = _keep(source, info.file_size, info.filename, archive)
                archive.entries.append(spec.Entry(path, sha256, spec.file_mode(_unix_mode(info))))
    except ZIP_ERRORS as exc:
        raise ArchiveRefused(f"The body is not a readable zip archive ({_shown(str(exc))}).") from None


def _count_directory(body: BinaryIO, allowed: int, limits: spec.Limits) -> None:
    """Walk the central directory's records before zipfile parses them all into memory: at most `allowed` members."""
    start, size = _directory_extent(body)
    position, count = start, 0
    while position < start + size:
        body.seek(position)
        record = body.read(DIRECTORY_ENTRY_SIZE)
        if len(record) < DIRECTORY_ENTRY_SIZE or record[:4] != DIRECTORY_ENTRY:
            raise ArchiveRefused("The body is not a readable zip archive (its central directory is damaged).")
        name, extra, comment = struct.unpack("<HHH", record[28:34])
        position += DIRECTORY_ENTRY_SIZE + name + extra + comment
        count += 1
        if count > allowed:
            raise ArchiveRefused(f"The archive has more than {limits.max_files} files.", "TooManyFiles")
    body.seek(0)


def _directory_extent(body: BinaryIO) -> tuple[int, int]:
    """(where the central directory starts, its size), as zipfile computes them (data before the zip is allowed)."""
    end = body.seek(0, io.SEEK_END)
    tail_size = min(end, END_RECORD_SIZE + MAX_COMMENT)
    body.seek(end - tail_size)
    tail = body.read(tail_size)
    at = tail.rfind(END_RECORD)
    if at < 0 or tail_size - at < END_RECORD_SIZE:
        raise ArchiveRefused("The body is not a zip archive (it has no end of central directory record).")
    record_at = end - tail_size + at
    size, = struct.unpack("<I", tail[at + 12:at + 16])
    locator = tail[at - ZIP64_LOCATOR_SIZE:at] if at >= ZIP64_LOCATOR_SIZE else b""
    if locator[:4] != ZIP64_LOCATOR:
        return record_at - size, size
    body.seek(record_at - ZIP64_LOCATOR_SIZE - ZIP64_END_RECORD_SIZE)
    record = body.read(ZIP64_END_RECORD_SIZE)
    if record[:4] != ZIP64_END_RECORD:
        raise ArchiveRefused("The body is not a readable zip archive (its zip64 end record is damaged).")
    size, = struct.unpack("<Q", record[40:48])
    return record_at - ZIP64_LOCATOR_SIZE - ZIP64_END_RECORD_SIZE - size, size


def _check_overlaps(infos: list[zipfile.ZipInfo], directory_start: int) -> None:
    """Each member's data lies before the next member's header: members sharing bytes are how zip bombs multiply."""
    ordered = sorted(infos, key=lambda info: info.header_offset)
    for info, following in zip(ordered, [*ordered[1:], None], strict=True):
        limit = following.header_offset if following is not None else directory_start
        if info.header_offset + LOCAL_HEADER_SIZE + info.compress_size > limit:
            raise ArchiveRefused(f"{_shown(info.filename)} overlaps another member's bytes: a zip whose members share "
                                 "data (a zip bomb's trick) is refused.")


def _zip_member_path(info: zipfile.ZipInfo, limits: spec.Limits) -> str | None:
    """The member's path in the snapshot; None for folders; refused for links, specials, encryption and other methods."""
    shown = _shown(info.orig_filename)
    if "\x00" in info.orig_filename:  # zipfile cuts a name at NUL: the name it shows is not the one in the archive
        raise ArchiveRefused(f"{shown}: a name may not contain NUL.", "InvalidPath")
    kind = stat.S_IFMT(_unix_mode(info))
    if kind == stat.S_IFLNK:
        raise ArchiveRefused(f"{shown} is a link; links are not accepted: send the file itself.", "LinkRefused")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise ArchiveRefused(f"{shown} is a device, pipe or other special file; only files and folders are accepted.",
                             "InvalidPath")
    name = info.filename
    while name.startswith("./"):
        name = name[2:]
    if info.is_dir() or kind == stat.S_IFDIR:
        name = name.rstrip("/")
        problem = spec.path_problem(name, limits) if name not in ("", ".") else None
        if problem:
            raise ArchiveRefused(f"{shown}: {problem}", "InvalidPath")
        return None
    if info.flag_bits & ENCRYPTED_FLAGS:
        raise ArchiveRefused(f"{shown} is encrypted; send the archive without a password.", "EncryptedArchive")
    if info.compress_type not in ZIP_METHODS:
        raise ArchiveRefused(f"{shown} is compressed with method {info.compress_type}; a zip member is stored or "
                             f"compressed with {', '.join(ZIP_METHODS.values())}.")
    problem = spec.path_problem(name, limits)
    if problem:
        raise ArchiveRefused(f"{shown}: {problem}", "InvalidPath")
    return name


def _unix_mode(info: zipfile.ZipInfo) -> int:
    """The Unix mode in the member's external attributes (0 when the zip was made elsewhere)."""
    return info.external_attr >> 16


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
