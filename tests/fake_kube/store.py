"""Object storage with a global resourceVersion counter and the event history watches read from."""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from .errors import gone


def clone(value):
    """Deep copy of JSON-like data (faster than copy.deepcopy and enough for objects)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


@dataclass
class Event:
    """One change, as a watch will report it."""

    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    key: tuple[str, str]  # (group, plural)
    namespace: str
    obj: dict
    old: dict | None


class Store:
    """Every object of every kind, one lock, one counter (like etcd's revision)."""

    def __init__(self, history: int = 5000, first_rv: int = 1000):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.rv = first_rv
        self.compacted = first_rv  # watches from an older resourceVersion get 410 Expired
        self._objects: dict[tuple[str, str], dict[tuple[str, str], dict]] = {}
        self._events: deque[Event] = deque()
        self._history = history

    def get(self, key: tuple[str, str], namespace: str, name: str) -> dict | None:
        """A copy of the stored object, or None."""
        with self.lock:
            obj = self._objects.get(key, {}).get((namespace or "", name))
            return clone(obj) if obj is not None else None

    def items(self, key: tuple[str, str], namespace: str | None = None) -> list[dict]:
        """Copies of the stored objects of one resource, sorted by namespace then name."""
        with self.lock:
            found = [obj for (ns, _), obj in sorted(self._objects.get(key, {}).items())
                     if namespace is None or ns == namespace]
            return [clone(obj) for obj in found]

    def view(self, key: tuple[str, str], namespace: str | None = None) -> list[dict]:
        """The stored objects themselves, sorted (no copies: callers must not modify them)."""
        with self.lock:
            return [obj for (ns, _), obj in sorted(self._objects.get(key, {}).items())
                    if namespace is None or ns == namespace]

    def count(self, key: tuple[str, str]) -> int:
        """How many objects a resource has."""
        with self.lock:
            return len(self._objects.get(key, {}))

    def write(self, key: tuple[str, str], obj: dict, event_type: str, old: dict | None = None) -> dict:
        """Store an object under a new resourceVersion and record the event; returns a copy."""
        with self.lock:
            self.rv += 1
            obj = clone(obj)
            obj["metadata"]["resourceVersion"] = str(self.rv)
            meta = obj["metadata"]
            self._objects.setdefault(key, {})[(meta.get("namespace", ""), meta["name"])] = obj
            self._record(Event(self.rv, event_type, key, meta.get("namespace", ""), clone(obj), old))
            return clone(obj)

    def remove(self, key: tuple[str, str], obj: dict) -> dict:
        """Delete an object; the DELETED event carries its last state under a new resourceVersion."""
        with self.lock:
            meta = obj["metadata"]
            self._objects.get(key, {}).pop((meta.get("namespace", ""), meta["name"]), None)
            self.rv += 1
            final = clone(obj)
            final["metadata"]["resourceVersion"] = str(self.rv)
            self._record(Event(self.rv, "DELETED", key, meta.get("namespace", ""), clone(final), clone(obj)))
            return final

    def _record(self, event: Event) -> None:
        self._events.append(event)
        while len(self._events) > self._history:
            self.compacted = self._events.popleft().rv
        self.changed.notify_all()

    def events_after(self, rv: int) -> list[Event]:
        """Events newer than rv; 410 Expired if history no longer reaches back that far."""
        with self.lock:
            if rv < self.compacted:
                raise gone(f"too old resource version: {rv} ({self.compacted + 1})")
            return [e for e in self._events if e.rv > rv]

    def compact(self) -> None:
        """Forget all history (what etcd compaction does): older watches must relist."""
        with self.lock:
            self._events.clear()
            self.compacted = self.rv

    def wait(self, after_rv: int, timeout: float) -> None:
        """Block until something newer than after_rv is stored, or timeout."""
        with self.lock:
            if self.rv <= after_rv:
                self.changed.wait(timeout)

    def wake(self) -> None:
        """Wake every waiting watch (used on shutdown)."""
        with self.lock:
            self.changed.notify_all()
