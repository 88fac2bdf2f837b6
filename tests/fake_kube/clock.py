"""Simulated time: frozen until advanced (manual mode) or following the wall clock (auto mode)."""
from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


def stamp(moment: datetime) -> str:
    """RFC 3339 with second precision, as metav1.Time serialises."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_stamp(text: str) -> datetime:
    """The inverse of stamp (accepts fractional seconds too)."""
    text = text.replace("Z", "+00:00")
    return datetime.fromisoformat(text)


class Clock:
    """The fake cluster's notion of now."""

    def __init__(self, auto: bool = False):
        self.auto = auto
        self._start = datetime.now(UTC).replace(microsecond=0)
        self._offset = timedelta()
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """Current simulated time."""
        with self._lock:
            base = datetime.now(UTC) if self.auto else self._start
            return base + self._offset

    def stamp(self) -> str:
        """Current simulated time as an RFC 3339 string."""
        return stamp(self.now())

    def advance(self, seconds: float) -> None:
        """Move simulated time forward."""
        with self._lock:
            self._offset += timedelta(seconds=seconds)
