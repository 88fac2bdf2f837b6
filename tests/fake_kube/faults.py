"""Seeded fault injection and the record of every request the server received."""
from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field

FAULT_KINDS = ("500", "503", "504", "429", "timeout", "reset", "drop")


@dataclass
class FaultRule:
    """Answer a share of matching requests with a fault instead of (or, `after=True`, after) serving them."""

    rate: float = 1.0
    kinds: tuple = ("500",)
    method: str | None = None  # HTTP method
    verb: str | None = None  # Kubernetes verb: get, list, watch, create, update, patch, delete
    resource: str | None = None  # plural, e.g. "jobs"
    path: str | None = None  # regex searched in the path
    retry_after: int | None = 1  # seconds, for 429 and 503
    hang: float = 5.0  # seconds a `timeout` fault holds the request before closing it
    after: bool = False  # serve the request (commit the write), then fail the response
    times: int | None = None  # stop after this many faults
    rng: random.Random = field(default_factory=random.Random, repr=False)
    fired: int = 0

    def matches(self, method: str, verb: str, resource: str, path: str) -> bool:
        """Whether the request is one this rule is about."""
        return ((self.method is None or self.method == method) and (self.verb is None or self.verb == verb)
                and (self.resource is None or self.resource == resource)
                and (self.path is None or re.search(self.path, path) is not None)
                and (self.times is None or self.fired < self.times))


class Faults:
    """The fault rules of one server; each rule draws from its own generator seeded from the server seed."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def add(self, rate: float = 1.0, kinds=("500",), **match) -> FaultRule:
        """Inject faults of these kinds into `rate` of the matching requests (reproducible for a seed)."""
        kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; use {FAULT_KINDS}")
        with self._lock:
            rule = FaultRule(rate=rate, kinds=kinds, rng=random.Random(f"{self.seed}:{len(self.rules)}"), **match)
            self.rules.append(rule)
            return rule

    def once(self, kind: str = "500", **match) -> FaultRule:
        """Fail exactly the next matching request."""
        return self.add(1.0, (kind,), times=1, **match)

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self.rules.clear()

    def pick(self, method: str, verb: str, resource: str, path: str) -> tuple[str, FaultRule] | None:
        """The fault for this request, if a rule fires."""
        with self._lock:
            for rule in self.rules:
                if rule.matches(method, verb, resource, path) and rule.rng.random() < rule.rate:
                    rule.fired += 1
                    return rule.rng.choice(rule.kinds), rule
        return None


@dataclass
class RequestRecord:
    """One request as received, and what the server answered."""

    method: str
    path: str
    query: dict
    content_type: str
    body: object
    time: float  # wall clock (time.time())
    monotonic: float
    user: str = ""
    verb: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    status: int | None = None  # None: no response was sent (timeout/reset/drop)
    fault: str | None = None
    retry_after: int | None = None
    headers: dict = field(default_factory=dict)

    @property
    def is_write(self) -> bool:
        """create, update, patch, delete or deletecollection."""
        return self.verb in ("create", "update", "patch", "delete", "deletecollection") \
            and self.resource != "selfsubjectaccessreviews"  # a question, not a change


class RequestLog:
    """Thread-safe list of RequestRecords with small query helpers."""

    def __init__(self):
        self._records: list[RequestRecord] = []
        self._lock = threading.Lock()

    def add(self, record: RequestRecord) -> None:
        """Append a record."""
        with self._lock:
            self._records.append(record)

    def all(self) -> list[RequestRecord]:
        """A snapshot of every record."""
        with self._lock:
            return list(self._records)

    def find(self, **criteria) -> list[RequestRecord]:
        """Records whose attributes equal every criterion (e.g. verb="list", resource="jobs")."""
        return [r for r in self.all() if all(getattr(r, k) == v for k, v in criteria.items())]

    def writes(self) -> list[RequestRecord]:
        """Every mutating request."""
        return [r for r in self.all() if r.is_write]

    def clear(self) -> None:
        """Forget everything recorded so far."""
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)
