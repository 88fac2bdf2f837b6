"""A compute cluster's node pool: its name, the labels and taint that dedicate its nodes, and the shape a job or
deployment gets on it (pure). The pool objects themselves are built in compute/manifests (NodePool, placeholder,
MachineDeployment); this module is what jobs and endpoints need to place pods on a pool.
"""
from dataclasses import dataclass

from controlplane.kube.objects import object_name
from controlplane.kube.resources import Shape

from . import vmsizes

KARPENTER = "karpenter"
CLUSTER_API = "cluster-api"
ENGINES = (KARPENTER, CLUSTER_API)

# Karpenter writes this label on every node it launches for a pool.
KARPENTER_POOL_LABEL = "karpenter.sh/nodepool"
# Cluster API syncs labels of this domain from a Machine to its Node.
CAPI_POOL_LABEL = "node.cluster.x-k8s.io/dockyard-pool"
# The taint (and template label) that keeps other pods off a compute cluster's nodes.
COMPUTE_TAINT_KEY = "dockyard.dev/compute"
# How a compute cluster can take more whole-node pods: on idle nodes now, by adding nodes, or not until some free up.
FITS_NOW, CAN_SCALE, AT_LIMIT = "fits_now", "can_scale", "at_limit"
# Karpenter never disrupts (consolidates, drifts) a node while a pod with this annotation runs on it.
DO_NOT_DISRUPT = {"karpenter.sh/do-not-disrupt": "true"}


def pool_name(workspace: str, compute: str) -> str:
    """The pool's deterministic, cluster-wide name (`dy-<ws>-<compute>-<hash>`): pools are cluster-scoped and one
    cluster may serve several workspaces."""
    return object_name(f"dy-{workspace}-{compute}", f"{workspace}/{compute}")


def pool_label(engine: str) -> str:
    """The node label that names a node's pool under this engine."""
    return KARPENTER_POOL_LABEL if engine == KARPENTER else CAPI_POOL_LABEL


def pool_toleration(pool: str) -> dict:
    return {"key": COMPUTE_TAINT_KEY, "operator": "Equal", "value": pool, "effect": "NoSchedule"}


def pool_shape(size: str, engine: str, pool: str) -> Shape | None:
    """The shape of a pod that takes one whole node of the pool (all its GPUs), only on the pool's nodes, tolerating
    its taint, never disrupted by the autoscaler while it runs. None when the size is unknown."""
    shape = vmsizes.size_shape(size)
    if shape is None:
        return None
    return shape.in_pool({pool_label(engine): pool}, (pool_toleration(pool),), DO_NOT_DISRUPT)


@dataclass(frozen=True)
class PoolRoom:
    """A compute cluster's nodes as its status counts them: how many exist, are wanted (launching included), idle,
    and may exist at most. One reading of the counts for everything that places work on a pool."""

    current: int
    target: int
    idle: int
    max_nodes: int

    @classmethod
    def of(cls, status: dict, max_instances: int) -> "PoolRoom":
        """The room a compute cluster's `status` (its reconcile's counts) gives, `max_instances` until it is observed."""
        current = int(status.get("current_node_count") or 0)
        return cls(current, int(status.get("target_node_count") or current), int(status.get("idle_node_count") or 0),
                   int(status.get("max_node_count") or max_instances))

    @property
    def free(self) -> int:
        """Nodes the autoscaler may still add: launching ones count as taken."""
        return max(self.max_nodes - max(self.target, self.current), 0)

    def capacity(self, count: int) -> str:
        """FITS_NOW when `count` idle nodes wait, CAN_SCALE when adding nodes makes room, else AT_LIMIT."""
        if self.idle >= count:
            return FITS_NOW
        return CAN_SCALE if self.idle + self.free >= count else AT_LIMIT
