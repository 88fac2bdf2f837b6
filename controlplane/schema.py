"""OpenAPI generation: the contract's error responses on every operation, typed `{ws}`, list envelopes."""
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import build_parameter_type
from drf_spectacular.utils import OpenApiParameter, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.pagination import CursorPagination

from controlplane.kube import names


class ErrorDetailSerializer(serializers.Serializer):
    target = serializers.CharField(allow_blank=True, help_text="field path, e.g. resources.requests.cpu; empty for the whole body")
    message = serializers.CharField()


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="PascalCase, e.g. ValidationError, NotFound, Conflict, InvalidInstanceType")
    message = serializers.CharField(help_text="one sentence for a person")
    details = ErrorDetailSerializer(many=True)


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


ERROR_DESCRIPTIONS = {
    400: "The request is not valid (details name the fields).",
    401: "No credentials, or a token that is unknown, revoked or expired.",
    403: "A member without the role this needs (or a missing CSRF token on a session).",
    404: "No such resource, or not a member of its workspace.",
    409: "The name is taken, or the resource's state does not allow this.",
    412: "If-Match does not match the resource's current ETag.",
    415: "The body's media type is not one this operation reads.",
    429: "Rate-limited; retry after Retry-After seconds.",
}
UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

# Path variables that are not fields of the view's model; the rest are typed from the model.
PATH_PARAMETERS = {
    "workspace_name": {"type": "string", "pattern": f"^{names.DNS_LABEL.pattern}$", "maxLength": 63},
}


def list_envelope(child: type[serializers.Serializer], name: str):
    """The `{count, next, previous, results}` shape of an unpaginated catalog, like the paginated lists."""
    envelope = inline_serializer(
        name=name,
        fields={
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": child(many=True),
        },
    )
    # On a viewset's `list` drf-spectacular would wrap the envelope in an array; it is already the list.
    extend_schema_serializer(many=False)(type(envelope))
    return envelope


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's AutoSchema plus the error responses each operation can give."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        error = self.resolve_serializer(ErrorSerializer, direction).ref
        for code in self.error_status_codes():
            responses.setdefault(str(code), self._error_response(code, error))
        return responses

    def error_status_codes(self) -> list[int]:
        """Which error statuses this operation can answer with (see API.md, Errors)."""
        codes = {401, 429}
        has_query = bool(self._get_filter_parameters()) or bool(self.get_override_parameters())
        if self.method in UNSAFE_METHODS:
            codes |= {400, 403, 409}
        if self.method in ("POST", "PUT", "PATCH"):
            codes.add(415)  # a body in a media type none of the view's parsers reads (DRF's UnsupportedMediaType)
        elif has_query or "{compute_name}" in self.path or isinstance(self._paginator_of_view(), CursorPagination):
            # a bad filter or cursor, or asking a compute for what its type cannot do (UnsupportedComputeType)
            codes.add(400)
        if "{" in self.path or (self._is_list_view() and self._get_paginator()):
            codes.add(404)  # an unknown resource, or a page or cursor that does not exist
        if self.method in ("PUT", "PATCH", "DELETE") and callable(getattr(self.view, "retrieve", None)):
            codes.add(412)  # what a GET gives an ETag to, If-Match guards (API.md, Concurrency)
        return sorted(codes)

    def _paginator_of_view(self):
        return self._get_paginator() if self._is_list_view() else None

    def _error_response(self, code: int, schema: dict) -> dict:
        response = {"description": ERROR_DESCRIPTIONS[code], "content": {"application/json": {"schema": schema}}}
        if code == 429:
            response["headers"] = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait"}}
        return response

    def _resolve_path_parameters(self, variables):
        known = [variable for variable in variables if variable in PATH_PARAMETERS]
        parameters = super()._resolve_path_parameters([variable for variable in variables if variable not in known])
        return parameters + [
            build_parameter_type(name=variable, location=OpenApiParameter.PATH, schema=dict(PATH_PARAMETERS[variable]))
            for variable in known
        ]
