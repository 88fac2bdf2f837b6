"""What a compute cluster's pool looks like on the cluster, read in one pass per attachment, and the status it gives.

One LIST per kind serves every pool of the attachment (the NodePools or MachineDeployments, the pools' Nodes, the
NodeClaims, Dockyard's pods in the namespace); `pool_status` turns one pool's share into COMMON.md's status.
"""
from dataclasses import dataclass, field

from controlplane.kube import client as kube
from controlplane.kube.connection import Connection
from controlplane.kube.objects import LABEL_PREFIX, MANAGED_BY, MANAGER

from .. import pools
from ..manifests.clusterapi import MACHINEDEPLOYMENT_API_VERSION
from ..manifests.nodepools import NODEPOOL_API_VERSION

POOL_KIND = f"{LABEL_PREFIX}kind=computecluster"
# Pods that make a node busy: a job's or a deployment's (a placeholder keeps a node, but idle).
BUSY_PODS = f"{MANAGED_BY}={MANAGER},{LABEL_PREFIX}kind in (job,online-deployment)"
ENDED = ("Succeeded", "Failed")


@dataclass
class Observed:
    """One attachment's pools as the cluster reports them, keyed by pool name."""

    engine: str
    pools: dict[str, dict] = field(default_factory=dict)  # NodePool or MachineDeployment
    nodes: dict[str, list[dict]] = field(default_factory=dict)
    claims: dict[str, list[dict]] | None = None  # None: the engine has no NodeClaims (Cluster API)
    busy_nodes: set[str] = field(default_factory=set)
    waiting: dict[str, int] = field(default_factory=dict)  # pool -> Dockyard pods not yet on a node


def observe(conn: Connection, engine: str, namespace: str, capi_namespace: str | None = None) -> Observed:
    """Read the attachment's pools, their nodes and claims, and Dockyard's pods in `namespace`: one LIST each."""
    label = pools.pool_label(engine)
    seen = Observed(engine)
    if engine == pools.KARPENTER:
        listed = kube.list_objects(conn, NODEPOOL_API_VERSION, "NodePool", selector=POOL_KIND)
        seen.claims = _grouped(_claims(conn), label)
    else:
        listed = kube.list_objects(conn, MACHINEDEPLOYMENT_API_VERSION, "MachineDeployment", capi_namespace, POOL_KIND)
    seen.pools = {item["metadata"]["name"]: item for item in listed}
    seen.nodes = _grouped(kube.list_objects(conn, "v1", "Node", selector=label), label)
    for pod in kube.list_objects(conn, "v1", "Pod", namespace, BUSY_PODS):
        if (pod.get("status") or {}).get("phase") in ENDED:
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            seen.busy_nodes.add(node)
        elif pool := ((pod.get("spec") or {}).get("nodeSelector") or {}).get(label):
            seen.waiting[pool] = seen.waiting.get(pool, 0) + 1
    return seen


def _claims(conn: Connection) -> list[dict]:
    try:
        return kube.list_objects(conn, NODEPOOL_API_VERSION, "NodeClaim", selector=pools.KARPENTER_POOL_LABEL)
    except kube.KubeNotFound:  # a Karpenter without NodeClaims served: the nodes alone say what there is
        return []


def _grouped(items: list[dict], label: str) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for item in items:
        name = (item.get("metadata", {}).get("labels") or {}).get(label)
        if name:
            groups.setdefault(name, []).append(item)
    return groups


def _condition(item: dict, kind: str) -> dict | None:
    return next((c for c in (item.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _ready(node: dict) -> bool:
    return (_condition(node, "Ready") or {}).get("status") == "True"


def _deleting(item: dict) -> bool:
    return bool(item.get("metadata", {}).get("deletionTimestamp"))


def _refusals(claims: list[dict], live: dict | None) -> list[str]:
    """The autoscaler's own sentences: launches it refused (Launched=False) and a pool it says is not ready."""
    errors = []
    for claim in sorted(claims, key=lambda item: item["metadata"]["name"]):
        launched = _condition(claim, "Launched")
        if launched and launched.get("status") == "False" and not _deleting(claim):
            reason, message = launched.get("reason") or "LaunchFailed", launched.get("message") or "no message"
            errors.append(f"Node {claim['metadata']['name']} was not launched ({reason}): {message}")
    ready = _condition(live or {}, "Ready")
    if ready and ready.get("status") == "False":
        errors.append(f"The pool is not ready ({ready.get('reason') or 'NotReady'}): {ready.get('message') or 'no message'}")
    return errors


def _target(seen: Observed, pool: str, nodes: list[dict]) -> int:
    """The nodes the autoscaler is after: its live claims and any live node no claim names (Karpenter), or the
    replicas it set (Cluster API)."""
    if seen.claims is not None:
        claims = seen.claims.get(pool, [])
        claimed = {(claim.get("status") or {}).get("nodeName") for claim in claims}
        unclaimed = [node for node in nodes if node["metadata"]["name"] not in claimed and not _deleting(node)]
        return len([claim for claim in claims if not _deleting(claim)]) + len(unclaimed)
    live = seen.pools.get(pool) or {}
    replicas = (live.get("spec") or {}).get("replicas")
    return replicas if isinstance(replicas, int) else len(nodes)


def pool_status(seen: Observed, pool: str, max_nodes: int) -> dict:
    """COMMON.md's status of one pool: counts, what the autoscaler is doing, why it refused, each node."""
    nodes = sorted(seen.nodes.get(pool, []), key=lambda item: item["metadata"]["name"])
    rows = [{"name": node["metadata"]["name"], "ready": _ready(node),
             "idle": _ready(node) and node["metadata"]["name"] not in seen.busy_nodes} for node in nodes]
    current, target = len([node for node in nodes if not _deleting(node)]), _target(seen, pool, nodes)
    waiting = seen.waiting.get(pool, 0)
    if target > current:
        scaling = "scaling_up"
    elif target < current or any(_deleting(node) for node in nodes):
        scaling = "scaling_down"
    elif waiting and target >= max_nodes:
        scaling = "at_limit"
    else:
        scaling = "steady"
    return {
        "engine": seen.engine, "pool": pool, "current_node_count": current, "target_node_count": target,
        "idle_node_count": sum(row["idle"] for row in rows), "max_node_count": max_nodes, "scaling": scaling,
        "autoscaler_errors": _refusals((seen.claims or {}).get(pool, []), seen.pools.get(pool)), "nodes": rows,
    }
