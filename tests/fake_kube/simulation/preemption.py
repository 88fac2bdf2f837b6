"""The scheduler's DefaultPreemption: a pending pod that fits nowhere evicts lower-priority pods from the node where
that makes it fit (fewest and least important victims), is nominated to that node, and binds once they are gone."""
from __future__ import annotations

from collections import Counter

from ..store import clone
from .cluster import SCHEDULER, node_reasons, pod_requests

RESOURCE_REASONS = ("Insufficient", "Too many")


def priority(pod: dict) -> int:
    """spec.priority (0 when absent, as the scheduler reads it)."""
    return pod["spec"].get("priority") or 0


def _usage_without(pods: list[dict]) -> Counter:
    used: Counter = Counter()
    for pod in pods:
        used.update(pod_requests(pod))
        used["pods"] += 1
    return used


def _victims(pod: dict, node: dict, running: list[dict]) -> list[dict] | None:
    """The victims on one node (None: evicting every lower-priority pod would still not make room): remove all
    lower-priority pods, then reprieve as many as still fit, most important first."""
    lower = [p for p in running if priority(p) < priority(pod)]
    if not lower:
        return None
    kept = [p for p in running if priority(p) >= priority(pod)]
    if node_reasons(pod, node, _usage_without(kept)):
        return None
    victims = []
    for candidate in sorted(lower, key=lambda p: (-priority(p), p["metadata"]["creationTimestamp"])):
        if node_reasons(pod, node, _usage_without(kept + [candidate])):
            victims.append(candidate)
        else:
            kept.append(candidate)
    return victims


def preempt(sim, pod: dict, nodes: list[dict], fit_message: str) -> bool:
    """Try preemption for a pod that fits nowhere; True when victims were evicted and the pod nominated."""
    by_node: dict[str, list[dict]] = {}
    for other in sim.items("pods"):
        name = other["spec"].get("nodeName")
        if name and not other["metadata"].get("deletionTimestamp") \
                and (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            by_node.setdefault(name, []).append(other)
    candidates = []
    for node in nodes:
        why = node_reasons(pod, node, _usage_without(by_node.get(node["metadata"]["name"], [])))
        if not why or not all(r.startswith(RESOURCE_REASONS) for r in why):
            continue  # preemption does not help where a taint, selector or readiness is the reason
        victims = _victims(pod, node, by_node.get(node["metadata"]["name"], []))
        if victims is not None:
            key = (max(priority(v) for v in victims), sum(priority(v) for v in victims), len(victims))
            candidates.append((key, node["metadata"]["name"], victims))
    if not candidates:
        return False
    _, node_name, victims = min(candidates, key=lambda c: (c[0], c[1]))
    for victim in victims:
        _evict(sim, victim, pod, node_name)
    _nominate(sim, pod, node_name, fit_message)
    return True


def _evict(sim, victim: dict, preemptor: dict, node_name: str) -> None:
    status = clone(victim.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c["type"] != "DisruptionTarget"]
    status["conditions"] = conditions + [{
        "type": "DisruptionTarget", "status": "True", "lastProbeTime": None, "lastTransitionTime": sim.clock.stamp(),
        "reason": "PreemptionByScheduler",
        "message": f"{preemptor['spec'].get('schedulerName', SCHEDULER)}: preempting to accommodate a higher "
                   f"priority pod"}]
    marked = sim.set_status(sim.rt("pods"), victim, status)
    sim.events.record(marked, "Preempted", f"Preempted by pod {preemptor['metadata']['uid']} on node {node_name}",
                      component=SCHEDULER)
    sim.delete(sim.rt("pods"), marked)


def _nominate(sim, pod: dict, node_name: str, message: str) -> None:
    status = clone(pod.get("status") or {})
    status["nominatedNodeName"] = node_name
    conditions = [c for c in status.get("conditions") or [] if c["type"] != "PodScheduled"]
    status["conditions"] = conditions + [{"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                          "lastTransitionTime": sim.clock.stamp(), "reason": "Unschedulable",
                                          "message": message}]
    updated = sim.set_status(sim.rt("pods"), pod, status)
    sim.events.record(updated, "FailedScheduling", message, "Warning", SCHEDULER)
