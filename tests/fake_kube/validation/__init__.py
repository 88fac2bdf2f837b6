"""Validation of objects the way kube-apiserver validates them (422 Invalid with field causes)."""
from __future__ import annotations

from ..errors import FieldError, forbidden
from ..resources import ResourceType
from .kinds import validate_kind, validate_kind_update
from .meta import validate_object_meta
from .scheduling import priority_class, priority_class_update

NAME_RULE = {"Namespace": "label", "Service": "dns1035"}


def validate(obj: dict, rt: ResourceType, old: dict | None = None) -> list[FieldError]:
    """All field errors of a new object (and, on update, of the change from `old`)."""
    errors = validate_object_meta(obj.get("metadata") or {}, rt.namespaced, NAME_RULE.get(rt.kind, "subdomain"))
    if not rt.is_custom:
        errors += validate_kind(obj)
    if rt.kind == "PriorityClass" and not rt.is_custom:
        errors += priority_class(obj) + (priority_class_update(obj, old) if old is not None else [])
    if old is not None:
        errors += _meta_update(obj, old)
        if not rt.is_custom:
            errors += validate_kind_update(obj, old)
    return errors


def _meta_update(new: dict, old: dict) -> list[FieldError]:
    old_meta, new_meta = old["metadata"], new["metadata"]
    if old_meta.get("deletionTimestamp"):
        added = set(new_meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if added:
            return [forbidden("metadata.finalizers", "no new finalizers can be added if the object is being deleted, "
                                                     f"found new finalizers {sorted(added)}")]
    return []
