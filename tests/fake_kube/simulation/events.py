"""core/v1 Events, as controllers and the scheduler record them (aggregated by count)."""
from __future__ import annotations

import itertools

from ..clock import stamp
from ..prepare import random_uid

_sequence = itertools.count(1)


class EventRecorder:
    """Writes Events about objects into the objects' namespaces."""

    def __init__(self, sim):
        self.sim = sim

    def record(self, obj: dict, reason: str, message: str, kind: str = "Normal", component: str = "") -> None:
        """Record (or count again) an event about obj."""
        sim = self.sim
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        target = sim.store.get(("", "namespaces"), "", namespace)
        if target is None or target["metadata"].get("deletionTimestamp"):
            return  # no new content in a missing or terminating namespace
        rt = sim.rt("events")
        now = stamp(sim.now())
        for event in sim.items("events", namespace=namespace):
            involved = event.get("involvedObject") or {}
            if involved.get("uid") == meta.get("uid") and event.get("reason") == reason \
                    and event.get("message") == message:
                new = dict(event, count=event.get("count", 1) + 1, lastTimestamp=now)
                sim.write(rt, new, event)
                return
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{next(_sequence):016x}", "namespace": namespace,
                         "uid": random_uid(sim.api.rng), "creationTimestamp": now},
            "involvedObject": {"kind": obj.get("kind"), "namespace": meta.get("namespace"), "name": meta["name"],
                               "uid": meta.get("uid"), "apiVersion": obj.get("apiVersion"),
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "message": message, "type": kind, "count": 1,
            "source": {"component": component}, "reportingComponent": component, "reportingInstance": "",
            "firstTimestamp": now, "lastTimestamp": now,
        }
        sim.store.write(rt.key, event, "ADDED")
        sim.changed = True

    def find(self, namespace: str, name: str | None = None, reason: str | None = None) -> list[dict]:
        """Events in a namespace, optionally about one object name and/or with a reason."""
        return [e for e in self.sim.items("events", namespace=namespace)
                if (name is None or e["involvedObject"].get("name") == name)
                and (reason is None or e.get("reason") == reason)]
