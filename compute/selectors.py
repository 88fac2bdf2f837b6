"""Read paths for compute records and the static catalogs."""
from django.db.models import Count, F, QuerySet
from django.utils import timezone

from controlplane.kube.resources import Shape
from controlplane.reconciling import ProvisioningState
from workspaces import access
from workspaces.models import Workspace

from . import capabilities, shapes, vmsizes
from .choices import ComputeType
from .manifests import instance_type_manifest
from .models import ComputeTarget, InstanceType


def compute_none() -> QuerySet[ComputeTarget]:
    """No compute records: what schema generation lists (it has no user and no {ws})."""
    return ComputeTarget.objects.none()


def compute_list(*, workspace: Workspace, load_creators: bool = True, types=None) -> QuerySet[ComputeTarget]:
    """A workspace's compute records (of `types` only, when given), secrets left in the database."""
    # a compute instance's run state and user come in the same query (a LEFT JOIN, null for the other types)
    computes = ComputeTarget.objects.filter(workspace=workspace).defer("secrets_encrypted").select_related(
        "instance__assigned_user")
    if types is not None:
        computes = computes.filter(type__in=types)
    if load_creators:
        return computes.select_related("created_by")
    # API pages need only the name (compute_as_dict reads it): a User built per row took a third of the list's time.
    return computes.annotate(created_by_name=F("created_by__username"))


def compute_type_counts(*, workspace: Workspace) -> dict[str, int]:
    """How many compute records of each type the workspace has (the studio hub's tab counts)."""
    return dict(compute_list(workspace=workspace).order_by().values_list("type").annotate(n=Count("pk")))


def kubernetes_compute_list(*, workspace: Workspace, deleting: bool = False) -> QuerySet[ComputeTarget]:
    """The workspace's Kubernetes computes by name, cluster loaded: where jobs and deployments can run (and, with
    `deleting`, the ones on their way out too)."""
    computes = compute_list(workspace=workspace, load_creators=False).filter(type=ComputeType.KUBERNETES)
    if not deleting:
        computes = computes.exclude(provisioning_state=ProvisioningState.DELETING)
    return computes.select_related("cluster").order_by("name")


def compute_get(*, workspace: Workspace, name: str) -> ComputeTarget:
    return ComputeTarget.objects.select_related("created_by", "workspace", "cluster", "instance__assigned_user").get(
        workspace=workspace, name=name)


def instance_applications(compute: ComputeTarget) -> dict:
    """Where Dockyard's browser proxy serves a compute instance's servers (JupyterLab's base_url is the same path)."""
    base = f"/instances/{compute.workspace.name}/{compute.name}"
    return {"jupyterlab": f"{base}/jupyter/lab", "vscode": f"{base}/vscode/", "terminal": f"{base}/jupyter/terminals/1"}


def vm_series_list(*, series: str = "", category: str = "", gpu: bool | None = None, supported_in: str = "", size: str = "") -> list[dict]:
    """The VM-size catalog, filtered like the other lists: each series with its sizes."""
    today = timezone.now().date()
    rows = vmsizes.series_rows(today)
    wanted_series = vmsizes.series_of_size(size) if size else None
    if size and wanted_series is None:
        return []

    def keep(row: dict) -> bool:
        return (
            (not series or series.lower() in [row["series"].lower(), *map(str.lower, row["aliases"])])
            and (not category or category.lower() in (row["category"], row["category_display"].lower()))
            and (gpu is None or row["gpu"] == gpu)
            and (not supported_in or supported_in in row["supported_in"])
            and (wanted_series is None or row["series"] == wanted_series.name)
        )

    sizes: dict[str, list[dict]] = {}
    for size_row in vmsizes.size_rows(today):
        sizes.setdefault(size_row["series"], []).append(size_row)
    return [{**row, "sizes": sizes.get(row["series"], [])} for row in rows if keep(row)]


def _series_matches(row_series: str, wanted: str) -> bool:
    """A series filter: the series' name or one of its aliases, any case."""
    found = vmsizes.series_named(wanted)
    return found is not None and found.name == row_series


def vm_size_list(*, supported_in: str = "", gpu: bool | None = None, series: str = "") -> list[dict]:
    """Every VM size of the catalog with its vCPUs, memory, GPUs and whole-node shape, by series then size; filtered
    by where its series is supported, by having GPUs, and by series (name or alias, any case)."""
    return [
        row for row in vmsizes.size_rows(timezone.now().date())
        if (not supported_in or supported_in in row["supported_in"])
        and (gpu is None or (row["gpus"] > 0) == gpu)
        and (not series or _series_matches(row["series"], series))
    ]


def vm_size_get(*, name: str) -> dict | None:
    """One size's row (any case, `Standard_` prefix optional), or None when the catalog does not list it."""
    size = vmsizes.vm_size(name)
    return vmsizes.size_row(size, timezone.now().date()) if size else None


def vm_size_unknown(*, name: str) -> str:
    """Why the catalog does not list `name` (a sentence naming close sizes of its series)."""
    return vmsizes.unknown_size(name)


def compute_type_list() -> list[dict]:
    return capabilities.capability_rows()


def local_compute(workspace) -> dict | None:
    """The built-in `local` target (no record), where the server allows it and staff enabled it for the workspace."""
    if not access.local_compute_allowed(workspace):
        return None
    return {
        "name": "local", "type": "local", "description": "Runs on the worker's host.", "tags": {},
        "provisioning_state": "Succeeded", "provisioning_errors": [], "backend": None, "secrets_set": [],
        "created_by": None, "created_on": None, "updated_on": None,
    }


def _instance_type_shapes(compute: ComputeTarget, name: str | None) -> list[tuple[Shape, InstanceType | None]]:
    """The one lookup of instance types: the cluster's records (or just `name`) and the built-in default unless
    overridden, each as its Shape on this attachment, by name."""
    lookup = {"cluster_id": compute.cluster_id, **({"name": name} if name else {})}  # one filter(): each clones the query
    records = list(InstanceType.objects.filter(**lookup)) if compute.cluster_id else []
    extension = compute.properties.get("node_selector") or {}
    found = [(record.shape(extension), record) for record in records]
    if name in (None, shapes.DEFAULT_NAME) and not any(record.name == shapes.DEFAULT_NAME for record in records):
        found.append((shapes.DEFAULT_SHAPE.on(extension), None))
    return sorted(found, key=lambda pair: pair[0].name)


def _state(record: InstanceType | None) -> str:
    return record.provisioning_state if record else "Succeeded"  # the built-in needs no CR


def _instance_type_row(compute: ComputeTarget, shape: Shape, record: InstanceType | None, nodes: list[dict]) -> dict:
    """An instance type as the API shows it for one attachment: shape, source, state, fit, rendered CR, drift."""
    fitting = shapes.fitting_nodes(shape, nodes)
    ours = record is not None and record.source == InstanceType.Source.DOCKYARD
    # the built-in is no CR; imported ones are the cluster's
    manifest = instance_type_manifest(shape, cluster_id=compute.cluster_id) if ours else None
    observed = record.observed_spec if record else None
    drifted = bool(ours and observed is not None and record.provisioning_state == "Succeeded" and observed != manifest["spec"])
    warnings = [] if fitting or not nodes else [f"No node can host '{shape.name}' today (selector or size); it is saved anyway, as clusters autoscale."]
    return {
        "name": shape.name, "nodeSelector": shape.node_selector, "resources": shape.resources(),
        "effective_node_selector": shape.selector,
        "source": record.source if record else "builtin",
        "provisioning_state": _state(record),
        "provisioning_errors": record.provisioning_errors if record else [],
        "status": {"observed_spec": observed, "drifted": drifted},
        "fits_nodes": fitting, "warnings": warnings, "manifest": manifest,
        "created_on": record.created_at if record else None, "updated_on": record.updated_at if record else None,
    }


def instance_type_list(*, compute: ComputeTarget, name: str | None = None) -> list[dict]:
    """The cluster's instance types for this attachment (or just `name`), with the built-in default unless overridden."""
    nodes = compute.cluster.nodes if compute.cluster_id else []
    return [_instance_type_row(compute, shape, record, nodes) for shape, record in _instance_type_shapes(compute, name)]


def instance_type_get(*, compute: ComputeTarget, name: str) -> dict | None:
    return next(iter(instance_type_list(compute=compute, name=name)), None)


def instance_type_shape(*, compute: ComputeTarget, name: str | None) -> Shape | None:
    """The shape `instance_type_get` would show, without the rest of its row (fit on every node, CR, drift): what a
    submit or a deployment reads, at the same cost on 3 nodes and on 300."""
    return next((shape for shape, _ in _instance_type_shapes(compute, name)), None)


def placeable_shapes(*, compute: ComputeTarget, name: str | None = None) -> list[Shape]:
    """The instance types (or just `name`) ready on the cluster whose pods fit one of its nodes now, by name."""
    nodes = compute.cluster.nodes if compute.cluster_id else []
    return [shape for shape, record in _instance_type_shapes(compute, name)
            if _state(record) == ProvisioningState.SUCCEEDED and shapes.fitting_nodes(shape, nodes)]


def node_list(*, compute: ComputeTarget) -> list[dict]:
    """The cluster's nodes as last synced, each with the instance types it can host for this attachment."""
    if not compute.cluster_id:
        return []
    types = instance_type_list(compute=compute)
    return [
        {**{key: node[key] for key in ("name", "labels", "taints", "ready", "allocatable")},
         "instance_types": [row["name"] for row in types if node["name"] in row["fits_nodes"]]}
        for node in compute.cluster.nodes
    ]
