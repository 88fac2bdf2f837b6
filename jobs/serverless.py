"""Serverless placement (no `compute`): rank the workspace's Kubernetes computes and compute clusters for a job (pure).

compute-engines.md §2: a candidate that fits on a node now beats a compute cluster that can scale (below
max_instances, of a size that fits), which beats a compute cluster whose nodes are all busy (the job queues there).
A named VM size picks compute clusters of that size and Kubernetes computes whose nodes fit its shape; no size
means CPU, as Azure ML's serverless default. Low-priority (spot) clusters are left out: Azure ML takes spot only for
`queue_settings.job_tier: Spot`, a field Dockyard refuses. Fit counts the upload sidecar that every job pod runs
beside its main container. The rank is a hint from synced snapshots: the cluster's scheduler has the last word.
"""
from dataclasses import dataclass

from assets.specs.pods import SMALL
from compute import pools
from controlplane.kube.objects import GPU
from controlplane.kube.quantities import cpu_millicores, memory_bytes
from controlplane.kube.resources import Shape

FITS_NOW, CAN_SCALE, QUEUE = 0, 1, 2
BLOCKING_TAINTS = ("NoSchedule", "NoExecute")
SIDECAR_MILLICORES = cpu_millicores(SMALL["requests"]["cpu"])
SIDECAR_MEMORY = memory_bytes(SMALL["requests"]["memory"])


@dataclass(frozen=True)
class KubernetesOption:
    """A Kubernetes compute: the shapes a job may take on it (ready instance types, or a VM size's shape) and its
    nodes as synced (compute.shapes.node_summary's form)."""

    compute: str
    shapes: tuple[Shape, ...]
    nodes: tuple[dict, ...]


@dataclass(frozen=True)
class PoolOption:
    """A ready compute cluster: its size and the shape of one of its nodes, tier and node counts (its status)."""

    compute: str
    size: str
    shape: Shape
    low_priority: bool
    max_nodes: int
    current: int = 0
    target: int = 0
    idle: int = 0


@dataclass(frozen=True)
class Choice:
    """Where the job goes, on which shape (instance type or VM size), and why, in words for its events."""

    compute: str
    instance_type: str
    rank: int
    why: str
    pool: bool = False

    def message(self) -> str:
        if self.pool:
            return f"Serverless: placed on compute cluster '{self.compute}' ({self.why})."
        return f"Serverless: placed on compute '{self.compute}' with instance type '{self.instance_type}' ({self.why})."


def _node_fits(shape: Shape, node: dict) -> bool:
    """A ready, untainted node whose labels match and whose allocatable holds the pod: the main container's limits,
    and its requests plus the upload sidecar's (what the scheduler adds up)."""
    if not node.get("ready", True) or any(t.get("effect") in BLOCKING_TAINTS for t in node.get("taints") or []):
        return False
    if any((node.get("labels") or {}).get(key) != value for key, value in shape.selector.items()):
        return False
    units = node["capacity_units"]
    (cpu_request, cpu_limit), (memory_request, memory_limit) = shape.millicores(), shape.memory()
    return (max(cpu_limit, cpu_request + SIDECAR_MILLICORES) <= units["millicores"]
            and max(memory_limit, memory_request + SIDECAR_MEMORY) <= units["memory_bytes"]
            and shape.gpu <= (node.get("allocatable") or {}).get(GPU, 0))


def _kubernetes_choices(option: KubernetesOption, cpu_only: bool) -> list[tuple]:
    found = []
    for shape in option.shapes:
        if cpu_only and shape.gpu:
            continue
        try:
            fits = any(_node_fits(shape, node) for node in option.nodes)
        except (KeyError, ValueError):  # an imported shape with values Dockyard would refuse fits nowhere
            fits = False
        if fits:
            found.append((shape.size(), Choice(option.compute, shape.name, FITS_NOW, "fits a ready node now")))
    return found


def pool_choice(option: PoolOption, instance_count: int) -> Choice | None:
    """How a compute cluster can take a job of `instance_count` nodes: on idle nodes now, by scaling, or queued
    (None when it can never hold that many nodes)."""
    if instance_count > option.max_nodes:
        return None
    room = pools.PoolRoom(option.current, option.target, option.idle, option.max_nodes)
    capacity = room.capacity(instance_count)
    if capacity == pools.FITS_NOW:
        return Choice(option.compute, option.size, FITS_NOW, f"fits now: {room.idle} idle of {room.current} nodes", pool=True)
    if capacity == pools.CAN_SCALE:
        return Choice(option.compute, option.size, CAN_SCALE, f"can scale: {room.current} of {room.max_nodes} nodes", pool=True)
    busy = max(room.target, room.current) - room.idle
    return Choice(option.compute, option.size, QUEUE, f"queued: {busy} of {room.max_nodes} nodes busy or launching", pool=True)


def _pool_wanted(option: PoolOption, size: str | None) -> bool:
    if option.low_priority:
        return False
    return option.size.lower() == size.lower() if size else not option.shape.gpu


def rank(kubernetes: list[KubernetesOption], pools: list[PoolOption], *, size: str | None, named: bool,
         instance_count: int = 1) -> Choice | None:
    """The best place for a job: fits now > can scale > queue, then the smallest shape, then the name. `size` is the
    VM size the job names (None: none, or an instance type name); `named`: the job names an instance type or size."""
    found: list[tuple] = []
    for option in kubernetes:
        found += _kubernetes_choices(option, cpu_only=not named)
    if size or not named:
        for option in pools:
            choice = pool_choice(option, instance_count) if _pool_wanted(option, size) else None
            if choice:
                found.append((option.shape.size(), choice))
    if not found:
        return None
    return min(found, key=lambda item: (item[1].rank, item[0], item[1].pool, item[1].compute))[1]
