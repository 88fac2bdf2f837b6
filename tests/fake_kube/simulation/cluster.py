"""Nodes and the scheduler: binding pending pods where selectors, taints and free resources allow."""
from __future__ import annotations

from collections import Counter
from fractions import Fraction

from ..quantity import QuantityError, canonical, value_of
from ..store import clone

SCHEDULER = "default-scheduler"


def node_manifest(name: str, cpu, memory, gpu: int = 0, labels: dict | None = None, taints: list | None = None,
                  gpu_resource: str = "nvidia.com/gpu", pods: int = 110, address: str = "10.0.0.1") -> dict:
    """A Ready node with this allocatable capacity."""
    capacity = {"cpu": canonical(cpu), "memory": canonical(memory), "pods": str(pods),
                "ephemeral-storage": "100Gi"}
    if gpu:
        capacity[gpu_resource] = str(gpu)
    base_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                   "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {**base_labels, **(labels or {})}},
        "spec": {"taints": list(taints)} if taints else {},
        "status": {
            "capacity": capacity, "allocatable": dict(capacity),
            "conditions": [_condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                           _condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                                      "kubelet has sufficient memory available"),
                           _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                           _condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available")],
            "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.36.0", "kubeProxyVersion": "", "containerRuntimeVersion": "containerd://2.1.0",
                         "operatingSystem": "linux", "architecture": "amd64", "osImage": "Fake Linux",
                         "kernelVersion": "6.8.0", "machineID": "", "systemUUID": "", "bootID": ""},
        },
    }


def _condition(kind: str, status: str, reason: str, message: str) -> dict:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": None, "lastTransitionTime": None}


def pod_requests(pod: dict) -> dict[str, Fraction]:
    """Effective requests, as the scheduler counts them with native sidecars (KEP-753): the main containers and every
    sidecar together, and at least each regular init container with the sidecars started before it."""
    total: Counter = Counter()
    sidecars: Counter = Counter()
    peaks: list[Counter] = []
    for c in pod["spec"].get("initContainers") or []:
        requests = Counter({name: _value(value) for name, value in ((c.get("resources") or {}).get("requests") or {}).items()})
        if c.get("restartPolicy") == "Always":
            sidecars.update(requests)
        else:
            peaks.append(requests + sidecars)
    for c in pod["spec"].get("containers") or []:
        for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] += _value(value)
    total.update(sidecars)
    for peak in peaks:
        for name, value in peak.items():
            total[name] = max(total[name], value)
    return dict(total)


def _value(quantity) -> Fraction:
    try:
        return value_of(quantity)
    except QuantityError:
        return Fraction(0)


def _ready(node: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or [])


def _tolerates(pod: dict, taint: dict) -> bool:
    for tol in pod["spec"].get("tolerations") or []:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists" and (not tol.get("key") or tol["key"] == taint.get("key")):
            return True
        if tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _affinity_matches(pod: dict, labels: dict) -> bool:
    required = ((((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution")) or {}).get("nodeSelectorTerms")
    if not required:
        return True
    return any(all(_expression(e, labels) for e in term.get("matchExpressions") or []) for term in required)


def _expression(expr: dict, labels: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and str(labels.get(key, "")).lstrip("-").isdigit():
        return int(labels[key]) > int(values[0]) if op == "Gt" else int(labels[key]) < int(values[0])
    return False


def usage(sim) -> dict[str, Counter]:
    """Requests of the non-terminated pods bound to each node (and their count, as `pods`)."""
    used: dict[str, Counter] = {}
    for pod in sim.items("pods"):
        node = pod["spec"].get("nodeName")
        if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            used.setdefault(node, Counter()).update(pod_requests(pod))
            used[node]["pods"] += 1
    return used


def node_reasons(pod: dict, node: dict, used: Counter) -> list[str]:
    """Why a pod cannot go to a node (empty when it fits), in the scheduler's filter order and words."""
    if node["spec"].get("unschedulable"):
        return ["node(s) were unschedulable"]
    if not _ready(node):
        return ["node(s) had untolerated taint {node.kubernetes.io/not-ready: }"]
    for taint in node["spec"].get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(pod, taint):
            return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"]
    labels = node["metadata"].get("labels") or {}
    selector = pod["spec"].get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()) or not _affinity_matches(pod, labels):
        return ["node(s) didn't match Pod's node affinity/selector"]
    allocatable = {k: _value(v) for k, v in node["status"].get("allocatable", {}).items()}
    wanted = pod_requests(pod)
    reasons = []
    if used["pods"] + 1 > allocatable.get("pods", 110):
        reasons.append("Too many pods")
    for name in sorted(wanted):
        if wanted[name] > 0 and used[name] + wanted[name] > allocatable.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


def fit_message(total: int, reasons: Counter) -> str:
    """`0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector.`"""
    if total == 0:
        return "no nodes available to schedule pods"
    return f"0/{total} nodes are available: " + ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items())) + "."


def unschedulable_message(total: int, reasons: Counter, resource_nodes: int, never: bool = False) -> str:
    """The fit message followed by why preemption did not help (`preemption: 0/3 nodes are available: ...`)."""
    if total == 0:
        return "no nodes available to schedule pods"
    if never:
        return fit_message(total, reasons) + " preemption: not eligible due to preemptionPolicy=Never."
    parts = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    preemption = []
    if resource_nodes:
        preemption.append(f"{resource_nodes} No preemption victims found for incoming pod")
    if total - resource_nodes:
        preemption.append(f"{total - resource_nodes} Preemption is not helpful for scheduling")
    return f"0/{total} nodes are available: {parts}. preemption: 0/{total} nodes are available: {', '.join(preemption)}."


def schedule(sim) -> None:
    """Bind each pending pod (higher priority first) to the first node that fits; else preempt lower-priority pods
    (simulation.preemption) or mark it Unschedulable with the reasons."""
    from .preemption import preempt  # (preemption builds on this module's filters)
    nodes = sim.items("nodes")
    pods = sorted((p for p in sim.items("pods") if not p["spec"].get("nodeName")
                   and not p["metadata"].get("deletionTimestamp")
                   and p["spec"].get("schedulerName", SCHEDULER) == SCHEDULER
                   and not p["spec"].get("schedulingGates")),
                  key=lambda p: (-(p["spec"].get("priority") or 0), p["metadata"]["creationTimestamp"],
                                 p["metadata"]["name"]))
    used = usage(sim) if pods else {}
    for pod in pods:
        reasons: Counter = Counter()
        resource_nodes = 0
        for node in nodes:
            why = node_reasons(pod, node, used.get(node["metadata"]["name"], Counter()))
            if not why:
                _bind(sim, pod, node)
                used.setdefault(node["metadata"]["name"], Counter()).update(pod_requests(pod))
                used[node["metadata"]["name"]]["pods"] += 1
                break
            reasons.update(why)
            resource_nodes += any(r.startswith(("Insufficient", "Too many")) for r in why)
        else:
            never = pod["spec"].get("preemptionPolicy") == "Never"
            if nodes and not never and preempt(sim, pod, nodes, fit_message(len(nodes), reasons)):
                return  # victims are gone: the next pass binds the preemptor first
            _unschedulable(sim, pod, unschedulable_message(len(nodes), reasons, resource_nodes, never))


def _set_condition(conditions: list, new: dict) -> list:
    out = [c for c in conditions if c["type"] != new["type"]]
    old = next((c for c in conditions if c["type"] == new["type"]), None)
    if old and old.get("status") == new.get("status"):
        new = {**new, "lastTransitionTime": old.get("lastTransitionTime")}
    return out + [new]


def _bind(sim, pod: dict, node: dict) -> None:
    new = clone(pod)
    new["spec"]["nodeName"] = node["metadata"]["name"]
    status = new.setdefault("status", {})
    status["conditions"] = _set_condition(status.get("conditions") or [], {
        "type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": sim.clock.stamp()})
    bound = sim.write(sim.rt("pods"), new, pod)
    sim.events.record(bound, "Scheduled", f"Successfully assigned {pod['metadata']['namespace']}/"
                                          f"{pod['metadata']['name']} to {node['metadata']['name']}",
                      component=SCHEDULER)
    sim.kubelet.bound(bound)


def _unschedulable(sim, pod: dict, message: str) -> None:
    status = clone(pod.get("status") or {})
    current = next((c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"), None)
    if current and current.get("message") == message:
        return
    status["conditions"] = _set_condition(status.get("conditions") or [], {
        "type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": sim.clock.stamp(),
        "reason": "Unschedulable", "message": message})
    updated = sim.set_status(sim.rt("pods"), pod, status)
    sim.events.record(updated, "FailedScheduling", message, "Warning", SCHEDULER)
