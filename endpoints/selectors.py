"""Read paths for online endpoints and deployments."""
import json

from django.db import connections, router
from django.db.models import Prefetch, QuerySet

from compute.choices import ComputeType
from compute.connections import HOST_KEY
from compute.models import ComputeTarget
from controlplane.reconciling import ProvisioningState
from workspaces.models import Workspace

from .models import OnlineDeployment, OnlineEndpoint
from .spec.placement import AMLCOMPUTE, Candidate


def endpoint_none() -> QuerySet[OnlineEndpoint]:
    """No endpoints: what schema generation lists (it has no user and no {ws})."""
    return OnlineEndpoint.objects.none()


def endpoint_list(*, workspace: Workspace) -> QuerySet[OnlineEndpoint]:
    deployments = Prefetch("deployments", queryset=OnlineDeployment.objects.only("id", "name", "endpoint_id", "provisioning_state"))
    return OnlineEndpoint.objects.filter(workspace=workspace).select_related("workspace", "created_by").prefetch_related(deployments)


def endpoint_get(*, workspace: Workspace, name: str) -> OnlineEndpoint:
    return OnlineEndpoint.objects.select_related("workspace", "compute", "compute__cluster", "created_by").get(workspace=workspace, name=name)


def placement_candidates(*, workspace: Workspace) -> list[Candidate]:
    """The workspace's compute clusters and Kubernetes computes as a managed deployment's placement sees them (one
    query: the clusters' nodes come with their Kubernetes computes)."""
    computes = (ComputeTarget.objects.filter(workspace=workspace, type__in=(ComputeType.AMLCOMPUTE, ComputeType.KUBERNETES))
                .exclude(provisioning_state=ProvisioningState.DELETING).select_related("cluster").order_by("name"))
    return [_candidate(compute) for compute in computes]


def _candidate(compute: ComputeTarget) -> Candidate:
    properties = compute.properties
    if compute.type == AMLCOMPUTE:
        return Candidate(compute.name, AMLCOMPUTE, properties.get(HOST_KEY) or "", compute.provisioning_state,
                         properties.get("size") or "", int(properties.get("max_instances") or 1), compute.status or {})
    nodes = tuple(compute.cluster.nodes) if compute.cluster_id else ()
    return Candidate(compute.name, compute.type, compute.name, compute.provisioning_state, nodes=nodes,
                     node_selector=properties.get("node_selector") or {})


def deployment_none() -> QuerySet[OnlineDeployment]:
    """No deployments: what schema generation lists (it has no user and no {ws})."""
    return OnlineDeployment.objects.none()


def deployment_list(*, endpoint: OnlineEndpoint) -> QuerySet[OnlineDeployment]:
    return OnlineDeployment.objects.filter(endpoint=endpoint).select_related("created_by")


def deployment_get(*, endpoint: OnlineEndpoint, name: str) -> OnlineDeployment:
    deployment = OnlineDeployment.objects.select_related("created_by").get(endpoint=endpoint, name=name)
    deployment.endpoint = endpoint
    return deployment


# The scoring path reads only what routing needs, endpoint and deployments in one query (a LEFT JOIN).
_ROUTE_ENDPOINT = ("id", "workspace_id", "compute_id", "name", "auth_mode", "traffic", "mirror_traffic",
                   "primary_key_hash", "secondary_key_hash", "provisioning_state")
_ROUTE_DEPLOYMENT = ("id", "name", "runner", "status", "spec", "provisioning_state")
_ROUTE_JSON = {"traffic", "mirror_traffic", "runner", "status", "spec"}
_WORKSPACE, _ENDPOINT = "\x00workspace", "\x00endpoint"  # placeholders, replaced by the request's names
_route_sql: dict[str, tuple[str, list[str]]] = {}


def _route_query(using: str) -> tuple[str, list[str]]:
    """The routing query's SQL and which name each parameter takes, compiled by the ORM once per process and database.

    Compiling the query cost several times more than running it (the largest part of Dockyard's share of a score).
    """
    if using not in _route_sql:
        query = (OnlineEndpoint.objects.using(using).filter(workspace__name=_WORKSPACE, name=_ENDPOINT)
                 .values_list(*_ROUTE_ENDPOINT, *(f"deployments__{field}" for field in _ROUTE_DEPLOYMENT))
                 .order_by("deployments__name"))
        sql, params = query.query.get_compiler(using).as_sql()
        assert sorted(params) == sorted([_WORKSPACE, _ENDPOINT]), params
        _route_sql[using] = sql, list(params)
    return _route_sql[using]


def _record(model, using: str, values: dict):
    """A model instance of the fields read (the others deferred: they load if read), as the ORM would build it."""
    decoded = {field: json.loads(value) if field in _ROUTE_JSON and isinstance(value, (str, bytes)) else value
               for field, value in values.items()}
    fields = [field.attname for field in model._meta.concrete_fields if field.attname in decoded]  # from_db's order
    return model.from_db(using, fields, [decoded[field] for field in fields])


def scoring_target(*, workspace_name: str, endpoint_name: str) -> tuple[OnlineEndpoint, dict[str, OnlineDeployment]] | None:
    """An endpoint and its serving deployments by name (the hot path of every score: one query for a local endpoint).

    The records carry the routing fields only; any other field loads when it is read. A Kubernetes endpoint's workspace
    and compute (with its cluster) are loaded here, as the forward through the cluster needs them.
    """
    using = router.db_for_read(OnlineEndpoint)
    sql, order = _route_query(using)
    names = {_WORKSPACE: workspace_name, _ENDPOINT: endpoint_name}
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [names[param] for param in order])
        rows = cursor.fetchall()
    if not rows:
        return None
    split = len(_ROUTE_ENDPOINT)
    endpoint = _record(OnlineEndpoint, using, dict(zip(_ROUTE_ENDPOINT, rows[0][:split], strict=True)))
    if endpoint.provisioning_state == ProvisioningState.DELETING:
        return None
    if endpoint.compute_id is not None:
        endpoint.workspace = Workspace.objects.using(using).get(pk=endpoint.workspace_id)
        endpoint.compute = ComputeTarget.objects.using(using).select_related("cluster").get(pk=endpoint.compute_id)
    deployments = {}
    for row in rows:
        if row[split] is None:
            continue  # the endpoint has no deployment (the LEFT JOIN's one row)
        deployment = _record(OnlineDeployment, using, {"endpoint_id": endpoint.pk, **dict(zip(_ROUTE_DEPLOYMENT, row[split:], strict=True))})
        if deployment.provisioning_state == ProvisioningState.DELETING:
            continue
        deployment.endpoint = endpoint
        deployments[deployment.name] = deployment
    return endpoint, deployments
