"""Server-side apply and managedFields: ownership per manager, conflicts, removal of fields no longer applied."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .errors import ApiError
from .fieldsets import ITEM, Path, _find_item, _key_json, decode, encode, object_leaves, remove, value_at
from .schemas import SchemaNode
from .store import clone


@dataclass
class Entry:
    """One managedFields entry with its decoded field set."""

    manager: str
    operation: str
    api_version: str
    time: str
    subresource: str = ""
    paths: set = field(default_factory=set)

    @property
    def identity(self) -> tuple[str, str, str]:
        """Managers are distinct per operation and subresource, as in structured-merge-diff."""
        return (self.manager, self.operation, self.subresource)

    def to_dict(self) -> dict:
        """The managedFields JSON."""
        out = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version,
               "time": self.time, "fieldsType": "FieldsV1", "fieldsV1": encode(self.paths)}
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def read_entries(obj: dict | None) -> list[Entry]:
    """The decoded managedFields of an object."""
    entries = []
    for raw in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        entries.append(Entry(raw.get("manager", ""), raw.get("operation", "Update"), raw.get("apiVersion", ""),
                             raw.get("time", ""), raw.get("subresource", ""), decode(raw.get("fieldsV1") or {})))
    return entries


def write_entries(obj: dict, entries: list[Entry]) -> None:
    """Store entries that still own something."""
    kept = [e.to_dict() for e in entries if e.paths]
    if kept:
        obj.setdefault("metadata", {})["managedFields"] = kept
    else:
        obj.get("metadata", {}).pop("managedFields", None)


def _entry(entries: list[Entry], identity: tuple, api_version: str, now: str) -> Entry:
    for entry in entries:
        if entry.identity == identity:
            entry.api_version, entry.time = api_version, now
            return entry
    entry = Entry(identity[0], identity[1], api_version, now, identity[2])
    entries.append(entry)
    return entry


def smd_path(path: Path) -> str:
    """`.spec.containers[name="c"].image`: how apply conflicts name fields."""
    out = ""
    for kind, name in path:
        if kind == "f":
            out += f".{name}"
        elif kind == "k":
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(name).items()) + "]"
        else:
            out += f"[={name}]"
    return out


def _conflict_error(conflicts: list[tuple[Entry, Path]]) -> ApiError:
    count = len(conflicts)
    causes = [{"reason": "FieldManagerConflict", "message": f'conflict with "{e.manager}" using {e.api_version}',
               "field": smd_path(p)} for e, p in conflicts]
    if count == 1:
        entry, path = conflicts[0]
        message = f'Apply failed with 1 conflict: conflict with "{entry.manager}" using {entry.api_version}: {smd_path(path)}'
    else:
        lines = []
        for manager in dict.fromkeys(e.manager for e, _ in conflicts):
            version = next(e.api_version for e, _ in conflicts if e.manager == manager)
            lines.append(f'conflicts with "{manager}" using {version}:')
            lines += [f"- {smd_path(p)}" for e, p in conflicts if e.manager == manager]
        message = f"Apply failed with {count} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def merge_applied(live, applied, schema: SchemaNode | None):
    """Overlay an apply configuration on the live value (maps merge, associative lists merge by key)."""
    schema = schema or SchemaNode(None)
    if isinstance(applied, dict) and isinstance(live, dict) and not schema.atomic_map:
        out = dict(live)
        for key, value in applied.items():
            if value is not None:
                out[key] = merge_applied(live.get(key), value, schema.child(key))
        return out
    if isinstance(applied, list) and isinstance(live, list) and schema.list_type == "map" and schema.map_keys:
        out = [clone(item) for item in live]
        for item in applied:
            index = _find_item(out, ("k", _key_json(item, schema.map_keys))) if isinstance(item, dict) else None
            if index is None:
                out.append(clone(item))
            else:
                out[index] = merge_applied(out[index], item, schema.items())
        return out
    if isinstance(applied, list) and isinstance(live, list) and schema.list_type == "set":
        return live + [clone(v) for v in applied if v not in live]
    return clone(applied)


def server_side_apply(live: dict | None, applied: dict, manager: str, force: bool, schema: SchemaNode,
                      api_version: str, now: str, part: str = "main") -> dict:
    """The object after `manager` applies `applied` to `live` (409 on conflicts unless forced)."""
    entries = read_entries(live)
    subresource = "status" if part == "status" else ""
    applied_leaves = object_leaves(applied, schema, part)
    new_paths = set(applied_leaves)
    mine = next((e for e in entries if e.identity == (manager, "Apply", subresource)), None)
    old_paths = set(mine.paths) if mine else set()
    conflicts = []
    for other in entries:
        if other is mine:
            continue
        for path in sorted(new_paths & other.paths, key=smd_path):
            if applied_leaves[path] is not ITEM and value_at(live, path) != applied_leaves[path]:
                conflicts.append((other, path))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for other, path in conflicts:
        other.paths.discard(path)
    merged = merge_applied(clone(live) if live else {}, applied, schema)
    others = set().union(*(e.paths for e in entries if e is not mine)) if entries else set()
    for path in sorted(old_paths - new_paths, key=len):
        if path in others or any(len(q) > len(path) and q[:len(path)] == path for q in others):
            continue
        remove(merged, path)
    _entry(entries, (manager, "Apply", subresource), api_version, now).paths = new_paths
    write_entries(merged, entries)
    return merged


def track_update(old: dict | None, new: dict, manager: str, schema: SchemaNode, api_version: str, now: str,
                 part: str = "main") -> None:
    """Record an Update by `manager` in new's managedFields: it takes the fields it changed from everyone."""
    entries = read_entries(old)
    before = object_leaves(old, schema, part) if old else {}
    after = object_leaves(new, schema, part)
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    removed = set(before) - set(after)
    identity = (manager, "Update", "status" if part == "status" else "")
    for entry in entries:
        entry.paths -= removed
        if entry.identity != identity:
            entry.paths -= changed
    if changed:
        mine = _entry(entries, identity, api_version, now)
        mine.paths |= changed
    write_entries(new, entries)
