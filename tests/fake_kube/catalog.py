"""Well-known CRDs a test may install: the Gateway API HTTPRoute (standard channel, trimmed schema)."""
from __future__ import annotations

_PARENT_REF = {"type": "object", "required": ["name"], "properties": {
    "group": {"type": "string", "maxLength": 253}, "kind": {"type": "string", "maxLength": 63},
    "namespace": {"type": "string", "maxLength": 63}, "name": {"type": "string", "minLength": 1, "maxLength": 253},
    "sectionName": {"type": "string", "maxLength": 253}, "port": {"type": "integer", "minimum": 1, "maximum": 65535}}}
_BACKEND_REF = {"type": "object", "required": ["name"], "properties": {
    "group": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string", "minLength": 1},
    "namespace": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "weight": {"type": "integer", "minimum": 0, "maximum": 1000000, "default": 1},
    "filters": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
_RULE = {"type": "object", "properties": {
    "name": {"type": "string"},
    "matches": {"type": "array", "maxItems": 64, "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    "filters": {"type": "array", "maxItems": 16, "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    "backendRefs": {"type": "array", "maxItems": 16, "items": _BACKEND_REF},
    "timeouts": {"type": "object", "properties": {"request": {"type": "string"}, "backendRequest": {"type": "string"}}}}}


def httproute_crd() -> dict:
    """httproutes.gateway.networking.k8s.io (v1 served and stored), with status subresource."""
    schema = {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {
            "parentRefs": {"type": "array", "maxItems": 32, "items": _PARENT_REF},
            "hostnames": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 253}},
            "rules": {"type": "array", "maxItems": 16, "items": _RULE}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "httproutes.gateway.networking.k8s.io",
                         "annotations": {"gateway.networking.k8s.io/bundle-version": "v1.2.0",
                                         "gateway.networking.k8s.io/channel": "standard"}},
            "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
                     "names": {"plural": "httproutes", "singular": "httproute", "kind": "HTTPRoute",
                               "listKind": "HTTPRouteList", "categories": ["gateway-api"]},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"status": {}}, "schema": {"openAPIV3Schema": schema}}]}}
