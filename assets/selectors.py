"""Read paths for artifacts (a blob's state, its bytes, snapshots) and asset versions."""
from collections.abc import Iterator
from typing import BinaryIO

from django.db.models import Count, F, OuterRef, QuerySet, Subquery

from workspaces.models import Workspace

from . import delivery, storage
from .errors import FetchRefused
from .models import AssetVersion, Blob, BlobUpload, Snapshot
from .specs.references import LATEST


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


def snapshot_file_rows(*, workspace: Workspace, reference: str) -> list[dict] | None:
    """The files of the workspace's snapshot `azureml://uploads/<sha256>` names, each with its size; None if none such."""
    snapshot = delivery.snapshot_named(workspace, reference)
    if snapshot is None:
        return None
    sizes = dict(Blob.objects.filter(workspace=workspace, sha256__in={row[1] for row in snapshot.files})
                 .values_list("sha256", "size"))
    return [{"path": path, "sha256": sha256, "mode": mode, "size": sizes.get(sha256)}
            for path, sha256, mode in snapshot.files]


def asset_list(*, record_type: type[AssetVersion], workspace: Workspace, name: str | None = None,
               archived: bool = False) -> QuerySet[AssetVersion]:
    """A workspace's asset versions: the latest of each name, or every version of `name` (archived ones apart)."""
    versions = (record_type.objects.filter(workspace=workspace, archived=archived)
                .annotate(created_by_name=F("created_by__username")))
    if name is not None:
        return versions.filter(name=name).order_by("-sort_key")
    if archived:
        return versions.order_by("name", "-sort_key")
    highest = (record_type.objects.filter(workspace=workspace, archived=False, name=OuterRef("name"))
               .order_by("-sort_key").values("pk")[:1])
    return versions.filter(pk=Subquery(highest)).order_by("name")  # one row a name, on any database


def asset_get(*, record_type: type[AssetVersion], workspace: Workspace, name: str, version: str) -> AssetVersion:
    """One version (or `latest`: the highest not archived); raises DoesNotExist."""
    versions = record_type.objects.filter(workspace=workspace, name=name).annotate(created_by_name=F("created_by__username"))
    if version == LATEST:
        record = versions.filter(archived=False).order_by("-sort_key").first()
        if record is None:
            raise record_type.DoesNotExist
        return record
    return versions.get(version=version)


def asset_none(*, record_type: type[AssetVersion]) -> QuerySet[AssetVersion]:
    """No rows: what a view's queryset is while the schema is generated."""
    return record_type.objects.none()


def asset_version_counts(*, record_type: type[AssetVersion], workspace: Workspace) -> dict[str, int]:
    """How many versions (archived ones too) each name has: one query."""
    rows = record_type.objects.filter(workspace=workspace).values("name").annotate(count=Count("id"))
    return {row["name"]: row["count"] for row in rows}


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
