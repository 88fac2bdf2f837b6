"""Helpers of the artifact tests: hashes, raw chunk uploads, .tar.gz bodies and what the workspace holds."""
import hashlib
import io
import tarfile
import zipfile

from assets.models import Blob, BlobPart, BlobUpload, Snapshot

WS = "/api/v1/workspaces/team-a"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def start(api, data: bytes, size: int | None = None, workspace: str = WS):
    return api.post(f"{workspace}/blobs/", {"sha256": sha(data), "size": len(data) if size is None else size}, format="json")


def send(api, sha256: str, offset: int, chunk: bytes, workspace: str = WS):
    return api.generic("PATCH", f"{workspace}/blobs/{sha256}/?offset={offset}", chunk,
                       content_type="application/octet-stream")


def upload(api, data: bytes, chunk_size: int = 1 << 20, workspace: str = WS) -> dict:
    """Start and send a blob in chunks; the last answer."""
    answer = start(api, data, workspace=workspace).json()
    for offset in range(0, len(data), chunk_size):
        answer = send(api, sha(data), offset, data[offset:offset + chunk_size], workspace).json()
    return answer


def targz(files: dict[str, bytes | tuple], *, mtime: int = 0, prefix: str = "") -> bytes:
    """A .tar.gz of `files` (path -> bytes, or a ready TarInfo and bytes for special members)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, content in files.items():
            if isinstance(content, tuple):
                info, data = content
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
                continue
            info = tarfile.TarInfo(prefix + name)
            info.size, info.mtime, info.mode = len(content), mtime, 0o644
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def member(name: str, kind: bytes, *, linkname: str = "", data: bytes | None = None) -> tuple:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    info.size = len(data) if data is not None else 0
    return info, data


def post_archive(api, body: bytes, content_type: str = "application/gzip", workspace: str = WS):
    return api.post(f"{workspace}/uploads/", body, content_type=content_type)


def records() -> tuple[int, int, int, int]:
    return Blob.objects.count(), BlobUpload.objects.count(), BlobPart.objects.count(), Snapshot.objects.count()


def zipped(files: dict[str, bytes], *, modes: dict[str, int] | None = None,
           method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A .zip of `files` (path -> bytes); `modes` gives a member's Unix mode (type bits included) in its attributes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as bundle:
        for name, content in files.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            if modes and name in modes:
                info.external_attr = modes[name] << 16
            bundle.writestr(info, content)
    return buffer.getvalue()
