"""Read paths for artifacts: a blob's state, its bytes, snapshots."""
from typing import BinaryIO

from django.db.models import F, QuerySet

from workspaces.models import Workspace

from . import storage
from .models import Blob, BlobUpload, Snapshot


def blob_or_upload(*, workspace: Workspace, sha256: str) -> Blob | BlobUpload | None:
    """The workspace's blob with this hash, else its upload in progress, else None."""
    blob = Blob.objects.filter(workspace=workspace, sha256=sha256).first()
    return blob or BlobUpload.objects.filter(workspace=workspace, sha256=sha256).first()


def blob_content(*, blob: Blob) -> BinaryIO:
    """The blob's bytes (callers have checked that its workspace may read them)."""
    return storage.blob_open(blob.sha256)


def snapshot_list(*, workspace: Workspace) -> QuerySet[Snapshot]:
    """A workspace's snapshots, newest first, without their manifests."""
    return (Snapshot.objects.filter(workspace=workspace).defer("files")
            .annotate(created_by_name=F("created_by__username")))


def snapshot_get(*, workspace: Workspace, sha256: str) -> Snapshot:
    return Snapshot.objects.annotate(created_by_name=F("created_by__username")).get(workspace=workspace, sha256=sha256)
