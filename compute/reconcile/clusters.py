"""Compute clusters (`amlcompute`): one node pool each on the attached cluster the record names, made by the
autoscaler already there — a Karpenter NodePool, or a Cluster API MachineDeployment that cluster-autoscaler scales —
and the placeholder pods that hold `min_instances` nodes; the pool's node counts written back as `status`.

Everything is done per attachment, for a batch of its compute clusters at once: one discovery, one LIST per kind
(compute/reconcile/observe.py), an apply only for the pools whose record changed or whose live object drifted.
"""
import logging
from dataclasses import dataclass

from django.conf import settings

from controlplane.kube import client as kube
from controlplane.kube.connection import Connection
from controlplane.reconciling import ProvisioningState, problem, record_status

from .. import pools
from ..connections import PROVEN_STATES, connection_for, host_attachment
from ..manifests import (
    Pool,
    PoolProblem,
    machinedeployment_manifest,
    nodepool_manifest,
    placeholder_manifest,
    priority_class_manifest,
)
from ..manifests.clusterapi import MACHINEDEPLOYMENT_API_VERSION
from ..manifests.nodepools import NODEPOOL_API_VERSION
from ..models import ComputeTarget
from .observe import Observed, observe, pool_status

logger = logging.getLogger(__name__)
KARPENTER_DISCOVERY = "/apis/karpenter.sh/v1"
CLUSTER_API_DISCOVERY = "/apis/cluster.x-k8s.io/v1beta2"
PLACEHOLDERS = "dockyard.dev/kind=placeholder"


class NoEngine(Exception):
    """The cluster has nothing Dockyard can declare a pool with; the message says what is missing."""


@dataclass
class Attachment:
    """What every pool of one attachment shares: its record, connection, engine and what the cluster reports."""

    host: ComputeTarget
    conn: Connection
    engine: str
    seen: Observed
    placeholders: set[str]
    priority_applied: bool = False


def reconcile_compute_cluster(compute: ComputeTarget) -> None:
    """Reconcile one compute cluster's pool (the caller holds its row lock): apply, observe, record."""
    reconcile_compute_clusters(host_attachment(compute), [compute], changed={compute.pk})


def reconcile_compute_clusters(host: ComputeTarget | None, computes: list[ComputeTarget], changed: set[int]) -> None:
    """Reconcile compute clusters of one attachment (rows locked by the caller): the pools of `changed` records are
    applied, the others only when their live object is gone or was edited; every status is written if it changed."""
    waiting = _host_problem(host, computes[0] if computes else None)
    if waiting:
        for compute in computes:
            record_status(compute, ProvisioningState.FAILED, [waiting], status={})
        return
    conn = connection_for(host)
    try:
        shared = _attach(host, conn)
    except NoEngine as exc:
        for compute in computes:
            _link(compute, host)
            record_status(compute, ProvisioningState.FAILED, [problem("NoAutoscaler", str(exc))], status={})
        return
    for compute in computes:
        _link(compute, host)
        _reconcile_one(shared, compute, compute.pk in changed)


def _host_problem(host: ComputeTarget | None, compute: ComputeTarget | None) -> dict | None:
    """Why the attachment cannot act for its compute clusters now (None when it can)."""
    name = (compute.properties.get("kubernetes_compute") if compute else None) or "?"
    if host is None:
        return problem("HostMissing", f"The kubernetes compute '{name}' this compute cluster lives on does not exist.")
    if host.provisioning_state not in PROVEN_STATES or not host.cluster_id:
        why = (host.provisioning_errors or [{}])[0].get("message") or "its checks have not passed yet"
        return problem("HostNotReady", f"The kubernetes compute '{host.name}' is {host.provisioning_state}: {why} "
                                       "The compute cluster is made once it passes its checks.")
    return None


def _link(compute: ComputeTarget, host: ComputeTarget) -> None:
    """A compute cluster belongs to the Cluster its attachment was proven on."""
    if compute.cluster_id != host.cluster_id:
        compute.cluster_id = host.cluster_id
        compute.save(update_fields=["cluster"])


def engine_of(conn: Connection, host: ComputeTarget) -> str:
    """Karpenter if the cluster serves karpenter.sh/v1, else Cluster API if it serves cluster.x-k8s.io (and the
    attachment says what a MachineDeployment needs); NoEngine saying what is missing otherwise."""
    if _served(conn, KARPENTER_DISCOVERY):
        return pools.KARPENTER
    if _served(conn, CLUSTER_API_DISCOVERY):
        if not host.properties.get("cluster_api"):
            raise NoEngine(f"The cluster of '{host.name}' has Cluster API but no Karpenter, and the kubernetes compute "
                           "has no cluster_api settings (cluster_name, namespace, version, templates); add them.")
        return pools.CLUSTER_API
    raise NoEngine(f"The cluster of '{host.name}' serves neither Karpenter (karpenter.sh/v1) nor Cluster API "
                   "(cluster.x-k8s.io/v1beta2): Dockyard declares a compute cluster's nodes to one of them and makes "
                   "none itself. Install one; this is checked again at every resync.")


def _served(conn: Connection, path: str) -> bool:
    try:
        kube.request(conn, "GET", path)
    except kube.KubeNotFound:
        return False
    return True


def _attach(host: ComputeTarget, conn: Connection) -> Attachment:
    engine = engine_of(conn, host)
    namespace = host.properties.get("namespace", "default")
    capi = (host.properties.get("cluster_api") or {}).get("namespace")
    seen = observe(conn, engine, namespace, capi)
    listed = kube.list_objects(conn, "apps/v1", "Deployment", namespace, PLACEHOLDERS)
    return Attachment(host, conn, engine, seen, {item["metadata"]["name"] for item in listed})


def pool_of(compute: ComputeTarget, host: ComputeTarget) -> Pool:
    """The record's pool as the manifests take it, with its attachment's namespace and node selector."""
    properties = compute.properties
    return Pool(
        workspace=compute.workspace.name, compute=compute.name, size=properties["size"], tier=properties["tier"],
        min_instances=properties["min_instances"], max_instances=properties["max_instances"],
        idle_seconds=properties["idle_time_before_scale_down"], namespace=host.properties.get("namespace", "default"),
        node_selector=host.properties.get("node_selector") or {},
    )


def desired(shared: Attachment, pool: Pool) -> dict:
    """The pool's NodePool or MachineDeployment on this attachment's engine."""
    if shared.engine == pools.KARPENTER:
        return nodepool_manifest(pool, shared.host.properties.get("karpenter_node_class"))
    return machinedeployment_manifest(pool, shared.host.properties["cluster_api"])


def _reconcile_one(shared: Attachment, compute: ComputeTarget, changed: bool) -> None:
    pool = pool_of(compute, shared.host)
    try:
        manifest = desired(shared, pool)
        if changed or drifted(manifest, shared.seen.pools.get(pool.name)):
            shared.seen.pools[pool.name] = kube.apply(shared.conn, manifest)
        _placeholder(shared, pool, changed)
    except PoolProblem as exc:
        record_status(compute, ProvisioningState.FAILED, [problem("InvalidPool", str(exc))], status={})
        return
    except kube.KubeRejected as exc:
        message = f"The cluster refused the pool ({exc.status}): {exc}"
        record_status(compute, ProvisioningState.FAILED, [problem("PoolRejected", message)], status={})
        return
    record_status(compute, ProvisioningState.SUCCEEDED, [],
                  status=pool_status(shared.seen, pool.name, pool.max_instances))


def _placeholder(shared: Attachment, pool: Pool, changed: bool) -> None:
    """min_instances > 0: the placeholder Deployment (and the shared PriorityClass) exist; 0: no placeholder."""
    if pool.min_instances == 0:
        if pool.name in shared.placeholders:
            kube.delete(shared.conn, "apps/v1", "Deployment", pool.name, pool.namespace)
            shared.placeholders.discard(pool.name)
        return
    if not changed and pool.name in shared.placeholders:
        return
    if not shared.priority_applied:
        kube.apply(shared.conn, priority_class_manifest())
        shared.priority_applied = True
    kube.apply(shared.conn, placeholder_manifest(pool, shared.engine, settings.DOCKYARD_PLACEHOLDER_IMAGE))
    shared.placeholders.add(pool.name)


def drifted(wanted: dict, live: dict | None) -> bool:
    """Whether the live object is gone or differs from what Dockyard applied (fields others add are fine)."""
    if live is None or live.get("metadata", {}).get("deletionTimestamp"):
        return True
    return not _within(wanted["spec"], live.get("spec") or {}) or not _within(
        wanted["metadata"].get("annotations") or {}, live["metadata"].get("annotations") or {})


def _within(wanted, live) -> bool:
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(_within(value, live.get(key)) for key, value in wanted.items())
    return wanted == live


def delete_compute_cluster(compute: ComputeTarget) -> bool:
    """Start deleting the pool's objects (its placeholder, its NodePool or MachineDeployment, whichever engine made
    it); True once they are gone, so the row may go. Karpenter drains a NodePool's nodes before it goes."""
    host = host_attachment(compute)
    if host is None or not host.cluster_id:
        return True  # nothing of it was ever applied with credentials that still exist
    conn = connection_for(host)
    pool = pool_of(compute, host)
    owned = [("apps/v1", "Deployment", pool.name, pool.namespace), (NODEPOOL_API_VERSION, "NodePool", pool.name, None)]
    if host.properties.get("cluster_api"):
        owned.append((MACHINEDEPLOYMENT_API_VERSION, "MachineDeployment", pool.name, host.properties["cluster_api"]["namespace"]))
    for where in owned:  # a kind the cluster does not serve answers 404: nothing to delete there
        kube.delete(conn, *where)
    return all(kube.get(conn, *where) is None for where in owned)
