import functools

from django.db import transaction
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.api import BadRequest, ETagMixin, NotFound, PreconditionFailed, etag_of
from controlplane.schema import list_envelope
from workspaces.views import WorkspaceScopedMixin

from . import selectors, services
from .choices import ComputeType
from .filters import ComputeFilter
from .models import ComputeTarget
from .serializers import (
    SERIALIZERS,
    ComputeSerializer,
    ComputeTypeSerializer,
    HostKeyConfirmationSerializer,
    InstanceTypeSerializer,
    LocalComputeSerializer,
    NodeSerializer,
    VmSeriesSerializer,
    VmSizeSerializer,
)

# Explicit type -> serializer maps: drf-spectacular cannot read the discriminator value off a ChoiceField.
COMPUTE_BODY = {str(key): value for key, value in SERIALIZERS.items()}
COMPUTE_REQUEST = PolymorphicProxySerializer(component_name="Compute", serializers=COMPUTE_BODY, resource_type_field_name="type")
# Responses may also be the built-in `local` target, which cannot be created.
COMPUTE_SCHEMA = PolymorphicProxySerializer(
    component_name="Compute", serializers={**COMPUTE_BODY, "local": LocalComputeSerializer}, resource_type_field_name="type"
)

# A valid body: it shows in the docs, and schemathesis starts from it.
CLUSTER_EXAMPLE = OpenApiExample(
    "Compute cluster", request_only=True,
    value={"name": "train-cluster", "type": "amlcompute", "size": "Standard_DS3_v2", "min_instances": 0, "max_instances": 4},
)


class ShownCompute:
    """A record's serializer whose `data` gets what depends on who asks (a compute instance's links)."""

    def __init__(self, serializer, shown, compute: ComputeTarget):
        self.serializer, self.shown, self.compute = serializer, shown, compute

    @property
    def data(self) -> dict:
        return self.shown(dict(self.serializer.data), self.compute)


@functools.cache
def row_serializer(compute_type: str) -> ComputeSerializer:
    """One shared serializer per type for list rows: building its fields (deep copies) took longer than 100 rows."""
    # Safe to share: rendering reads the fields and never the context, and the fields never change once built.
    return SERIALIZERS[compute_type]()


def plain_body(data) -> dict:
    """Form posts arrive as QueryDicts; services take plain mappings."""
    return data.dict() if hasattr(data, "dict") else data


@extend_schema_view(
    list=extend_schema(responses=COMPUTE_SCHEMA),
    retrieve=extend_schema(responses=COMPUTE_SCHEMA),
    create=extend_schema(request=COMPUTE_REQUEST, responses={201: COMPUTE_SCHEMA}, examples=[CLUSTER_EXAMPLE]),
    partial_update=extend_schema(request=OpenApiTypes.OBJECT, responses=COMPUTE_SCHEMA),
    destroy=extend_schema(responses={202: COMPUTE_SCHEMA}),
)
class ComputeViewSet(WorkspaceScopedMixin, ETagMixin, viewsets.ModelViewSet):
    """Compute targets of a workspace; every type through one endpoint, validated by its own spec."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    filterset_class = ComputeFilter
    serializer_class = ComputeSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no user, no {ws}
            return selectors.compute_none()
        return selectors.compute_list(workspace=self.workspace, load_creators=False)

    def get_object(self):
        try:
            return selectors.compute_get(workspace=self.workspace, name=self.kwargs["name"])
        except ComputeTarget.DoesNotExist:
            raise Http404 from None

    def get_serializer(self, *args, **kwargs):
        if args and isinstance(args[0], ComputeTarget):
            return ShownCompute(SERIALIZERS[args[0].type](*args, **kwargs), self._shown, args[0])
        return super().get_serializer(*args, **kwargs)

    required_access = {"list": "read", "retrieve": "read", "start": "read", "stop": "read", "restart": "read"}

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([self._shown(row_serializer(compute.type).to_representation(compute), compute)
                                            for compute in page])

    def _shown(self, data: dict, compute: ComputeTarget) -> dict:
        """A compute instance's links to its servers, for the users allowed to open it."""
        if compute.type == ComputeType.COMPUTEINSTANCE:
            compute.workspace = self.workspace  # the one already read (and the caller's role with it): no query a row
            allowed = services.instance_open_allowed(self.request.user, compute)
            data["applications"] = selectors.instance_applications(compute) if allowed else None
        return data

    def _instance_action(self, request, action: str) -> Response:
        compute = self._record()
        compute = services.compute_instance_action(user=request.user, compute=compute, action=action)
        return Response(self.get_serializer(compute).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: COMPUTE_SCHEMA})
    @action(detail=True, methods=["post"])
    def start(self, request, *args, **kwargs):
        """Start a stopped (or failed) compute instance: its assigned user, owners and staff; 409 if already running."""
        return self._instance_action(request, "start")

    @extend_schema(request=None, responses={202: COMPUTE_SCHEMA})
    @action(detail=True, methods=["post"])
    def stop(self, request, *args, **kwargs):
        """Stop a compute instance (its disk is kept): its assigned user, owners and staff; 409 if already stopped."""
        return self._instance_action(request, "stop")

    @extend_schema(request=None, responses={202: COMPUTE_SCHEMA})
    @action(detail=True, methods=["post"])
    def restart(self, request, *args, **kwargs):
        """Restart a running compute instance in a new pod (same disk): its assigned user, owners and staff."""
        return self._instance_action(request, "restart")

    @extend_schema(request=HostKeyConfirmationSerializer, responses={202: COMPUTE_SCHEMA})
    @action(detail=True, methods=["post"], url_path="confirm-host-key")
    def confirm_host_key(self, request, *args, **kwargs):
        """Confirm the host key an SSH host presented (its fingerprint compared with the host's own): owners and
        staff; 409 when no key waits for confirmation, 400 when the fingerprint is not the one presented."""
        body = plain_body(request.data)
        fingerprint = body.get("fingerprint") if isinstance(body, dict) else None
        if not isinstance(fingerprint, str) or not fingerprint.strip():
            raise BadRequest("Give the fingerprint the host presented (\"SHA256:…\").", target="fingerprint")
        compute = services.compute_confirm_host_key(user=request.user, compute=self._record(), fingerprint=fingerprint)
        return Response(self.get_serializer(compute).data, status=status.HTTP_202_ACCEPTED)

    def retrieve(self, request, *args, **kwargs):
        if kwargs["name"] == "local":
            local = selectors.local_compute(self.workspace)
            if local is None:
                raise Http404
            return Response(local, headers={"ETag": etag_of(local)})
        return super().retrieve(request, *args, **kwargs)

    def create(self, request, *args, **kwargs):
        compute = services.compute_create(user=request.user, workspace=self.workspace, data=plain_body(request.data))
        return Response(self.get_serializer(compute).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        compute = self._record()
        compute = services.compute_update(user=request.user, compute=compute, patch=plain_body(request.data))
        return Response(self.get_serializer(compute).data)

    def destroy(self, request, *args, **kwargs):
        compute = services.compute_delete(user=request.user, compute=self._record())
        return Response(self.get_serializer(compute).data, status=status.HTTP_202_ACCEPTED)

    def _record(self) -> ComputeTarget:
        if self.kwargs["name"] == "local":
            raise BadRequest("The built-in local compute cannot be changed or deleted.", code="BuiltInCompute", target="name")
        compute = self.get_object()
        self.check_if_match(compute)
        return compute


class VmSizeView(APIView):
    """The VM-size catalog (series, category, where supported, GPU architecture, minimum CUDA, retired, isolated),
    each series with its sizes (vCPUs, memory, GPUs and the shape of a pod that takes a whole node)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("series", str), OpenApiParameter("category", str), OpenApiParameter("gpu", bool),
            OpenApiParameter("supported_in", str, enum=["compute_cluster", "compute_instance"]),
            OpenApiParameter("size", str, description="a VM size name, e.g. Standard_NC6s_v3 (any case): its series"),
        ],
        responses=list_envelope(VmSeriesSerializer, "PaginatedVmSeriesList"),
    )
    def get(self, request):
        params = request.query_params
        gpu = params.get("gpu")
        if gpu is not None and gpu.lower() not in ("true", "false", "1", "0"):
            raise BadRequest("gpu must be true or false.", target="gpu")
        rows = selectors.vm_series_list(
            series=params.get("series", ""), category=params.get("category", ""),
            gpu=None if gpu is None else gpu.lower() in ("true", "1"),
            supported_in=params.get("supported_in", ""), size=params.get("size", ""),
        )
        data = VmSeriesSerializer(rows, many=True).data
        return Response({"count": len(data), "next": None, "previous": None, "results": data})


class VmSizeDetailView(APIView):
    """One VM size: its vCPUs, memory, GPUs, series' standing, and the shape of a pod that takes a whole node."""

    @extend_schema(
        operation_id="vm_size_retrieve",
        parameters=[OpenApiParameter("size", str, OpenApiParameter.PATH, description="e.g. Standard_DS3_v2 (any case)")],
        responses=VmSizeSerializer,
    )
    def get(self, request, size: str):
        row = selectors.vm_size_get(name=size)
        if row is None:
            raise NotFound(selectors.vm_size_unknown(name=size))
        data = VmSizeSerializer(row).data
        return Response(data, headers={"ETag": etag_of(data)})


class ComputeTypeView(APIView):
    """The capability matrix: what each compute type can run."""

    @extend_schema(responses=list_envelope(ComputeTypeSerializer, "PaginatedComputeTypeList"))
    def get(self, request):
        data = ComputeTypeSerializer(selectors.compute_type_list(), many=True).data
        return Response({"count": len(data), "next": None, "previous": None, "results": data})


class ComputeScopedMixin(WorkspaceScopedMixin):
    """Resolves `{compute_name}` under a workspace (404 if unknown)."""

    @property
    def compute(self) -> ComputeTarget:
        if not hasattr(self, "_compute"):
            try:
                self._compute = selectors.compute_get(workspace=self.workspace, name=self.kwargs["compute_name"])
            except ComputeTarget.DoesNotExist:
                raise Http404 from None
        return self._compute


def _envelope(rows: list) -> dict:
    return {"count": len(rows), "next": None, "previous": None, "results": rows}


@extend_schema_view(
    list=extend_schema(responses=list_envelope(InstanceTypeSerializer, "PaginatedInstanceTypeList")),
    retrieve=extend_schema(responses=InstanceTypeSerializer),
    create=extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}),
    update=extend_schema(request=OpenApiTypes.OBJECT, responses=InstanceTypeSerializer),
    partial_update=extend_schema(request=OpenApiTypes.OBJECT, responses=InstanceTypeSerializer),
    destroy=extend_schema(responses={202: InstanceTypeSerializer}),
)
class InstanceTypeViewSet(ComputeScopedMixin, viewsets.ViewSet):
    """Instance types of a Kubernetes compute's cluster; POST takes an InstanceType, an InstanceTypeList or the flat form."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    serializer_class = InstanceTypeSerializer

    def list(self, request, *args, **kwargs):
        services.cluster_of(self.compute)
        return Response(_envelope(selectors.instance_type_list(compute=self.compute)))

    def retrieve(self, request, *args, **kwargs):
        row = self._row(kwargs["name"])
        return Response(row, headers={"ETag": etag_of(InstanceTypeSerializer(row).data)})

    def create(self, request, *args, **kwargs):
        records = services.instance_types_create(user=request.user, compute=self.compute, body=plain_body(request.data))
        rows = [self._row(record.name) for record in records]
        single = not (isinstance(request.data, dict) and ("items" in request.data or request.data.get("kind") == "InstanceTypeList"))
        return Response(rows[0] if single else _envelope(rows), status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        return self._write(request, kwargs["name"], partial=False)

    def partial_update(self, request, *args, **kwargs):
        return self._write(request, kwargs["name"], partial=True)

    def destroy(self, request, *args, **kwargs):
        self._check_if_match(kwargs["name"])
        # Read the row before commit: a fast worker may remove the record as soon as the delete is committed.
        with transaction.atomic():
            services.instance_type_delete(user=request.user, compute=self.compute, name=kwargs["name"])
            row = self._row(kwargs["name"])
        return Response(row, status=status.HTTP_202_ACCEPTED)

    def _write(self, request, name: str, partial: bool):
        self._check_if_match(name)
        services.instance_type_update(user=request.user, compute=self.compute, name=name, body=plain_body(request.data), partial=partial)
        return Response(self._row(name))

    def _row(self, name: str) -> dict:
        services.cluster_of(self.compute)
        row = selectors.instance_type_get(compute=self.compute, name=name)
        if row is None:
            raise Http404
        return row

    def _check_if_match(self, name: str) -> None:
        expected = self.request.headers.get("If-Match")
        row = selectors.instance_type_get(compute=self.compute, name=name) if expected else None
        if row and expected.strip() != "*" and etag_of(InstanceTypeSerializer(row).data) not in {t.strip().removeprefix("W/") for t in expected.split(",")}:
            raise PreconditionFailed()


class NodeView(ComputeScopedMixin, APIView):
    """The cluster's nodes as last synced, with the instance types each can host."""

    required_access = {"get": "read"}
    action = "get"

    @extend_schema(responses=list_envelope(NodeSerializer, "PaginatedNodeList"))
    def get(self, request, *args, **kwargs):
        services.cluster_of(self.compute)
        return Response(_envelope(selectors.node_list(compute=self.compute)))
