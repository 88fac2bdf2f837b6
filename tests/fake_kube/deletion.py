"""DELETE semantics: finalizers, propagation policies, garbage collection of dependents, CRD removal."""
from __future__ import annotations

from .api import Api
from .errors import ApiError, conflict, not_found
from .request import Call, parse_body
from .resources import ResourceType
from .selectors import fields_match, labels_match, parse_field_selector, parse_label_selector
from .store import clone

JOB_ORPHAN_WARNING = ("child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
                      "to remove them or set propagationPolicy=Orphan to suppress this warning")


def _options(call: Call) -> dict:
    if not call.body or not call.body.strip():
        return {}
    body = parse_body(call)
    return body if isinstance(body, dict) else {}


def _policy(call: Call, options: dict) -> str:
    policy = call.query.get("propagationPolicy") or options.get("propagationPolicy")
    orphan = call.query.get("orphanDependents", options.get("orphanDependents"))
    if policy:
        return policy
    if orphan in (True, "true"):
        return "Orphan"
    if call.rt.plural == "jobs" and call.rt.group == "batch":
        call.warnings.append(JOB_ORPHAN_WARNING)
        return "Orphan"  # batch/v1 Jobs keep their pods unless asked otherwise
    return "Background"


def success_status(rt: ResourceType, obj: dict) -> dict:
    """The Status a DELETE answers when the object is gone at once."""
    details = {"name": obj["metadata"]["name"], "kind": rt.plural, "uid": obj["metadata"].get("uid")}
    if rt.group:
        details["group"] = rt.group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def delete(api: Api, call: Call) -> dict:
    """DELETE one object: the object (still terminating) or a Success Status (gone)."""
    rt, options = call.rt, _options(call)
    with api.store.lock:
        obj = api.store.get(rt.key, call.namespace or "", call.name)
        if obj is None:
            raise not_found(rt.plural, rt.group, call.name)
        _check_preconditions(rt, obj, options.get("preconditions") or {})
        if call.dry_run:
            return obj
        policy = _policy(call, options)
        if rt.kind == "Namespace":
            return api.present(rt, _mark_deleting(api, rt, obj, []))
        if rt.kind == "CustomResourceDefinition":
            return _delete_crd(api, rt, obj)
        result = delete_object(api, rt, obj, policy)
    return api.present(rt, result) if result.get("kind") != "Status" else result


def delete_object(api: Api, rt: ResourceType, obj: dict, policy: str = "Background") -> dict:
    """Delete or start deleting an object, then handle its dependents per propagation policy."""
    obj = clone(obj)
    meta = obj["metadata"]
    extra = ["foregroundDeletion"] if policy == "Foreground" else []
    if meta.get("finalizers") or extra:
        # Foreground: the object stays readable, with deletionTimestamp and the foregroundDeletion finalizer, until
        # the garbage collector (simulation.housekeeping) has deleted its dependents and removes the finalizer.
        obj = _mark_deleting(api, rt, obj, extra)
        if policy != "Foreground":
            _handle_dependents(api, obj, policy)
        return obj
    final = api.store.remove(rt.key, obj)
    api._after(rt, "DELETED", final)
    _handle_dependents(api, final, policy)
    return success_status(rt, final)


def _mark_deleting(api: Api, rt: ResourceType, obj: dict, extra: list[str]) -> dict:
    old = clone(obj)
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = api.clock.stamp()
        meta["deletionGracePeriodSeconds"] = 0
        if rt.has_generation:
            meta["generation"] = meta.get("generation", 1) + 1
    for name in extra:
        if name not in meta.setdefault("finalizers", []):
            meta["finalizers"].append(name)
    if rt.kind == "Namespace":
        obj.setdefault("status", {})["phase"] = "Terminating"
    if obj == old:
        return obj
    stored = api.store.write(rt.key, obj, "MODIFIED", old)
    api._after(rt, "MODIFIED", stored)
    return stored


def _handle_dependents(api: Api, owner: dict, policy: str) -> None:
    if policy == "Orphan":
        _orphan(api, owner)
    else:
        collect_dependents(api, owner, "Background")


def dependents(api: Api, owner: dict) -> list[tuple[ResourceType, dict]]:
    """Objects whose ownerReferences name the owner's uid (same namespace, or cluster-scoped)."""
    uid, namespace = owner["metadata"].get("uid"), owner["metadata"].get("namespace", "")
    found = []
    for rt in _storage_types(api):
        for obj in api.store.view(rt.key, namespace if rt.namespaced else None):
            if any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or []):
                found.append((rt, clone(obj)))
    return found


def _storage_types(api: Api) -> list[ResourceType]:
    seen, types = set(), []
    for rt in api.registry.all():
        if rt.key not in seen and rt.plural != "selfsubjectaccessreviews":
            seen.add(rt.key)
            types.append(rt)
    return types


def collect_dependents(api: Api, owner: dict, policy: str) -> None:
    """The garbage collector: delete the dependents of a deleted (or foreground-deleting) owner."""
    for rt, obj in dependents(api, owner):
        if not obj["metadata"].get("deletionTimestamp"):
            delete_object(api, rt, obj, policy)


def _orphan(api: Api, owner: dict) -> None:
    uid = owner["metadata"].get("uid")
    for rt, obj in dependents(api, owner):
        old = clone(obj)
        obj["metadata"]["ownerReferences"] = [r for r in obj["metadata"]["ownerReferences"] if r.get("uid") != uid]
        if not obj["metadata"]["ownerReferences"]:
            del obj["metadata"]["ownerReferences"]
        api._after(rt, "MODIFIED", api.store.write(rt.key, obj, "MODIFIED", old))


def finish_foreground(api: Api, rt: ResourceType, obj: dict) -> dict:
    """Drop the foregroundDeletion finalizer once no blocking dependents remain (then the object may go)."""
    if dependents(api, obj):
        return obj
    old, obj = obj, clone(obj)
    finalizers = [f for f in obj["metadata"].get("finalizers") or [] if f != "foregroundDeletion"]
    obj["metadata"]["finalizers"] = finalizers
    if not finalizers:
        del obj["metadata"]["finalizers"]
        final = api.store.remove(rt.key, obj)
        api._after(rt, "DELETED", final)
        return success_status(rt, final)
    stored = api.store.write(rt.key, obj, "MODIFIED", old)
    api._after(rt, "MODIFIED", stored)
    return stored


def _check_preconditions(rt: ResourceType, obj: dict, pre: dict) -> None:
    meta = obj["metadata"]
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise conflict(rt.plural, rt.group, meta["name"],
                       f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}")
    if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
        raise conflict(rt.plural, rt.group, meta["name"],
                       f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                       f"ResourceVersion in object meta: {meta.get('resourceVersion')}")


def _delete_crd(api: Api, rt: ResourceType, crd: dict) -> dict:
    """Deleting a CRD deletes its objects and stops serving it."""
    spec = crd["spec"]
    key = (spec["group"], spec["names"]["plural"])
    served = api.registry.versions_of(*key)
    for obj in api.store.items(key):
        final = api.store.remove(key, obj)
        if served:
            api._after(served[0], "DELETED", final)
    api.registry.remove_crd(crd["metadata"]["name"])
    final = api.store.remove(rt.key, crd)
    api._after(rt, "DELETED", final)
    return api.present(rt, final)


def delete_collection(api: Api, call: Call) -> dict:
    """DELETE on a collection: every object matching the selectors."""
    rt = call.rt
    if "deletecollection" not in rt.verbs:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})
    terms = parse_label_selector(call.query.get("labelSelector"))
    fields = parse_field_selector(call.query.get("fieldSelector"), rt.plural)
    policy = _policy(call, _options(call))
    with api.store.lock:
        for obj in api.store.items(rt.key, call.namespace if rt.namespaced else None):
            if labels_match(terms, obj["metadata"].get("labels")) and fields_match(fields, obj):
                delete_object(api, rt, obj, policy)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
