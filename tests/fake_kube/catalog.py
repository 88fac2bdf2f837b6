"""Well-known CRDs a test may install: the Gateway API HTTPRoute (standard channel).

The schema is the standard channel's `gateway.networking.k8s.io_httproutes.yaml` without descriptions, for the
bundle versions a test asks for: v1.3.0 (the default: the first with `requestMirror.percent`/`fraction` in the
standard channel, GEP-3171) and v1.2.0 (a cluster one release behind, where `requestMirror` has `backendRef` only,
so an apply that sends `percent` fails as it does there). Everything under `spec` is declared as upstream declares
it (types, enums, patterns, bounds, defaults), so unknown fields are refused or pruned as a real server does; the
CEL rules (`x-kubernetes-validations`) of the fields Dockyard writes are checked by `httproute_rule_errors`, with
upstream's messages. `status` stays open (a Gateway controller writes it; tests play that part).
"""
from __future__ import annotations

from .errors import FieldError, invalid

GATEWAY_GROUP = "gateway.networking.k8s.io"
BUNDLE_VERSIONS = ("v1.2.0", "v1.3.0")
DEFAULT_BUNDLE = "v1.3.0"

_GROUP = {"type": "string", "maxLength": 253,
          "pattern": r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}
_KIND = {"type": "string", "minLength": 1, "maxLength": 63, "pattern": r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$"}
_NAME = {"type": "string", "minLength": 1, "maxLength": 253}
_NAMESPACE = {"type": "string", "minLength": 1, "maxLength": 63, "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
_SECTION = {"type": "string", "minLength": 1, "maxLength": 253,
            "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}
_PORT = {"type": "integer", "format": "int32", "minimum": 1, "maximum": 65535}
_PRECISE_HOSTNAME = {"type": "string", "minLength": 1, "maxLength": 253,
                     "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}
_HOSTNAME = {"type": "string", "minLength": 1, "maxLength": 253,
             "pattern": r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}
_HEADER_NAME = {"type": "string", "minLength": 1, "maxLength": 256, "pattern": r"^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$"}
_DURATION = {"type": "string", "pattern": r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"}
FILTER_TYPES = ["RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror", "RequestRedirect", "URLRewrite",
                "ExtensionRef"]
FILTER_FIELDS = {"RequestHeaderModifier": "requestHeaderModifier", "ResponseHeaderModifier": "responseHeaderModifier",
                 "RequestMirror": "requestMirror", "RequestRedirect": "requestRedirect", "URLRewrite": "urlRewrite",
                 "ExtensionRef": "extensionRef"}


def _object(properties: dict, required: list | None = None) -> dict:
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _backend_object_reference() -> dict:
    """BackendObjectReference (a Service by default)."""
    return _object({"group": {**_GROUP, "default": ""}, "kind": {**_KIND, "default": "Service"}, "name": _NAME,
                    "namespace": _NAMESPACE, "port": _PORT}, ["name"])


def _header_filter() -> dict:
    header = _object({"name": _HEADER_NAME, "value": {"type": "string", "minLength": 1, "maxLength": 4096}},
                     ["name", "value"])
    return _object({"set": {"type": "array", "maxItems": 16, "items": header, "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"]},
                    "add": {"type": "array", "maxItems": 16, "items": header, "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"]},
                    "remove": {"type": "array", "maxItems": 16, "items": {"type": "string"},
                               "x-kubernetes-list-type": "set"}})


def _path_modifier() -> dict:
    return _object({"type": {"type": "string", "enum": ["ReplaceFullPath", "ReplacePrefixMatch"]},
                    "replaceFullPath": {"type": "string", "maxLength": 1024},
                    "replacePrefixMatch": {"type": "string", "maxLength": 1024}}, ["type"])


def _request_mirror(bundle: str) -> dict:
    properties = {"backendRef": _backend_object_reference()}
    if bundle >= "v1.3.0":  # GEP-3171 graduated to the standard channel in v1.3.0
        properties["percent"] = {"type": "integer", "format": "int32", "minimum": 0, "maximum": 100}
        properties["fraction"] = _object({"numerator": {"type": "integer", "format": "int32", "minimum": 0},
                                          "denominator": {"type": "integer", "format": "int32", "minimum": 1,
                                                          "default": 100}}, ["numerator"])
    return _object(properties, ["backendRef"])


def _filter(bundle: str) -> dict:
    """HTTPRouteFilter (standard channel: no CORS, no ExternalAuth)."""
    return _object({
        "type": {"type": "string", "enum": FILTER_TYPES},
        "requestHeaderModifier": _header_filter(),
        "responseHeaderModifier": _header_filter(),
        "requestMirror": _request_mirror(bundle),
        "requestRedirect": _object({"scheme": {"type": "string", "enum": ["http", "https"]},
                                    "hostname": _PRECISE_HOSTNAME, "path": _path_modifier(), "port": _PORT,
                                    "statusCode": {"type": "integer", "enum": [301, 302], "default": 302}}),
        "urlRewrite": _object({"hostname": _PRECISE_HOSTNAME, "path": _path_modifier()}),
        "extensionRef": _object({"group": {**_GROUP, "maxLength": 253}, "kind": _KIND, "name": _NAME},
                                ["group", "kind", "name"]),
    }, ["type"])


def _match() -> dict:
    header_match = _object({"type": {"type": "string", "enum": ["Exact", "RegularExpression"], "default": "Exact"},
                            "name": _HEADER_NAME, "value": {"type": "string", "minLength": 1, "maxLength": 4096}},
                           ["name", "value"])
    return _object({
        "path": {**_object({"type": {"type": "string", "enum": ["Exact", "PathPrefix", "RegularExpression"],
                                     "default": "PathPrefix"},
                            "value": {"type": "string", "maxLength": 1024, "default": "/"}}),
                 "default": {"type": "PathPrefix", "value": "/"}},
        "headers": {"type": "array", "maxItems": 16, "items": header_match, "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"]},
        "queryParams": {"type": "array", "maxItems": 16, "items": header_match, "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"]},
        "method": {"type": "string", "enum": ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE",
                                              "PATCH"]},
    })


def _backend_ref(bundle: str) -> dict:
    ref = _backend_object_reference()
    ref["properties"]["weight"] = {"type": "integer", "format": "int32", "minimum": 0, "maximum": 1000000,
                                   "default": 1}
    ref["properties"]["filters"] = {"type": "array", "maxItems": 16, "items": _filter(bundle)}
    return ref


def httproute_schema(bundle: str = DEFAULT_BUNDLE) -> dict:
    """The openAPIV3Schema of HTTPRoute v1 in the standard channel of `bundle`."""
    rule = _object({
        "matches": {"type": "array", "maxItems": 64, "items": _match(),
                    "default": [{"path": {"type": "PathPrefix", "value": "/"}}]},
        "filters": {"type": "array", "maxItems": 16, "items": _filter(bundle)},
        "backendRefs": {"type": "array", "maxItems": 16, "items": _backend_ref(bundle)},
        "timeouts": _object({"request": _DURATION, "backendRequest": _DURATION}),
    })
    parent = _object({"group": {**_GROUP, "default": GATEWAY_GROUP}, "kind": {**_KIND, "default": "Gateway"},
                      "namespace": _NAMESPACE, "name": _NAME, "sectionName": _SECTION, "port": _PORT}, ["name"])
    spec = _object({
        "parentRefs": {"type": "array", "maxItems": 32, "items": parent},
        "hostnames": {"type": "array", "maxItems": 16, "items": _HOSTNAME},
        "rules": {"type": "array", "maxItems": 16, "items": rule,
                  "default": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}]},
    })
    return {"type": "object", "required": ["spec"], "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": spec, "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}


def httproute_crd(bundle: str = DEFAULT_BUNDLE) -> dict:
    """httproutes.gateway.networking.k8s.io: v1 (stored) and v1beta1 served, with the status subresource."""
    if bundle not in BUNDLE_VERSIONS:
        raise ValueError(f"bundle must be one of {BUNDLE_VERSIONS}")
    schema = httproute_schema(bundle)
    versions = [{"name": name, "served": True, "storage": name == "v1", "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": schema},
                 "additionalPrinterColumns": [{"name": "Hostnames", "type": "string", "jsonPath": ".spec.hostnames"},
                                              {"name": "Age", "type": "date",
                                               "jsonPath": ".metadata.creationTimestamp"}]}
                for name in ("v1", "v1beta1")]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"httproutes.{GATEWAY_GROUP}",
                         "annotations": {f"{GATEWAY_GROUP}/bundle-version": bundle,
                                         f"{GATEWAY_GROUP}/channel": "standard"}},
            "spec": {"group": GATEWAY_GROUP, "scope": "Namespaced",
                     "names": {"plural": "httproutes", "singular": "httproute", "kind": "HTTPRoute",
                               "listKind": "HTTPRouteList", "categories": ["gateway-api"]},
                     "versions": versions}}


# --- the CEL rules (x-kubernetes-validations) of the fields Dockyard writes, as upstream words them ---------------

SERVICE_PORT = "Must have port for Service reference"
MIRROR_ONE_OF = "Only one of percent or fraction may be specified in HTTPRequestMirrorFilter"
FRACTION = "numerator must be less than or equal to denominator"
RULES_ON_PATH = [
    (lambda v: v.startswith("/"), "value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"),
    (lambda v: "//" not in v, "must not contain '//' when type one of ['Exact', 'PathPrefix']"),
    (lambda v: "/./" not in v, "must not contain '/./' when type one of ['Exact', 'PathPrefix']"),
    (lambda v: "/../" not in v, "must not contain '/../' when type one of ['Exact', 'PathPrefix']"),
    (lambda v: "%2f" not in v, "must not contain '%2f' when type one of ['Exact', 'PathPrefix']"),
    (lambda v: "%2F" not in v, "must not contain '%2F' when type one of ['Exact', 'PathPrefix']"),
    (lambda v: "#" not in v, "must not contain '#' when type one of ['Exact', 'PathPrefix']"),
    (lambda v: not v.endswith("/.."), "must not end with '/..' when type one of ['Exact', 'PathPrefix']"),
    (lambda v: not v.endswith("/."), "must not end with '/.' when type one of ['Exact', 'PathPrefix']"),
]


def _backend_port(ref: dict, path: str) -> list[FieldError]:
    service = ref.get("group", "") == "" and ref.get("kind", "Service") == "Service"
    return [invalid(path, "object", SERVICE_PORT)] if service and "port" not in ref else []


def _filter_rules(item: dict, path: str) -> list[FieldError]:
    errors = []
    kind = item.get("type")
    for other, field in FILTER_FIELDS.items():
        if kind == other and field not in item:
            errors.append(invalid(path, "object", f"filter.{field} must be specified for {other} filter.type"))
        elif kind != other and field in item:
            errors.append(invalid(path, "object", f"filter.{field} must be nil if the filter.type is not {other}"))
    mirror = item.get("requestMirror")
    if isinstance(mirror, dict):
        errors += _backend_port(mirror.get("backendRef") or {}, f"{path}.requestMirror.backendRef")
        if "percent" in mirror and "fraction" in mirror:
            errors.append(invalid(f"{path}.requestMirror", "object", MIRROR_ONE_OF))
        fraction = mirror.get("fraction")
        if isinstance(fraction, dict) and fraction.get("numerator", 0) > fraction.get("denominator", 100):
            errors.append(invalid(f"{path}.requestMirror.fraction", "object", FRACTION))
    return errors


def httproute_rule_errors(obj: dict) -> list[FieldError]:
    """The x-kubernetes-validations of HTTPRoute v1 that concern paths, filters and backend references."""
    errors = []
    for r, rule in enumerate((obj.get("spec") or {}).get("rules") or []):
        base = f"spec.rules[{r}]"
        for m, match in enumerate(rule.get("matches") or []):
            path = match.get("path") or {}
            if path.get("type", "PathPrefix") in ("Exact", "PathPrefix"):
                value = path.get("value", "/")
                errors += [invalid(f"{base}.matches[{m}].path", "object", message)
                           for check, message in RULES_ON_PATH if not check(value)]
        for f, item in enumerate(rule.get("filters") or []):
            errors += _filter_rules(item, f"{base}.filters[{f}]")
        for b, ref in enumerate(rule.get("backendRefs") or []):
            errors += _backend_port(ref, f"{base}.backendRefs[{b}]")
            for f, item in enumerate(ref.get("filters") or []):
                errors += _filter_rules(item, f"{base}.backendRefs[{b}].filters[{f}]")
        if any(f.get("type") == "RequestRedirect" for f in rule.get("filters") or []) and rule.get("backendRefs"):
            errors.append(invalid(base, "object", "RequestRedirect filter must not be used together with backendRefs"))
    return errors


def _httproute_rules(obj: dict, old: dict | None = None) -> list[FieldError]:
    return httproute_rule_errors(obj)


def _all_rule_checks() -> dict:
    """CRD name -> fn(obj, old) giving the CEL rule errors the fake knows (every catalog module's)."""
    from .catalog_cluster_api import RULE_CHECKS as CLUSTER_API
    from .catalog_karpenter import RULE_CHECKS as KARPENTER
    return {f"httproutes.{GATEWAY_GROUP}": _httproute_rules, **KARPENTER, **CLUSTER_API}


RULE_CHECKS = _all_rule_checks()


def mutate_custom(crd: str | None, obj: dict, old: dict | None) -> None:
    """Run the defaulting webhook a CRD's controller installs (Cluster API's), if the fake plays one."""
    from .catalog_cluster_api import MUTATIONS
    if crd in MUTATIONS:
        MUTATIONS[crd](obj, old)
