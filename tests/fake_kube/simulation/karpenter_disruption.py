"""Karpenter's disruption, simply: expiration, emptiness and (single-node) underutilization.

- `template.spec.expireAfter` (not `Never`): a NodeClaim older than that is deleted, whatever runs on it (expiration is
  forceful in karpenter.sh/v1; `do-not-disrupt` does not stop it).
- `consolidationPolicy: WhenEmpty`: a node without pods (DaemonSet and finished pods aside) for `consolidateAfter` is
  removed (NodeClaim and Node).
- `WhenEmptyOrUnderutilized` also removes a node, after `consolidateAfter` unchanged, whose pods all fit on the other
  nodes as they are: its pods are evicted (deleted; their controllers recreate them) — the trap for running jobs. No
  replacement by a cheaper node, no multi-node consolidation, no prices.
- A pod annotated `karpenter.sh/do-not-disrupt: "true"` blocks voluntary disruption of its node; `consolidateAfter:
  Never` disables it. Budgets (`spec.disruption.budgets[].nodes`, a count or a percentage rounded up) cap how many
  nodes of a pool one pass may remove; a budget's schedule is ignored (treated as always active).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from datetime import datetime, timedelta

from ..clock import parse_stamp
from .cluster import node_reasons, pod_requests

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
POOL_LABEL = "karpenter.sh/nodepool"


def seconds(duration: str | None) -> float | None:
    """`1h30m`, `45s`, `0s` → seconds; `Never`/None → None."""
    if not duration or duration == "Never":
        return None
    return float(sum(int(n) * {"h": 3600, "m": 60, "s": 1}[unit] for n, unit in re.findall(r"(\d+)([hms])", duration)))


def _live_pods(sim, node: str) -> list[dict]:
    return [p for p in sim.items("pods") if p["spec"].get("nodeName") == node
            and not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and "DaemonSet" not in [r.get("kind") for r in p["metadata"].get("ownerReferences") or []]]


def _blocked(pods: list[dict]) -> bool:
    return any((p["metadata"].get("annotations") or {}).get(DO_NOT_DISRUPT) == "true" for p in pods)


def _fits_elsewhere(karpenter, pods: list[dict], node_name: str) -> bool:
    """Whether every pod would fit on some other Ready node as the cluster stands (first fit, counting each other,
    and the pods already headed for a node: nominated by the scheduler or waiting for a NodeClaim)."""
    sim = karpenter.sim
    others = [n for n in sim.items("nodes") if n["metadata"]["name"] != node_name
              and not n["metadata"].get("deletionTimestamp")]
    headed = {uid: (c.get("status") or {}).get("nodeName") for c in karpenter.claims()
              for uid in karpenter.reserved.get(c["metadata"]["name"], [])}
    used: dict[str, Counter] = {}
    for pod in sim.items("pods"):
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or pod["metadata"].get("deletionTimestamp"):
            continue
        target = pod["spec"].get("nodeName") or (pod.get("status") or {}).get("nominatedNodeName") \
            or headed.get(pod["metadata"]["uid"])
        if target:
            used.setdefault(target, Counter()).update({**pod_requests(pod), "pods": 1})
    for pod in pods:
        target = next((n for n in others if not node_reasons(pod, n, used.get(n["metadata"]["name"], Counter()))), None)
        if target is None:
            return False
        used.setdefault(target["metadata"]["name"], Counter()).update({**pod_requests(pod), "pods": 1})
    return True


def _allowed(pool: dict, total: int) -> int:
    allowed = total
    for budget in (pool["spec"].get("disruption") or {}).get("budgets") or []:
        nodes = str(budget.get("nodes", "10%"))
        value = math.ceil(total * int(nodes[:-1]) / 100) if nodes.endswith("%") else int(nodes)
        allowed = min(allowed, value)
    return allowed


def _remove(karpenter, claim: dict, reason: str) -> None:
    sim = karpenter.sim
    node_name = (claim.get("status") or {}).get("nodeName")
    node = sim.store.get(("", "nodes"), "", node_name) if node_name else None
    sim.events.record(node or claim, "DisruptionTerminating", f"Disrupting NodeClaim: {reason}", component="karpenter")
    for pod in _live_pods(sim, node_name) if node_name else []:
        sim.delete(sim.rt("pods"), pod)  # drained: evicted pods go, their controllers make new ones
    if node is not None:
        sim.delete(sim.rt("nodes"), node)
    sim.delete(karpenter.rt("nodeclaims"), claim)
    karpenter.reserved.pop(claim["metadata"]["name"], None)
    karpenter.empty_since = {k: v for k, v in karpenter.empty_since.items() if k[0] != node_name}


def _since(karpenter, node_name: str, state: str) -> datetime:
    """When the node entered its current state (empty / consolidatable); reset when the state changes."""
    key = (node_name, state)
    for other in [k for k in karpenter.empty_since if k[0] == node_name and k != key]:
        karpenter.empty_since.pop(other)
    return karpenter.empty_since.setdefault(key, karpenter.sim.now())


def _candidate(karpenter, pool: dict, claim: dict):
    """(reason, due moment) for a claim's node, or None when it must stay."""
    sim = karpenter.sim
    spec = pool["spec"]
    created = parse_stamp(claim["metadata"]["creationTimestamp"])
    expire = seconds(claim["spec"].get("expireAfter"))
    if expire is not None:
        if sim.now() >= created + timedelta(seconds=expire):
            return "Expired", created + timedelta(seconds=expire)
    node_name = (claim.get("status") or {}).get("nodeName")
    disruption = spec.get("disruption") or {}
    wait = seconds(disruption.get("consolidateAfter", "0s"))
    nominated = any(p["status"].get("nominatedNodeName") == node_name and not p["spec"].get("nodeName")
                    for p in sim.items("pods") if node_name and p.get("status"))
    if node_name is None or wait is None or karpenter.awaited(claim) or nominated:  # a pod is about to land there
        return ("NotDue", created + timedelta(seconds=expire)) if expire is not None else None
    pods = _live_pods(sim, node_name)
    if _blocked(pods):
        karpenter.empty_since = {k: v for k, v in karpenter.empty_since.items() if k[0] != node_name}
        return ("NotDue", created + timedelta(seconds=expire)) if expire is not None else None
    if not pods:
        return "Empty", _since(karpenter, node_name, "empty") + timedelta(seconds=wait)
    if disruption.get("consolidationPolicy", "WhenEmptyOrUnderutilized") == "WhenEmptyOrUnderutilized" \
            and _fits_elsewhere(karpenter, pods, node_name):
        return "Underutilized", _since(karpenter, node_name, "underutilized") + timedelta(seconds=wait)
    karpenter.empty_since = {k: v for k, v in karpenter.empty_since.items() if k[0] != node_name}
    return ("NotDue", created + timedelta(seconds=expire)) if expire is not None else None


def disrupt(karpenter) -> None:
    """One disruption pass over every NodePool."""
    for pool in karpenter.pools():
        claims = karpenter.claims(pool["metadata"]["name"])
        allowed = _allowed(pool, len(claims))
        for claim in claims:
            found = _candidate(karpenter, pool, claim)
            if found is None or found[0] == "NotDue" or karpenter.sim.now() < found[1]:
                continue
            if found[0] != "Expired":
                if allowed <= 0:
                    continue
                allowed -= 1
            _remove(karpenter, claim, found[0])


def disruption_due(karpenter) -> list[datetime]:
    """Future moments a node becomes removable."""
    moments = []
    for pool in karpenter.pools():
        for claim in karpenter.claims(pool["metadata"]["name"]):
            found = _candidate(karpenter, pool, claim)
            if found is not None:
                moments.append(found[1])
    return moments
