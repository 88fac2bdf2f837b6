"""Deployment, ReplicaSet and StatefulSet controllers (simplified rollouts, real status shapes)."""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

from ..clock import parse_stamp, stamp
from ..errors import ApiError
from ..prepare import NAME_CHARS
from ..store import clone

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


def template_hash(template: dict) -> str:
    """A stable 10-character hash of a pod template (like ComputeHash, different digits)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(NAME_CHARS[b % len(NAME_CHARS)] for b in digest[:10])


def _ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def _live(pods: list[dict]) -> list[dict]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]


def _pod(owner: dict, template: dict, generate: str | None = None, name: str | None = None) -> dict:
    tmpl = clone(template)
    meta = {"namespace": owner["metadata"]["namespace"], "labels": dict((tmpl.get("metadata") or {}).get("labels") or {}),
            "ownerReferences": [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                 "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                 "controller": True, "blockOwnerDeletion": True}]}
    if (tmpl.get("metadata") or {}).get("annotations"):
        meta["annotations"] = dict(tmpl["metadata"]["annotations"])
    meta.update({"generateName": generate} if generate else {"name": name})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"]}


def _create(sim, owner: dict, pod: dict, component: str) -> dict | None:
    try:
        created = sim.create(sim.rt("pods"), pod)
    except ApiError as error:
        sim.events.record(owner, "FailedCreate", f"Error creating: {error.message}", "Warning", component)
        return None
    sim.events.record(owner, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}", component=component)
    return created


# --- Deployments -------------------------------------------------------------------------------

def deployments(sim) -> None:
    """Keep one ReplicaSet per Deployment template at spec.replicas (older ones at 0) and report status."""
    for deploy in sim.items("deployments", "apps"):
        if deploy["metadata"].get("deletionTimestamp"):
            continue
        spec = deploy["spec"]
        digest = template_hash(spec["template"])
        owned = sim.owned_by(deploy, "replicasets", "apps")
        current = next((rs for rs in owned if rs["metadata"].get("labels", {}).get(HASH_LABEL) == digest), None)
        revision = 1 + max((int(rs["metadata"].get("annotations", {}).get(REVISION, "0")) for rs in owned), default=0)
        if current is None:
            current = _new_replicaset(sim, deploy, digest, revision)
        elif current["spec"].get("replicas") != spec.get("replicas", 1):
            sim.write(sim.rt("replicasets", "apps"), {**clone(current), "spec": {
                **current["spec"], "replicas": spec.get("replicas", 1)}}, current)
        for rs in owned:
            if rs is not current and rs["metadata"]["name"] != current["metadata"]["name"] and rs["spec"].get("replicas"):
                sim.write(sim.rt("replicasets", "apps"), {**clone(rs), "spec": {**rs["spec"], "replicas": 0}}, rs)
        _deployment_status(sim, deploy, current)


def _new_replicaset(sim, deploy: dict, digest: str, revision: int) -> dict:
    template = clone(deploy["spec"]["template"])
    template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = digest
    selector = clone(deploy["spec"]["selector"])
    selector.setdefault("matchLabels", {})[HASH_LABEL] = digest
    name = f"{deploy['metadata']['name']}-{digest}"
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": name, "namespace": deploy["metadata"]["namespace"],
                       "labels": dict(template["metadata"]["labels"]), "annotations": {REVISION: str(revision)},
                       "ownerReferences": [sim.owner_reference(deploy)]},
          "spec": {"replicas": deploy["spec"].get("replicas", 1), "selector": selector, "template": template}}
    created = sim.create(sim.rt("replicasets", "apps"), rs)
    sim.events.record(deploy, "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to "
                                                   f"{rs['spec']['replicas']}", component="deployment-controller")
    annotations = dict(deploy["metadata"].get("annotations") or {}, **{REVISION: str(revision)})
    sim.write(sim.rt("deployments", "apps"), {**clone(deploy), "metadata": {**deploy["metadata"],
                                                                          "annotations": annotations}}, deploy)
    return created


def _deployment_status(sim, deploy: dict, current: dict) -> None:
    deploy = sim.store.get(("apps", "deployments"), deploy["metadata"]["namespace"], deploy["metadata"]["name"])
    wanted = deploy["spec"].get("replicas", 1)
    all_pods = [p for rs in sim.owned_by(deploy, "replicasets", "apps") for p in _live(sim.owned_by(rs, "pods"))]
    new_pods = _live(sim.owned_by(current, "pods"))
    ready = sum(_ready(p) for p in all_pods)
    now = stamp(sim.now())
    memory = sim.state.setdefault("deployments", {}).setdefault(deploy["metadata"]["uid"], {"progress": now})
    complete = len(new_pods) == wanted and sum(_ready(p) for p in new_pods) == wanted and len(all_pods) == wanted
    old_status = deploy.get("status") or {}
    if old_status.get("updatedReplicas") != len(new_pods) or old_status.get("readyReplicas") != (ready or None):
        memory["progress"] = now
    rs_name = current["metadata"]["name"]
    if complete:
        progressing = ("True", "NewReplicaSetAvailable", f'ReplicaSet "{rs_name}" has successfully progressed.')
    elif (sim.now() - parse_stamp(memory["progress"])).total_seconds() > deploy["spec"].get("progressDeadlineSeconds", 600):
        progressing = ("False", "ProgressDeadlineExceeded", f'ReplicaSet "{rs_name}" has timed out progressing.')
    else:
        progressing = ("True", "ReplicaSetUpdated", f'ReplicaSet "{rs_name}" is progressing.')
    available = ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.") if ready >= wanted else \
        ("False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
    status = {"observedGeneration": deploy["metadata"].get("generation", 1), "replicas": len(all_pods),
              "updatedReplicas": len(new_pods), "readyReplicas": ready, "availableReplicas": ready,
              "unavailableReplicas": max(wanted - ready, 0),
              "conditions": _conditions(old_status.get("conditions") or [],
                                        [("Available",) + available, ("Progressing",) + progressing], now)}
    for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
        if not status[key]:
            del status[key]
    sim.set_status(sim.rt("deployments", "apps"), deploy, status)


def _conditions(existing: list, wanted: list[tuple], now: str) -> list:
    out = []
    for kind, status, reason, message in wanted:
        old = next((c for c in existing if c["type"] == kind), None)
        same = old and old["status"] == status and old.get("reason") == reason
        transition = old["lastTransitionTime"] if old and old["status"] == status else now
        out.append({"type": kind, "status": status, "lastUpdateTime": old["lastUpdateTime"] if same else now,
                    "lastTransitionTime": transition, "reason": reason, "message": message})
    return out


# --- ReplicaSets -------------------------------------------------------------------------------

def replicasets(sim) -> None:
    """Create or delete pods to match spec.replicas; report replica counts."""
    for rs in sim.items("replicasets", "apps"):
        if rs["metadata"].get("deletionTimestamp"):
            continue
        pods = _live(sim.owned_by(rs, "pods"))
        wanted = rs["spec"].get("replicas", 1)
        for _ in range(wanted - len(pods)):
            _create(sim, rs, _pod(rs, rs["spec"]["template"], generate=f"{rs['metadata']['name']}-"),
                    "replicaset-controller")
        for pod in sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)[:max(len(pods) - wanted, 0)]:
            sim.delete(sim.rt("pods"), pod)
        pods = _live(sim.owned_by(rs, "pods"))
        ready = sum(_ready(p) for p in pods)
        status = {"replicas": len(pods), "fullyLabeledReplicas": len(pods), "readyReplicas": ready,
                  "availableReplicas": ready, "observedGeneration": rs["metadata"].get("generation", 1)}
        sim.set_status(sim.rt("replicasets", "apps"), rs, {k: v for k, v in status.items() if v or k == "replicas"})


# --- StatefulSets ------------------------------------------------------------------------------

def statefulsets(sim) -> None:
    """Ordinal pods (and their claims) for each StatefulSet; outdated pods are replaced."""
    for sts in sim.items("statefulsets", "apps"):
        if sts["metadata"].get("deletionTimestamp"):
            continue
        name, spec = sts["metadata"]["name"], sts["spec"]
        revision = f"{name}-{template_hash(spec['template'])}"
        pods = {p["metadata"]["name"]: p for p in _live(sim.owned_by(sts, "pods"))}
        wanted = spec.get("replicas", 1)
        for pod in pods.values():
            ordinal = int(pod["metadata"]["name"].rsplit("-", 1)[1])
            _claim_owners(sim, sts, pod, ordinal, condemned=ordinal >= wanted)
            if ordinal >= wanted or pod["metadata"]["labels"].get("controller-revision-hash") != revision:
                sim.delete(sim.rt("pods"), pod)
        for ordinal in range(wanted):
            pod_name = f"{name}-{ordinal}"
            if pod_name in pods and pods[pod_name]["metadata"]["labels"].get("controller-revision-hash") == revision:
                continue
            if pod_name in pods:
                continue  # being replaced: recreated on a later pass once the old one is gone
            previous = pods.get(f"{name}-{ordinal - 1}")
            if spec.get("podManagementPolicy") == "OrderedReady" and ordinal and not (previous and _ready(previous)):
                break
            _claims(sim, sts, ordinal)
            created = _create(sim, sts, _sts_pod(sts, ordinal, revision), "statefulset-controller")
            if created:
                pods[pod_name] = created
            if spec.get("podManagementPolicy") == "OrderedReady":
                break
        live = _live(sim.owned_by(sts, "pods"))
        ready = sum(_ready(p) for p in live)
        updated = sum(p["metadata"]["labels"].get("controller-revision-hash") == revision for p in live)
        status = {"observedGeneration": sts["metadata"].get("generation", 1), "replicas": len(live),
                  "readyReplicas": ready, "currentReplicas": updated, "updatedReplicas": updated,
                  "availableReplicas": ready, "currentRevision": revision, "updateRevision": revision,
                  "collisionCount": 0}
        sim.set_status(sim.rt("statefulsets", "apps"), sts,
                       {k: v for k, v in status.items() if v or k in ("replicas", "availableReplicas", "collisionCount")})


def _sts_pod(sts: dict, ordinal: int, revision: str) -> dict:
    name = f"{sts['metadata']['name']}-{ordinal}"
    pod = _pod(sts, sts["spec"]["template"], name=name)
    pod["metadata"]["labels"].update({"statefulset.kubernetes.io/pod-name": name, "apps.kubernetes.io/pod-index":
                                      str(ordinal), "controller-revision-hash": revision})
    pod["spec"]["hostname"] = name
    if sts["spec"].get("serviceName"):
        pod["spec"]["subdomain"] = sts["spec"]["serviceName"]
    volumes = pod["spec"].setdefault("volumes", [])
    for claim in sts["spec"].get("volumeClaimTemplates") or []:
        claim_name = claim["metadata"]["name"]
        if not any(v.get("name") == claim_name for v in volumes):
            volumes.append({"name": claim_name, "persistentVolumeClaim": {
                "claimName": f"{claim_name}-{name}"}})
    return pod


def _claims(sim, sts: dict, ordinal: int) -> None:
    namespace = sts["metadata"]["namespace"]
    for claim in sts["spec"].get("volumeClaimTemplates") or []:
        claim_name = f"{claim['metadata']['name']}-{sts['metadata']['name']}-{ordinal}"
        if sim.store.get(("", "persistentvolumeclaims"), namespace, claim_name) is not None:
            continue
        labels = dict((claim.get("metadata") or {}).get("labels") or {})
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": claim_name, "namespace": namespace, "labels": labels},
               "spec": clone(claim["spec"])}
        if (sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}).get("whenDeleted") == "Delete":
            pvc["metadata"]["ownerReferences"] = [sim.owner_reference(sts)]
        try:
            sim.create(sim.rt("persistentvolumeclaims"), pvc)
        except ApiError as error:
            sim.events.record(sts, "FailedCreate", f"create Claim {claim_name} failed error: {error.message}",
                              "Warning", "statefulset-controller")


def _claim_owners(sim, sts: dict, pod: dict, ordinal: int, condemned: bool) -> None:
    """updateClaimOwnerRefForSetAndPod: the retention policy as owner references on the pod's claims.

    whenDeleted Delete: the StatefulSet owns the claim (the garbage collector deletes it with the set); whenScaled
    Delete and the pod condemned by a scale-down: the pod owns it instead (deleted with the pod)."""
    policy = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
    owners = [sim.owner_reference(sts)] if policy.get("whenDeleted") == "Delete" else []
    if condemned and policy.get("whenScaled") == "Delete":
        owners = [{"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}]
    rt = sim.rt("persistentvolumeclaims")
    managed = {sts["metadata"]["uid"], pod["metadata"]["uid"]}
    for claim in sts["spec"].get("volumeClaimTemplates") or []:
        name = f"{claim['metadata']['name']}-{sts['metadata']['name']}-{ordinal}"
        current = sim.store.get(rt.key, sts["metadata"]["namespace"], name)
        if current is None or current["metadata"].get("deletionTimestamp"):
            continue
        refs = current["metadata"].get("ownerReferences") or []
        wanted = [r for r in refs if r.get("uid") not in managed] + owners
        if wanted != refs:
            new = clone(current)
            new["metadata"]["ownerReferences"] = wanted
            if not wanted:
                del new["metadata"]["ownerReferences"]
            sim.write(rt, new, current)


def next_due(sim) -> datetime | None:
    """When a Deployment's progress deadline runs out."""
    moments = []
    for deploy in sim.items("deployments", "apps"):
        memory = sim.state.get("deployments", {}).get(deploy["metadata"]["uid"])
        conditions = {c["type"]: c for c in (deploy.get("status") or {}).get("conditions") or []}
        if memory and conditions.get("Progressing", {}).get("reason") == "ReplicaSetUpdated":
            deadline = deploy["spec"].get("progressDeadlineSeconds", 600)
            moments.append(parse_stamp(memory["progress"]) + timedelta(seconds=deadline + 1))
    return min(moments) if moments else None
