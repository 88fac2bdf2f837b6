"""A compute cluster → a Cluster API MachineDeployment that cluster-autoscaler scales (pure).

compute-engines.md §1.3: where the cluster has no Karpenter but cluster-autoscaler with `--cloud-provider=clusterapi`.
The attached cluster is its own management cluster (the MachineDeployment is applied with the attachment's
credentials). `spec.replicas` is left to the autoscaler; min/max, the idle time and (to scale from zero) one node's
capacity are annotations it reads.
"""
from .. import pools, vmsizes
from .nodepools import Pool, PoolProblem

MACHINEDEPLOYMENT_API_VERSION = "cluster.x-k8s.io/v1beta2"
CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name"
AUTOSCALER = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-"
CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
SCALE_DOWN_UNNEEDED = "cluster.x-k8s.io/autoscaling-options-scaledownunneededtime"


def _ref(template: dict) -> dict:
    return {"apiGroup": template["api_group"], "kind": template["kind"], "name": template["name"]}


def _infrastructure(pool: Pool, settings: dict) -> dict:
    """The size's infrastructure template (a spot one for tier low_priority); PoolProblem naming what to add."""
    key = "low_priority_infrastructure_templates" if pool.tier == "low_priority" else "infrastructure_templates"
    template = (settings.get(key) or {}).get(pool.size)
    if template is None:
        raise PoolProblem(f"The kubernetes compute's cluster_api settings have no template for {pool.size} in {key}; "
                          "add one (an infrastructure machine template of that size).")
    return _ref(template)


def _capacity(pool: Pool) -> dict[str, str]:
    """One node's capacity, so the autoscaler can scale the pool from zero nodes (it has no node to look at)."""
    size = vmsizes.vm_size(pool.size)
    if size is None:
        raise PoolProblem(f"Dockyard does not know the vCPUs and memory of the size '{pool.size}'.")
    node_labels = {**pool.node_selector, pools.CAPI_POOL_LABEL: pool.name, "node.kubernetes.io/instance-type": size.name}
    capacity = {"cpu": str(size.vcpus), "memory": f"{int(size.memory_gib * 1024)}Mi",
                "labels": ",".join(f"{key}={value}" for key, value in sorted(node_labels.items()))}
    if size.gpus:
        capacity.update({"gpu-type": "nvidia.com/gpu", "gpu-count": str(size.gpus)})
    return {CAPACITY + key: value for key, value in capacity.items()}


def machinedeployment_manifest(pool: Pool, settings: dict) -> dict:
    """The MachineDeployment of a compute cluster under Cluster API: its machines' templates, min/max and idle time
    for cluster-autoscaler, and the label (synced to its Nodes) that jobs select the pool by."""
    cluster = settings["cluster_name"]
    match = {CLUSTER_NAME_LABEL: cluster, pools.CAPI_POOL_LABEL: pool.name}
    annotations = {
        AUTOSCALER + "min-size": str(pool.min_instances),
        AUTOSCALER + "max-size": str(pool.max_instances),
        SCALE_DOWN_UNNEEDED: f"{pool.idle_seconds}s",
        **_capacity(pool),
    }
    return {
        "apiVersion": MACHINEDEPLOYMENT_API_VERSION,
        "kind": "MachineDeployment",
        "metadata": {"name": pool.name, "namespace": settings["namespace"], "labels": {**pool.labels(), **match},
                     "annotations": annotations},
        "spec": {
            "clusterName": cluster,
            "selector": {"matchLabels": match},
            "template": {
                "metadata": {"labels": {**match, **pool.labels()}},
                "spec": {
                    "clusterName": cluster,
                    "version": settings["version"],
                    "bootstrap": {"configRef": _ref(settings["bootstrap_config_template"])},
                    "infrastructureRef": _infrastructure(pool, settings),
                },
            },
        },
    }
