"""Cluster housekeeping: CRD establishment, namespace ServiceAccounts and termination, GC, volume binding."""
from __future__ import annotations

from datetime import datetime, timedelta

from ..clock import stamp
from ..crds import served_types
from ..deletion import collect_dependents, finish_foreground
from ..store import clone

FOREGROUND_SECONDS = 1.0  # how long a foreground deletion stays visible before the garbage collector finishes it


def establish_crds(sim) -> None:
    """CRDs become NamesAccepted + Established after the configured delay; then their types are served."""
    rt = sim.rt("customresourcedefinitions", "apiextensions.k8s.io")
    delay = sim.api.settings.crd_establish_delay
    for crd in sim.items("customresourcedefinitions", "apiextensions.k8s.io"):
        if crd["metadata"].get("deletionTimestamp"):
            continue
        conditions = {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or []}
        established = conditions.get("Established", {}).get("status") == "True"
        if established:
            _serve(sim, crd)
            continue
        if _age(sim, crd) < delay:
            continue
        now = stamp(sim.now())
        names = dict(crd["spec"]["names"])
        storage = next((v["name"] for v in crd["spec"]["versions"] if v.get("storage")), None)
        status = {"acceptedNames": names, "storedVersions": [storage] if storage else [], "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"}]}
        _serve(sim, crd)
        sim.set_status(rt, crd, status)


def _serve(sim, crd: dict) -> None:
    """(Re)register the served versions (a CRD update may add or drop versions)."""
    registry = sim.api.registry
    wanted = served_types(crd)
    current = [t for t in registry.all() if t.crd == crd["metadata"]["name"]]
    if {(t.version, t.subresources, str(t.schema)) for t in current} != \
            {(t.version, t.subresources, str(t.schema)) for t in wanted}:
        registry.remove_crd(crd["metadata"]["name"])
        for rt in wanted:
            registry.add(rt)


def namespaces(sim) -> None:
    """Create each namespace's `default` ServiceAccount after a delay; empty and remove terminating namespaces."""
    delay = sim.api.settings.serviceaccount_delay
    for ns in sim.items("namespaces"):
        name = ns["metadata"]["name"]
        if ns["metadata"].get("deletionTimestamp"):
            _terminate(sim, ns)
            continue
        if _age(sim, ns) >= delay and sim.store.get(("", "serviceaccounts"), name, "default") is None:
            sim.create(sim.rt("serviceaccounts"), {"apiVersion": "v1", "kind": "ServiceAccount",
                                                   "metadata": {"name": "default", "namespace": name}},
                       manager="kube-controller-manager")


def _first_seen(sim, obj: dict, what: str = "first_seen") -> datetime:
    """When the simulation first saw an object (or, `deleting`, it deleting): the timestamps have second precision."""
    seen = sim.state.setdefault(what, {})
    return seen.setdefault(obj["metadata"]["uid"], sim.now())


def _age(sim, obj: dict) -> float:
    return (sim.now() - _first_seen(sim, obj)).total_seconds()


def _terminate(sim, ns: dict) -> None:
    name = ns["metadata"]["name"]
    remaining = 0
    for rt in {t.key: t for t in sim.api.registry.all() if t.namespaced}.values():
        for obj in sim.store.items(rt.key, name):
            remaining += 1
            sim.delete(rt, obj, "Background")
    if remaining or any(sim.store.items(t.key, name) for t in sim.api.registry.all() if t.namespaced):
        return
    final = sim.store.remove(("", "namespaces"), ns)
    sim.api._after(sim.rt("namespaces"), "DELETED", final)
    sim.changed = True


def garbage_collect(sim) -> None:
    """Delete objects whose owners are gone; a moment (FOREGROUND_SECONDS) after a foreground deletion, delete the
    object's dependents and then, once they are gone, the object."""
    types = {t.key: t for t in sim.api.registry.all() if t.plural != "selfsubjectaccessreviews"}.values()
    objects = [(rt, obj) for rt in types for obj in sim.store.view(rt.key)]
    uids = {obj["metadata"].get("uid") for _, obj in objects}
    for rt, obj in objects:
        meta = obj["metadata"]
        refs = meta.get("ownerReferences") or []
        if refs and not meta.get("deletionTimestamp") and all(r.get("uid") not in uids for r in refs):
            sim.delete(rt, obj, "Background")
        elif _foreground(obj) and sim.now() >= _foreground_due(sim, obj):
            before = sim.store.rv
            collect_dependents(sim.api, obj, "Background")
            finish_foreground(sim.api, rt, sim.store.get(rt.key, meta.get("namespace", ""), meta["name"]) or obj)
            sim.changed |= sim.store.rv != before


def _foreground(obj: dict) -> bool:
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and "foregroundDeletion" in (meta.get("finalizers") or [])


def _foreground_due(sim, obj: dict) -> datetime:
    return _first_seen(sim, obj, "deleting") + timedelta(seconds=FOREGROUND_SECONDS)


def orphaned_pods(sim) -> None:
    """Pod GC: pods bound to nodes that no longer exist are deleted."""
    nodes = {n["metadata"]["name"] for n in sim.items("nodes")}
    for pod in sim.items("pods"):
        if pod["spec"].get("nodeName") and pod["spec"]["nodeName"] not in nodes:
            sim.delete(sim.rt("pods"), pod)


def bind_claims(sim) -> None:
    """A default storage class that provisions at once: Pending claims become Bound."""
    rt = sim.rt("persistentvolumeclaims")
    for pvc in sim.items("persistentvolumeclaims"):
        if (pvc.get("status") or {}).get("phase") == "Bound" or pvc["metadata"].get("deletionTimestamp"):
            continue
        spec = pvc["spec"]
        new = clone(pvc)
        new["spec"]["volumeName"] = f"pvc-{pvc['metadata']['uid']}"
        new["spec"].setdefault("storageClassName", "standard")
        new["status"] = {"phase": "Bound", "accessModes": spec.get("accessModes") or [],
                         "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")}}
        sim.write(rt, new, pvc)


def next_due(sim) -> datetime | None:
    """When a namespace's ServiceAccount or a CRD's establishment is due."""
    moments = []
    settings = sim.api.settings
    for ns in sim.items("namespaces"):
        if sim.store.get(("", "serviceaccounts"), ns["metadata"]["name"], "default") is None:
            moments.append(_first_seen(sim, ns) + timedelta(seconds=settings.serviceaccount_delay))
    for crd in sim.items("customresourcedefinitions", "apiextensions.k8s.io"):
        if not (crd.get("status") or {}).get("conditions"):
            moments.append(_first_seen(sim, crd) + timedelta(seconds=settings.crd_establish_delay))
    for key in {t.key for t in sim.api.registry.all() if t.plural != "selfsubjectaccessreviews"}:
        moments += [_foreground_due(sim, obj) for obj in sim.store.view(key) if _foreground(obj)]
    return min(moments) if moments else None
