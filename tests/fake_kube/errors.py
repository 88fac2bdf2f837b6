"""Kubernetes `Status` errors and field errors, shaped like the real kube-apiserver's."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


def go_value(value: Any) -> str:
    """Render a value roughly like Go's %#v in field errors ("abc" quoted, numbers bare)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@dataclass
class FieldError:
    """One validation failure at a field path, like k8s.io/apimachinery's field.Error."""

    field: str
    type: str  # Required, Invalid, NotSupported, Duplicate, Forbidden, TooLong, TooMany, NotFound
    value: Any = None
    detail: str = ""

    REASONS = {
        "Required": ("FieldValueRequired", "Required value"),
        "Invalid": ("FieldValueInvalid", "Invalid value"),
        "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
        "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
        "Forbidden": ("FieldValueForbidden", "Forbidden"),
        "TooLong": ("FieldValueTooLong", "Too long"),
        "TooMany": ("FieldValueTooMany", "Too many"),
        "NotFound": ("FieldValueNotFound", "Not found"),
    }

    def body(self) -> str:
        """The message without the field path ("Invalid value: \"x\": detail")."""
        _, label = self.REASONS[self.type]
        if self.type in ("Required", "Forbidden", "TooLong"):
            return f"{label}: {self.detail}" if self.detail else label
        if self.type == "TooMany":
            return f"{label}: {go_value(self.value)}: {self.detail}"
        text = f"{label}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict:
        """The `details.causes[]` entry of the Status."""
        return {"reason": self.REASONS[self.type][0], "message": self.body(), "field": self.field}


def required(path: str, detail: str = "") -> FieldError:
    """A missing required field."""
    return FieldError(path, "Required", detail=detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    """A field with a bad value."""
    return FieldError(path, "Invalid", value, detail)


def not_supported(path: str, value: Any, supported: list[str]) -> FieldError:
    """A value outside an enumeration."""
    return FieldError(path, "NotSupported", value, "supported values: " + ", ".join(f'"{s}"' for s in supported))


def forbidden(path: str, detail: str) -> FieldError:
    """A field that may not be set (or changed)."""
    return FieldError(path, "Forbidden", detail=detail)


@dataclass
class ApiError(Exception):
    """An error the API server answers with a `Status` body."""

    code: int
    reason: str
    message: str
    details: dict | None = None
    headers: dict = field(default_factory=dict)

    def status(self) -> dict:
        """The Status object for the response body."""
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message}
        if self.reason:  # errors that are not API statuses reach clients without one
            body["reason"] = self.reason
        body["code"] = self.code
        if self.details is not None:
            body["details"] = self.details
        return body

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"


def qualified(resource: str, group: str) -> str:
    """`jobs.batch`, or `pods` for the core group: how the server names a group-resource."""
    return f"{resource}.{group}" if group else resource


def _details(name: str | None, group: str, kind: str) -> dict:
    details = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(resource: str, group: str, name: str) -> ApiError:
    """404 for a missing object."""
    return ApiError(404, "NotFound", f'{qualified(resource, group)} "{name}" not found', _details(name, group, resource))


def not_served() -> ApiError:
    """404 for a path no served resource matches."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, group: str, name: str) -> ApiError:
    """409 for a create of a name that exists."""
    return ApiError(409, "AlreadyExists", f'{qualified(resource, group)} "{name}" already exists',
                    _details(name, group, resource))


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    """409 for an optimistic-concurrency failure."""
    message = f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}'
    return ApiError(409, "Conflict", message, _details(name, group, resource))


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid_object(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 with one cause per field error, message like `Job.batch "x" is invalid: ...`."""
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    details = _details(name or None, group, kind)
    details["causes"] = [e.cause() for e in errors]
    return ApiError(422, "Invalid", f'{qualified(kind, group)} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> ApiError:
    """400 with no details (decode errors and bad parameters)."""
    return ApiError(400, "BadRequest", message)


def forbidden_request(message: str, resource: str, group: str, name: str | None = None) -> ApiError:
    """403 with the group/resource in the details."""
    return ApiError(403, "Forbidden", message, _details(name, group, resource))


def unauthorized() -> ApiError:
    """401 for a missing or wrong bearer token."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_allowed(method: str) -> ApiError:
    """405 for a verb the resource does not support."""
    return ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method})", {})


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    """415 for a patch type the resource does not accept (e.g. strategic merge on a custom resource)."""
    message = (f"the body of the request was in an unknown format - accepted media types include: "
               f"{', '.join(accepted)}")
    return ApiError(415, "UnsupportedMediaType", message, {})


def gone(message: str) -> ApiError:
    """410 for a resourceVersion that has been compacted away."""
    return ApiError(410, "Expired", message)
