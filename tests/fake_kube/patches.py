"""JSON merge patch (RFC 7386), strategic merge patch, and JSON patch (RFC 6902)."""
from __future__ import annotations

from .errors import ApiError, bad_request
from .schemas import SchemaNode
from .store import clone


def merge_patch(target, patch):
    """RFC 7386: maps merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(target, patch, schema: SchemaNode | None):
    """Merge patch that merges lists carrying a patch merge key (containers by name) and honours $patch."""
    schema = schema or SchemaNode(None)
    if not isinstance(patch, dict):
        return clone(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            out[field] = [v for v in out.get(field) or [] if v not in value]
            continue
        sub = schema.child(key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list) and sub is not None and sub.patch_merge_key is not None:
            out[key] = _merge_list(out.get(key) or [], value, sub)
        else:
            merged = strategic_merge_patch(out.get(key), value, sub) if isinstance(value, dict) else clone(value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    if retain is not None:
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(live: list, patch: list, schema: SchemaNode) -> list:
    key = schema.patch_merge_key
    out = [clone(item) for item in live]
    for item in patch:
        if not isinstance(item, dict):  # list of primitives with merge strategy: union
            if item not in out:
                out.append(item)
            continue
        index = next((i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if index is not None:
                out.pop(index)
        elif index is None:
            out.append({k: clone(v) for k, v in item.items() if k != "$patch"})
        else:
            out[index] = strategic_merge_patch(out[index], item, schema.items())
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer: {path}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _container(doc, parts: list[str]):
    for part in parts[:-1]:
        if isinstance(doc, list):
            doc = doc[int(part)]
        elif isinstance(doc, dict) and part in doc:
            doc = doc[part]
        else:
            raise ApiError(422, "Invalid", f"add operation does not apply: doc is missing path: /{'/'.join(parts)}")
    return doc


def _get(doc, parts):
    for part in parts:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def json_patch(doc, operations: list):
    """RFC 6902 add/remove/replace/move/copy/test (422 when an operation does not apply)."""
    doc = clone(doc)
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    for op in operations:
        try:
            doc = _apply_op(doc, op)
        except (KeyError, IndexError, ValueError, TypeError):
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: "
                                           f"{op.get('op')} operation does not apply: doc is missing path: {op.get('path')}") from None
    return doc


def _apply_op(doc, op: dict):
    kind, parts = op.get("op"), _pointer(op.get("path", ""))
    if kind == "test":
        if _get(doc, parts) != op.get("value"):
            raise ApiError(422, "Invalid", f"testing value {op.get('path')} failed: test failed")
        return doc
    if kind in ("move", "copy"):
        value = clone(_get(doc, _pointer(op["from"])))
        if kind == "move":
            doc = _apply_op(doc, {"op": "remove", "path": op["from"]})
        return _apply_op(doc, {"op": "add", "path": op["path"], "value": value})
    if not parts:
        return clone(op.get("value")) if kind in ("add", "replace") else None
    parent, last = _container(doc, parts), parts[-1]
    if kind == "add":
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), clone(op["value"]))
        else:
            parent[last] = clone(op["value"])
    elif kind == "remove":
        del parent[int(last) if isinstance(parent, list) else last]
    elif kind == "replace":
        if isinstance(parent, list):
            parent[int(last)] = clone(op["value"])
        else:
            if last not in parent:
                raise KeyError(last)
            parent[last] = clone(op["value"])
    else:
        raise bad_request(f"Unexpected kind: {kind}")
    return doc
