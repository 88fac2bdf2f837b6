"""The simulated cluster behind the API: controllers, scheduler and kubelet, stepping on the fake clock."""
from __future__ import annotations

from datetime import datetime, timedelta

from ..api import Api
from ..clock import parse_stamp
from ..deletion import delete_object
from ..errors import ApiError
from ..request import Call
from ..resources import ResourceType
from ..store import clone
from . import autoscaling, cluster, housekeeping, jobs, kubelet, workloads
from .clusterapi import ClusterAutoscaler
from .events import EventRecorder
from .karpenter import Karpenter

CONTROLLERS = (housekeeping.establish_crds, housekeeping.namespaces, housekeeping.garbage_collect,
               housekeeping.orphaned_pods, housekeeping.bind_claims, autoscaling.horizontal_pod_autoscalers,
               workloads.deployments, workloads.replicasets, workloads.statefulsets,
               jobs.jobs, cluster.schedule, lambda sim: sim.karpenter.run(), lambda sim: sim.cluster_api.run(),
               kubelet.run_pods, jobs.jobs, workloads.replicasets, workloads.deployments, workloads.statefulsets)
MAX_PASSES = 8


class Simulation:
    """Runs the controllers; `advance()` moves time from one due moment to the next."""

    def __init__(self, api: Api, job_pod_seconds: float | None = 10.0, pod_start_seconds: float = 1.0):
        self.api, self.store, self.clock = api, api.store, api.clock
        self.events = EventRecorder(self)
        self.kubelet = kubelet.Kubelet(self, pod_start_seconds, job_pod_seconds)
        self.karpenter, self.cluster_api = Karpenter(self), ClusterAutoscaler(self)
        self.state: dict = {}  # per-controller memory, keyed by controller
        self.changed = False
        self._views: dict = {}  # read caches, valid while the store's resourceVersion stays the same
        self._views_rv = -1

    # --- helpers the controllers use ------------------------------------------------------------

    def rt(self, plural: str, group: str = "") -> ResourceType:
        """A built-in resource type."""
        return self.api.registry.builtin(plural, group)

    def now(self) -> datetime:
        """Simulated now."""
        return self.clock.now()

    def _cached(self, key, build):
        if self._views_rv != self.store.rv:
            self._views, self._views_rv = {}, self.store.rv
        if key not in self._views:
            self._views[key] = build()
        return self._views[key]

    def items(self, plural: str, group: str = "", namespace: str | None = None) -> list[dict]:
        """Stored objects of a resource (shared, read-only: controllers clone before changing anything)."""
        return self._cached(("items", group, plural, namespace), lambda: self.store.view((group, plural), namespace))

    def create(self, rt: ResourceType, obj: dict, manager: str = "kube-controller-manager") -> dict:
        """Create through the API (validation and admission apply, as for a real controller)."""
        call = Call(rt, namespace=obj["metadata"].get("namespace"), user="system:serviceaccount:kube-system",
                    user_agent=f"{manager}/v1.36.0", query={"fieldManager": manager})
        created = self.api.create(call, clone(obj))
        self.changed = True
        return created

    def write(self, rt: ResourceType, obj: dict, old: dict) -> dict:
        """Store a controller's change (status, binding) when it changes anything."""
        if obj == old:
            return old
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            final = self.store.remove(rt.key, obj)
            self.api._after(rt, "DELETED", final)
        else:
            final = self.store.write(rt.key, obj, "MODIFIED", old)
            self.api._after(rt, "MODIFIED", final)
        self.changed = True
        return final

    def set_status(self, rt: ResourceType, obj: dict, status: dict) -> dict:
        """Replace an object's status if different."""
        if obj.get("status") == status:
            return obj
        new = clone(obj)
        new["status"] = status
        return self.write(rt, new, obj)

    def delete(self, rt: ResourceType, obj: dict, policy: str = "Background") -> None:
        """Delete as a controller would."""
        if obj["metadata"].get("deletionTimestamp"):
            return
        delete_object(self.api, rt, obj, policy)
        self.changed = True

    def owned_by(self, owner: dict, plural: str, group: str = "") -> list[dict]:
        """Live objects of a kind whose controller reference is this owner."""
        return self._cached(("owners", group, plural), lambda: self._owner_index(plural, group)).get(
            owner["metadata"]["uid"], [])

    def _owner_index(self, plural: str, group: str) -> dict[str, list[dict]]:
        index: dict[str, list[dict]] = {}
        for obj in self.items(plural, group):
            for ref in obj["metadata"].get("ownerReferences") or []:
                if ref.get("controller"):
                    index.setdefault(ref.get("uid"), []).append(obj)
        return index

    @staticmethod
    def owner_reference(owner: dict) -> dict:
        """A controller ownerReference to an object."""
        return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}

    def age(self, obj: dict, field: str = "creationTimestamp") -> float:
        """Seconds since a metadata timestamp."""
        return (self.now() - parse_stamp(obj["metadata"][field])).total_seconds()

    # --- running ---------------------------------------------------------------------------------

    def run(self) -> None:
        """Run every controller at the current time until nothing changes (bounded)."""
        with self.store.lock:
            for _ in range(MAX_PASSES):
                self.changed = False
                for controller in CONTROLLERS:
                    try:
                        controller(self)
                    except ApiError:
                        self.changed = True  # a conflicting write; the next pass sees fresh state
                if not self.changed:
                    return

    def next_due(self) -> datetime | None:
        """The earliest future moment some controller wants to act."""
        now = self.now()
        with self.store.lock:
            moments = [m for m in (self.kubelet.next_due(), jobs.next_due(self), housekeeping.next_due(self),
                                   workloads.next_due(self), autoscaling.next_due(self), self.karpenter.next_due(),
                                   self.cluster_api.next_due()) if m is not None and m > now]
        return min(moments) if moments else None

    def advance(self, seconds: float) -> None:
        """Move time forward, stopping at each due moment so timelines interleave in order."""
        target = self.now() + timedelta(seconds=seconds)
        self.run()
        for _ in range(10_000):  # bounded: every step moves time strictly forward
            due = self.next_due()
            if due is None or due > target:
                break
            step = max((due - self.now()).total_seconds(), 0.0)
            self.clock.advance(step)
            self.run()
        remaining = (target - self.now()).total_seconds()
        if remaining > 0:
            self.clock.advance(remaining)
        self.run()
