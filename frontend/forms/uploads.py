"""Folders and archives sent from the browser: their limits, their type, and which files of a folder to pack.

An archive (.zip, .tar.gz) is posted as it is; a folder is packed by the browser into a .tar.gz first (studio.js),
after the server has said which of its files the ignore files leave behind (`plan`). Either way the archive goes
through `assets.services.upload_create` (views/uploads.py), the one reader with its limits, so the studio refuses
what the API refuses, in its words.
"""
import json

from django.conf import settings

from assets import ignores, services
from assets.choices import ArchiveType
from assets.specs import snapshots as spec

GZIP_MAGIC, ZIP_MAGICS = b"\x1f\x8b", (b"PK\x03\x04", b"PK\x05\x06")
# The list of a folder's files the browser sends to `plan`: one "size<TAB>path" line a file.
MAX_LISTING_LINE = 16 * 1024


def limits() -> dict:
    """What the upload widget tells people (and checks before it sends anything)."""
    return {"max_files": settings.DOCKYARD_SNAPSHOT_MAX_FILES, "max_bytes": settings.DOCKYARD_SNAPSHOT_MAX_BYTES,
            "max_body": settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES}


def media_type(uploaded) -> str | None:
    """The archive's type by its first bytes (browsers name a .zip's type in several ways, a .tgz in others)."""
    head = uploaded.read(4)
    uploaded.seek(0)
    if head[:2] == GZIP_MAGIC:
        return ArchiveType.GZIP
    return ArchiveType.ZIP if head in ZIP_MAGICS else None


def plan(listing, ignore_json: str) -> dict:
    """Which of a folder's files to pack: `listing` is the browser's "size<TAB>path" lines (paths below the folder),
    `ignore_json` the text of its ignore files by path. Answers the indexes kept, how many were left behind, and the
    problems that would refuse the upload anyway (too many files or bytes, a path no snapshot may hold)."""
    files, problems = _listing(listing, 20 * settings.DOCKYARD_SNAPSHOT_MAX_FILES), []
    if files is None:
        return {"keep": [], "left_out": 0, "problems": ["The folder has far more files than an upload may hold "
                                                       f"({settings.DOCKYARD_SNAPSHOT_MAX_FILES}); list what the job "
                                                       "does not need in .amlignore, or pick a smaller folder."]}
    try:
        texts = json.loads(ignore_json or "{}")
    except ValueError:
        texts = None
    if not isinstance(texts, dict) or not all(isinstance(value, str) for value in texts.values()):
        return {"keep": [], "left_out": 0, "problems": ["The ignore files could not be read."]}
    keep = [index for index, sent in enumerate(ignores.kept([path for _, path in files], texts)) if sent]
    limit, total = services.snapshot_limits(), sum(files[index][0] for index in keep)
    if len(keep) > limit.max_files:
        problems.append(f"The folder has {len(keep)} files to send; an upload has at most {limit.max_files} "
                        "(list what the job does not need in .amlignore).")
    if total > limit.max_total_bytes:
        problems.append(f"The folder's files add up to {total} bytes; an upload has at most {limit.max_total_bytes} "
                        "(list what the job does not need in .amlignore).")
    problems += [f"{files[index][1][:200]}: {problem}" for index in keep
                 if (problem := spec.path_problem(files[index][1], limit))][:5]
    return {"keep": keep, "left_out": len(files) - len(keep), "files": len(keep), "bytes": total, "problems": problems}


def _listing(listing, most: int) -> list[tuple[int, str]] | None:
    """The listing's (size, path) rows (None past `most` of them); a line that is not one counts as a file of no size
    with that text as its path (the path rules then refuse it)."""
    rows = []
    for raw in listing:
        if len(rows) == most:
            return None
        line = raw[:MAX_LISTING_LINE].decode("utf-8", errors="replace").rstrip("\r\n")
        size, _, path = line.partition("\t")
        rows.append((int(size) if size.isascii() and size.isdigit() else 0, path))
    return rows
