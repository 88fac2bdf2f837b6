"""Artifacts API: blob uploads in chunks (resumable), blob downloads, snapshots from a manifest, uploads of a .tar.gz."""
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

from . import selectors, services
from .models import Blob, Snapshot
from .serializers import (
    BlobStartSerializer,
    BlobStateSerializer,
    SnapshotCreateSerializer,
    SnapshotDetailSerializer,
    SnapshotSerializer,
    UploadSerializer,
)

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
    create=extend_schema(request={"application/gzip": OpenApiTypes.BINARY},
                         responses={200: UploadSerializer, 201: UploadSerializer, 415: ErrorSerializer, **TOO_LARGE}),
)
class UploadViewSet(WorkspaceScopedMixin, viewsets.GenericViewSet):
    """A folder as one .tar.gz (API.md): stored as a snapshot; the same content answers 200 with the same path."""

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
