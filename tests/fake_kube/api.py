"""REST semantics of kube-apiserver: create, get, list, update, patch (incl. server-side apply)."""
from __future__ import annotations

import base64
import json
import random

from . import prepare
from .admission import admit, admit_update
from .apply import server_side_apply, track_update
from .catalog import RULE_CHECKS
from .clock import Clock
from .crds import prune, schema_errors, typed_problems, validate_crd
from .errors import (
    STALE,
    ApiError,
    already_exists,
    bad_request,
    conflict,
    forbidden_request,
    invalid,
    invalid_object,
    not_found,
    unsupported_media_type,
)
from .patches import json_patch, merge_patch, strategic_merge_patch
from .quantity import QuantityError
from .request import Call, Settings, object_body, parse_body
from .resources import Registry, ResourceType
from .schemas import builtin_node, decode_problems
from .selectors import fields_match, labels_match, parse_field_selector, parse_label_selector
from .store import Store, clone
from .validation import validate

APPLY, MERGE, STRATEGIC, JSON_PATCH = ("application/apply-patch+yaml", "application/merge-patch+json",
                                       "application/strategic-merge-patch+json", "application/json-patch+json")
# Status fields Go serialises even when zero (no omitempty); the client models require some of them.
INITIAL_STATUS = {"StatefulSet": {"replicas": 0, "availableReplicas": 0}, "ReplicaSet": {"replicas": 0},
                  "HorizontalPodAutoscaler": {"desiredReplicas": 0}, "Service": {"loadBalancer": {}},
                  "PersistentVolumeClaim": {"phase": "Pending"}}
# Metadata the server owns: taken from the stored object on every update.
SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


class Api:
    """The object semantics, shared by the HTTP handler and the simulated controllers."""

    def __init__(self, store: Store, registry: Registry, clock: Clock, rng: random.Random, settings: Settings):
        self.store, self.registry, self.clock, self.rng, self.settings = store, registry, clock, rng, settings
        self.after_write: list = []  # callables(rt, event_type, obj), e.g. CRD establishment

    # --- reads ---------------------------------------------------------------------------------

    def get(self, call: Call) -> dict:
        """One object (404 if missing)."""
        obj = self.store.get(call.rt.key, call.namespace or "", call.name)
        if obj is None:
            raise not_found(call.rt.plural, call.rt.group, call.name)
        return self.present(call.rt, obj)

    def present(self, rt: ResourceType, obj: dict) -> dict:
        """An object as served at this version (custom resources share storage across versions)."""
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        return obj

    def list(self, call: Call) -> dict:
        """A filtered (label/field selector), optionally paginated list."""
        rt = call.rt
        terms = parse_label_selector(call.query.get("labelSelector"))
        fields = parse_field_selector(call.query.get("fieldSelector"), rt.plural)
        with self.store.lock:
            items = self.store.items(rt.key, call.namespace if rt.namespaced and call.namespace else None)
            rv = self.store.rv
        items = [o for o in items if labels_match(terms, o["metadata"].get("labels")) and fields_match(fields, o)]
        start = _decode_continue(call.query.get("continue"))
        items = items[start:]
        meta = {"resourceVersion": str(rv)}
        limit = int(call.query.get("limit") or 0)
        if limit and len(items) > limit:
            meta["continue"] = base64.b64encode(json.dumps({"start": start + limit, "rv": rv}).encode()).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        for item in items:
            if rt.is_custom:
                self.present(rt, item)
            else:  # typed lists omit each item's kind and apiVersion
                item.pop("kind", None), item.pop("apiVersion", None)
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}

    # --- create --------------------------------------------------------------------------------

    def create(self, call: Call, obj: dict | None = None, operation: str = "Update") -> dict:
        """POST: validate, default, admit and store a new object (201)."""
        rt = call.rt
        obj = obj if obj is not None else object_body(call)
        self._check_type(obj, rt)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        self._place(call, meta)
        requested = meta.get("name")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = prepare.generated_name(meta["generateName"], self.rng)
        if meta.get("resourceVersion") and operation != "Apply":  # the storage layer's (unmapped, so 500) error
            raise ApiError(500, "InternalError", "Internal error occurred: resourceVersion should not be set on "
                                                 "objects to be created", {})
        with self.store.lock:
            self._require_namespace(call, meta.get("name") or "")
            if rt.has_status and rt.kind != "Node":  # kubelets register nodes with their status
                obj.pop("status", None)
            for key in SYSTEM_META + ("resourceVersion", "selfLink"):
                meta.pop(key, None)
            if operation != "Apply":
                meta.pop("managedFields", None)
            meta["uid"] = prepare.random_uid(self.rng)
            meta["creationTimestamp"] = self.clock.stamp()
            if rt.has_generation:
                meta["generation"] = 1
            obj, missing = prepare.decode(obj, rt, call.validation, call.warnings)
            meta = obj["metadata"]
            prepare.prepare_create(obj, rt)
            if rt.has_status and not rt.is_custom:
                obj.setdefault("status", clone(INITIAL_STATUS.get(rt.kind, {})))
            self._validate(obj, rt, None, missing)
            admit(self.store, rt.plural, rt.group, call.namespace, obj, requested,
                  self.settings.require_serviceaccount)
            if self.store.get(rt.key, meta.get("namespace", ""), meta["name"]) is not None:
                raise already_exists(rt.plural, rt.group, meta["name"])
            if operation != "Apply":
                track_update(None, obj, call.manager, prepare.schema_node(rt), rt.api_version, self.clock.stamp())
            if call.dry_run:
                return obj
            stored = self.store.write(rt.key, obj, "ADDED")
        self._after(rt, "ADDED", stored)
        return stored

    def _check_type(self, obj: dict, rt: ResourceType) -> None:
        version, kind = obj.get("apiVersion") or rt.api_version, obj.get("kind") or rt.kind
        if version != rt.api_version:
            raise bad_request(f"the API version in the data ({version}) does not match the expected API version "
                              f"({rt.api_version})")
        if kind != rt.kind:
            raise bad_request(f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                              f'the kind in the data ({kind}) does not match the expected kind ({rt.kind})')
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind

    def _place(self, call: Call, meta: dict) -> None:
        if not call.rt.namespaced:
            meta.pop("namespace", None)
            return
        if meta.get("namespace") and call.namespace and meta["namespace"] != call.namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        if call.namespace:
            meta["namespace"] = call.namespace

    def _require_namespace(self, call: Call, name: str) -> None:
        if not call.rt.namespaced:
            return
        namespace = self.store.get(("", "namespaces"), "", call.namespace or "")
        if namespace is None:
            raise not_found("namespaces", "", call.namespace or "")
        if namespace["metadata"].get("deletionTimestamp"):
            raise forbidden_request(f'{call.rt.plural} "{name}" is forbidden: unable to create new content in namespace '
                                    f'{call.namespace} because it is being terminated', call.rt.plural, call.rt.group, name)

    def _validate(self, obj: dict, rt: ResourceType, old: dict | None, missing: list) -> None:
        errors = validate(obj, rt, old)
        if rt.is_custom:
            errors += schema_errors(obj, rt.schema or {})
            errors += RULE_CHECKS.get(rt.crd or "", lambda *_: [])(obj, old)  # the CEL rules the fake knows (catalog*)
        if rt.kind == "CustomResourceDefinition":
            errors += validate_crd(obj)
        seen = {e.field for e in errors}
        errors += [e for e in missing if e.field not in seen and not any(f.startswith(e.field) for f in seen)]
        if errors:
            raise invalid_object(rt.kind, rt.group, obj["metadata"].get("name", ""), errors)

    # --- update, patch, apply ------------------------------------------------------------------

    def update(self, call: Call) -> dict:
        """PUT of the main resource or of /status."""
        rt = call.rt
        body = object_body(call)
        self._check_type(body, rt)
        meta = body.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != call.name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({call.name})")
        meta["name"] = call.name
        self._place(call, meta)
        with self.store.lock:
            old = self._existing(call)
            rv = meta.get("resourceVersion")
            if not rv and rt.is_custom:
                raise invalid_object(rt.kind, rt.group, call.name, [
                    invalid("metadata.resourceVersion", "0x0", "must be specified for an update")])
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(rt.plural, rt.group, call.name, STALE)
            new = self._overlay(rt, old, body, call.subresource)
            return self._finish(call, old, new, "Update")

    def _existing(self, call: Call) -> dict:
        old = self.store.get(call.rt.key, call.namespace or "", call.name)
        if old is None:
            raise not_found(call.rt.plural, call.rt.group, call.name)
        return old

    @staticmethod
    def _overlay(rt: ResourceType, old: dict, new: dict, subresource: str | None) -> dict:
        """The part a write may change: status alone via /status, everything else (not status) otherwise."""
        if subresource == "status":
            result = clone(old)
            result["status"] = new.get("status") or {}
            return result
        if rt.has_status:
            new.pop("status", None)
            if old.get("status") is not None:
                new["status"] = clone(old["status"])
        return new

    def patch(self, call: Call) -> dict:
        """PATCH: apply, merge, strategic merge or JSON patch."""
        kind = call.content_type.split(";")[0].strip()
        if kind not in (APPLY, MERGE, STRATEGIC, JSON_PATCH) or (kind == STRATEGIC and call.rt.is_custom):
            accepted = [JSON_PATCH, MERGE, APPLY] + ([] if call.rt.is_custom else [STRATEGIC])
            raise unsupported_media_type(kind, accepted)
        if call.query.get("force") and kind != APPLY:
            raise ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be '
                                           'specified for non-apply patch', {"group": "meta.k8s.io", "kind": "PatchOptions",
                                                                              "causes": [{"reason": "FieldValueForbidden",
                                                                                          "message": "Forbidden: may not be specified for non-apply patch",
                                                                                          "field": "force"}]})
        if kind == APPLY:
            return self.apply(call)
        patch = parse_body(call)
        with self.store.lock:
            old = self._existing(call)
            base = clone(old)
            if kind == JSON_PATCH:
                patched = json_patch(base, patch)
            elif not isinstance(patch, dict):
                raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
            elif kind == MERGE:
                patched = merge_patch(base, patch)
            else:
                patched = strategic_merge_patch(base, patch, prepare.schema_node(call.rt))
            wanted_rv = ((patched or {}).get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise conflict(call.rt.plural, call.rt.group, call.name, STALE)
            self._check_type(patched, call.rt)
            patched.setdefault("metadata", {})["name"] = call.name
            return self._finish(call, old, self._overlay(call.rt, old, patched, call.subresource), "Update")

    def apply(self, call: Call) -> dict:
        """Server-side apply: create or merge, tracking field ownership per manager."""
        rt = call.rt
        if not call.query.get("fieldManager"):
            raise ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                                           'required for apply patch', {"group": "meta.k8s.io", "kind": "PatchOptions",
                                                                         "causes": [{"reason": "FieldValueRequired",
                                                                                     "message": "Required value: is required for apply patch",
                                                                                     "field": "fieldManager"}]})
        applied = object_body(call)
        self._check_apply_config(applied, call)
        part = "status" if call.subresource == "status" else "main"
        if part == "main" and rt.has_status:
            applied.pop("status", None)
        elif part == "status":
            applied = {k: v for k, v in applied.items() if k in ("apiVersion", "kind", "metadata", "status")}
        force = call.query.get("force") in ("true", "True", "1")
        with self.store.lock:
            old = self.store.get(rt.key, call.namespace or "", call.name)
            if old is None and part == "status":
                raise not_found(rt.plural, rt.group, call.name)
            merged = server_side_apply(old, applied, call.manager, force, prepare.schema_node(rt), rt.api_version,
                                       self.clock.stamp(), part)
            if old is None:
                return self.create(call, merged, operation="Apply")
            return self._finish(call, old, self._overlay(rt, old, merged, call.subresource), "Apply")

    def _check_apply_config(self, applied: dict, call: Call) -> None:
        rt = call.rt
        if not applied.get("apiVersion") or not applied.get("kind"):
            raise bad_request("invalid object type: /, Kind=")
        self._check_type(applied, rt)
        name = (applied.get("metadata") or {}).get("name")
        if name != call.name:
            raise bad_request(f"the name of the object ({name}) does not match the name on the URL ({call.name})")
        if rt.is_custom:
            unknown, types = prune(clone(applied), rt.schema or {}), typed_problems(applied, rt.schema or {})
        else:
            unknown, types, _ = decode_problems(prepare.strip_nulls(applied))
        problems = [f".{p}: field not declared in schema" for p in unknown] + [
            f".{p}: expected {'numeric (int or float)' if t == 'string' else 'string'}, got {t}" for p, t in types]
        # structured-merge-diff and the conversion after it return plain errors, which kube-apiserver answers as a
        # 500 without a reason (kubernetes/kubernetes#122480, #139253): clients that retry 5xx retry them forever.
        group, version = rt.api_version.rpartition("/")[::2]
        gvk = f"{group}/{version}, Kind={rt.kind}"
        where = f"{call.namespace or ''}/{call.name}; {gvk}"
        if problems:
            raise ApiError(500, "", f"failed to create typed patch object ({where}): {problems[0]}")
        if not rt.is_custom:
            try:  # a quantity is an untyped scalar to the typed patch: it fails at the conversion to the Go type
                prepare.canonicalize_quantities(clone(applied), builtin_node(rt.api_version, rt.kind), None)
            except QuantityError as error:
                raise ApiError(500, "", f"failed to convert new object ({where}) to proper version: unable to "
                                        f"convert unstructured object to {gvk}: {error}") from None

    def _finish(self, call: Call, old: dict, new: dict, operation: str) -> dict:
        """The shared tail of every update: system fields, decode, validate, ownership, generation, store."""
        rt = call.rt
        meta = new.setdefault("metadata", {})
        for key in SYSTEM_META:
            meta.pop(key, None)
            if key in old["metadata"]:
                meta[key] = old["metadata"][key]
        meta["namespace"] = old["metadata"].get("namespace")
        if not rt.namespaced:
            meta.pop("namespace", None)
        if operation != "Apply":
            meta["managedFields"] = clone(old["metadata"].get("managedFields") or [])
        new, missing = prepare.decode(new, rt, call.validation, call.warnings)
        meta = new["metadata"]
        prepare.prepare_update(new, old, rt)
        admit_update(self.store, rt.plural, rt.group, new, old)
        self._validate(new, rt, old, missing)
        if operation != "Apply":
            part = "status" if call.subresource == "status" else "main"
            track_update(old, new, call.manager, prepare.schema_node(rt), rt.api_version, self.clock.stamp(), part)
        if rt.has_generation and _spec_changed(old, new, rt):
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if _same(old, new):
            return old  # a no-op write does not bump resourceVersion (real server behaviour)
        if call.dry_run:
            return new
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            final = self.store.remove(rt.key, new)
            self._after(rt, "DELETED", final)
            return final
        stored = self.store.write(rt.key, new, "MODIFIED", old)
        self._after(rt, "MODIFIED", stored)
        return stored

    def _after(self, rt: ResourceType, event_type: str, obj: dict) -> None:
        for hook in self.after_write:
            hook(rt, event_type, obj)


def _spec_changed(old: dict, new: dict, rt: ResourceType) -> bool:
    skip = {"metadata", "status"} if rt.has_status or not rt.is_custom else {"metadata"}
    return {k: v for k, v in old.items() if k not in skip} != {k: v for k, v in new.items() if k not in skip}


def _without_times(obj: dict) -> dict:
    copy = clone(obj)
    for entry in copy.get("metadata", {}).get("managedFields") or []:
        entry.pop("time", None)
    return copy


def _same(old: dict, new: dict) -> bool:
    return _without_times(old) == _without_times(new)


def _decode_continue(token: str | None) -> int:
    if not token:
        return 0
    try:
        return int(json.loads(base64.b64decode(token))["start"])
    except (ValueError, KeyError, TypeError):
        raise bad_request("continue key is not valid: illegal base64 data") from None
