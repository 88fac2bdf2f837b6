"""REST conventions shared by every app: the error shape and ETags."""
import hashlib
import json
import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.http import Http404, JsonResponse
from django.views.defaults import page_not_found, server_error
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from controlplane.parsers import PayloadTooLarge

logger = logging.getLogger(__name__)


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The resource conflicts with an existing one."
    default_code = "Conflict"


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_detail = "The resource has changed since you read it (If-Match does not match its ETag)."
    default_code = "PreconditionFailed"


class BadRequest(exceptions.APIException):
    """A 400 with a specific code and field path, for rules checked outside serializers."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "BadRequest"

    def __init__(self, message: str, *, code: str = "BadRequest", target: str | None = None, details: list | None = None):
        super().__init__(message, code)
        self.error_code = code
        self.target = target
        self.details = details if details is not None else [{"target": target, "message": message}] if target else []


# The other errors services raise, named here so that services never import DRF (the layout contract): the same DRF
# classes, so what the API answers does not change.
NotFound = exceptions.NotFound
PermissionDenied = exceptions.PermissionDenied
Throttled = exceptions.Throttled
ValidationError = exceptions.ValidationError

STATUS_CODES = {
    400: "ValidationError",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    412: "PreconditionFailed",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    429: "TooManyRequests",
    500: "InternalServerError",
}

MESSAGES = {
    400: "The request is not valid.",
    401: "Authentication credentials were not provided or are not valid.",
    403: "You do not have permission to do this.",
    404: "Not found.",
    405: "This method is not allowed here.",
    500: "The server hit an unexpected error; it has been logged.",
}


def error_body(status_code: int, message: str | None = None, details=None, code: str | None = None) -> dict:
    return {
        "error": {
            "code": code or STATUS_CODES.get(status_code, "Error"),
            "message": message or MESSAGES.get(status_code, "The request failed."),
            "details": details or [],
        }
    }


def flatten_details(detail, prefix: str = "") -> list[dict]:
    """Turn DRF's nested error detail into [{target: "a.b.0.c", message}] rows."""
    if isinstance(detail, dict):
        rows = []
        for key, value in detail.items():
            target = prefix if key in ("non_field_errors", "__all__") else f"{prefix}.{key}" if prefix else str(key)
            rows.extend(flatten_details(value, target))
        return rows
    if isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            return [{"target": prefix, "message": str(item)} for item in detail]
        rows = []
        for index, item in enumerate(detail):
            if item:
                rows.extend(flatten_details(item, f"{prefix}.{index}" if prefix else str(index)))
        return rows
    return [{"target": prefix, "message": str(detail)}]


def validation_message(details: list[dict]) -> str:
    first = details[0] if details else None
    if not first:
        return MESSAGES[400]
    message = first["message"]
    return f"{first['target']}: {message}" if first["target"] else message


def exception_handler(exc, context):
    """Render every API error in the contract's shape; never leak a stack trace."""
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(getattr(exc, "message_dict", None) or exc.messages)
    if isinstance(exc, RequestDataTooBig):  # Django's own size check (form bodies): the same 413 as ours
        exc = PayloadTooLarge()
    if isinstance(exc, IntegrityError):
        exc = Conflict("A resource with this name already exists.")
    if isinstance(exc, (Http404, DjangoPermissionDenied)):
        exc = exceptions.NotFound() if isinstance(exc, Http404) else exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        logger.exception("Unhandled API error", exc_info=exc)
        return Response(error_body(500), status=500)
    response.data = _error_data(exc, response.status_code)
    return response


def _error_data(exc, status_code: int) -> dict:
    if isinstance(exc, BadRequest):
        return error_body(status_code, str(exc.detail), exc.details, exc.error_code)
    if isinstance(exc, exceptions.ParseError):
        # A body that cannot be read is wrong as a whole: its target is the body itself ("").
        return error_body(status_code, str(exc.detail), [{"target": "", "message": str(exc.detail)}])
    if isinstance(exc, exceptions.ValidationError):
        details = flatten_details(exc.detail)
        return error_body(status_code, validation_message(details), details)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        return error_body(401, str(exc.detail))
    if isinstance(exc, exceptions.Throttled):
        return error_body(429, f"Too many requests; retry in {exc.wait or 1:.0f} seconds.")
    code = STATUS_CODES.get(status_code)
    detail = getattr(exc, "detail", None)
    return error_body(status_code, str(detail) if detail else None, code=code)


def json_error(request, status_code: int):
    return JsonResponse(error_body(status_code), status=status_code)


def handler404(request, exception=None):
    if request.path.startswith("/api/"):
        return json_error(request, 404)
    return page_not_found(request, exception)


def handler500(request):
    if request.path.startswith("/api/"):
        return json_error(request, 500)
    return server_error(request)


def etag_of(data) -> str:
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return f'"{digest}"'


class ETagMixin:
    """ETag on single GETs; a stale If-Match on PUT/PATCH/DELETE is refused with 412."""

    def retrieve(self, request, *args, **kwargs):
        response = super().retrieve(request, *args, **kwargs)
        response["ETag"] = etag_of(response.data)
        return response

    def check_if_match(self, instance) -> None:
        expected = self.request.headers.get("If-Match")
        if not expected or expected.strip() == "*":
            return
        current = etag_of(self.get_serializer(instance).data)
        candidates = {tag.strip().removeprefix("W/") for tag in expected.split(",")}
        if current not in candidates:
            raise PreconditionFailed()

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.method in ("PUT", "PATCH") and response.status_code == 200 and isinstance(response.data, dict):
            response["ETag"] = etag_of(response.data)
        return response
