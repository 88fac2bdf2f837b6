"""Artifact bytes in Django's storage "artifacts" (a folder under var/, or S3): the one module that touches them.

Keys: `blobs/<2 hex>/<sha256>` for content (one object per hash, shared by every workspace that proved it has the
bytes), `parts/<upload id>/<offset>` for the chunks of an upload in progress. Nothing here checks who asks: the
services do, before they call.
"""
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from django.core.files import File
from django.core.files.storage import storages

COPY_CHUNK = 1024 * 1024
# A chunk or a file waits in memory up to this size, on the temporary disk beyond it.
SPOOL_BYTES = 1024 * 1024
# Blobs of one folder are stored this many at a time: an object store answers each request in milliseconds, and a
# code folder is thousands of small files.
PARALLEL_PUTS = 8
SMALL_BLOB = 1024 * 1024


class TooLarge(Exception):
    """A stream had more bytes than it was allowed."""


def artifacts():
    return storages["artifacts"]


def blob_key(sha256: str) -> str:
    return f"blobs/{sha256[:2]}/{sha256}"


def part_key(upload_id: int, offset: int) -> str:
    return f"parts/{upload_id}/{offset:015d}"


def spool(stream: BinaryIO, limit: int) -> tuple[BinaryIO, int, str]:
    """Read `stream` into a temporary file (at most `limit` bytes, else TooLarge): (file at 0, size, sha256)."""
    spooled = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    digest, size = hashlib.sha256(), 0
    try:
        while chunk := stream.read(COPY_CHUNK):
            size += len(chunk)
            if size > limit:
                raise TooLarge(limit)
            digest.update(chunk)
            spooled.write(chunk)
    except BaseException:
        spooled.close()
        raise
    spooled.seek(0)
    return spooled, size, digest.hexdigest()


def blob_exists(sha256: str) -> bool:
    return artifacts().exists(blob_key(sha256))


def blob_put(sha256: str, content: BinaryIO, size: int | None = None) -> None:
    """Store verified content under its hash, unless it is there already (then nothing is written)."""
    storage, key = artifacts(), blob_key(sha256)
    # An object store that replaces objects atomically (S3) takes a small blob in one PUT rather than HEAD + PUT.
    if not (size is not None and size <= SMALL_BLOB and getattr(storage, "file_overwrite", False)) and storage.exists(key):
        return
    saved = storage.save(key, File(content, name=sha256))
    if saved != key:  # someone stored the same bytes meanwhile; the filesystem kept ours under another name
        storage.delete(saved)


def blobs_put(contents: dict[str, tuple[Callable[[], BinaryIO], int]]) -> None:
    """Store many verified contents (sha256 -> (how to open it, size)), several at a time; each as blob_put."""
    def put(sha256: str) -> None:
        opener, size = contents[sha256]
        with opener() as content:
            blob_put(sha256, content, size)

    with ThreadPoolExecutor(max_workers=PARALLEL_PUTS) as pool:
        list(pool.map(put, contents))  # list(): the first error is raised here


def blob_open(sha256: str) -> BinaryIO:
    return artifacts().open(blob_key(sha256), "rb")


def part_put(upload_id: int, offset: int, content: BinaryIO) -> str:
    """Store one chunk; returns the key it was stored under."""
    return artifacts().save(part_key(upload_id, offset), File(content, name=str(offset)))


def parts_joined(keys: list[str], limit: int) -> tuple[BinaryIO, int, str]:
    """The parts read in order into one temporary file (bounded by `limit`): (file at 0, size, sha256)."""
    return spool(_Chain(keys), limit)


def delete(keys: list[str]) -> None:
    storage = artifacts()
    for key in keys:
        storage.delete(key)


class _Chain:
    """The stored parts as one readable stream, opened one at a time."""

    def __init__(self, keys: list[str]):
        self.pending: Iterator[str] = iter(keys)
        self.current: BinaryIO | None = None

    def read(self, size: int = -1) -> bytes:
        while True:
            if self.current is None:
                key = next(self.pending, None)
                if key is None:
                    return b""
                self.current = artifacts().open(key, "rb")
            chunk = self.current.read(size)
            if chunk:
                return chunk
            self.current.close()
            self.current = None


def stored_blobs() -> Iterator[str]:
    """The sha256 of every blob in storage (listed folder by folder)."""
    storage = artifacts()
    for folder in _listed_folders(storage, "blobs"):
        yield from storage.listdir(f"blobs/{folder}")[1]


def stored_uploads() -> list[str]:
    """The upload ids that have parts in storage (`parts/<id>/`), as listed."""
    return _listed_folders(artifacts(), "parts")


def blob_size(sha256: str) -> int:
    return artifacts().size(blob_key(sha256))


def upload_parts_size(upload_id: str) -> tuple[int, int]:
    """How many parts are stored for an upload, and their bytes."""
    storage, folder = artifacts(), f"parts/{upload_id}"
    names = storage.listdir(folder)[1]
    return len(names), sum(storage.size(f"{folder}/{name}") for name in names)


def delete_upload_parts(upload_id: str) -> None:
    """Delete every part stored for an upload, whatever its records say."""
    storage, folder = artifacts(), f"parts/{upload_id}"
    try:
        names = storage.listdir(folder)[1]
    except FileNotFoundError:
        return
    delete([f"{folder}/{name}" for name in names])
    try:
        os.rmdir(storage.path(folder))  # a filesystem keeps the emptied folder; an object store has none
    except (NotImplementedError, OSError):
        pass


def _listed_folders(storage, folder: str) -> list[str]:
    try:
        return storage.listdir(folder)[0]
    except FileNotFoundError:  # a filesystem that never stored anything there
        return []
