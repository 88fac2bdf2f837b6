"""What a stored folder may hold: hashes, file paths and modes, and the canonical manifest whose sha256 names a snapshot.

Pure (no Django): the API, the archive reader and later the CLI check paths by the same rules. A manifest entry's path
is written relative to the folder's root with `/` between parts; it must never leave that root when a job unpacks it,
whatever the unpacker (a tar, a shell loop, Windows), so anything that could be read as going up, starting at a root or
drive, or hiding a separator is refused rather than cleaned.
"""
import hashlib
import json
import re
from dataclasses import dataclass

SHA256 = re.compile(r"[0-9a-f]{64}")
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
MAX_PART_BYTES = 255  # one path component, in UTF-8 (ext4, XFS, most object stores' key parts)
DRIVE = re.compile(r"[A-Za-z]:")
# A file's mode is kept as git keeps it: executable or not (no setuid, no group/world write).
EXECUTABLE, REGULAR = 0o755, 0o644


@dataclass(frozen=True)
class Limits:
    """Bounds of one snapshot (from settings)."""

    max_files: int
    max_total_bytes: int
    max_depth: int
    max_path_chars: int


@dataclass(frozen=True)
class Entry:
    """One file of a snapshot: where it goes, which blob it is, whether it is executable."""

    path: str
    sha256: str
    mode: int


def is_sha256(value: object) -> bool:
    return isinstance(value, str) and SHA256.fullmatch(value) is not None


def file_mode(mode: int) -> int:
    """0755 when any execute bit is set, else 0644."""
    return EXECUTABLE if mode & 0o111 else REGULAR


def path_problem(path: object, limits: Limits) -> str | None:
    """Why `path` cannot name a file in a snapshot, or None."""
    if not isinstance(path, str) or not path:
        return "A path is a non-empty string."
    if len(path) > limits.max_path_chars:
        return f"A path has at most {limits.max_path_chars} characters."
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
        return "A path may not contain NUL or other control characters."
    if "\\" in path:
        return "A path uses `/` between its parts; a backslash is refused (it separates parts on Windows)."
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "A path must be valid Unicode text (no lone surrogates)."
    if path.startswith("/") or DRIVE.match(path):
        return "A path is relative to the folder: it may not start at a root or a drive."
    return parts_problem(path.split("/"), limits)


def parts_problem(parts: list[str], limits: Limits) -> str | None:
    if len(parts) > limits.max_depth:
        return f"A path has at most {limits.max_depth} parts."
    for part in parts:
        if part in ("", ".", ".."):
            return "A path has no empty, `.` or `..` parts (it may not end with `/` or go up)."
        if len(part.encode("utf-8")) > MAX_PART_BYTES:
            return f"A path's part has at most {MAX_PART_BYTES} bytes."
    return None


def entries_problems(entries: list[Entry], limits: Limits) -> list[tuple[int, str, str]]:
    """(index, field, message) for each entry that breaks a rule, duplicates and file/folder clashes included."""
    problems = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        problem = path_problem(entry.path, limits)
        if problem:
            problems.append((index, "path", problem))
        elif entry.path in seen:
            problems.append((index, "path", f"The path {entry.path} is listed twice (first at files.{seen[entry.path]})."))
        else:
            seen[entry.path] = index
        if not is_sha256(entry.sha256):
            problems.append((index, "sha256", "A sha256 is 64 lowercase hexadecimal digits."))
    problems.extend((index, "path", message) for index, message in folder_clashes(seen))
    return sorted(problems)


def folder_clashes(paths: dict[str, int]) -> list[tuple[int, str]]:
    """A path that is a file and also the folder of another (`a` and `a/b`): no unpacker can make both."""
    clashes = []
    for path, index in paths.items():
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in paths:
                clashes.append((index, f"{folder} is a file, so it cannot also be the folder of {path}."))
                break
    return clashes


def canonical(entries: list[Entry]) -> bytes:
    """The manifest as bytes: [[path, sha256, mode], ...] sorted by path, compact JSON in UTF-8."""
    rows = sorted([entry.path, entry.sha256, entry.mode] for entry in entries)
    return json.dumps(rows, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def snapshot_id(entries: list[Entry]) -> str:
    """The sha256 of the canonical manifest: the same files, paths and modes give the same id."""
    return hashlib.sha256(canonical(entries)).hexdigest()


UPLOADS_PREFIX = "azureml://uploads/"


def upload_sha256(value: object) -> str | None:
    """The snapshot's sha256 a reference `azureml://uploads/<sha256>` names, or None when it is not one."""
    if not isinstance(value, str) or not value.startswith(UPLOADS_PREFIX):
        return None
    sha256 = value[len(UPLOADS_PREFIX):].rstrip("/")
    return sha256 if is_sha256(sha256) else None


def merge(manifests: list[list[Entry]], sizes: dict[str, int], limits: Limits) -> tuple[list[Entry], list[tuple[int, str]]]:
    """Several snapshots as one, the first given winning: an entry whose path a previous snapshot already holds, that
    clashes with one of its files or folders, or that would pass the limits is left out. Returns the entries kept and
    (which snapshot, path) of those left out."""
    kept: list[Entry] = []
    files: set[str] = set()
    folders: set[str] = set()
    dropped: list[tuple[int, str]] = []
    total = 0
    for which, entries in enumerate(manifests):
        for entry in sorted(entries, key=lambda item: item.path):
            parents = _folders_of(entry.path)
            clash = entry.path in files or entry.path in folders or any(parent in files for parent in parents)
            size = sizes.get(entry.sha256, 0)
            if clash or len(kept) >= limits.max_files or total + size > limits.max_total_bytes:
                dropped.append((which, entry.path))
                continue
            kept.append(entry)
            files.add(entry.path)
            folders.update(parents)
            total += size
    return kept, dropped


def _folders_of(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:depth]) for depth in range(1, len(parts))]
