"""Manifests the Karpenter and Cluster API tests share (plain dicts, as a client builds them)."""
from __future__ import annotations

KARPENTER = ("karpenter.sh", "v1")
CAPI = ("cluster.x-k8s.io", "v1beta2")


def nodepool(name: str = "gpu", requirements: list | None = None, labels: dict | None = None,
             taints: list | None = None, limits: dict | None = None, disruption: dict | None = None,
             expire_after: str | None = None, **spec) -> dict:
    """A karpenter.sh/v1 NodePool."""
    template_spec = {"nodeClassRef": {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"},
                     "requirements": requirements if requirements is not None else [
                         {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]}
    if taints is not None:
        template_spec["taints"] = taints
    if expire_after is not None:
        template_spec["expireAfter"] = expire_after
    body = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"labels": labels or {}}, "spec": template_spec}, **spec}}
    if limits is not None:
        body["spec"]["limits"] = limits
    if disruption is not None:
        body["spec"]["disruption"] = disruption
    return body


def machine_deployment(name: str = "cpu", replicas: int | None = None, annotations: dict | None = None,
                       labels: dict | None = None, version: str = "v1.36.0") -> dict:
    """A cluster.x-k8s.io/v1beta2 MachineDeployment of cluster `dev`."""
    body = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
            "spec": {"clusterName": "dev", "selector": {"matchLabels": {"pool": name}},
                     "template": {"metadata": {"labels": {"pool": name, **(labels or {})}}, "spec": {
                         "clusterName": "dev", "version": version,
                         "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io",
                                                     "kind": "KubeadmConfigTemplate", "name": f"{name}-boot"}},
                         "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                               "kind": "AzureMachineTemplate", "name": f"{name}-infra"}}}}}
    if replicas is not None:
        body["spec"]["replicas"] = replicas
    return body


def pending_pod(name: str, cpu: str = "1", memory: str = "1Gi", gpu: int = 0, selector: dict | None = None,
                tolerations: list | None = None, annotations: dict | None = None, priority_class: str | None = None,
                namespace: str = "default") -> dict:
    """A bare pod with requests (and optional placement)."""
    requests = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec = {"containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests,
                                                                              "limits": dict(requests)}}]}
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
