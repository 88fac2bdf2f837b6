"""CustomResourceDefinitions: validating CRDs, the types they serve, and enforcing their schemas on objects."""
from __future__ import annotations

import functools
import json

import jsonschema

from .errors import FieldError, invalid, not_supported, required
from .resources import ResourceType
from .store import clone
from .validation.meta import dns1035_label, dns_label, dns_subdomain

TYPE_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number",
              type(None): "null"}


def validate_crd(obj: dict) -> list[FieldError]:
    """What the apiextensions server checks on a CRD (the commonly hit parts)."""
    spec, meta = obj.get("spec") or {}, obj.get("metadata") or {}
    names, group = spec.get("names") or {}, spec.get("group") or ""
    errors = []
    if not group:
        errors.append(required("spec.group"))
    elif "." not in group:
        errors.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    else:
        errors += [invalid("spec.group", group, m) for m in dns_subdomain(group)]
    plural = names.get("plural") or ""
    if not plural:
        errors.append(required("spec.names.plural"))
    else:
        errors += [invalid("spec.names.plural", plural, m) for m in dns_label(plural)]
    if not names.get("kind"):
        errors.append(required("spec.names.kind"))
    if meta.get("name") != f"{plural}.{group}":
        errors.append(invalid("metadata.name", meta.get("name"), 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Cluster", "Namespaced"):
        errors.append(not_supported("spec.scope", spec.get("scope"), ["Cluster", "Namespaced"]))
    return errors + _versions(spec.get("versions") or [])


def _versions(versions: list) -> list[FieldError]:
    errors = []
    if not versions:
        return [invalid("spec.versions", versions, "must have exactly one version marked as storage version")]
    if sum(bool(v.get("storage")) for v in versions) != 1:
        errors.append(invalid("spec.versions", [v.get("name") for v in versions],
                              "must have exactly one version marked as storage version"))
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        errors += [invalid(f"{path}.name", version.get("name"), m) for m in dns1035_label(version.get("name") or "")]
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            errors.append(required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
        else:
            errors += _structural(schema, f"{path}.schema.openAPIV3Schema", root=True)
    return errors


def _structural(schema: dict, path: str, root: bool = False) -> list[FieldError]:
    """The structural-schema rules: every specified field has a type, the root is an object."""
    errors = []
    untyped_ok = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    if not schema.get("type") and not untyped_ok:
        detail = "must not be empty at the root" if root else "must not be empty for specified object fields"
        errors.append(required(f"{path}.type", detail))
    elif root and schema.get("type") != "object":
        errors.append(invalid(f"{path}.type", schema.get("type"), "must be object at the root"))
    if schema.get("properties") and isinstance(schema.get("additionalProperties"), (dict, bool)) \
            and schema.get("additionalProperties") is not True:
        errors.append(invalid(f"{path}.additionalProperties", schema["additionalProperties"],
                              "additionalProperties and properties are mutual exclusive"))
    for key, sub in (schema.get("properties") or {}).items():
        if root and key == "metadata" and set(sub.get("properties") or {}) - {"name", "generateName"}:
            errors.append(FieldError(f"{path}.properties[metadata]", "Forbidden", detail=(
                "must not specify anything other than name and generateName, but metadata is implicitly specified")))
            continue
        errors += _structural(sub, f"{path}.properties[{key}]")
    if isinstance(schema.get("items"), dict):
        errors += _structural(schema["items"], f"{path}.items")
    if isinstance(schema.get("additionalProperties"), dict):
        errors += _structural(schema["additionalProperties"], f"{path}.additionalProperties")
    return errors


def served_types(crd: dict) -> list[ResourceType]:
    """One ResourceType per served version of an (Established) CRD."""
    spec = crd["spec"]
    names = spec["names"]
    types = []
    for version in spec.get("versions") or []:
        if not version.get("served"):
            continue
        subresources = version.get("subresources") or {}
        types.append(ResourceType(
            group=spec["group"], version=version["name"], plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(), kind=names["kind"],
            namespaced=spec["scope"] == "Namespaced", short_names=tuple(names.get("shortNames") or ()),
            subresources=tuple(k for k in ("status", "scale") if k in subresources),
            categories=tuple(names.get("categories") or ()), crd=crd["metadata"]["name"],
            schema=(version.get("schema") or {}).get("openAPIV3Schema") or {}))
    return types


# --- enforcing a schema on custom objects -------------------------------------------------------

def to_jsonschema(schema: dict) -> dict:
    """Convert an OpenAPI v3 structural schema to JSON Schema (nullable, int-or-string, exclusive bounds)."""
    out = {k: schema[k] for k in ("type", "required", "enum", "pattern", "minimum", "maximum", "minLength",
                                  "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties",
                                  "maxProperties", "multipleOf") if k in schema}
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if schema.get(exclusive) is True and bound in out:
            out[exclusive] = out.pop(bound)
    if "properties" in schema:
        out["properties"] = {k: to_jsonschema(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = to_jsonschema(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = to_jsonschema(schema["additionalProperties"])
    for combinator in ("allOf", "anyOf", "oneOf"):
        if combinator in schema:
            out.setdefault("allOf", []).append({combinator: [to_jsonschema(s) for s in schema[combinator]]})
    if "not" in schema:
        out["not"] = to_jsonschema(schema["not"])
    return out


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str):
    return jsonschema.Draft7Validator(to_jsonschema(json.loads(schema_json)))


def _path(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def schema_errors(obj: dict, schema: dict) -> list[FieldError]:
    """Field errors of a custom object against its version's schema, worded like the real server."""
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    validator = _validator(json.dumps({**schema, "properties": {
        k: v for k, v in (schema.get("properties") or {}).items() if k not in ("apiVersion", "kind", "metadata")}},
        sort_keys=True))
    unique = {}
    for error in validator.iter_errors(body):
        for field_error in _field_error(error):
            unique.setdefault(str(field_error), field_error)
    return sorted(unique.values(), key=lambda e: e.field)


def _field_error(error: jsonschema.ValidationError) -> list[FieldError]:
    path, value, rule = _path(error.absolute_path), error.instance, error.validator_value
    kind = error.validator
    if kind == "required":
        return [required(_path(list(error.absolute_path) + [k])) for k in rule if k not in value]
    if kind in ("type", "anyOf") and (kind == "type" or _is_int_or_string(rule)):
        if kind == "anyOf":
            expected = "integer,string"
        else:
            expected = ",".join(r for r in rule if r != "null") if isinstance(rule, list) else rule
        actual = TYPE_NAMES.get(type(value), "unknown")
        return [invalid(path, actual, f'{path} in body must be of type {expected}: "{actual}"')]
    if kind == "enum":
        return [not_supported(path, value, [json.dumps(v).strip('"') for v in rule])]
    messages = {
        "pattern": f"{path} in body should match '{rule}'",
        "minimum": f"{path} in body should be greater than or equal to {rule}",
        "exclusiveMinimum": f"{path} in body should be greater than {rule}",
        "maximum": f"{path} in body should be less than or equal to {rule}",
        "exclusiveMaximum": f"{path} in body should be less than {rule}",
        "minLength": f"{path} in body should be at least {rule} chars long",
        "minItems": f"{path} in body should have at least {rule} items",
        "minProperties": f"{path} in body should have at least {rule} properties",
        "multipleOf": f"{path} in body should be a multiple of {rule}",
    }
    if kind == "maxLength":
        return [FieldError(path, "TooLong", detail=f"may not be more than {rule} bytes")]
    if kind in ("maxItems", "maxProperties"):
        return [FieldError(path, "TooMany", len(value), f"must have at most {rule} items")]
    if kind == "uniqueItems":
        return [FieldError(path, "Duplicate", value)]
    return [invalid(path, value, messages.get(kind, error.message))]


def _is_int_or_string(rule) -> bool:
    return isinstance(rule, list) and {json.dumps(r, sort_keys=True) for r in rule} == {
        '{"type": "integer"}', '{"type": "string"}'}


def prune(obj, schema: dict | None, path: str = "", dropped: list | None = None, root: bool = True):
    """Drop fields the schema does not declare (unless preserved) and nulls it does not allow; returns dropped paths."""
    dropped = [] if dropped is None else dropped
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return dropped
    if isinstance(obj, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key in list(obj):
            if root and key in ("apiVersion", "kind", "metadata"):
                continue
            sub = (props or {}).get(key) if props is not None and key in (props or {}) else (
                extra if isinstance(extra, dict) else None)
            child = f"{path}.{key}" if path else key
            if sub is None and not schema.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
                obj.pop(key)
                dropped.append(child)
            elif obj[key] is None and sub is not None and not sub.get("nullable"):
                obj.pop(key)
            elif sub is not None:
                prune(obj[key], sub, child, dropped, root=False)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            prune(item, schema["items"], f"{path}[{i}]", dropped, root=False)
    return dropped


def apply_schema_defaults(obj, schema: dict | None) -> None:
    """Set `default` values of missing fields, recursively (structural-schema defaulting)."""
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in obj and "default" in sub:
                obj[key] = clone(sub["default"])
            if key in obj:
                apply_schema_defaults(obj[key], sub)
        if isinstance(schema.get("additionalProperties"), dict):
            for key, value in obj.items():
                if key not in (schema.get("properties") or {}):
                    apply_schema_defaults(value, schema["additionalProperties"])
    elif isinstance(obj, list):
        for item in obj:
            apply_schema_defaults(item, schema.get("items"))


def typed_problems(obj, schema: dict | None, path: str = "", root: bool = True) -> list[tuple[str, str]]:
    """(path, JSON type) of scalars of the wrong kind, as structured-merge-diff finds them when an apply is typed:
    a string where the schema says integer/number, a number where it says string."""
    if not isinstance(schema, dict) or schema.get("x-kubernetes-int-or-string"):
        return []
    kind = schema.get("type")
    if kind in ("integer", "number") and isinstance(obj, str):
        return [(path, "string")]
    if kind == "string" and isinstance(obj, int | float) and not isinstance(obj, bool):
        return [(path, "number")]
    problems = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if root and key in ("apiVersion", "kind", "metadata"):
                continue
            sub = (schema.get("properties") or {}).get(key, schema.get("additionalProperties"))
            problems += typed_problems(value, sub, f"{path}.{key}" if path else key, root=False)
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            problems += typed_problems(item, schema.get("items"), f"{path}[{i}]", root=False)
    return problems
