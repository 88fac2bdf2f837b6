"""Records → manifests as plain dicts (pure): instance types' CRD and CRs, and compute clusters' node pools (a
Karpenter NodePool, or a Cluster API MachineDeployment, and the placeholder that holds `min_instances` nodes), and
compute instances' Secret, Service and StatefulSet."""
from .clusterapi import machinedeployment_manifest
from .instances import INSTANCE_LABEL, Instance, instance_manifests, instance_names
from .instancetypes import (
    GPU_JSON_PATH,
    INSTANCE_TYPE_API_VERSION,
    INSTANCE_TYPE_CRD_NAME,
    INSTANCE_TYPE_GROUP,
    INSTANCE_TYPE_PLURAL,
    INSTANCE_TYPE_VERSION,
    instance_type_crd,
    instance_type_manifest,
)
from .nodepools import (
    NODEPOOL_API_VERSION,
    PLACEHOLDER_PRIORITY_CLASS,
    Pool,
    PoolProblem,
    nodepool_manifest,
    placeholder_manifest,
    priority_class_manifest,
)

__all__ = [
    "INSTANCE_LABEL", "Instance", "instance_manifests", "instance_names",
    "GPU_JSON_PATH", "INSTANCE_TYPE_API_VERSION", "INSTANCE_TYPE_CRD_NAME", "INSTANCE_TYPE_GROUP", "INSTANCE_TYPE_PLURAL",
    "INSTANCE_TYPE_VERSION", "NODEPOOL_API_VERSION", "PLACEHOLDER_PRIORITY_CLASS", "Pool", "PoolProblem",
    "instance_type_crd", "instance_type_manifest", "machinedeployment_manifest", "nodepool_manifest",
    "placeholder_manifest", "priority_class_manifest",
]
