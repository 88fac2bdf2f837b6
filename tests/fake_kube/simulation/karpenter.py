"""A Karpenter-like controller on the fake clock: NodeClaims for unschedulable pods, Nodes after a launch delay,
NodePool status; disruption is in karpenter_disruption.py.

Provisioning, as Karpenter does it in outline: a pod that the scheduler marked Unschedulable (and that is not being
helped by preemption: no nominatedNodeName) first looks for room on a NodeClaim still launching (event `Nominated`);
else the NodePools are tried by weight, each with the smallest instance type (Spot first where allowed) whose labels
satisfy the pool's requirements and the pod's selector/affinity, whose taints the pod tolerates and whose allocatable
fits it, within `spec.limits`. No batching window, no daemonset overhead, no startupTaints, no drift.
"""
from __future__ import annotations

from collections import Counter
from datetime import timedelta
from fractions import Fraction

from ..clock import parse_stamp
from ..errors import ApiError
from ..prepare import generated_name
from ..quantity import QuantityError, value_of
from ..store import clone
from .cluster import _expression, node_manifest, node_reasons, pod_requests
from .instancetypes import DEFAULT_INSTANCE_TYPES, quantity_text

GROUP, VERSION = "karpenter.sh", "v1"
POOL_LABEL = "karpenter.sh/nodepool"
COMPONENT = "karpenter"
RETRY_SECONDS = 10.0  # a NodeClaim whose launch failed stays Launched=False this long, then is deleted and retried
LIMIT_KEYS = ("cpu", "memory", "nvidia.com/gpu")


def condition(kind: str, status: str, reason: str, now: str, message: str = "", generation: int = 1) -> dict:
    """A status condition in operatorpkg's shape."""
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": now,
            "observedGeneration": generation}


def requirement_ok(req: dict, labels: dict) -> bool:
    """A NodeSelectorRequirement (with Karpenter's Gte/Lte) against a node's labels."""
    op, key, values = req.get("operator"), req.get("key"), req.get("values") or []
    if op in ("Gte", "Lte"):
        value = labels.get(key, "")
        if not value.lstrip("-").isdigit() or not values:
            return False
        return int(value) >= int(values[0]) if op == "Gte" else int(value) <= int(values[0])
    return _expression(req, labels)


def _quantity(value) -> Fraction:
    try:
        return value_of(value)
    except QuantityError:
        return Fraction(0)


def _pending(pod: dict) -> bool:
    spec, status = pod["spec"], pod.get("status") or {}
    scheduled = next((c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"), {})
    owners = [r.get("kind") for r in pod["metadata"].get("ownerReferences") or []]
    return (not spec.get("nodeName") and not pod["metadata"].get("deletionTimestamp")
            and scheduled.get("reason") == "Unschedulable" and not status.get("nominatedNodeName")
            and "DaemonSet" not in owners)


class Karpenter:
    """Provisioning and disruption for NodePools (enabled by FakeKube.install_karpenter)."""

    def __init__(self, sim):
        self.sim = sim
        self.enabled = False
        self.instance_types: dict = {}
        self.launch_seconds = 30.0
        self.failures: dict = {}  # pool (None: every pool) -> (reason, message)
        self.reserved: dict[str, list[str]] = {}  # NodeClaim name -> uids of the pods it was launched or nominated for
        self.recorded: set = set()  # (uid, message) of events already written (Karpenter rate-limits its events)
        self.empty_since: dict[tuple, object] = {}  # (node, empty|underutilized) -> since when (disruption)

    def enable(self, instance_types: dict | None, launch_seconds: float) -> None:
        """Start acting on NodePools."""
        self.enabled, self.launch_seconds = True, launch_seconds
        self.instance_types = dict(instance_types or DEFAULT_INSTANCE_TYPES)

    # --- access ---------------------------------------------------------------------------------

    def rt(self, plural: str):
        """The served type of nodepools/nodeclaims."""
        return self.sim.api.registry.find(GROUP, VERSION, plural)

    def pools(self) -> list[dict]:
        """NodePools, highest weight first."""
        return sorted((p for p in self.sim.items("nodepools", GROUP) if not p["metadata"].get("deletionTimestamp")),
                      key=lambda p: (-(p["spec"].get("weight") or 0), p["metadata"]["name"]))

    def claims(self, pool: str | None = None) -> list[dict]:
        """Live NodeClaims (of one pool)."""
        return [c for c in self.sim.items("nodeclaims", GROUP) if not c["metadata"].get("deletionTimestamp")
                and (pool is None or c["metadata"].get("labels", {}).get(POOL_LABEL) == pool)]

    def event(self, obj: dict, reason: str, message: str, kind: str = "Normal") -> None:
        """Record an event once per object and message."""
        key = (obj["metadata"].get("uid"), reason, message)
        if key not in self.recorded:
            self.recorded.add(key)
            self.sim.events.record(obj, reason, message, kind, COMPONENT)

    # --- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        """Launch/register NodeClaims, provision for pending pods, disrupt, report NodePool status."""
        if not self.enabled or self.rt("nodeclaims") is None:
            return
        from .karpenter_disruption import disrupt
        for claim in self.claims():
            self._lifecycle(claim)
        for pod in sorted((p for p in self.sim.items("pods") if _pending(p)),
                          key=lambda p: (-(p["spec"].get("priority") or 0), p["metadata"]["creationTimestamp"])):
            self._provision(pod)
        disrupt(self)
        for pool in self.pools():
            self._pool_status(pool)

    def next_due(self):
        """The next registration, retry, or disruption moment."""
        if not self.enabled or self.rt("nodeclaims") is None:
            return None
        from .karpenter_disruption import disruption_due
        moments = [m for m in (self._claim_due(c) for c in self.claims()) if m is not None]
        moments += disruption_due(self)
        return min(moments) if moments else None

    def _claim_due(self, claim: dict):
        created = parse_stamp(claim["metadata"]["creationTimestamp"])
        if self._launch_failed(claim):
            return created + timedelta(seconds=RETRY_SECONDS)
        if not (claim.get("status") or {}).get("nodeName"):
            return created + timedelta(seconds=self.launch_seconds)
        return None

    # --- NodeClaim lifecycle --------------------------------------------------------------------

    @staticmethod
    def _launch_failed(claim: dict) -> bool:
        return any(c["type"] == "Launched" and c["status"] == "False"
                   for c in (claim.get("status") or {}).get("conditions") or [])

    def _lifecycle(self, claim: dict) -> None:
        age = self.sim.age(claim)
        if self._launch_failed(claim):
            if age >= RETRY_SECONDS:  # Karpenter deletes a NodeClaim it could not launch; the pods bring another
                self.reserved.pop(claim["metadata"]["name"], None)
                self.sim.delete(self.rt("nodeclaims"), claim)
            return
        if not (claim.get("status") or {}).get("nodeName") and age >= self.launch_seconds:
            self._register(claim)

    def _register(self, claim: dict) -> None:
        """The instance joined: its Node appears (labels, taints, allocatable) and the claim turns Ready."""
        name = claim["metadata"]["name"]
        status = claim.get("status") or {}
        labels = {**claim["metadata"].get("labels", {}), "karpenter.sh/registered": "true",
                  "karpenter.sh/initialized": "true"}
        node = node_manifest(name, "1", "1", 0, labels, claim["spec"].get("taints"), pods=110,
                             address=f"10.1.{len(self.sim.items('nodes')) // 250}.{len(self.sim.items('nodes')) % 250 + 10}")
        node["status"]["capacity"], node["status"]["allocatable"] = dict(status["capacity"]), dict(status["allocatable"])
        node["spec"]["providerID"] = status.get("providerID")
        node["metadata"]["ownerReferences"] = [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeClaim", "name": name,
                                                "uid": claim["metadata"]["uid"], "blockOwnerDeletion": True}]
        try:
            self.sim.create(self.sim.rt("nodes"), node, manager="karpenter")
        except ApiError:
            return
        now = self.sim.clock.stamp()
        new_status = clone(status)
        new_status["nodeName"] = name
        new_status["conditions"] = [c for c in new_status["conditions"] if c["type"] == "Launched"] + [
            condition("Registered", "True", "Registered", now), condition("Initialized", "True", "Initialized", now),
            condition("Ready", "True", "Ready", now)]
        self.sim.set_status(self.rt("nodeclaims"), claim, new_status)

    # --- provisioning ---------------------------------------------------------------------------

    def _provision(self, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        if any(self._launch_failed(c) and uid in self.reserved.get(c["metadata"]["name"], []) for c in self.claims()):
            return  # its launch failed: the retry comes once that NodeClaim is deleted
        if self._nominate(pod):
            return
        problems = []
        for pool in self.pools():
            outcome = self._try_pool(pool, pod)
            if outcome is None:
                return
            problems.append(outcome)
        if problems:
            self.event(pod, "FailedScheduling", "Failed to schedule pod, " + "; ".join(problems), "Warning")

    def awaited(self, claim: dict) -> bool:
        """Whether a pod it was launched or nominated for is still pending (Karpenter leaves such nodes alone)."""
        pods = {p["metadata"]["uid"]: p for p in self.sim.items("pods")}
        return any(uid in pods and not pods[uid]["spec"].get("nodeName") and not pods[uid]["metadata"].get(
            "deletionTimestamp") for uid in self.reserved.get(claim["metadata"]["name"], []))

    def _nominate(self, pod: dict) -> bool:
        """Room on a NodeClaim that is still launching (or just registered for it): the pod waits for it."""
        uid = pod["metadata"]["uid"]
        if any(uid in self.reserved.get(c["metadata"]["name"], []) for c in self.claims()):
            return True
        for claim in self.claims():
            name = claim["metadata"]["name"]
            if (claim.get("status") or {}).get("nodeName") or self._launch_failed(claim):
                continue
            waiting = self.reserved.setdefault(name, [])
            if pod["metadata"]["uid"] in waiting or self._fits_claim(pod, claim, waiting):
                if pod["metadata"]["uid"] not in waiting:
                    waiting.append(pod["metadata"]["uid"])
                self.event(pod, "Nominated", f"Pod should schedule on: nodeclaim/{name}")
                return True
        return False

    def _fits_claim(self, pod: dict, claim: dict, waiting: list[str]) -> bool:
        pods = {p["metadata"]["uid"]: p for p in self.sim.items("pods")}
        used: Counter = Counter()
        for uid in waiting:
            if uid in pods:
                used.update(pod_requests(pods[uid]))
                used["pods"] += 1
        return not node_reasons(pod, self._virtual_node(claim["metadata"].get("labels", {}), claim["spec"].get("taints"),
                                                        claim["status"]["allocatable"]), used)

    @staticmethod
    def _virtual_node(labels: dict, taints, allocatable: dict) -> dict:
        node = node_manifest("virtual", "1", "1", 0, labels, taints)
        node["status"]["allocatable"] = {k: (v if isinstance(v, str) else quantity_text(k, v))
                                         for k, v in allocatable.items()}
        return node

    def _template_labels(self, pool: dict) -> dict:
        template = pool["spec"]["template"]
        labels = {**((template.get("metadata") or {}).get("labels") or {}), POOL_LABEL: pool["metadata"]["name"]}
        for req in template["spec"].get("requirements") or []:  # a single-valued In requirement labels the node
            if req.get("operator") == "In" and len(req.get("values") or []) == 1:
                labels.setdefault(req["key"], req["values"][0])
        return labels

    def _candidates(self, pool: dict):
        """(instance type, labels) the pool allows, smallest first, Spot before on-demand."""
        requirements = pool["spec"]["template"]["spec"].get("requirements") or []
        base = self._template_labels(pool)
        for it in sorted(self.instance_types.values(), key=lambda t: (t.gpu, t.cpu, t.memory_gib, t.name)):
            for capacity_type in it.capacity_types:
                for zone in it.zones:
                    labels = {**base, **it.labels(capacity_type, zone)}
                    if all(requirement_ok(r, labels) for r in requirements):
                        yield it, labels
                        break

    def _try_pool(self, pool: dict, pod: dict) -> str | None:
        """Launch a NodeClaim of this pool for the pod (None), or say why not."""
        name = pool["metadata"]["name"]
        taints = pool["spec"]["template"]["spec"].get("taints")
        fitting, first_reason = [], None
        for it, labels in self._candidates(pool):
            why = node_reasons(pod, self._virtual_node(labels, taints, it.allocatable()), Counter())
            if not why:
                fitting.append((it, labels))
            else:
                first_reason = first_reason or why[0]
        if not fitting:
            detail = first_reason or "no instance type satisfied the nodepool's requirements"
            return f'incompatible with nodepool "{name}", {detail}'
        limits = pool["spec"].get("limits") or {}
        claims = self.claims(name)
        if "nodes" in limits and len(claims) + 1 > _quantity(limits["nodes"]):
            return f'node limits have been exhausted for nodepool "{name}"'
        usage = self._usage(claims)
        within = [(it, labels) for it, labels in fitting
                  if all(usage[k] + it.capacity().get(k, 0) <= _quantity(limits[k]) for k in LIMIT_KEYS if k in limits)]
        if not within:
            return f'all available instance types exceed limits for nodepool "{name}"'
        self._launch(pool, pod, *within[0])
        return None

    @staticmethod
    def _usage(claims: list[dict]) -> Counter:
        used: Counter = Counter()
        for claim in claims:
            for key, value in ((claim.get("status") or {}).get("capacity") or {}).items():
                used[key] += _quantity(value)
        return used

    def _launch(self, pool: dict, pod: dict, it, labels: dict) -> None:
        name = generated_name(f"{pool['metadata']['name']}-", self.sim.api.rng)
        template = pool["spec"]["template"]
        spec = clone(template["spec"])
        spec["resources"] = {"requests": dict((pod["spec"]["containers"][0].get("resources") or {}).get("requests")
                                              or {})}
        annotations = dict((template.get("metadata") or {}).get("annotations") or {})
        annotations["karpenter.sh/nodepool-hash-version"] = "v3"
        claim = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeClaim",
                 "metadata": {"name": name, "labels": labels, "annotations": annotations,
                              "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodePool",
                                                   "name": pool["metadata"]["name"], "uid": pool["metadata"]["uid"],
                                                   "blockOwnerDeletion": True}]},
                 "spec": spec}
        try:
            created = self.sim.create(self.rt("nodeclaims"), claim, manager="karpenter")
        except ApiError:
            return
        self.reserved[name] = [pod["metadata"]["uid"]]
        self.sim.set_status(self.rt("nodeclaims"), created, self._launch_status(pool, it))
        self.event(pod, "Nominated", f"Pod should schedule on: nodeclaim/{name}")

    def _launch_status(self, pool: dict, it) -> dict:
        now = self.sim.clock.stamp()
        failure = self.failures.get(pool["metadata"]["name"], self.failures.get(None))
        if failure is not None:
            reason, message = failure
            text = message or f"creating instance, insufficient capacity, {it.name} is not available"
            return {"conditions": [condition("Launched", "False", reason, now, text),
                                   condition("Ready", "False", "Launched", now, "Launched=False")]}
        status = {"providerID": f"azure:///subscriptions/fake/resourceGroups/fake/providers/Microsoft.Compute/"
                                f"virtualMachines/{it.name.lower()}-{self.sim.api.rng.randrange(10**6):06d}",
                  "imageID": "fake-image",
                  "capacity": {k: quantity_text(k, v) for k, v in it.capacity().items()},
                  "allocatable": {k: quantity_text(k, v) for k, v in it.allocatable().items()},
                  "conditions": [condition("Launched", "True", "Launched", now),
                                 condition("Registered", "Unknown", "AwaitingReconciliation", now),
                                 condition("Initialized", "Unknown", "AwaitingReconciliation", now),
                                 condition("Ready", "Unknown", "AwaitingReconciliation", now)]}
        return status

    # --- NodePool status ------------------------------------------------------------------------

    def _pool_status(self, pool: dict) -> None:
        name = pool["metadata"]["name"]
        claims = [c for c in self.claims(name) if not self._launch_failed(c)]
        nodes = [n for n in self.sim.items("nodes") if n["metadata"].get("labels", {}).get(POOL_LABEL) == name]
        usage = self._usage(claims)
        resources = {k: quantity_text(k, usage[k]) for k in ("cpu", "memory", "nvidia.com/gpu", "pods") if usage[k]}
        resources["nodes"] = str(len(nodes))
        old = pool.get("status") or {}
        previous = {c["type"]: c for c in old.get("conditions") or []}
        now = self.sim.clock.stamp()
        conditions = [previous.get(kind) or condition(kind, "True", kind, now, generation=pool["metadata"]["generation"])
                      for kind in ("ValidationSucceeded", "NodeClassReady", "Ready")]
        self.sim.set_status(self.rt("nodepools"), pool, {"nodes": len(nodes), "resources": resources,
                                                          "conditions": conditions})
