"""Built-in kinds' OpenAPI schemas (shipped by kubernetes-validate): decode checks and list/merge semantics."""
from __future__ import annotations

import functools
import json
import re
from importlib import resources as importlib_resources

import jsonschema
from referencing import Registry, Resource

SCHEMA_VERSION = "v1.36.0-local-strict"
JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def _schema_dir():
    return importlib_resources.files("kubernetes_validate") / "kubernetes-json-schema" / SCHEMA_VERSION


@functools.lru_cache(maxsize=1)
def _definitions() -> dict:
    return json.loads((_schema_dir() / "_definitions.json").read_text())


@functools.cache
def root_schema(api_version: str, kind: str) -> dict | None:
    """The strict JSON schema of a built-in kind, or None."""
    prefix = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _schema_dir() / f"{kind.lower()}-{prefix}.json"
    return json.loads(path.read_text()) if path.is_file() else None


@functools.cache
def _validator(api_version: str, kind: str):
    schema = root_schema(api_version, kind)
    if schema is None:
        return None
    defs = _definitions()
    registry = Registry().with_resources([(defs["$id"], Resource.from_contents(defs)),
                                          (schema["$id"], Resource.from_contents(schema))])
    return jsonschema.Draft202012Validator(schema, registry=registry)


def field_path(parts) -> str:
    """`spec.template.spec.containers[0].image` from a list of keys and indexes."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def decode_problems(obj: dict) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """(unknown field paths, (path, type problem) pairs, missing required paths) of a built-in object."""
    validator = _validator(obj.get("apiVersion", ""), obj.get("kind", ""))
    unknown, types, missing = [], [], []
    if validator is None:
        return unknown, types, missing
    for error in validator.iter_errors(obj):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = set(error.schema.get("properties") or {})
            unknown += [field_path(path + [key]) for key in error.instance if key not in known]
        elif error.validator == "required":
            missing += [field_path(path + [key]) for key in error.validator_value if key not in error.instance]
        elif error.validator in ("type", "oneOf", "anyOf"):
            types.append((field_path(path), JSON_TYPES.get(type(error.instance), "value")))
    return sorted(set(unknown)), types, missing


def strip_unknown(obj: dict, paths: list[str]) -> None:
    """Drop unknown fields in place (what the decoder does with fieldValidation=Ignore/Warn)."""
    for path in paths:
        parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
        target = obj
        for part in parts[:-1]:
            target = target[int(part[1:-1])] if part.startswith("[") else target.get(part)
            if target is None:
                break
        else:
            if isinstance(target, dict):
                target.pop(parts[-1], None)


class SchemaNode:
    """A position in a schema: what the server knows about merging the value found there."""

    def __init__(self, schema: dict | None, resolve=None):
        self._resolve = resolve or _resolve_builtin
        ref = (schema or {}).get("$ref", "")
        self.is_quantity = ref.endswith("resource.Quantity")
        self.schema = self._resolve(schema) if schema else {}

    def _wrap(self, schema) -> SchemaNode | None:
        return SchemaNode(schema, self._resolve) if isinstance(schema, dict) else None

    def child(self, key: str) -> SchemaNode | None:
        """The schema of a field (or of a map value)."""
        props = self.schema.get("properties") or {}
        if key in props:
            return self._wrap(props[key])
        return self._wrap(self.schema.get("additionalProperties"))

    def items(self) -> SchemaNode | None:
        """The schema of list items."""
        return self._wrap(self.schema.get("items"))

    @property
    def list_type(self) -> str:
        """`map`, `set` or `atomic` (unannotated lists merged by patch key count as maps)."""
        declared = self.schema.get("x-kubernetes-list-type")
        if declared:
            return declared
        return "map" if self.schema.get("x-kubernetes-patch-merge-key") else "atomic"

    @property
    def map_keys(self) -> list[str]:
        """Key fields of an associative list."""
        keys = self.schema.get("x-kubernetes-list-map-keys")
        if keys:
            return list(keys)
        merge_key = self.schema.get("x-kubernetes-patch-merge-key")
        return [merge_key] if merge_key else []

    @property
    def patch_merge_key(self) -> str | None:
        """The strategic-merge key of a list, if the list merges."""
        if "merge" in (self.schema.get("x-kubernetes-patch-strategy") or ""):
            return self.schema.get("x-kubernetes-patch-merge-key") or (self.map_keys[:1] or [None])[0]
        return None

    @property
    def atomic_map(self) -> bool:
        """Maps replaced as a whole (x-kubernetes-map-type: atomic)."""
        return self.schema.get("x-kubernetes-map-type") == "atomic"


def _resolve_builtin(schema: dict) -> dict:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = _definitions()["$defs"].get(name, {})
        seen += 1
    if isinstance(schema, dict) and schema.get("allOf") and len(schema["allOf"]) == 1:
        return _resolve_builtin(schema["allOf"][0])
    return schema


def builtin_node(api_version: str, kind: str) -> SchemaNode:
    """The root SchemaNode of a built-in kind (empty when unknown)."""
    return SchemaNode(root_schema(api_version, kind))
