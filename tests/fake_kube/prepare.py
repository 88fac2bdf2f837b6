"""What the registry strategies do before validation: decoding checks, defaults, generated fields."""
from __future__ import annotations

import itertools
import random
import string

from . import defaults
from .catalog import mutate_custom
from .crds import apply_schema_defaults, prune
from .errors import ApiError, bad_request, required
from .quantity import QuantityError, canonical
from .resources import ResourceType
from .schemas import SchemaNode, builtin_node, decode_problems, strip_unknown

NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # what generateName appends (no vowels, no ambiguous digits)
_service_ips = itertools.count(10)
_node_ports = itertools.count(30000)


def generated_name(prefix: str, rng: random.Random) -> str:
    """generateName + 5 random characters."""
    return prefix + "".join(rng.choice(NAME_CHARS) for _ in range(5))


def schema_node(rt: ResourceType) -> SchemaNode:
    """The merge/ownership schema of a type (CRD schema, or the built-in OpenAPI)."""
    if rt.is_custom:
        return SchemaNode(rt.schema or {}, resolve=lambda s: s)
    return builtin_node(rt.api_version, rt.kind)


def _cannot_handle(rt: ResourceType, detail: str) -> ApiError:
    return bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {detail}')


def canonicalize_quantities(value, node: SchemaNode | None, rt: ResourceType | None):
    """Parse every Quantity field and store it in canonical form; one that does not parse is a 400 (decoding), or
    the QuantityError itself without `rt`."""
    if node is None:
        return value
    if node.is_quantity and value is not None:
        try:
            return canonical(value)
        except QuantityError as error:
            if rt is None:
                raise
            raise _cannot_handle(rt, str(error)) from None
    if isinstance(value, dict):
        for key in list(value):
            value[key] = canonicalize_quantities(value[key], node.child(key), rt)
    elif isinstance(value, list):
        item = node.items()
        for i, sub in enumerate(value):
            value[i] = canonicalize_quantities(sub, item, rt)
    return value


def strip_nulls(value):
    """Go's decoder treats null as absent."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value]
    return value


def decode(obj: dict, rt: ResourceType, validation: str, warnings: list[str]) -> tuple[dict, list]:
    """Check types and unknown fields like the decoder (400 / warning / Strict 400); returns (obj, required errors)."""
    if rt.is_custom:
        dropped = prune(obj, rt.schema or {})
        _unknown(dropped, rt, validation, warnings)
        apply_schema_defaults(obj, rt.schema or {})
        return obj, []
    obj = strip_nulls(obj)
    unknown, types, missing = decode_problems(obj)
    if types:
        path, actual = types[0]
        raise _cannot_handle(rt, f"json: cannot unmarshal {actual} into Go struct field {rt.kind}.{path} of type "
                                 f"{'quantity' if 'resources' in path else 'the declared type'}")
    _unknown(unknown, rt, validation, warnings)
    strip_unknown(obj, unknown)
    node = builtin_node(rt.api_version, rt.kind)
    canonicalize_quantities(obj, node, rt)
    status = obj.pop("status", None)  # (controllers write status; what they write is what they mean)
    drop_empty(obj, node)
    if status is not None:
        obj["status"] = status
    return obj, [required(p) for p in missing if not p.startswith("metadata")]


def drop_empty(value, node: SchemaNode | None) -> None:
    """Go's omitempty on the way back: empty lists and maps of optional fields are not stored (`env: []` reads back
    without `env`); empty structs stay (`emptyDir: {}`)."""
    if node is None:
        return
    if isinstance(value, dict):
        needed = set(node.schema.get("required") or [])
        for key in list(value):
            child = node.child(key)
            drop_empty(value[key], child)
            if key not in needed and _empty_collection(value[key], child):
                del value[key]
    elif isinstance(value, list):
        for item in value:
            drop_empty(item, node.items())


def _empty_collection(value, node: SchemaNode | None) -> bool:
    if value == []:
        return True
    is_map = node is not None and "additionalProperties" in node.schema and not node.schema.get("properties")
    return value == {} and is_map


def _unknown(paths: list[str], rt: ResourceType, validation: str, warnings: list[str]) -> None:
    if not paths or validation == "Ignore":
        return
    if validation == "Strict":
        detail = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)
        raise _cannot_handle(rt, detail)
    warnings += [f'unknown field "{p}"' for p in paths]


def prepare_create(obj: dict, rt: ResourceType) -> None:
    """Defaults and generated fields of a new object (job selectors, service IPs)."""
    if rt.is_custom:
        mutate_custom(rt.crd, obj, None)
        return
    defaults.apply_defaults(obj)
    if rt.kind == "Job":
        _job_selector(obj)
    if rt.kind == "Service":
        _service_addresses(obj, None)


def prepare_update(new: dict, old: dict, rt: ResourceType) -> None:
    """Defaults and carried-over allocations of an updated object."""
    if rt.is_custom:
        mutate_custom(rt.crd, new, old)
        return
    defaults.apply_defaults(new)
    if rt.kind == "Service":
        _service_addresses(new, old)
    if rt.kind == "Namespace":
        new["spec"] = old.get("spec", new.get("spec"))


def _job_selector(obj: dict) -> None:
    spec, meta = obj["spec"], obj["metadata"]
    if spec.get("manualSelector"):
        return
    labels = spec["template"]["metadata"].setdefault("labels", {})
    for key in ("batch.kubernetes.io/controller-uid", "controller-uid"):
        labels[key] = meta["uid"]
    for key in ("batch.kubernetes.io/job-name", "job-name"):
        labels[key] = meta["name"]
    selector = spec.setdefault("selector", {})
    selector.setdefault("matchLabels", {}).setdefault("batch.kubernetes.io/controller-uid", meta["uid"])


def _service_addresses(obj: dict, old: dict | None) -> None:
    spec, old_spec = obj["spec"], (old or {}).get("spec") or {}
    if spec["type"] == "ExternalName":
        return
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if key not in spec and key in old_spec:
            spec[key] = old_spec[key]
    if not spec.get("clusterIP"):
        n = next(_service_ips)
        spec["clusterIP"] = f"10.96.{n // 250}.{n % 250 + 1}"
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    if spec["clusterIP"] != "None":
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    old_ports = {(p.get("port"), p.get("protocol")): p.get("nodePort") for p in old_spec.get("ports") or []}
    for port in spec.get("ports") or []:
        if spec["type"] in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
            port["nodePort"] = old_ports.get((port.get("port"), port.get("protocol"))) or next(_node_ports)


def random_uid(rng: random.Random) -> str:
    """A UUID-shaped uid from the server's seeded generator."""
    hexd = "".join(rng.choice(string.hexdigits[:16]) for _ in range(32))
    return f"{hexd[:8]}-{hexd[8:12]}-4{hexd[13:16]}-{hexd[16:20]}-{hexd[20:]}"
