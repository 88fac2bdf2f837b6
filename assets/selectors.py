"""Read paths for artifacts: a blob's state, its bytes, snapshots."""
from collections.abc import Iterator
from typing import BinaryIO

from django.db.models import F, QuerySet

from controlplane.api import BadRequest
from workspaces.models import Workspace

from . import delivery, storage
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


class FetchRefused(BadRequest):
    """A 403: the fetch token is forged, expired, or names a snapshot no longer stored."""

    status_code = 403


def snapshot_exists(*, workspace: Workspace, reference: str) -> bool:
    """Whether `azureml://uploads/<sha256>` names one of the workspace's snapshots."""
    return delivery.snapshot_named(workspace, reference) is not None


def snapshot_files(*, workspace: Workspace, reference: str) -> set[str] | None:
    """The file paths of the workspace's snapshot `azureml://uploads/<sha256>` names; None when it has none such."""
    snapshot = delivery.snapshot_named(workspace, reference)
    return None if snapshot is None else {row[0] for row in snapshot.files}


def snapshot_for_fetch(*, token: str, client: str) -> Snapshot:
    """The one snapshot a signed fetch token names (logged); 403 in the error shape otherwise."""
    try:
        return delivery.snapshot_for_token(token, client)
    except delivery.DeliveryRefused as exc:
        raise FetchRefused(str(exc), code="FetchRefused") from None


def snapshot_archive(*, snapshot: Snapshot) -> Iterator[bytes]:
    """The snapshot's files as a deterministic .tar.gz, produced as it is read."""
    return delivery.archive_stream(snapshot)
