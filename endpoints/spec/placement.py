"""Where a managed deployment runs: a compute cluster of its VM size, else a Kubernetes compute whose nodes fit the
size (pure). The ranking follows serverless jobs' (compute-engines.md §2): among ready compute clusters of the size,
one that can hold `instance_count` nodes (max_instances) first, then one that fits now (idle nodes) over one that must
scale, then by name; a Kubernetes compute only when no compute cluster of the size is ready, the one with most
fitting nodes first. All deployments of a managed endpoint live on one Kubernetes attachment (its route and Services
are there), so once the first is placed the others are placed among the computes on it (`host`).
"""
from dataclasses import dataclass, field

from compute import pools, shapes, vmsizes
from controlplane.kube.resources import Shape

FITS_NOW, CAN_SCALE, AT_LIMIT = pools.FITS_NOW, pools.CAN_SCALE, pools.AT_LIMIT
FITS_NODES = "fits_nodes"
AMLCOMPUTE, KUBERNETES = "amlcompute", "kubernetes"
NOT_READY_STATES = ("Failed", "Deleting")


@dataclass(frozen=True)
class Candidate:
    """A compute of the workspace as placement sees it: a compute cluster (its size, pool status, max_instances) or a
    Kubernetes compute (its nodes as `compute.shapes.node_summary` gives them and its own node selector)."""

    name: str
    type: str
    host: str  # the Kubernetes compute it lives on (a Kubernetes compute's own name); "" when that is unknown
    state: str = "Succeeded"
    size: str = ""
    max_instances: int = 1
    status: dict = field(default_factory=dict)
    nodes: tuple = ()
    node_selector: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    """The chosen compute and why: `capacity` is fits_now, can_scale, at_limit (compute clusters) or fits_nodes."""

    compute: str
    compute_type: str
    kubernetes_compute: str
    instance_type: str
    capacity: str
    reason: str
    engine: str | None = None
    pool: str | None = None

    def as_dict(self) -> dict:
        return {"compute": self.compute, "compute_type": self.compute_type, "kubernetes_compute": self.kubernetes_compute,
                "instance_type": self.instance_type, "capacity": self.capacity, "reason": self.reason,
                **({"engine": self.engine, "pool": self.pool} if self.pool else {})}


class NoPlacement(Exception):
    """No compute of the workspace can take the deployment; the message names the size and what exists."""


def _same_size(candidate: Candidate, size: str) -> bool:
    found = vmsizes.vm_size(candidate.size)
    return bool(found and found.name == size)


def cluster_ready(candidate: Candidate) -> bool:
    """A compute cluster can take pods once its reconcile has declared the pool (status.pool)."""
    return bool(candidate.status.get("pool")) and candidate.state not in NOT_READY_STATES and bool(candidate.host)


def _room(candidate: Candidate) -> pools.PoolRoom:
    return pools.PoolRoom.of(candidate.status, candidate.max_instances)


def cluster_capacity(candidate: Candidate, count: int) -> tuple[bool, str]:
    """(holds `count` nodes at all, fits_now | can_scale | at_limit) for a ready compute cluster."""
    room = _room(candidate)
    return room.max_nodes >= count, room.capacity(count)


def _cluster_reason(candidate: Candidate, size: str, count: int, capacity: str) -> str:
    room = _room(candidate)
    idle, current, most = room.idle, room.current, room.max_nodes
    where = f"compute cluster '{candidate.name}' ({size}, {candidate.status.get('engine')} pool {candidate.status['pool']})"
    instances = f"{count} instance{'s' if count != 1 else ''}"
    if capacity == FITS_NOW:
        why = f"{idle} idle node(s) take the {instances} now"
    elif capacity == CAN_SCALE:
        why = f"it can scale from {current} to {min(most, current + count - idle)} of at most {most} node(s) for the {instances}"
    else:
        why = (f"it has {current} of at most {most} node(s) and none idle: the {instances} wait for nodes"
               + (f" (max_instances {most} < {count}: raise it)" if most < count else ""))
    return f"Managed: placed on {where}: {why}."


def _best_cluster(clusters: list[Candidate], size: str, count: int) -> Placement | None:
    order = {FITS_NOW: 0, CAN_SCALE: 1, AT_LIMIT: 2}
    ranked = sorted(((not holds, order[capacity], candidate.name, capacity, candidate)
                     for candidate in clusters for holds, capacity in [cluster_capacity(candidate, count)]),
                    key=lambda item: item[:3])
    if not ranked:
        return None
    *_, capacity, chosen = ranked[0]
    return Placement(chosen.name, AMLCOMPUTE, chosen.host, size, capacity, _cluster_reason(chosen, size, count, capacity),
                     chosen.status.get("engine"), chosen.status["pool"])


def fitting_nodes(candidate: Candidate, size: str) -> list[str]:
    """A Kubernetes compute's ready, untainted nodes that fit one instance of `size` (under its own node selector)."""
    shape = vmsizes.size_shape(size)
    return shapes.fitting_nodes(shape.on(candidate.node_selector), list(candidate.nodes)) if shape else []


def _best_kubernetes(computes: list[Candidate], size: str, count: int) -> Placement | None:
    ranked = sorted(((len(nodes) < count, -len(nodes), candidate.name, nodes, candidate)
                     for candidate in computes for nodes in [fitting_nodes(candidate, size)] if nodes),
                    key=lambda item: item[:3])
    if not ranked:
        return None
    *_, nodes, chosen = ranked[0]
    shown = ", ".join(nodes[:3]) + (", …" if len(nodes) > 3 else "")
    reason = (f"Managed: placed on Kubernetes compute '{chosen.name}' (no compute cluster of size {size} is ready): "
              f"{len(nodes)} node(s) of that size fit an instance ({shown}).")
    return Placement(chosen.name, KUBERNETES, chosen.name, size, FITS_NODES, reason)


def place(size: str, count: int, candidates: list[Candidate], workspace: str, host: str = "") -> Placement:
    """The compute for `count` instances of VM size `size` (canonical name), on `host` when the endpoint has one;
    NoPlacement naming the size and what the workspace has otherwise."""
    on_host = [candidate for candidate in candidates if not host or candidate.host == host]
    clusters = [candidate for candidate in on_host if candidate.type == AMLCOMPUTE and _same_size(candidate, size)]
    kubernetes = [candidate for candidate in on_host if candidate.type == KUBERNETES and candidate.state not in NOT_READY_STATES]
    chosen = (_best_cluster([item for item in clusters if cluster_ready(item)], size, count)
              or _best_kubernetes(kubernetes, size, count))
    if chosen is None:
        raise NoPlacement(refusal(size, candidates, workspace, host))
    return chosen


def _cluster_row(candidate: Candidate) -> str:
    size = vmsizes.vm_size(candidate.size)
    row = f"'{candidate.name}' ({size.name if size else candidate.size or 'no size'}"
    if not candidate.host:
        return row + ", no kubernetes_compute)"
    if not cluster_ready(candidate):
        return row + f", not ready: {candidate.state.lower() if candidate.state in NOT_READY_STATES else 'no pool yet'})"
    return row + f", on '{candidate.host}')"


def refusal(size: str, candidates: list[Candidate], workspace: str, host: str = "") -> str:
    """Why nothing fits: the size, where it was looked for, the compute clusters and Kubernetes computes that exist."""
    where = f"workspace '{workspace}'" + (f" on Kubernetes compute '{host}' (where the endpoint runs)" if host else "")
    clusters = [_cluster_row(item) for item in candidates if item.type == AMLCOMPUTE]
    kubernetes = [f"'{item.name}'" for item in candidates if item.type == KUBERNETES and (not host or item.name == host)]
    parts = [f"No compute cluster of size {size} in {where} can take this deployment"]
    parts.append(f"compute clusters: {', '.join(clusters)}" if clusters else "it has no compute cluster")
    if kubernetes:
        parts.append(f"no node of Kubernetes compute {', '.join(kubernetes)} fits {size}")
    create = f"type: amlcompute, size: {size}" + (f", kubernetes_compute: {host}" if host else "")
    return "; ".join(parts) + f". Create one: `{create}`."


def instance_shape(placement: dict, node_selector: dict | None = None) -> Shape | None:
    """The Shape of one instance where `placement` (Placement.as_dict) put it: on a compute cluster one whole node of
    its pool (the pool's selector, taint toleration, do-not-disrupt annotation); on a Kubernetes compute one node of
    the size under the attachment's own `node_selector`. None for a size the catalog no longer knows."""
    size = placement.get("instance_type") or ""
    if placement.get("pool"):
        return pools.pool_shape(size, placement.get("engine") or pools.KARPENTER, placement["pool"])
    shape = vmsizes.size_shape(size)
    return shape.on(node_selector or {}) if shape else None
