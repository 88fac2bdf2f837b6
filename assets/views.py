"""Artifacts API: blob uploads in chunks (resumable), blob downloads, snapshots from a manifest, uploads of a .tar.gz;
and asset versions (API.md): environments, models and data — list, register from Azure ML YAML, show, archive."""
import io
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.http import FileResponse, Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.api import BadRequest, ETagMixin, etag_of
from controlplane.schema import ErrorSerializer
from controlplane.streams import served_async
from workspaces.views import WorkspaceScopedMixin

from . import registry, selectors, services
from .models import AssetVersion, Blob, Data, Environment, Model, Snapshot
from .serializers import (
    BlobStartSerializer,
    BlobStateSerializer,
    DataCreateSerializer,
    DataSerializer,
    EnvironmentCreateSerializer,
    EnvironmentSerializer,
    ModelCreateSerializer,
    ModelSerializer,
    SnapshotCreateSerializer,
    SnapshotDetailSerializer,
    SnapshotSerializer,
    UploadSerializer,
)
from .specs.common import NAME_RULE, is_name, is_version

SHA256_PATH = "[0-9a-f]{64}"
MAX_OFFSET_DIGITS = 19
OFFSET = OpenApiParameter("offset", int, required=True, description="where this chunk starts: the blob's `received`")
DOWNLOAD = OpenApiParameter("download", bool, description="the blob's bytes (complete blobs only)")
TOO_LARGE = {413: ErrorSerializer}


def _offset(value: str | None) -> int:
    if not value or not value.isascii() or not value.isdigit() or len(value) > MAX_OFFSET_DIGITS:
        raise BadRequest("offset is required: a whole number of bytes (the blob's `received`).", code="InvalidOffset",
                         target="offset")
    return int(value)


def _body(request):
    """The raw request body as a stream (never parsed, never held whole in memory)."""
    return request.stream or io.BytesIO()


def _plain(data):
    return data.dict() if hasattr(data, "dict") else data


@extend_schema_view(
    create=extend_schema(request=BlobStartSerializer, responses={200: BlobStateSerializer, 201: BlobStateSerializer}),
    retrieve=extend_schema(parameters=[DOWNLOAD], responses={(200, "application/json"): BlobStateSerializer,
                                                             (200, "application/octet-stream"): OpenApiTypes.BINARY,
                                                             409: ErrorSerializer}),
    partial_update=extend_schema(parameters=[OFFSET], request={"application/octet-stream": OpenApiTypes.BINARY},
                                 responses={200: BlobStateSerializer, **TOO_LARGE}),
)
class BlobViewSet(WorkspaceScopedMixin, viewsets.GenericViewSet):
    """Content by sha256: POST to start (or learn it is known), PATCH chunks at `received`, GET the state or the bytes."""

    lookup_field = "sha256"
    lookup_value_regex = SHA256_PATH
    serializer_class = BlobStateSerializer
    pagination_class = None
    filter_backends = []
    http_method_names = ["get", "post", "patch", "head", "options"]
    required_access = {"retrieve": "read", "create": "use", "partial_update": "use"}

    def get_queryset(self):
        return Blob.objects.none()  # every read goes through the selectors; this only types `{sha256}` for the schema

    def create(self, request, *args, **kwargs):
        start = BlobStartSerializer(data=request.data)
        start.is_valid(raise_exception=True)
        state, created = services.blob_upload_start(user=request.user, workspace=self.workspace, **start.validated_data)
        return Response(BlobStateSerializer(state).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    def retrieve(self, request, *args, **kwargs):
        record = selectors.blob_or_upload(workspace=self.workspace, sha256=kwargs["sha256"])
        if record is None:
            raise Http404
        if request.query_params.get("download") in ("true", "1"):
            return self._download(record)
        data = BlobStateSerializer(services.state_of(record)).data
        return Response(data, headers={"ETag": etag_of(data)})

    def _download(self, record) -> FileResponse:
        if not isinstance(record, Blob):
            raise services.OffsetConflict(f"Blob {record.sha256} is still being uploaded ({record.received} of "
                                          f"{record.size} bytes).", code="BlobIncomplete")
        # Always a download, never rendered: an uploaded .html must not run as a page of this site.
        return FileResponse(selectors.blob_content(blob=record), as_attachment=True, filename=record.sha256,
                            content_type="application/octet-stream")

    def partial_update(self, request, *args, **kwargs):
        offset = _offset(request.query_params.get("offset"))
        state = services.blob_chunk_write(user=request.user, workspace=self.workspace, sha256=kwargs["sha256"],
                                          offset=offset, body=_body(request))
        return Response(BlobStateSerializer(state).data)


@extend_schema_view(
    create=extend_schema(request=SnapshotCreateSerializer, responses={200: SnapshotDetailSerializer,
                                                                      201: SnapshotDetailSerializer}),
    retrieve=extend_schema(responses=SnapshotDetailSerializer),
)
class SnapshotViewSet(WorkspaceScopedMixin, ETagMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      viewsets.GenericViewSet):
    """Stored folders of a workspace: created from a manifest of uploaded blobs (or by uploads/), then read-only."""

    lookup_field = "sha256"
    lookup_value_regex = SHA256_PATH
    serializer_class = SnapshotSerializer
    filter_backends = []
    http_method_names = ["get", "post", "head", "options"]
    required_access = {"list": "read", "retrieve": "read", "create": "use"}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Snapshot.objects.none()
        return selectors.snapshot_list(workspace=self.workspace)

    def get_serializer_class(self):
        return SnapshotSerializer if self.action == "list" else SnapshotDetailSerializer

    def get_object(self) -> Snapshot:
        try:
            return selectors.snapshot_get(workspace=self.workspace, sha256=self.kwargs["sha256"])
        except Snapshot.DoesNotExist:
            raise Http404 from None

    def create(self, request, *args, **kwargs):
        snapshot, created = services.snapshot_create(user=request.user, workspace=self.workspace, data=request.data)
        snapshot = selectors.snapshot_get(workspace=self.workspace, sha256=snapshot.sha256)  # with its creator's name
        return Response(SnapshotDetailSerializer(snapshot).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


@extend_schema_view(
    create=extend_schema(request={"application/gzip": OpenApiTypes.BINARY, "application/zip": OpenApiTypes.BINARY},
                         responses={200: UploadSerializer, 201: UploadSerializer, 415: ErrorSerializer, **TOO_LARGE}),
)
class UploadViewSet(WorkspaceScopedMixin, viewsets.GenericViewSet):
    """A folder as one .tar.gz or .zip (API.md): stored as a snapshot; the same content answers 200 with the same path."""

    serializer_class = UploadSerializer
    pagination_class = None
    filter_backends = []
    http_method_names = ["post", "options"]
    required_access = {"create": "use"}

    def create(self, request, *args, **kwargs):
        snapshot, created = services.upload_create(user=request.user, workspace=self.workspace, body=_body(request),
                                                   content_type=request.content_type or "")
        data = UploadSerializer({"path": snapshot.path, "sha256": snapshot.sha256, "size": snapshot.size}).data
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


NAME = OpenApiParameter("name", str, description="every version of this name (else the latest of each name)")
ARCHIVED = OpenApiParameter("archived", bool, description="true: archived versions only")
VERSION = OpenApiParameter("version", str, OpenApiParameter.PATH, description="a version, or `latest` (GET only)")
BOOLEANS = {"true": True, "1": True, "false": False, "0": False, "": False}


class AssetViewSet(WorkspaceScopedMixin, ETagMixin, viewsets.GenericViewSet):
    """One kind of asset: `record_type`, its serializer and its create service."""

    record_type: type[AssetVersion]
    create_service = None
    filter_backends = []
    http_method_names = ["get", "post", "delete", "head", "options"]
    required_access = {"list": "read", "retrieve": "read", "create": "use", "destroy": "use", "restore": "use"}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return selectors.asset_none(record_type=self.record_type)
        name = self.request.query_params.get("name")
        if name and not is_name(name):  # (and no NUL reaches the database)
            raise BadRequest(f"name is an asset name: {NAME_RULE}.", code="InvalidFilter", target="name")
        archived = BOOLEANS.get(self.request.query_params.get("archived", "").lower())
        if archived is None:
            raise BadRequest("archived is true or false.", code="InvalidFilter", target="archived")
        return selectors.asset_list(record_type=self.record_type, workspace=self.workspace, name=name or None,
                                    archived=archived)

    def get_object(self) -> AssetVersion:
        name, version = self.kwargs["name"], self.kwargs["version"]
        if not is_name(name) or not (is_version(version) or version == "latest"):
            raise Http404  # no such asset can exist (and no NUL reaches the database)
        try:
            return selectors.asset_get(record_type=self.record_type, workspace=self.workspace, name=self.kwargs["name"],
                                       version=self.kwargs["version"])
        except self.record_type.DoesNotExist:
            raise Http404 from None

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request, *args, **kwargs):
        data = self.get_serializer(self.get_object()).data
        return Response(data, headers={"ETag": etag_of(data)})

    def create(self, request, *args, **kwargs):
        record = type(self).create_service(user=request.user, workspace=self.workspace, data=_plain(request.data))
        record = selectors.asset_get(record_type=self.record_type, workspace=self.workspace, name=record.name,
                                     version=record.version)  # with its creator's name
        return Response(self.get_serializer(record).data, status=status.HTTP_201_CREATED)

    def destroy(self, request, *args, **kwargs):
        if self.kwargs["version"] == "latest":
            raise BadRequest("Archive a version by its number, not `latest`.", code="InvalidVersion", target="version")
        record = self.get_object()
        self.check_if_match(record)
        registry.asset_archive(user=request.user, record=record)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(parameters=[VERSION], request=None)
    def restore(self, request, *args, **kwargs):
        """Azure ML's `restore`: an archived version is listed again and counts for @latest."""
        if self.kwargs["version"] == "latest":
            raise BadRequest("Restore a version by its number, not `latest`.", code="InvalidVersion", target="version")
        record = registry.asset_restore(user=request.user, record=self.get_object())
        return Response(self.get_serializer(record).data)


def _schema(serializer, request):
    return extend_schema_view(
        list=extend_schema(parameters=[NAME, ARCHIVED], responses=serializer),
        create=extend_schema(request={"application/json": request, "application/yaml": request},
                             responses={201: serializer, 409: ErrorSerializer}),
        retrieve=extend_schema(parameters=[VERSION], responses=serializer),
        destroy=extend_schema(parameters=[VERSION], responses={204: None, 412: ErrorSerializer}),
    )


@_schema(EnvironmentSerializer, EnvironmentCreateSerializer)
class EnvironmentViewSet(AssetViewSet):
    """Environment versions: an image, optionally with a conda file (Azure ML environment YAML)."""

    record_type = Environment
    serializer_class = EnvironmentSerializer
    create_service = staticmethod(registry.environment_create)


@_schema(ModelSerializer, ModelCreateSerializer)
class ModelViewSet(AssetViewSet):
    """Model versions: an uploaded folder or file and its type (Azure ML model YAML)."""

    record_type = Model
    serializer_class = ModelSerializer
    create_service = staticmethod(registry.model_create)


@_schema(DataSerializer, DataCreateSerializer)
class DataViewSet(AssetViewSet):
    """Data versions: uri_file or uri_folder, uploaded or at an https:// URL (Azure ML data YAML)."""

    record_type = Data
    serializer_class = DataSerializer
    create_service = staticmethod(registry.data_create)


@extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY, 403: ErrorSerializer}, auth=[])
class ArtifactFetchView(APIView):
    """One snapshot as a .tar.gz for a pod's init container: the signed token in the path is the only authorisation."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def get(self, request, token: str):
        snapshot = selectors.snapshot_for_fetch(token=token, client=request.META.get("REMOTE_ADDR", ""))
        chunks = selectors.snapshot_archive(snapshot=snapshot)
        # Under ASGI a plain iterator would be read whole into memory first: hand it over chunk by chunk instead.
        chunks = _pulled(chunks) if served_async(request) else chunks
        response = StreamingHttpResponse(chunks, content_type="application/gzip")
        response["Content-Disposition"] = f'attachment; filename="{snapshot.sha256}.tar.gz"'
        response["Cache-Control"] = "no-store"
        return response


async def _pulled(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """A blocking iterator read in a worker thread, one chunk at a time (storage reads, no database)."""
    pull = sync_to_async(next, thread_sensitive=False)
    while (chunk := await pull(chunks, None)) is not None:
        yield chunk
