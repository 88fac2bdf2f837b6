"""Online endpoints API: endpoints, their deployments, keys, and scoring."""
import math

from django.http import Http404, HttpResponse, JsonResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from controlplane.api import BadRequest, ETagMixin, error_body
from controlplane.schema import ErrorSerializer
from workspaces import access
from workspaces import selectors as workspace_selectors
from workspaces.authentication import user_for_token
from workspaces.views import WorkspaceScopedMixin

from . import keys, selectors, services
from .models import OnlineDeployment, OnlineEndpoint
from .serializers import (
    KeysSerializer,
    NewKeySerializer,
    OnlineDeploymentSerializer,
    OnlineEndpointCreatedSerializer,
    OnlineEndpointSerializer,
    RegenerateKeySerializer,
)

READ = {"list": "read", "retrieve": "read", "logs": "read"}
USE = {"create": "use", "partial_update": "use", "destroy": "use", "keys": "use", "regenerate": "use"}
MAX_LOG_LINES = 5000


def _plain(data):
    return data.dict() if hasattr(data, "dict") else data


@extend_schema_view(
    create=extend_schema(request=OnlineEndpointSerializer, responses={201: OnlineEndpointCreatedSerializer}),
    partial_update=extend_schema(request=OpenApiTypes.OBJECT, responses=OnlineEndpointSerializer),
    destroy=extend_schema(responses={202: OnlineEndpointSerializer}),
)
class OnlineEndpointViewSet(WorkspaceScopedMixin, ETagMixin, viewsets.ModelViewSet):
    """Online endpoints of a workspace: traffic split, keys, scoring URL."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    serializer_class = OnlineEndpointSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    required_access = {**READ, **USE}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return selectors.endpoint_none()
        return selectors.endpoint_list(workspace=self.workspace)

    def get_object(self) -> OnlineEndpoint:
        try:
            return selectors.endpoint_get(workspace=self.workspace, name=self.kwargs["name"])
        except OnlineEndpoint.DoesNotExist:
            raise Http404 from None

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "detail": self.action != "list"}

    def create(self, request, *args, **kwargs):
        endpoint, made = services.endpoint_create(user=request.user, workspace=self.workspace, data=_plain(request.data))
        return Response({**self.get_serializer(endpoint).data, "keys": made}, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        endpoint = self.get_object()
        self.check_if_match(endpoint)
        endpoint, made = services.endpoint_update(user=request.user, endpoint=endpoint, patch=_plain(request.data))
        body = self.get_serializer(self.get_object()).data
        return Response({**body, "keys": made} if made else body)

    def destroy(self, request, *args, **kwargs):
        endpoint = self.get_object()
        self.check_if_match(endpoint)
        endpoint = services.endpoint_delete(user=request.user, endpoint=endpoint)
        return Response(self.get_serializer(endpoint).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(methods=["GET"], responses={200: KeysSerializer})
    @extend_schema(methods=["POST"], request=RegenerateKeySerializer, responses={200: NewKeySerializer})
    @action(detail=True, methods=["get", "post"], url_path="keys")
    def keys(self, request, *args, **kwargs):
        """GET: which keys exist (prefix, rotation time). POST {key_type}: a new key, shown in this answer only."""
        endpoint = self.get_object()
        if request.method == "POST":
            return self._regenerate(request, endpoint)
        rows = {key_type: {"prefix": endpoint.key_prefixes.get(key_type), "rotated_at": endpoint.keys_rotated_at.get(key_type)}
                for key_type in keys.KEY_TYPES if endpoint.key_prefixes.get(key_type)}
        return Response({"auth_mode": endpoint.auth_mode, "keys": rows})

    @extend_schema(request=RegenerateKeySerializer, responses={200: NewKeySerializer})
    @action(detail=True, methods=["post"], url_path="keys/regenerate")
    def regenerate(self, request, *args, **kwargs):
        return self._regenerate(request, self.get_object())

    def _regenerate(self, request, endpoint: OnlineEndpoint) -> Response:
        data = _plain(request.data)
        key_type = data.get("key_type", "primary") if isinstance(data, dict) else "primary"
        made = services.endpoint_regenerate_key(user=request.user, endpoint=endpoint, key_type=key_type)
        return Response({"auth_mode": endpoint.auth_mode, **made})


@extend_schema_view(
    create=extend_schema(responses={201: OnlineDeploymentSerializer}),
    partial_update=extend_schema(request=OpenApiTypes.OBJECT, responses=OnlineDeploymentSerializer),
    destroy=extend_schema(responses={202: OnlineDeploymentSerializer}),
)
class OnlineDeploymentViewSet(WorkspaceScopedMixin, ETagMixin, viewsets.ModelViewSet):
    """Deployments of one online endpoint."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    serializer_class = OnlineDeploymentSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    required_access = {**READ, **USE}

    @property
    def endpoint(self) -> OnlineEndpoint:
        if not hasattr(self, "_endpoint"):
            try:
                self._endpoint = selectors.endpoint_get(workspace=self.workspace, name=self.kwargs["endpoint_name"])
            except OnlineEndpoint.DoesNotExist:
                raise Http404 from None
        return self._endpoint

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return selectors.deployment_none()
        return selectors.deployment_list(endpoint=self.endpoint)

    def get_object(self) -> OnlineDeployment:
        try:
            return selectors.deployment_get(endpoint=self.endpoint, name=self.kwargs["name"])
        except OnlineDeployment.DoesNotExist:
            raise Http404 from None

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "detail": self.action != "list"}

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([self.get_serializer(item).data for item in page])

    def create(self, request, *args, **kwargs):
        deployment = services.deployment_create(user=request.user, endpoint=self.endpoint, data=_plain(request.data))
        return Response(self.get_serializer(deployment).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        deployment = self.get_object()
        self.check_if_match(deployment)
        deployment = services.deployment_update(user=request.user, deployment=deployment, patch=_plain(request.data))
        return Response(self.get_serializer(deployment).data)

    def destroy(self, request, *args, **kwargs):
        deployment = self.get_object()
        self.check_if_match(deployment)
        deployment = services.deployment_delete(user=request.user, deployment=deployment)
        return Response(self.get_serializer(deployment).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(parameters=[OpenApiParameter("lines", int, description="how many of the last lines (default 200)")],
                   responses={(200, "text/plain"): OpenApiTypes.STR})
    @action(detail=True, methods=["get"], url_path="logs")
    def logs(self, request, *args, **kwargs):
        value = request.query_params.get("lines", "200")
        if not value.isdigit() or not 1 <= int(value) <= MAX_LOG_LINES:
            raise BadRequest(f"lines must be a whole number from 1 to {MAX_LOG_LINES}.", code="InvalidLines", target="lines")
        try:
            text = services.deployment_logs(deployment=self.get_object(), lines=int(value))
        except services.ScoringError as exc:
            return _error(exc.status, exc.code, str(exc))
        return HttpResponse(text, content_type="text/plain; charset=utf-8")


def _error(status_code: int, code: str, message: str, **headers) -> JsonResponse:
    response = JsonResponse(error_body(status_code, message, code=code), status=status_code)
    for key, value in headers.items():
        response[key.replace("_", "-")] = value
    return response


def _bearer(request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


UNAUTHORISED = "Scoring needs one of the endpoint's keys (or, for aml_token, a member's token) as 'Authorization: Bearer ...'."


def _unauthorised() -> JsonResponse:
    """The one 401 of scoring: a wrong key, a missing endpoint and a hidden workspace read the same, byte for byte."""
    return _error(401, "Unauthorized", UNAUTHORISED, WWW_Authenticate="Bearer")


def _role_check(token: str | None, workspace, action: str) -> str:
    """'ok', 'forbidden' (a member without the role) or 'unknown' (no token, a bad one, or not a member)."""
    user = user_for_token(token) if token else None
    if not user or not access.can(user, workspace, "read"):
        return "unknown"
    return "ok" if access.can(user, workspace, action) else "forbidden"


def _authorisation(request, endpoint: OnlineEndpoint) -> str:
    """key: one of the endpoint's keys. aml_token: a Dockyard token of a member who may use endpoints (contributor+)."""
    token = _bearer(request)
    if endpoint.auth_mode == OnlineEndpoint.AuthMode.KEY:
        matched = bool(token) and keys.matches(token, [endpoint.primary_key_hash, endpoint.secondary_key_hash])
        return "ok" if matched else "unknown"
    # No session: this view is not CSRF-protected. Scoring is using the endpoint, which readers may not (API.md).
    return _role_check(token, endpoint.workspace, "use")


def _unknown_endpoint(request, workspace_name: str, name: str, throttle: "ScoreAuthThrottle") -> JsonResponse:
    """404 only for a member of the workspace; anyone else gets the same 401 as a wrong key, so names don't leak."""
    workspace = workspace_selectors.workspace_by_name(name=workspace_name)
    if workspace is not None and _role_check(_bearer(request), workspace, "read") == "ok":
        return _error(404, "NotFound", f"There is no online endpoint '{name}' here.")
    throttle.record_failure()
    return _unauthorised()


class ScoreAuthThrottle(SimpleRateThrottle):
    """Failed scoring authentications per client address; past the rate, every scoring call from it gets 429.

    Refusing the good guesses too while blocked is the point: an answer that differs would tell a guessed key.
    """

    scope = "score_auth"

    def get_rate(self) -> str:
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]  # read now, so a changed setting applies

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def blocked(self, request) -> bool:
        self.key = self.get_cache_key(request, None)
        self.now = self.timer()
        self.history = [moment for moment in self.cache.get(self.key, []) if moment > self.now - self.duration]
        return len(self.history) >= self.num_requests

    def record_failure(self) -> None:
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)

    def too_many(self) -> JsonResponse:
        wait = max(1, math.ceil(self.wait() or 1))
        message = f"Too many failed scoring authentications from this address; retry in {wait} seconds."
        return _error(429, "TooManyRequests", message, Retry_After=str(wait))


class ScoreView(APIView):
    """POST a request to the endpoint: one deployment answers (traffic weights or the azureml-model-deployment header)."""

    authentication_classes: list = []  # the endpoint's own keys (or tokens, for aml_token) are checked below
    permission_classes = [permissions.AllowAny]
    throttle_classes: list = []

    def dispatch(self, request, *args, **kwargs):
        """POST is answered without DRF's request wrapping and content negotiation.

        It is the hot path (DRF's layer cost about a millisecond a request), and the answer is the model's, passed on
        whatever the Accept header says (DRF refused e.g. `Accept: text/plain` with a 406). Other methods go through
        DRF (405, OPTIONS).
        """
        if request.method != "POST":
            return super().dispatch(request, *args, **kwargs)
        response = self.post(request, *args, **kwargs)
        response["Allow"] = ", ".join(self.allowed_methods)  # as DRF's answers have it
        return response

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        # The endpoint's key (or, for aml_token, a member's Dockyard token) is sent as a bearer token.
        auth=[{"bearerAuth": []}],
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="the model's answer; the deployment that served it "
                                                                   f"is in the {services.DEPLOYMENT_HEADER} response header"),
            401: OpenApiResponse(ErrorSerializer, description="Unauthorized: the same answer for a wrong key and an unknown endpoint."),
            403: OpenApiResponse(ErrorSerializer, description="Forbidden: an aml_token endpoint scored by a reader."),
            413: OpenApiResponse(ErrorSerializer, description="PayloadTooLarge: the body is over DOCKYARD_MAX_SCORE_BYTES."),
            429: OpenApiResponse(ErrorSerializer, description="TooManyRequests: too many failed authentications from this "
                                                              "address (Retry-After says when to try again)."),
            502: OpenApiResponse(ErrorSerializer, description="DeploymentUnreachable: the deployment's server did not answer."),
            503: OpenApiResponse(ErrorSerializer, description="DeploymentNotReady: the deployment is not serving yet."),
            504: OpenApiResponse(ErrorSerializer, description="ScoringTimeout: no answer within request_timeout_ms."),
        },
        parameters=[OpenApiParameter(services.DEPLOYMENT_HEADER, str, OpenApiParameter.HEADER, description="the deployment to use")],
    )
    def post(self, request, workspace_name: str, name: str):
        throttle = ScoreAuthThrottle()
        if throttle.blocked(request):
            return throttle.too_many()
        target = selectors.scoring_target(workspace_name=workspace_name, endpoint_name=name)
        if target is None:
            return _unknown_endpoint(request, workspace_name, name, throttle)
        endpoint, deployments = target
        verdict = _authorisation(request, endpoint)
        if verdict == "forbidden":
            return _error(403, "Forbidden", f"Scoring needs the contributor role in workspace '{workspace_name}'.")
        if verdict != "ok":
            throttle.record_failure()
            return _unauthorised()
        try:
            # The Content-Type header as sent, parameters (charset) included, as DRF's request.content_type gave it.
            content_type = request.META.get("CONTENT_TYPE", "")
            answer = services.endpoint_score(endpoint=endpoint, deployments=deployments, body=request.body, content_type=content_type,
                                             requested=request.headers.get(services.DEPLOYMENT_HEADER))
        except services.ScoringError as exc:
            return _error(exc.status, exc.code, str(exc))
        response = HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)
        response[services.DEPLOYMENT_HEADER] = answer.deployment
        return response
