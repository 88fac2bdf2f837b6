"""Karpenter's CRDs (karpenter.sh/v1): NodePool and NodeClaim, as kubernetes-sigs/karpenter generates them.

Declared as upstream's `karpenter.sh_nodepools.yaml` / `karpenter.sh_nodeclaims.yaml` declare them (the release that
added the `Gte`/`Lte` requirement operators), without descriptions: types, enums, patterns, bounds and defaults, so
undeclared fields are pruned or refused as a real server does. Their CEL rules (`x-kubernetes-validations`) are checked
by `nodepool_rules` / `nodeclaim_rules` with upstream's messages. Provider-specific rules (a cloud provider's own
restricted label domain) and the alpha static-NodePool fields (`replicas`) are not modelled.
"""
from __future__ import annotations

import re

from .errors import FieldError, invalid

GROUP = "karpenter.sh"
QUANTITY = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|"
            r"(\.[0-9]+))))?$")
QUALIFIED_KEY = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
                 r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
CONSOLIDATION_POLICIES = ["WhenEmpty", "WhenEmptyOrUnderutilized"]

_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": QUANTITY,
             "x-kubernetes-int-or-string": True}
_QUANTITY_MAP = {"type": "object", "additionalProperties": _QUANTITY}
_CONDITIONS = {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def _object(properties: dict, required: list | None = None, **extra) -> dict:
    schema = {"type": "object", "properties": properties, **extra}
    if required:
        schema["required"] = required
    return schema


def _taints() -> dict:
    return {"type": "array", "items": _object({
        "effect": {"type": "string", "enum": EFFECTS},
        "key": {"type": "string", "minLength": 1, "pattern": QUALIFIED_KEY},
        "timeAdded": {"type": "string", "format": "date-time"},
        "value": {"type": "string", "pattern": QUALIFIED_KEY},
    }, ["effect", "key"])}


def _requirements() -> dict:
    return {"type": "array", "maxItems": 100, "items": _object({
        "key": {"type": "string", "maxLength": 316, "pattern": QUALIFIED_KEY},
        "minValues": {"type": "integer", "minimum": 1, "maximum": 50},
        "operator": {"type": "string", "enum": OPERATORS},
        "values": {"type": "array", "items": _STRING, "x-kubernetes-list-type": "atomic"},
    }, ["key", "operator"])}


def _node_class_ref() -> dict:
    return _object({"group": {"type": "string", "pattern": r"^[^/]*$"}, "kind": _STRING, "name": _STRING},
                   ["group", "kind", "name"])


def _claim_spec(template: bool) -> dict:
    """NodeClaimSpec (a NodeClaim) or NodeClaimTemplateSpec (a NodePool's template: no resources)."""
    properties = {
        "expireAfter": {"type": "string", "pattern": DURATION_OR_NEVER, "default": "720h"},
        "nodeClassRef": _node_class_ref(),
        "requirements": _requirements(),
        "startupTaints": _taints(),
        "taints": _taints(),
        "terminationGracePeriod": {"type": "string", "pattern": r"^([0-9]+(s|m|h))+$"},
    }
    if not template:
        properties["resources"] = _object({"requests": _QUANTITY_MAP})
    return _object(properties, ["nodeClassRef", "requirements"])


def _disruption() -> dict:
    budget = _object({
        "duration": {"type": "string", "pattern": r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"},
        "nodes": {"type": "string", "pattern": r"^((100|[0-9]{1,2})%|[0-9]+)$", "default": "10%"},
        "reasons": {"type": "array", "items": {"type": "string", "enum": ["Underutilized", "Empty", "Drifted"]}},
        "schedule": {"type": "string", "pattern": (r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|"
                                                   r"((.+)\s(.+)\s(.+)\s(.+)\s(.+))$")},
    }, ["nodes"])
    return _object({
        "budgets": {"type": "array", "maxItems": 50, "items": budget, "default": [{"nodes": "10%"}]},
        "consolidateAfter": {"type": "string", "pattern": DURATION_OR_NEVER},
        "consolidationPolicy": {"type": "string", "enum": CONSOLIDATION_POLICIES,
                                "default": "WhenEmptyOrUnderutilized"},
    }, ["consolidateAfter"], default={"consolidateAfter": "0s"})


def nodepool_schema() -> dict:
    """The openAPIV3Schema of NodePool v1."""
    labels = {"type": "object", "maxProperties": 100,
              "additionalProperties": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE}}
    template = _object({"metadata": _object({"annotations": _STRING_MAP, "labels": labels}),
                        "spec": _claim_spec(template=True)}, ["spec"])
    spec = _object({"disruption": _disruption(), "limits": _QUANTITY_MAP, "template": template,
                    "weight": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 100}}, ["template"])
    status = _object({"conditions": _CONDITIONS, "nodeClassObservedGeneration": {"type": "integer"},
                      "nodes": {"type": "integer", "format": "int64"}, "resources": _QUANTITY_MAP})
    return _object({"apiVersion": _STRING, "kind": _STRING, "metadata": {"type": "object"}, "spec": spec,
                    "status": status}, ["spec"])


def nodeclaim_schema() -> dict:
    """The openAPIV3Schema of NodeClaim v1."""
    status = _object({"allocatable": _QUANTITY_MAP, "capacity": _QUANTITY_MAP, "conditions": _CONDITIONS,
                      "imageID": _STRING, "lastPodEventTime": {"type": "string", "format": "date-time"},
                      "nodeName": _STRING, "providerID": _STRING})
    return _object({"apiVersion": _STRING, "kind": _STRING, "metadata": {"type": "object"},
                    "spec": _claim_spec(template=False), "status": status}, ["spec"])


def _crd(plural: str, kind: str, schema: dict, columns: list) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Cluster",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List",
                               "categories": ["karpenter"]},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": schema}, "additionalPrinterColumns": columns}]}}


def nodepool_crd() -> dict:
    """nodepools.karpenter.sh."""
    return _crd("nodepools", "NodePool", nodepool_schema(), [
        {"name": "NodeClass", "type": "string", "jsonPath": ".spec.template.spec.nodeClassRef.name"},
        {"name": "Nodes", "type": "string", "jsonPath": ".status.resources.nodes"}])


def nodeclaim_crd() -> dict:
    """nodeclaims.karpenter.sh."""
    return _crd("nodeclaims", "NodeClaim", nodeclaim_schema(), [
        {"name": "Type", "type": "string", "jsonPath": ".metadata.labels.node\\.kubernetes\\.io/instance-type"},
        {"name": "Node", "type": "string", "jsonPath": ".status.nodeName"}])


# --- the CEL rules, as upstream words them -----------------------------------------------------------------------

# Well-known keys of restricted domains that a NodePool may still use (the CRD's CEL lists, for labels and for
# requirement keys: the latter also allow node.kubernetes.io/instance-type, which the suffix rule allows anyway).
ALLOWED_KUBERNETES_IO = {"beta.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/region",
                         "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone",
                         "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
                         "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
                         "node.kubernetes.io/windows-build"}


def _domain(key: str) -> str:
    """CEL's key.find("^([^/]+)"): the part before the first '/', or the whole key."""
    match = re.match(r"[^/]+", key)
    return match.group(0) if match else ""


def restricted_label_messages(key: str) -> list[str]:
    """The messages of the label-domain rules a key breaks (NodePool template labels and requirement keys)."""
    domain, messages = _domain(key), []
    if not (key in ALLOWED_KUBERNETES_IO or domain.endswith(("node.kubernetes.io", "node-restriction.kubernetes.io"))
            or not domain.endswith("kubernetes.io")):
        messages.append('label domain "kubernetes.io" is restricted')
    if not (domain.endswith("kops.k8s.io") or not domain.endswith("k8s.io")):
        messages.append('label domain "k8s.io" is restricted')
    if not (key in ("karpenter.sh/capacity-type", "karpenter.sh/nodepool") or not domain.endswith("karpenter.sh")):
        messages.append('label domain "karpenter.sh" is restricted')
    if key == "karpenter.sh/nodepool":
        messages.append('label "karpenter.sh/nodepool" is restricted')
    if key == "kubernetes.io/hostname":
        messages.append('label "kubernetes.io/hostname" is restricted')
    return messages


def _int_value(text) -> bool:
    return isinstance(text, str) and re.fullmatch(r"[+-]?[0-9]+", text) is not None and int(text) >= 0


def requirement_errors(requirements: list, path: str, template: bool) -> list[FieldError]:
    """The requirement list rules (and, on a NodePool, the restricted key domains)."""
    errors = []
    items = [r for r in requirements if isinstance(r, dict)]
    if template:
        for i, req in enumerate(items):
            errors += [invalid(f"{path}[{i}].key", req.get("key"), m) for m in restricted_label_messages(req.get("key") or "")]
    if any(r.get("operator") == "In" and not r.get("values") for r in items):
        errors.append(invalid(path, "array", "requirements with operator 'In' must have a value defined"))
    if any(r.get("operator") in ("Gt", "Lt", "Gte", "Lte")
           and not (len(r.get("values") or []) == 1 and _int_value(r["values"][0])) for r in items):
        errors.append(invalid(path, "array",
                              "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"))
    if any(r.get("operator") == "In" and "minValues" in r and len(r.get("values") or []) < r["minValues"] for r in items):
        errors.append(invalid(path, "array", "requirements with 'minValues' must have at least that many values "
                                             "specified in the 'values' field"))
    return errors


def _ref_errors(ref: dict, old_ref: dict | None, path: str) -> list[FieldError]:
    errors = [invalid(f"{path}.{k}", "", f"{k} may not be empty") for k in ("group", "kind", "name") if ref.get(k) == ""]
    for k in ("group", "kind"):
        if old_ref is not None and ref.get(k) != old_ref.get(k):
            errors.append(invalid(path, "object", f"nodeClassRef.{k} is immutable"))
    return errors


def nodepool_rules(obj: dict, old: dict | None = None) -> list[FieldError]:
    """The NodePool's x-kubernetes-validations."""
    spec = obj.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    errors = []
    seen = set()
    for key in labels:
        for message in restricted_label_messages(key):
            if message not in seen:  # one error per rule: the rule is `self.all(x, ...)` over the whole map
                seen.add(message)
                errors.append(invalid("spec.template.metadata.labels", "object", message))
    tspec = template.get("spec") or {}
    errors += requirement_errors(tspec.get("requirements") or [], "spec.template.spec.requirements", template=True)
    old_ref = ((((old or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef")
    if isinstance(tspec.get("nodeClassRef"), dict):
        errors += _ref_errors(tspec["nodeClassRef"], old_ref, "spec.template.spec.nodeClassRef")
    budgets = (spec.get("disruption") or {}).get("budgets") or []
    if any(("schedule" in b) != ("duration" in b) for b in budgets if isinstance(b, dict)):
        errors.append(invalid("spec.disruption.budgets", "array", "'schedule' must be set with 'duration'"))
    return errors


def nodeclaim_rules(obj: dict, old: dict | None = None) -> list[FieldError]:
    """The NodeClaim's x-kubernetes-validations: an immutable spec, the requirement rules."""
    spec = obj.get("spec") or {}
    if old is not None and spec != old.get("spec"):
        return [invalid("spec", "object", "spec is immutable")]
    errors = requirement_errors(spec.get("requirements") or [], "spec.requirements", template=False)
    if isinstance(spec.get("nodeClassRef"), dict):
        errors += _ref_errors(spec["nodeClassRef"], None, "spec.nodeClassRef")
    return errors


RULE_CHECKS = {f"nodepools.{GROUP}": nodepool_rules, f"nodeclaims.{GROUP}": nodeclaim_rules}
