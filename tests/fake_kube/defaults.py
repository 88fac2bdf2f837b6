"""Defaulting the real server applies while decoding built-in objects (so reads show what a cluster shows)."""
from __future__ import annotations

import base64

from .quantity import QuantityError, canonical
from .validation.probes import default_probes

DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def canonical_quantities(resources: dict | None) -> None:
    """Rewrite requests/limits in canonical form ("1000m" -> "1"), as the server re-serialises them."""
    for section in ("requests", "limits"):
        values = (resources or {}).get(section)
        for name, value in (values or {}).items():
            try:
                values[name] = canonical(value)
            except QuantityError:
                pass  # decoding reports it


def _pull_policy(image: str) -> str:
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return "IfNotPresent"
    tag = tail.split(":", 1)[1] if ":" in tail else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def container(c: dict) -> None:
    """SetDefaults_Container and friends."""
    if c.get("image"):
        c.setdefault("imagePullPolicy", _pull_policy(c["image"]))
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    canonical_quantities(c["resources"])
    for var in c.get("env") or []:
        ref = (var.get("valueFrom") or {}).get("fieldRef") if isinstance(var, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")  # SetDefaults_ObjectFieldSelector
    for port in c.get("ports") or []:
        port.setdefault("protocol", "TCP")
    default_probes(c)


def pod_spec(spec: dict) -> None:
    """SetDefaults_PodSpec (templates and pods)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if isinstance(c, dict):
            container(c)
    for vol in spec.get("volumes") or []:
        for source in ("secret", "configMap"):
            if isinstance(vol.get(source), dict):
                vol[source].setdefault("defaultMode", 420)
        if isinstance(vol.get("emptyDir"), dict) and vol["emptyDir"].get("sizeLimit") is not None:
            try:
                vol["emptyDir"]["sizeLimit"] = canonical(vol["emptyDir"]["sizeLimit"])
            except QuantityError:
                pass


def pod(obj: dict) -> None:
    """A Pod: spec defaults, requests copied from limits, admission-added fields."""
    spec = obj.setdefault("spec", {})
    pod_spec(spec)
    for c in spec.get("containers") or []:
        resources = c.setdefault("resources", {})
        for name, value in (resources.get("limits") or {}).items():
            resources.setdefault("requests", {}).setdefault(name, value)
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("enableServiceLinks", True)
    # priority and preemptionPolicy come from the Priority admission plugin (admission.py), not from defaulting
    tolerations = spec.setdefault("tolerations", [])
    for default in DEFAULT_TOLERATIONS:
        if not any(t.get("key") == default["key"] for t in tolerations):
            tolerations.append(dict(default))
    obj.setdefault("status", {}).setdefault("phase", "Pending")
    obj["status"].setdefault("qosClass", qos_class(spec))


def qos_class(spec: dict) -> str:
    """Guaranteed, Burstable or BestEffort, from the containers' cpu/memory requests and limits."""
    containers = spec.get("containers") or []
    resources = [c.get("resources") or {} for c in containers]
    if not any((r.get("requests") or {}) or (r.get("limits") or {}) for r in resources):
        return "BestEffort"
    guaranteed = all(
        all((r.get("limits") or {}).get(k) and (r.get("limits") or {}).get(k) == (r.get("requests") or {}).get(k)
            for k in ("cpu", "memory"))
        for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"


def template(obj: dict) -> None:
    """Defaults inside spec.template."""
    tmpl = obj.setdefault("spec", {}).setdefault("template", {})
    tmpl.setdefault("metadata", {})
    pod_spec(tmpl.setdefault("spec", {}))


def job(obj: dict) -> None:
    """SetDefaults_Job."""
    spec = obj.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    template(obj)


def deployment(obj: dict) -> None:
    """SetDefaults_Deployment (apps/v1)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("maxUnavailable", "25%")
        strategy["rollingUpdate"].setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    template(obj)


def replicaset(obj: dict) -> None:
    """SetDefaults_ReplicaSet."""
    obj.setdefault("spec", {}).setdefault("replicas", 1)
    template(obj)


def statefulset(obj: dict) -> None:
    """SetDefaults_StatefulSet."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
    if strategy.get("type") == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
    for claim in spec.get("volumeClaimTemplates") or []:
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
        pvc(claim)
    template(obj)


def service(obj: dict) -> None:
    """SetDefaults_Service (the ClusterIP itself is allocated by the API layer)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))


def namespace(obj: dict) -> None:
    """Namespaces get the `kubernetes` finalizer, phase Active and their name label."""
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")


def pvc(obj: dict) -> None:
    """PersistentVolumeClaim: volumeMode and phase."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("volumeMode", "Filesystem")
    canonical_quantities(spec.get("resources"))
    if "metadata" in obj and obj.get("kind") == "PersistentVolumeClaim" and "status" not in obj:
        obj["status"] = {"phase": "Pending"}


def secret(obj: dict) -> None:
    """Secrets: type Opaque; stringData is write-only and merged into data (base64)."""
    obj.setdefault("type", "Opaque")
    for key, value in (obj.pop("stringData", None) or {}).items():
        obj.setdefault("data", {})[key] = base64.b64encode(str(value).encode()).decode()


def hpa(obj: dict) -> None:
    """autoscaling/v2 HPA: minReplicas 1, CPU 80% when no metrics are given."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 80}}}]


def crd(obj: dict) -> None:
    """CustomResourceDefinition: conversion None, listKind/singular derived."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("conversion", {"strategy": "None"})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("listKind", names["kind"] + "List")
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())


def priority_class(obj: dict) -> None:
    """SetDefaults_PriorityClass."""
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


BY_KIND = {
    "Pod": pod, "Job": job, "Deployment": deployment, "ReplicaSet": replicaset, "StatefulSet": statefulset,
    "Service": service, "Namespace": namespace, "PersistentVolumeClaim": pvc, "Secret": secret,
    "HorizontalPodAutoscaler": hpa, "CustomResourceDefinition": crd, "PriorityClass": priority_class,
}


def apply_defaults(obj: dict) -> None:
    """Default a built-in object in place (custom resources are defaulted from their schema instead)."""
    fn = BY_KIND.get(obj.get("kind", ""))
    if fn:
        fn(obj)
