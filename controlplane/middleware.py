"""Middleware for limits and headers that every request gets: API body sizes and the Content-Security-Policy."""
import re

from django.conf import settings
from django.http import HttpResponse, JsonResponse

from controlplane.api import error_body

API_PREFIX = "/api/"
SCORE_SUFFIX = "/score"
# A blob's chunk and an uploads/ archive are files, streamed to storage: they have their own, larger bound.
ARTIFACT_BODY = re.compile(r"^/api/v1/workspaces/[^/]+/(blobs/[^/]+|uploads)/?$")


def body_limit(path: str) -> int:
    """Scoring carries the model's input, which may be larger than any record Dockyard stores."""
    if path.rstrip("/").endswith(SCORE_SUFFIX):
        return settings.DOCKYARD_MAX_SCORE_BYTES
    if ARTIFACT_BODY.match(path):
        return settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES
    return settings.DOCKYARD_MAX_BODY_BYTES


def studio_body_limit() -> int:
    """A studio form may carry one upload (a folder packed by the browser, an archive) beside its fields."""
    return settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES + settings.DOCKYARD_MAX_BODY_BYTES


class BodyLimitMiddleware:
    """An API body over its limit is refused with 413 in the error shape before anything reads it; a studio post over
    its own limit gets a plain 413 (the studio's upload fields check sizes before they send)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX):
            refused = self._refusal(request)
            if refused is not None:
                return refused
        elif _announced(request) > studio_body_limit():
            return HttpResponse(f"The form is larger than {studio_body_limit()} bytes: send a smaller folder or archive.",
                                status=413, content_type="text/plain; charset=utf-8")
        return self.get_response(request)

    def _refusal(self, request) -> JsonResponse | None:
        announced = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(announced)
        except ValueError:
            return JsonResponse(error_body(400, "The Content-Length header is not a number."), status=400)
        limit = body_limit(request.path)
        if length > limit:
            return JsonResponse(error_body(413, f"The request body is larger than {limit} bytes."), status=413)
        return None


def _announced(request) -> int:
    announced = request.META.get("CONTENT_LENGTH") or "0"
    return int(announced) if announced.isdigit() else 0


class ContentSecurityPolicyMiddleware:
    """Scripts, styles and connections only from Dockyard itself; the API docs page gets its own, looser styles."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            docs = request.path.startswith(settings.DOCKYARD_CSP_DOCS_PREFIX)
            response["Content-Security-Policy"] = settings.DOCKYARD_CSP_DOCS if docs else settings.DOCKYARD_CSP
        return response
