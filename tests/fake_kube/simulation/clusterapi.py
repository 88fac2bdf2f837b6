"""Cluster API's MachineDeployment controller and a cluster-autoscaler (clusterapi provider) on the fake clock.

MachineDeployments (any) get one Node per replica, `launch_seconds` after the replica appeared (no Machine or
MachineSet objects are served: the fake keeps the machines in memory), labelled from the template labels CAPI syncs
to Nodes (the `node.cluster.x-k8s.io/` domain and its subdomains, `node-role.kubernetes.io/`,
`node-restriction.kubernetes.io/`), plus the scale-from-zero `capacity.cluster-autoscaler.kubernetes.io/labels`, and
tainted with `.../taints`; status replicas/readyReplicas/availableReplicas/upToDateReplicas follow. Fewer replicas
delete the newest nodes. While `fail_launches(<md name>)` holds, new machines never come up.

The autoscaler handles MachineDeployments carrying both `cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size`
and `-max-size`. A node group's template is its capacity annotations (cpu, memory, gpu-count/gpu-type, maxPods,
labels, taints) or, without them, one of its nodes. An Unschedulable pod that fits the template of a group raises that
group's `spec.replicas` (never above max; pods already covered by machines still launching wait for them), with the
autoscaler's events (`TriggeredScaleUp` `pod triggered scale-up: [{MachineDeployment/<ns>/<name> 0->1 (max: 3)}]`;
`NotTriggerScaleUp` `pod didn't trigger scale-up: 1 max node group size reached` or the predicate that failed). A
node with no pods (DaemonSets and finished pods aside) for the group's
`cluster.x-k8s.io/autoscaling-options-scaledownunneededtime` (default 10m) is removed and replicas lowered, never
below min. Not modelled: utilisation-based scale-down of non-empty nodes, scale-down-delay-after-add, expanders.
"""
from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

from ..errors import ApiError
from ..store import clone
from .cluster import node_manifest, node_reasons, pod_requests

GROUP, VERSION = "cluster.x-k8s.io", "v1beta2"
MIN_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
UNNEEDED = "cluster.x-k8s.io/autoscaling-options-scaledownunneededtime"
DEFAULT_UNNEEDED = 600.0
SYNCED_LABEL = re.compile(r"^(([^/]*\.)?node\.cluster\.x-k8s\.io|node-role\.kubernetes\.io|"
                          r"([^/]*\.)?node-restriction\.kubernetes\.io)/")
COMPONENT = "cluster-autoscaler"


def go_duration(text: str | None) -> float | None:
    """A Go duration (`10m0s`, `1h`, `90s`, `500ms`) in seconds; None if it does not parse."""
    if not text or not re.fullmatch(r"(\d+(\.\d+)?(h|m|s|ms|us|ns))+", text):
        return None
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
    return sum(float(n) * units[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(h|ms|us|ns|m|s)", text))


def _pairs(text: str) -> list[tuple[str, str]]:
    return [tuple(item.split("=", 1)) for item in (text or "").split(",") if "=" in item]


class ClusterAutoscaler:
    """MachineDeployment replicas → Nodes; autoscaler annotations → replicas (enabled by install_cluster_api)."""

    def __init__(self, sim):
        self.sim = sim
        self.enabled = False
        self.launch_seconds = 30.0
        self.failures: dict = {}  # MachineDeployment name (None: all) -> (reason, message)
        self.machines: dict[str, list[dict]] = {}  # MachineDeployment uid -> [{"name", "created", "node"}]
        self.unneeded: dict[str, object] = {}  # node -> since when it has been empty
        self.recorded: set = set()

    def enable(self, launch_seconds: float) -> None:
        """Start acting on MachineDeployments."""
        self.enabled, self.launch_seconds = True, launch_seconds

    def rt(self):
        """The served MachineDeployment type."""
        return self.sim.api.registry.find(GROUP, VERSION, "machinedeployments")

    def deployments(self) -> list[dict]:
        """Live MachineDeployments."""
        return [md for md in self.sim.items("machinedeployments", GROUP) if not md["metadata"].get("deletionTimestamp")]

    def _event(self, obj: dict, reason: str, message: str) -> None:
        key = (obj["metadata"]["uid"], reason, message)
        if key not in self.recorded:
            self.recorded.add(key)
            self.sim.events.record(obj, reason, message, component=COMPONENT)

    # --- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        """Machines and nodes for every MachineDeployment, then the autoscaler's scale-up and scale-down."""
        if not self.enabled or self.rt() is None:
            return
        for md in self.deployments():
            self._machines(md)
        self._scale_up()
        self._scale_down()
        for md in self.deployments():
            self._status(md)

    def next_due(self):
        """The next node registration or scale-down moment."""
        if not self.enabled or self.rt() is None:
            return None
        moments = [m["created"] + timedelta(seconds=self.launch_seconds)
                   for ms in self.machines.values() for m in ms if m["node"] is None]
        for md in self.deployments():
            wait = self._unneeded_seconds(md)
            moments += [self.unneeded[m["node"]] + timedelta(seconds=wait) for m in self.machines.get(md["metadata"]["uid"], [])
                        if m["node"] in self.unneeded]
        now = self.sim.now()
        future = [m for m in moments if m > now]
        return min(future) if future else None

    # --- the MachineDeployment controller -------------------------------------------------------

    def _machines(self, md: dict) -> None:
        machines = self.machines.setdefault(md["metadata"]["uid"], [])
        wanted = md["spec"].get("replicas", 1)
        while len(machines) < wanted:
            machines.append({"name": f"{md['metadata']['name']}-{self.sim.api.rng.randrange(16**5):05x}",
                             "created": self.sim.now(), "node": None})
        while len(machines) > wanted:
            gone = machines.pop()  # the newest first (a scale-down picks its node itself, below)
            if gone["node"]:
                self._delete_node(gone["node"])
        failing = md["metadata"]["name"] in self.failures or None in self.failures
        for machine in machines:
            due = machine["created"] + timedelta(seconds=self.launch_seconds)
            if machine["node"] is None and not failing and self.sim.now() >= due:
                machine["node"] = self._create_node(md, machine["name"])

    def _node_labels(self, md: dict) -> dict:
        template = md["spec"]["template"].get("metadata") or {}
        labels = {k: v for k, v in (template.get("labels") or {}).items() if SYNCED_LABEL.match(k)}
        annotations = md["metadata"].get("annotations") or {}
        labels.update(dict(_pairs(annotations.get(CAPACITY + "labels", ""))))
        return labels

    @staticmethod
    def _taints(md: dict) -> list[dict]:
        taints = []
        for key, rest in _pairs((md["metadata"].get("annotations") or {}).get(CAPACITY + "taints", "")):
            value, _, effect = rest.partition(":")
            taints.append({"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect})
        return taints

    def _template_node(self, md: dict, name: str) -> dict | None:
        """The node a new machine of this group would become (None: no capacity annotations and no node to copy)."""
        annotations = md["metadata"].get("annotations") or {}
        if CAPACITY + "cpu" in annotations and CAPACITY + "memory" in annotations:
            gpu = int(annotations.get(CAPACITY + "gpu-count", "0") or 0)
            node = node_manifest(name, annotations[CAPACITY + "cpu"], annotations[CAPACITY + "memory"], gpu,
                                 self._node_labels(md), self._taints(md), pods=int(annotations.get(CAPACITY + "maxPods", 110)))
            return node
        existing = [m["node"] for m in self.machines.get(md["metadata"]["uid"], []) if m["node"]]
        source = self.sim.store.get(("", "nodes"), "", existing[0]) if existing else None
        if source is None:
            return None
        node = clone(source)
        node["metadata"] = {"name": name, "labels": {**source["metadata"].get("labels", {}), "kubernetes.io/hostname": name}}
        return node

    def _create_node(self, md: dict, name: str) -> str | None:
        node = self._template_node(md, name)
        if node is None:
            return None
        node["metadata"]["annotations"] = {"cluster.x-k8s.io/cluster-name": md["spec"]["clusterName"],
                                           "cluster.x-k8s.io/machine": name, "cluster.x-k8s.io/owner-kind": "MachineSet",
                                           "cluster.x-k8s.io/owner-name": f"{md['metadata']['name']}-ms"}
        node["spec"]["providerID"] = f"azure:///subscriptions/fake/virtualMachines/{name}"
        try:
            self.sim.create(self.sim.rt("nodes"), node, manager="capi-controller-manager")
        except ApiError:
            return None
        return name

    def _delete_node(self, name: str) -> None:
        node = self.sim.store.get(("", "nodes"), "", name)
        if node is not None:
            self.sim.delete(self.sim.rt("nodes"), node)
        self.unneeded.pop(name, None)

    def _status(self, md: dict) -> None:
        machines = self.machines.get(md["metadata"]["uid"], [])
        ready = sum(1 for m in machines if m["node"] and self.sim.store.get(("", "nodes"), "", m["node"]) is not None)
        wanted = md["spec"].get("replicas", 1)
        selector = ",".join(f"{k}={v}" for k, v in sorted(((md["spec"].get("selector") or {}).get("matchLabels") or {}).items()))
        phase = "ScalingUp" if len(machines) < wanted or ready < wanted else "Running"
        status = {"observedGeneration": md["metadata"].get("generation", 1), "selector": selector,
                  "replicas": len(machines), "readyReplicas": ready, "availableReplicas": ready,
                  "upToDateReplicas": len(machines), "phase": phase}
        self.sim.set_status(self.rt(), md, status)

    # --- the autoscaler -------------------------------------------------------------------------

    def groups(self) -> list[dict]:
        """Autoscaled MachineDeployments (both size annotations set)."""
        return [md for md in self.deployments() if MIN_SIZE in (md["metadata"].get("annotations") or {})
                and MAX_SIZE in (md["metadata"].get("annotations") or {})]

    @staticmethod
    def _bounds(md: dict) -> tuple[int, int]:
        annotations = md["metadata"]["annotations"]
        return int(annotations[MIN_SIZE]), int(annotations[MAX_SIZE])

    def _scale_up(self) -> None:
        pending = [p for p in self.sim.items("pods") if not p["spec"].get("nodeName")
                   and not p["metadata"].get("deletionTimestamp") and not (p.get("status") or {}).get("nominatedNodeName")
                   and any(c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get("conditions") or [])]
        if not pending:
            return
        upcoming = {md["metadata"]["uid"]: [Counter() for m in self.machines.get(md["metadata"]["uid"], [])
                                           if m["node"] is None] for md in self.groups()}
        increases: dict[str, int] = {}
        for pod in sorted(pending, key=lambda p: p["metadata"]["creationTimestamp"]):
            self._place(pod, upcoming, increases)
        for md in self.groups():
            extra = increases.get(md["metadata"]["uid"], 0)
            if extra:
                new = clone(md)
                new["spec"]["replicas"] = md["spec"].get("replicas", 0) + extra
                self.sim.write(self.rt(), new, md)

    def _place(self, pod: dict, upcoming: dict, increases: dict) -> None:
        reasons: Counter = Counter()
        for md in self.groups():
            uid = md["metadata"]["uid"]
            template = self._template_node(md, "template")
            if template is None:
                continue
            why = node_reasons(pod, template, Counter())
            if why:
                reasons.update(why[:1])
                continue
            for used in upcoming[uid]:  # room on a machine already launching
                if not node_reasons(pod, template, used):
                    used.update({**pod_requests(pod), "pods": 1})
                    return
            low, high = self._bounds(md)
            current = md["spec"].get("replicas", 0)
            if current + increases.get(uid, 0) >= high:
                reasons["max node group size reached"] += 1
                continue
            increases[uid] = increases.get(uid, 0) + 1
            upcoming[uid].append(Counter({**pod_requests(pod), "pods": 1}))
            before, after = current, current + increases[uid]
            self._event(pod, "TriggeredScaleUp", f"pod triggered scale-up: [{{MachineDeployment/"
                                                 f"{md['metadata']['namespace']}/{md['metadata']['name']} "
                                                 f"{before}->{after} (max: {high})}}]")
            return
        if reasons:
            message = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
            self._event(pod, "NotTriggerScaleUp", f"pod didn't trigger scale-up: {message}")

    def _unneeded_seconds(self, md: dict) -> float:
        value = go_duration((md["metadata"].get("annotations") or {}).get(UNNEEDED))
        return DEFAULT_UNNEEDED if value is None else value

    def _scale_down(self) -> None:
        busy = {p["spec"].get("nodeName") for p in self.sim.items("pods")
                if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                and "DaemonSet" not in [r.get("kind") for r in p["metadata"].get("ownerReferences") or []]}
        busy |= {(p.get("status") or {}).get("nominatedNodeName") for p in self.sim.items("pods")}
        for md in self.groups():
            low, _ = self._bounds(md)
            machines = self.machines.get(md["metadata"]["uid"], [])
            for machine in list(machines):
                node = machine["node"]
                if node is None or node in busy:
                    self.unneeded.pop(node, None)
                    continue
                since = self.unneeded.setdefault(node, self.sim.now())
                if len(machines) <= low or (self.sim.now() - since).total_seconds() < self._unneeded_seconds(md):
                    continue
                machines.remove(machine)
                self._delete_node(node)
                md = self.sim.store.get((GROUP, "machinedeployments"), md["metadata"]["namespace"], md["metadata"]["name"])
                new = clone(md)
                new["spec"]["replicas"] = max(md["spec"].get("replicas", 1) - 1, low)
                md = self.sim.write(self.rt(), new, md)

