"""A compute cluster's node pool: its name, the labels and taint that dedicate its nodes, and the shape a job or
deployment gets on it (pure). The pool objects themselves are built in compute/manifests (NodePool, placeholder,
MachineDeployment); this module is what jobs and endpoints need to place pods on a pool.
"""
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
