"""Cluster API's MachineDeployment CRD (cluster.x-k8s.io) as Cluster API v1.14 installs it, and its webhooks.

v1.14 stores `v1beta2` (the storage version since v1.11) and still serves `v1beta1` through a conversion webhook. The
fake converts nothing, so it serves `v1beta2` only: a client pinned to v1beta1 gets a 404 here, never a wrong shape.
The schema declares what `api/core/v1beta2/machinedeployment_types.go` declares for the fields a client writes
(clusterName, replicas, selector, template.metadata, template.spec.{clusterName, version, bootstrap, infrastructureRef,
...}, rollout, paused), with upstream's bounds and patterns; `status` is open (the fake's controllers write it).
The MachineDeployment webhooks are played by `mutate` (defaulting: replicas from the autoscaler's min/max annotations,
the cluster-name label, a `v` on the version) and `machinedeployment_rules` (validation), whose errors come back as
the fake's 422 without the `admission webhook "..." denied the request:` prefix a real webhook adds.
"""
from __future__ import annotations

import re

from .errors import FieldError, invalid
from .selectors import labels_match, selector_terms

GROUP = "cluster.x-k8s.io"
VERSION = "v1beta2"
CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name"
DEPLOYMENT_NAME_LABEL = "cluster.x-k8s.io/deployment-name"
MIN_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
SEMVER = re.compile(r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")

_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def _object(properties: dict, required: list | None = None, **extra) -> dict:
    schema = {"type": "object", "properties": properties, **extra}
    if required:
        schema["required"] = required
    return schema


def _ref() -> dict:
    """ContractVersionedObjectReference."""
    return _object({"apiGroup": {"type": "string", "minLength": 1, "maxLength": 253, "pattern": _SUBDOMAIN},
                    "kind": {"type": "string", "minLength": 1, "maxLength": 63,
                             "pattern": r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$"},
                    "name": {"type": "string", "minLength": 1, "maxLength": 253, "pattern": _SUBDOMAIN}},
                   ["apiGroup", "kind", "name"])


def _selector() -> dict:
    expression = _object({"key": _STRING, "operator": _STRING, "values": {"type": "array", "items": _STRING}},
                         ["key", "operator"])
    return _object({"matchExpressions": {"type": "array", "items": expression}, "matchLabels": _STRING_MAP},
                   **{"x-kubernetes-map-type": "atomic"})


def _taint() -> dict:
    return _object({"key": {"type": "string", "minLength": 1, "maxLength": 317},
                    "value": {"type": "string", "minLength": 1, "maxLength": 63},
                    "effect": {"type": "string", "enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
                    "propagation": {"type": "string", "enum": ["Always", "OnInitialization"]}},
                   ["effect", "key", "propagation"])


def _machine_spec() -> dict:
    seconds = {"type": "integer", "format": "int32", "minimum": 0}
    return _object({
        "bootstrap": _object({"configRef": _ref(), "dataSecretName": {"type": "string", "minLength": 0,
                                                                       "maxLength": 253}}, minProperties=1),
        "clusterName": {"type": "string", "minLength": 1, "maxLength": 63},
        "deletion": _object({"nodeDrainTimeoutSeconds": seconds, "nodeVolumeDetachTimeoutSeconds": seconds,
                             "nodeDeletionTimeoutSeconds": seconds}, minProperties=1),
        "failureDomain": {"type": "string", "minLength": 1, "maxLength": 256},
        "infrastructureRef": _ref(),
        "minReadySeconds": {"type": "integer", "format": "int32"},
        "providerID": {"type": "string", "minLength": 1, "maxLength": 512},
        "readinessGates": {"type": "array", "maxItems": 32, "items": _object(
            {"conditionType": {"type": "string", "minLength": 1, "maxLength": 316},
             "polarity": {"type": "string", "enum": ["Positive", "Negative"]}}, ["conditionType"])},
        "taints": {"type": "array", "maxItems": 64, "items": _taint()},
        "version": {"type": "string", "minLength": 1, "maxLength": 256},
    }, ["bootstrap", "clusterName", "infrastructureRef"])


def machinedeployment_schema() -> dict:
    """The openAPIV3Schema of MachineDeployment v1beta2 (the parts a client writes; status open)."""
    template = _object({"metadata": _object({"labels": _STRING_MAP, "annotations": _STRING_MAP}),
                        "spec": _machine_spec()}, ["spec"])
    rollout = _object({
        "after": {"type": "string", "format": "date-time"},
        "strategy": _object({"type": {"type": "string", "enum": ["RollingUpdate", "OnDelete"]},
                             "rollingUpdate": _object({"maxSurge": {"x-kubernetes-int-or-string": True},
                                                       "maxUnavailable": {"x-kubernetes-int-or-string": True}},
                                                      minProperties=1)}, ["type"])}, minProperties=1)
    spec = _object({
        "clusterName": {"type": "string", "minLength": 1, "maxLength": 63},
        "deletion": _object({"order": {"type": "string", "enum": ["Random", "Newest", "Oldest"]}}, minProperties=1),
        "machineNaming": _object({"template": {"type": "string", "minLength": 1, "maxLength": 256}}, minProperties=1),
        "paused": {"type": "boolean"},
        "remediation": _object({"maxInFlight": {"x-kubernetes-int-or-string": True}}, minProperties=1),
        "replicas": {"type": "integer", "format": "int32"},
        "rollout": rollout,
        "selector": _selector(),
        "template": template,
    }, ["clusterName", "selector", "template"])
    return _object({"apiVersion": _STRING, "kind": _STRING, "metadata": {"type": "object"}, "spec": spec,
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}, ["spec"])


def machinedeployment_crd() -> dict:
    """machinedeployments.cluster.x-k8s.io (v1beta2 stored and served; scale and status subresources)."""
    version = {"name": VERSION, "served": True, "storage": True,
               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                        "statusReplicasPath": ".status.replicas",
                                                        "labelSelectorPath": ".status.selector"}},
               "schema": {"openAPIV3Schema": machinedeployment_schema()},
               "additionalPrinterColumns": [
                   {"name": "Cluster", "type": "string", "jsonPath": ".spec.clusterName"},
                   {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
                   {"name": "Current", "type": "integer", "jsonPath": ".status.replicas"},
                   {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"}]}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"machinedeployments.{GROUP}", "labels": {"cluster.x-k8s.io/provider": "cluster-api",
                                                                            "cluster.x-k8s.io/v1beta2": VERSION}},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": "machinedeployments", "singular": "machinedeployment",
                               "kind": "MachineDeployment", "listKind": "MachineDeploymentList",
                               "shortNames": ["md"], "categories": ["cluster-api"]},
                     "versions": [version]}}


# --- the MachineDeployment webhooks ------------------------------------------------------------------------------

def _size(annotations: dict, key: str) -> int | None:
    value = annotations.get(key)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def default_replicas(new: dict, old: dict | None) -> int:
    """The defaulting webhook's replicas when unset: the autoscaler's min size (bounded by min/max against the old
    value), else 1."""
    annotations = new["metadata"].get("annotations") or {}
    low, high = _size(annotations, MIN_SIZE), _size(annotations, MAX_SIZE)
    if low is None or high is None:
        return 1
    previous = ((old or {}).get("spec") or {}).get("replicas")
    if previous is None:
        return low
    return min(max(previous, low), high)


def mutate(obj: dict, old: dict | None) -> None:
    """The MachineDeployment defaulting webhook (the parts that matter here)."""
    spec = obj.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = default_replicas(obj, old)
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    selector = spec.setdefault("selector", {})
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        selector.setdefault("matchLabels", {})[DEPLOYMENT_NAME_LABEL] = obj["metadata"]["name"]
        labels[DEPLOYMENT_NAME_LABEL] = obj["metadata"]["name"]
    if spec.get("clusterName"):
        selector.setdefault("matchLabels", {})[CLUSTER_NAME_LABEL] = spec["clusterName"]
        labels[CLUSTER_NAME_LABEL] = spec["clusterName"]
    machine = template.get("spec") or {}
    if machine.get("version") and not str(machine["version"]).startswith("v"):
        machine["version"] = "v" + machine["version"]


def machinedeployment_rules(obj: dict, old: dict | None = None) -> list[FieldError]:
    """The MachineDeployment validating webhook: selector vs template labels, semver, autoscaler sizes."""
    spec = obj.get("spec") or {}
    errors = []
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    terms = selector_terms(spec.get("selector"))
    if terms is not None and not labels_match(terms, labels):
        wanted = ",".join(f"{k}={v}" for k, v in sorted(((spec.get("selector") or {}).get("matchLabels") or {}).items()))
        errors.append(invalid("spec.template.metadata.labels", labels, f'must match spec.selector "{wanted}"'))
    version = ((spec.get("template") or {}).get("spec") or {}).get("version")
    if version and not SEMVER.fullmatch(version):
        errors.append(invalid("spec.template.spec.version", version, "must be a valid semantic version"))
    annotations = obj.get("metadata", {}).get("annotations") or {}
    for key in (MIN_SIZE, MAX_SIZE):
        if key in annotations and _size(annotations, key) is None:
            errors.append(invalid(f"metadata.annotations[{key}]", annotations[key], "must be a valid integer"))
    return errors


RULE_CHECKS = {f"machinedeployments.{GROUP}": machinedeployment_rules}
MUTATIONS = {f"machinedeployments.{GROUP}": mutate}
