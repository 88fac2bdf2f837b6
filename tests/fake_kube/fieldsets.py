"""Field paths and sets in structured-merge-diff's shape, and their `fieldsV1` encoding for managedFields."""
from __future__ import annotations

import json

from .schemas import SchemaNode

Path = tuple  # of ("f", name) | ("k", key-json) | ("v", value-json)
ITEM = object()  # the value recorded for a list item's own "." entry

# Fields the server manages itself: never owned by a field manager.
SYSTEM_META = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
               "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName"}


def _key_json(item: dict, keys: list[str]) -> str:
    key = {k: item[k] for k in keys if k in item}
    if "protocol" in keys and "protocol" not in key:
        key["protocol"] = "TCP"  # defaulted key field (container and service ports)
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def leaves(value, schema: SchemaNode | None, path: Path = ()) -> dict[Path, object]:
    """Every owned-able path of a value with the value there (list items map to ITEM)."""
    out: dict[Path, object] = {}
    schema = schema or SchemaNode(None)
    if isinstance(value, dict) and value and not schema.atomic_map:
        for key, sub in value.items():
            if sub is None:
                continue
            out.update(leaves(sub, schema.child(key), path + (("f", key),)))
    elif isinstance(value, list) and value and schema.list_type in ("map", "set"):
        item_schema = schema.items()
        for item in value:
            if schema.list_type == "set" or not isinstance(item, dict) or not schema.map_keys:
                out[path + (("v", json.dumps(item, sort_keys=True, separators=(",", ":"))),)] = item
                continue
            item_path = path + (("k", _key_json(item, schema.map_keys)),)
            out[item_path] = ITEM
            out.update(leaves(item, item_schema, item_path))
    elif path:
        out[path] = value
    return out


def object_leaves(obj: dict, schema: SchemaNode, part: str) -> dict[Path, object]:
    """Owned-able paths of an object: `main` excludes status and system metadata, `status` is only status."""
    if part == "status":
        return leaves(obj.get("status"), schema.child("status"), (("f", "status"),)) if obj.get("status") else {}
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status")}
    if part == "all" and "status" in obj:
        body["status"] = obj["status"]
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in SYSTEM_META}
    body["metadata"] = meta
    if not meta:
        del body["metadata"]
    return leaves(body, schema)


def encode(paths: set[Path]) -> dict:
    """The `fieldsV1` trie: {"f:spec": {"f:replicas": {}}, "k:{...}": {".": {}, ...}}."""
    root: dict = {}
    for path in sorted(paths, key=len):
        node = root
        for element in path:
            node = node.setdefault(f"{element[0]}:{element[1]}", {})
        node.setdefault("\0owned", True)
    return _finish(root)


def _finish(node: dict) -> dict:
    owned = node.pop("\0owned", False)
    children = {k: _finish(v) for k, v in node.items()}
    if owned and children:
        children = {".": {}, **children}
    return children


def decode(fields: dict, prefix: Path = ()) -> set[Path]:
    """Paths of a `fieldsV1` trie."""
    paths: set[Path] = set()
    for key, sub in (fields or {}).items():
        if key == ".":
            paths.add(prefix)
            continue
        kind, _, name = key.partition(":")
        path = prefix + ((kind, name),)
        if not sub:
            paths.add(path)
        else:
            paths |= decode(sub, path)
    return paths


def _find_item(items: list, element) -> int | None:
    kind, name = element
    for i, item in enumerate(items):
        if kind == "v" and json.dumps(item, sort_keys=True, separators=(",", ":")) == name:
            return i
        if kind == "k" and isinstance(item, dict):
            wanted = json.loads(name)
            if all(item.get(k, "TCP" if k == "protocol" else None) == v for k, v in wanted.items()):
                return i
    return None


def remove(obj: dict, path: Path) -> None:
    """Delete the field or list item at a path (no-op when absent); empty parent maps go too."""
    parents, node = [], obj
    for element in path[:-1]:
        parents.append(node)
        node = _step(node, element)
        if node is None:
            return
    last = path[-1]
    if last[0] == "f" and isinstance(node, dict):
        node.pop(last[1], None)
    elif isinstance(node, list):
        index = _find_item(node, last)
        if index is not None:
            node.pop(index)
    _drop_empty(obj, path[:-1])


def _drop_empty(obj: dict, path: Path) -> None:
    while path and path[-1][0] == "f":
        node = obj
        for element in path:
            node = _step(node, element)
            if node is None:
                return
        if node not in ({}, []):
            return
        parent = obj
        for element in path[:-1]:
            parent = _step(parent, element)
        if isinstance(parent, dict):
            parent.pop(path[-1][1], None)
        path = path[:-1]


def _step(node, element):
    if element[0] == "f":
        return node.get(element[1]) if isinstance(node, dict) else None
    if isinstance(node, list):
        index = _find_item(node, element)
        return node[index] if index is not None else None
    return None


def value_at(obj, path: Path):
    """The value at a path, or None."""
    node = obj
    for element in path:
        node = _step(node, element)
        if node is None:
            return None
    return node
