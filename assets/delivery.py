"""Snapshots delivered to where code runs: written out as a local job's folder, or fetched by a pod with a signed URL;
and the signed URL a pod gives its outputs back to.

A pod must not need Dockyard's database or broker, nor an API token that reaches a whole workspace: it gets a URL
whose token names one snapshot of one workspace and when it stops working (django.core.signing, HMAC with
SECRET_KEY), answered as a deterministic .tar.gz. An upload token (its own salt) names one job of one workspace and
takes nothing but that job's outputs. Every URL issued, every fetch and every upload is logged. URLs kept in a
cluster are renewed once half of their lifetime has passed (`renewal_due`), so a pod that starts late still works.
"""
import gzip
import logging
import os
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core import signing

from . import storage
from .models import Snapshot
from .specs import snapshots as spec

logger = logging.getLogger("dockyard.artifacts")

FETCH_SALT = "dockyard.artifacts.fetch"
FETCH_PATH = "/api/v1/artifacts/fetch/"
UPLOAD_SALT = "dockyard.artifacts.outputs"
UPLOAD_PATH = "/api/v1/artifacts/outputs/"
COPY_CHUNK = 1024 * 1024
WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


class DeliveryRefused(ValueError):
    """A snapshot that cannot be delivered (missing, over the bounds, a bad token); the message says why."""


@dataclass(frozen=True)
class Written:
    """What one materialisation wrote."""

    files: int
    size: int


def snapshot_named(workspace, reference: str) -> Snapshot | None:
    """The workspace's snapshot an `azureml://uploads/<sha256>` reference names, or None."""
    sha256 = spec.upload_sha256(reference)
    if sha256 is None:
        return None
    return Snapshot.objects.filter(workspace=workspace, sha256=sha256).first()


def snapshot_of(workspace, sha256: str) -> Snapshot | None:
    """The workspace's snapshot with this sha256, or None."""
    return Snapshot.objects.filter(workspace=workspace, sha256=sha256).first()


# A local job's working folder


def materialise(snapshot: Snapshot, target: Path, max_files: int, max_bytes: int) -> Written:
    """Write the snapshot's files under `target` (modes kept, never through a link), within the bounds given."""
    if snapshot.file_count > max_files:
        raise DeliveryRefused(f"The code has {snapshot.file_count} files, more than {max_files} "
                              "(DOCKYARD_JOB_CODE_MAX_FILES): list what the job does not need in .amlignore.")
    if snapshot.size > max_bytes:
        raise DeliveryRefused(f"The code holds {snapshot.size} bytes, more than {max_bytes} "
                              "(DOCKYARD_JOB_CODE_MAX_BYTES): list what the job does not need in .amlignore.")
    target.mkdir(parents=True, exist_ok=True)
    for path, sha256, mode in snapshot.files:
        _write_file(target, path, sha256, mode)
    return Written(snapshot.file_count, snapshot.size)


def _write_file(target: Path, path: str, sha256: str, mode: int) -> None:
    parts = path.split("/")
    if spec.parts_problem(parts, spec.Limits(1 << 30, 1 << 62, 1 << 10, 1 << 20)):  # checked when stored; once more
        raise DeliveryRefused(f"The snapshot holds a path that cannot be written: {path!r}.")
    folder = target.joinpath(*parts[:-1])
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder / parts[-1], WRITE, spec.file_mode(mode))
    with os.fdopen(handle, "wb") as writer, storage.blob_open(sha256) as reader:
        os.fchmod(writer.fileno(), spec.file_mode(mode))
        while chunk := reader.read(COPY_CHUNK):
            writer.write(chunk)


# The same snapshot as a .tar.gz, for a pod's init container


def archive_stream(snapshot: Snapshot) -> Iterator[bytes]:
    """The snapshot as a deterministic .tar.gz (sorted, mtime 0, owner 0, modes as stored), produced as it is sent."""
    sink = _Sink()
    # gzip level 1: pods fetch inside the cluster's network, where bytes are cheap and Dockyard's CPU is not (tarfile's
    # own "w|gz" compresses at 9: about 14 times the CPU for 28 % fewer bytes; bench/uploads.py)
    with gzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=0, compresslevel=1) as zipped, \
            tarfile.open(fileobj=zipped, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        folders: set[str] = set()
        for path, sha256, mode in sorted(snapshot.files):
            for folder in _parents(path):
                if folder not in folders:
                    folders.add(folder)
                    tar.addfile(_info(folder, tarfile.DIRTYPE, 0o755, 0))
            size = storage.artifacts().size(storage.blob_key(sha256))
            with storage.blob_open(sha256) as content:
                yield from _add_streamed(tar, _info(path, tarfile.REGTYPE, spec.file_mode(mode), size), content, sink)
    yield sink.drain()


def _add_streamed(tar: tarfile.TarFile, info: tarfile.TarInfo, content, sink: "_Sink") -> Iterator[bytes]:
    """tarfile.addfile, handing the compressed bytes on chunk by chunk (a large file is never held whole)."""
    header = info.tobuf(tar.format, tar.encoding, tar.errors)
    tar.fileobj.write(header)
    left = info.size
    while left:
        chunk = content.read(min(COPY_CHUNK, left))
        if not chunk:
            raise DeliveryRefused(f"The stored content of {info.name} is shorter than its size.")
        tar.fileobj.write(chunk)
        left -= len(chunk)
        yield sink.drain()
    padding = -info.size % tarfile.BLOCKSIZE
    tar.fileobj.write(tarfile.NUL * padding)
    tar.offset += len(header) + info.size + padding
    yield sink.drain()


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:depth]) for depth in range(1, len(parts))]


def _info(name: str, kind: bytes, mode: int, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.mtime = kind, mode, size, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


class _Sink:
    """Where tarfile writes; the bytes are handed on as they come."""

    def __init__(self):
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def drain(self) -> bytes:
        data, self.chunks = b"".join(self.chunks), []
        return data


# Signed fetch URLs


def fetch_token(snapshot: Snapshot, seconds: int | None = None, purpose: str = "") -> str:
    """A token that fetches this one snapshot of its workspace until it expires (DOCKYARD_ARTIFACT_URL_SECONDS)."""
    seconds = settings.DOCKYARD_ARTIFACT_URL_SECONDS if seconds is None else seconds
    expires = int(time.time()) + seconds
    token = signing.dumps({"w": snapshot.workspace_id, "s": snapshot.sha256, "e": expires}, salt=FETCH_SALT)
    logger.info("Issued a fetch URL for snapshot %s of workspace %s%s, good for %d s.", snapshot.sha256,
                snapshot.workspace_id, f" ({purpose})" if purpose else "", seconds)
    return token


def fetch_url(snapshot: Snapshot, seconds: int | None = None, purpose: str = "") -> str:
    """The absolute URL a pod fetches the snapshot's .tar.gz from (DOCKYARD_EXTERNAL_URL is Dockyard's address)."""
    return settings.DOCKYARD_EXTERNAL_URL.rstrip("/") + FETCH_PATH + fetch_token(snapshot, seconds, purpose) + "/"


def snapshot_for_token(token: str, client: str = "") -> Snapshot:
    """The snapshot a fetch token names; DeliveryRefused when it is forged, expired or names nothing any more."""
    try:
        claim = signing.loads(token, salt=FETCH_SALT)
    except signing.BadSignature:
        logger.warning("Refused a fetch with a token that does not verify (from %s).", client or "?")
        raise DeliveryRefused("This download link is not valid.") from None
    if not isinstance(claim, dict) or not isinstance(claim.get("e"), int) or claim["e"] < time.time():
        logger.warning("Refused an expired fetch of snapshot %s (from %s).", _shown(claim), client or "?")
        raise DeliveryRefused("This download link has expired: ask Dockyard for a new one (resubmit, or restart).")
    snapshot = Snapshot.objects.filter(workspace_id=claim.get("w"), sha256=claim.get("s")).first()
    if snapshot is None:
        logger.warning("Refused a fetch of snapshot %s: it is gone (from %s).", _shown(claim), client or "?")
        raise DeliveryRefused("The folder this link named is no longer stored.")
    logger.info("Fetch of snapshot %s of workspace %s (from %s).", snapshot.sha256, snapshot.workspace_id, client or "?")
    return snapshot


def _shown(claim: object) -> str:
    return str(claim.get("s"))[:64] if isinstance(claim, dict) else "?"


# Renewal


def renewal_due(expires: object, lifetime: int | None = None, now: float | None = None) -> bool:
    """Whether URLs that stop working at `expires` (epoch seconds, as int or text; missing: never issued) need new
    ones: once half of their lifetime has passed, so a URL read at any moment has at least half a lifetime left."""
    lifetime = settings.DOCKYARD_ARTIFACT_URL_SECONDS if lifetime is None else lifetime
    text = str(expires) if expires is not None else ""
    if not text.isdigit():
        return True
    return int(text) - (time.time() if now is None else now) <= lifetime / 2


# Signed upload URLs for a job's outputs


@dataclass(frozen=True)
class UploadClaim:
    """What a verified upload token names."""

    workspace_id: int
    job_id: int


def upload_token(workspace_id: int, job_id: int, seconds: int | None = None, purpose: str = "") -> str:
    """A token that takes the outputs of this one job (any of its ranks) until it expires."""
    seconds = settings.DOCKYARD_ARTIFACT_URL_SECONDS if seconds is None else seconds
    token = signing.dumps({"w": workspace_id, "j": job_id, "e": int(time.time()) + seconds}, salt=UPLOAD_SALT)
    logger.info("Issued an outputs upload URL for job %s of workspace %s%s, good for %d s.", job_id, workspace_id,
                f" ({purpose})" if purpose else "", seconds)
    return token


def upload_url(workspace_id: int, job_id: int, seconds: int | None = None, purpose: str = "") -> str:
    """The absolute URL a pod POSTs its packed outputs to, followed by `<rank>/`."""
    return settings.DOCKYARD_EXTERNAL_URL.rstrip("/") + UPLOAD_PATH + upload_token(workspace_id, job_id, seconds,
                                                                                   purpose) + "/"


def upload_claim(token: str, client: str = "") -> UploadClaim:
    """The job an upload token names; DeliveryRefused when it is forged (or signed for another purpose) or expired."""
    try:
        claim = signing.loads(token, salt=UPLOAD_SALT)
    except signing.BadSignature:
        logger.warning("Refused an outputs upload with a token that does not verify (from %s).", client or "?")
        raise DeliveryRefused("This upload link is not valid.") from None
    if not isinstance(claim, dict) or not all(isinstance(claim.get(key), int) for key in ("w", "j", "e")):
        logger.warning("Refused an outputs upload with a malformed claim (from %s).", client or "?")
        raise DeliveryRefused("This upload link is not valid.")
    if claim["e"] < time.time():
        logger.warning("Refused an expired outputs upload for job %s (from %s).", claim["j"], client or "?")
        raise DeliveryRefused("This upload link has expired.")
    return UploadClaim(claim["w"], claim["j"])
