"""Instance type records → the InstanceType CRD and CRs as plain dicts (pure)."""
from controlplane.kube.objects import GPU, MANAGED_BY, MANAGER, labels
from controlplane.kube.quantities import QUANTITY_PATTERN
from controlplane.kube.resources import Shape

INSTANCE_TYPE_GROUP = "amlarc.azureml.com"
INSTANCE_TYPE_VERSION = "v1alpha1"
INSTANCE_TYPE_API_VERSION = f"{INSTANCE_TYPE_GROUP}/{INSTANCE_TYPE_VERSION}"
INSTANCE_TYPE_PLURAL = "instancetypes"
INSTANCE_TYPE_CRD_NAME = f"{INSTANCE_TYPE_PLURAL}.{INSTANCE_TYPE_GROUP}"
GPU_JSON_PATH = r".spec.resources.limits.nvidia\.com/gpu"


def _quantity_schema() -> dict:
    return {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": QUANTITY_PATTERN}


def _resource_list_schema(with_gpu: bool) -> dict:
    properties = {"cpu": _quantity_schema(), "memory": _quantity_schema()}
    if with_gpu:
        properties[GPU] = {"type": "integer", "minimum": 0, "nullable": True}
    return {"type": "object", "properties": properties}


def instance_type_crd() -> dict:
    """Dockyard's definition of Azure ML's (unpublished) InstanceType CRD: cluster-scoped, v1alpha1."""
    spec_schema = {
        "type": "object",
        "properties": {
            "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
            "resources": {
                "type": "object",
                "properties": {"requests": _resource_list_schema(False), "limits": _resource_list_schema(True)},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": INSTANCE_TYPE_CRD_NAME, "labels": {MANAGED_BY: MANAGER}},
        "spec": {
            "group": INSTANCE_TYPE_GROUP,
            "scope": "Cluster",
            "names": {"plural": INSTANCE_TYPE_PLURAL, "singular": "instancetype", "kind": "InstanceType", "listKind": "InstanceTypeList"},
            "versions": [
                {
                    "name": INSTANCE_TYPE_VERSION, "served": True, "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": spec_schema, "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    }}},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "CPU", "type": "string", "jsonPath": ".spec.resources.limits.cpu"},
                        {"name": "Memory", "type": "string", "jsonPath": ".spec.resources.limits.memory"},
                        {"name": "GPU", "type": "integer", "jsonPath": GPU_JSON_PATH},
                    ],
                }
            ],
        },
    }


def instance_type_manifest(shape: Shape, *, cluster_id: int) -> dict:
    """The InstanceType CR of an instance type's shape; GPUs appear under limits only, and only when there are some."""
    return {
        "apiVersion": INSTANCE_TYPE_API_VERSION,
        "kind": "InstanceType",
        "metadata": {"name": shape.name, "labels": labels("instancetype", cluster=str(cluster_id))},
        "spec": shape.spec(),
    }
