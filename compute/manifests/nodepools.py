"""A compute cluster → its Karpenter NodePool, and the placeholder that holds `min_instances` nodes (pure).

compute-engines.md §1.2: one NodePool per compute cluster; `consolidationPolicy: WhenEmpty` (the default,
WhenEmptyOrUnderutilized, evicts running training pods) and `expireAfter: Never` (expiry is forceful). Karpenter has
no minimum for a pool, so `min_instances` nodes are held by a Deployment of pause pods shaped like one node each, at a
negative priority that real work preempts.
"""
from dataclasses import dataclass, field, replace

from controlplane.kube.objects import labels

from .. import pools

NODEPOOL_API_VERSION = "karpenter.sh/v1"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
CAPACITY_TYPES = {"dedicated": "on-demand", "low_priority": "spot"}
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
# AKS Node Auto-Provisioning's node class, Karpenter's default on AKS.
DEFAULT_NODE_CLASS = {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"}
# Karpenter refuses template labels in these domains (its CRD's rules); such selector keys become requirements.
RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh")
PLACEHOLDER_PRIORITY_CLASS = "dockyard-placeholder"
# Negative, so any real pod (priority 0) preempts a placeholder; not below -10, which cluster-autoscaler's default
# --expendable-pods-priority-cutoff treats as expendable (it would not keep nodes for them).
PLACEHOLDER_PRIORITY = -1
PLACEHOLDER_LABEL = "dockyard.dev/placeholder"


class PoolProblem(ValueError):
    """A compute cluster that cannot be declared on this cluster; the message says why, in Dockyard's words."""


@dataclass(frozen=True)
class Pool:
    """One compute cluster as its pool's manifests need it: the record's fields and its host attachment's."""

    workspace: str
    compute: str
    size: str
    tier: str = "dedicated"
    min_instances: int = 0
    max_instances: int = 1
    idle_seconds: int = 120
    namespace: str = "default"  # the host attachment's: where the placeholder runs
    node_selector: dict[str, str] = field(default_factory=dict)  # the host attachment's: every pod must match it

    @property
    def name(self) -> str:
        return pools.pool_name(self.workspace, self.compute)

    def labels(self, kind: str = "computecluster") -> dict[str, str]:
        return labels(kind, workspace=self.workspace, compute=self.compute)

    def shape(self, engine: str):
        """One whole node of the pool as a pod shape, on the host attachment's selector; PoolProblem if unknown."""
        shape = pools.pool_shape(self.size, engine, self.name)
        if shape is None:
            raise PoolProblem(f"Dockyard does not know the vCPUs and memory of the size '{self.size}'.")
        return shape.on(self.node_selector)


def _restricted(key: str) -> bool:
    domain = key.split("/", 1)[0] if "/" in key else ""
    return any(domain == item or domain.endswith("." + item) for item in RESTRICTED_DOMAINS)


def nodepool_manifest(pool: Pool, node_class: dict | None = None) -> dict:
    """The karpenter.sh/v1 NodePool of a compute cluster: its size, tier, node limit and idle time, nodes tainted and
    labelled for it alone (plus the host attachment's selector, which its pods must match)."""
    selector = pool.node_selector
    requirements = [
        {"key": INSTANCE_TYPE, "operator": "In", "values": [pool.size]},
        {"key": CAPACITY_TYPE, "operator": "In", "values": [CAPACITY_TYPES[pool.tier]]},
        *({"key": key, "operator": "In", "values": [value]} for key, value in sorted(selector.items())
          if _restricted(key) and key != INSTANCE_TYPE),
    ]
    node_labels = {key: value for key, value in selector.items() if not _restricted(key)}
    return {
        "apiVersion": NODEPOOL_API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": pool.name, "labels": pool.labels()},
        "spec": {
            "template": {
                "metadata": {"labels": {**node_labels, pools.COMPUTE_TAINT_KEY: pool.name}},
                "spec": {
                    "requirements": requirements,
                    "nodeClassRef": dict(node_class or DEFAULT_NODE_CLASS),
                    "taints": [{"key": pools.COMPUTE_TAINT_KEY, "value": pool.name, "effect": "NoSchedule"}],
                    "expireAfter": "Never",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": f"{pool.idle_seconds}s"},
            "limits": {"nodes": str(pool.max_instances)},
        },
    }


def priority_class_manifest() -> dict:
    """The one cluster-wide PriorityClass of placeholder pods: below every real pod, never preempting one."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": PLACEHOLDER_PRIORITY_CLASS, "labels": labels("placeholder")},
        "value": PLACEHOLDER_PRIORITY,
        "preemptionPolicy": "Never",
        "globalDefault": False,
        "description": "Dockyard's placeholder pods that hold a compute cluster's min_instances nodes; any pod preempts them.",
    }


def placeholder_manifest(pool: Pool, engine: str, image: str) -> dict:
    """`min_instances` pause pods, each as big as one node of the pool and never two on one node, at the placeholder
    priority: the autoscaler keeps that many nodes, and a job or deployment preempts them when it needs the room."""
    shape = pool.shape(engine)
    match = {PLACEHOLDER_LABEL: pool.name}
    pod_spec = {
        "priorityClassName": PLACEHOLDER_PRIORITY_CLASS,
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
        "containers": [{"name": "pause", "image": image, "resources": shape.container_resources()}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": match}, "topologyKey": "kubernetes.io/hostname"}]}},
    }
    template_metadata: dict = {"labels": {**pool.labels("placeholder"), **match}}
    # The pool's selector and toleration, but not the autoscaler's do-not-disrupt: a placeholder must not keep a node.
    replace(shape, pod_annotations={}).pod_placement(pod_spec, template_metadata)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": pool.name, "namespace": pool.namespace, "labels": pool.labels("placeholder")},
        "spec": {
            "replicas": pool.min_instances,
            "selector": {"matchLabels": match},
            "template": {"metadata": template_metadata, "spec": pod_spec},
        },
    }
