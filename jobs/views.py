"""Jobs API: submit (YAML or JSON), list with filters, show, display-field edits, cancel, delete, logs and events."""
import base64
import io
import json
import time

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import exceptions, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.api import BadRequest, ETagMixin
from controlplane.pagination import CountedCursorPagination
from controlplane.schema import ErrorSerializer
from controlplane.streams import StreamSlot, stream_response
from workspaces.views import WorkspaceScopedMixin

from . import selectors, services, uploads
from .filters import JobFilter
from .models import Job
from .serializers import (
    JobEventSerializer,
    JobListItemSerializer,
    JobLogLineSerializer,
    JobLogPageSerializer,
    JobOutputFileSerializer,
    JobSerializer,
    OutputsReceivedSerializer,
    job_as_dict,
)

DEFAULT_LOG_PAGE = 1000
FOLLOW_POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15

JOB_EXAMPLE = OpenApiExample(
    "Local command job", request_only=True,
    value={"command": "echo hello ${{inputs.who}}", "compute": "local", "inputs": {"who": "world"}},
)


# One Server-Sent Event of `logs?follow=true` (before OpenAPI 3.2 a stream's schema describes each event).
SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": ["status", "line", "end", "timeout"]},
        "data": {"type": "string", "description": "JSON: status {status, status_reason} (first, at once, then at each "
                                                  "change); line {seq, source, text, time}; end {status, "
                                                  "status_reason, exit_code}; timeout {status, next_id}"},
        "id": {"type": "string", "description": "the line's seq: send it back as Last-Event-ID to resume"},
    },
}


class JobStateConflict(BadRequest):
    """A 409 with its own code: the job's state does not allow the request (said in words)."""

    status_code = status.HTTP_409_CONFLICT


class EventCursorPagination(CountedCursorPagination):
    """A job's events, oldest first, in the list envelope every collection has (API.md § Lists)."""

    ordering = ("time", "id")


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"line:{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, _, number = text.partition(":")
        if kind == "line" and number.isdigit():
            return int(number)
    except (ValueError, UnicodeDecodeError):
        pass
    raise BadRequest("The cursor is not one this API gave out.", code="InvalidCursor", target="cursor")


def _limit(value: str | None) -> int:
    if value in (None, ""):
        return DEFAULT_LOG_PAGE
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= selectors.MAX_LOG_PAGE:  # ("²".isdigit())
        raise BadRequest(f"limit must be a whole number from 1 to {selectors.MAX_LOG_PAGE}.", code="InvalidLimit", target="limit")
    return int(value)


@extend_schema_view(
    list=extend_schema(responses=JobListItemSerializer),
    create=extend_schema(request=JobSerializer, responses={201: JobSerializer}, examples=[JOB_EXAMPLE]),
    partial_update=extend_schema(request=OpenApiTypes.OBJECT, responses=JobSerializer),
    destroy=extend_schema(responses={202: JobSerializer}),
)
class JobViewSet(WorkspaceScopedMixin, ETagMixin, viewsets.ModelViewSet):
    """Command jobs of a workspace."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    serializer_class = JobSerializer
    filterset_class = JobFilter
    pagination_class = CountedCursorPagination
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    required_access = {"list": "read", "retrieve": "read", "logs": "read", "events": "read", "outputs": "read", "create": "use",
                       "partial_update": "use", "destroy": "use", "cancel": "use"}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return selectors.job_none()
        return selectors.job_list(workspace=self.workspace)

    def get_object(self) -> Job:
        try:
            return selectors.job_get(workspace=self.workspace, name=self.kwargs["name"])
        except Job.DoesNotExist:
            raise Http404 from None

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "detail": self.action != "list"}

    def perform_content_negotiation(self, request, force=False):
        # A browser's EventSource asks only for text/event-stream, which no renderer offers (the stream is written by
        # hand): without `force` DRF answers 406. Errors before the stream starts still go out as JSON.
        if self.action == "logs" and request.query_params.get("follow") in ("true", "1"):
            force = True
        return super().perform_content_negotiation(request, force)

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([job_as_dict(job) for job in page])

    def create(self, request, *args, **kwargs):
        job = services.job_create(user=request.user, workspace=self.workspace, data=_plain(request.data))
        return Response(self.get_serializer(job).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        job = self.get_object()
        self.check_if_match(job)
        job = services.job_update(user=request.user, job=job, patch=_plain(request.data))
        return Response(self.get_serializer(job).data)

    def destroy(self, request, *args, **kwargs):
        job = self.get_object()
        self.check_if_match(job)
        job = services.job_delete(user=request.user, job=job)
        return Response(self.get_serializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: JobSerializer})
    @action(detail=True, methods=["post"], url_path="cancel")
    def cancel(self, request, *args, **kwargs):
        job = services.job_cancel(user=request.user, job=self.get_object())
        return Response(self.get_serializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int),
                    OpenApiParameter("follow", bool, description="Server-Sent Events until the job ends"),
                    OpenApiParameter("download", bool, description="the whole log as a text file")],
        responses={(200, "application/json"): JobLogPageSerializer, (200, "text/plain"): OpenApiTypes.STR,
                   (200, "text/event-stream"): SSE_EVENT},
    )
    @action(detail=True, methods=["get"], url_path="logs")
    def logs(self, request, *args, **kwargs):
        job = self.get_object()
        after = decode_cursor(request.query_params["cursor"]) if request.query_params.get("cursor") else 0
        if request.query_params.get("download") in ("true", "1"):
            response = HttpResponse(selectors.log_text(job=job), content_type="text/plain; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="{job.name}.log"'
            return response
        if request.query_params.get("follow") in ("true", "1"):
            start = request.headers.get("Last-Event-ID")
            return _event_stream(request, job, int(start) + 1 if start and start.isascii() and start.isdigit() else after)
        return Response(self._log_page(request, job, after, _limit(request.query_params.get("limit"))))

    def _log_page(self, request, job: Job, after: int, limit: int) -> dict:
        lines = selectors.log_lines(job=job, after=after, limit=limit)
        end = lines[-1].seq + 1 if lines else max(after, 0)
        ended = job.logs_complete
        more = len(lines) == limit or not ended
        url = request.build_absolute_uri(request.path)
        return {
            "count": job.log_line_count,
            "next": f"{url}?cursor={encode_cursor(end)}&limit={limit}" if more else None,
            "previous": f"{url}?cursor={encode_cursor(max(after - limit, 0))}&limit={limit}" if after > 0 else None,
            "status": job.status,
            "complete": ended and not more,
            "results": JobLogLineSerializer(lines, many=True).data,
        }

    @extend_schema(responses=JobEventSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="events", pagination_class=EventCursorPagination, filter_backends=[])
    def events(self, request, *args, **kwargs):
        job = self.get_object()
        page = self.paginate_queryset(selectors.event_list(job=job))
        return self.get_paginated_response(JobEventSerializer(page, many=True).data)


    @extend_schema(
        parameters=[OpenApiParameter("path", str, description="one file's path (as listed): download it")],
        responses={(200, "application/json"): JobOutputFileSerializer(many=True),
                   (200, "application/octet-stream"): OpenApiTypes.BINARY},
    )
    @action(detail=True, methods=["get"], url_path="outputs", pagination_class=None, filter_backends=[])
    def outputs(self, request, *args, **kwargs):
        job = self.get_object()
        if not selectors.outputs_kept(job=job):
            raise JobStateConflict(f"Job '{job.name}' has no outputs in storage: a Kubernetes job's ./outputs are "
                                   "kept once its pods have uploaded them at its end.", code="OutputsNotKept")
        path = request.query_params.get("path")
        if path is None:
            try:
                return Response(JobOutputFileSerializer(selectors.output_list(job=job), many=True).data)
            except selectors.FileRefused as exc:
                raise JobStateConflict(str(exc), code="OutputsUnreadable") from None
        try:
            stream = selectors.output_file(job=job, path=path)
        except selectors.FileRefused as exc:
            raise BadRequest(str(exc), code="InvalidPath", target="path") from None
        except FileNotFoundError:
            raise exceptions.NotFound(f"Job '{job.name}' has no output file {path}.") from None
        # Always a download, never rendered: an .html output must not run as a page of this site.
        return FileResponse(stream, as_attachment=True, filename=path.rsplit("/", 1)[-1],
                            content_type="application/octet-stream")


@extend_schema(request={"application/gzip": OpenApiTypes.BINARY},
               responses={200: OutputsReceivedSerializer, 201: OutputsReceivedSerializer, 400: ErrorSerializer,
                          403: ErrorSerializer, 413: ErrorSerializer, 415: ErrorSerializer}, auth=[])
class OutputsUploadView(APIView):
    """A pod's packed ./outputs (one rank's): the signed token in the path is the only authorisation (jobs.uploads)."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def post(self, request, token: str, rank: str):
        if not rank.isascii() or not rank.isdigit() or len(rank) > 6:
            raise BadRequest("rank is the pod's index: a whole number.", code="InvalidRank", target="rank")
        received = uploads.outputs_receive(token=token, rank=int(rank), body=request.stream or io.BytesIO(),
                                           content_type=request.content_type or "",
                                           client=request.META.get("REMOTE_ADDR", ""))
        data = OutputsReceivedSerializer({"sha256": received.part.sha256, "files": received.part.file_count,
                                          "size": received.part.size, "outputs": received.outputs.sha256}).data
        return Response(data, status=status.HTTP_201_CREATED if received.changed else status.HTTP_200_OK)


def _plain(data):
    return data.dict() if hasattr(data, "dict") else data


def _sse(event: str, data: dict, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, default=str)}\n\n"


class _LogFollow:
    """One followed log: where it is, when it last sent something, when it ends (the client then reconnects)."""

    def __init__(self, job: Job, after: int):
        self.job, self.position = job, after
        self.quiet_since = time.monotonic()
        self.status_sent: tuple[str, str] | None = None
        # A stream ends after a while even if the job does not: the client reconnects with Last-Event-ID.
        self.deadline = time.monotonic() + settings.DOCKYARD_LOG_FOLLOW_SECONDS

    def step(self) -> tuple[list[str], float | None]:
        """`status` at once and at each change, lines (`id` = line number, so a reconnect resumes), then `end`."""
        job = self.job
        if time.monotonic() >= self.deadline:
            return [_sse("timeout", {"status": job.status, "next_id": self.position})], None
        if self.status_sent is None:
            # Said at once: a queued job with no output shows why it waits, not a spinner until the first keepalive.
            return self.status_changes(), 0
        lines = selectors.log_lines(job=job, after=self.position, limit=500)
        if lines:
            self.position, self.quiet_since = lines[-1].seq + 1, time.monotonic()
            # the same fields and formats as a page; the next look comes at once, there may be more
            return [_sse("line", JobLogLineSerializer(line).data, line.seq) for line in lines], 0
        try:
            job.refresh_from_db(fields=["status", "status_reason", "exit_code", "log_line_count", "runner"])
        except Job.DoesNotExist:
            return [_sse("end", {"status": "Deleted", "status_reason": "The job was deleted.", "exit_code": None})], None
        if job.logs_complete and self.position >= job.log_line_count:
            return [_sse("end", {"status": job.status, "status_reason": job.status_reason, "exit_code": job.exit_code})], None
        if changed := self.status_changes():
            return changed, FOLLOW_POLL_SECONDS
        if time.monotonic() - self.quiet_since > KEEPALIVE_SECONDS:
            self.quiet_since = time.monotonic()
            return [": keepalive\n\n"], FOLLOW_POLL_SECONDS
        return [], FOLLOW_POLL_SECONDS


    def status_changes(self) -> list[str]:
        """A `status` event when the job's status or its reason differs from the last one sent (none otherwise)."""
        current = (self.job.status, self.job.status_reason)
        if current == self.status_sent:
            return []
        self.status_sent, self.quiet_since = current, time.monotonic()
        return [_sse("status", {"status": current[0], "status_reason": current[1]})]


def _event_stream(request, job: Job, after: int) -> StreamingHttpResponse:
    """`logs?follow=true`: one of the user's stream slots (429 beyond the cap), then the events until the job ends."""
    slot = StreamSlot.take(request.user)
    return stream_response(request, _LogFollow(job, after).step, slot, "text/event-stream")
