"""Watch streams: initial state, replay from a resourceVersion, live events, bookmarks, 410 Expired."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from .api import Api
from .errors import ApiError
from .request import Call
from .selectors import fields_match, labels_match, parse_field_selector, parse_label_selector
from .store import Event


class WatchFilter:
    """Which objects a watch sees (namespace, label and field selectors)."""

    def __init__(self, call: Call):
        self.rt = call.rt
        self.namespace = call.namespace if call.rt.namespaced else None
        self.labels = parse_label_selector(call.query.get("labelSelector"))
        self.fields = parse_field_selector(call.query.get("fieldSelector"), call.rt.plural)

    def matches(self, obj: dict | None) -> bool:
        """Whether an object state is visible to this watch."""
        if obj is None:
            return False
        if self.namespace and obj["metadata"].get("namespace") != self.namespace:
            return False
        return labels_match(self.labels, obj["metadata"].get("labels")) and fields_match(self.fields, obj)

    def translate(self, event: Event) -> str | None:
        """The event type this watch reports (an object leaving the selection is DELETED for it)."""
        if event.key != self.rt.key:
            return None
        now, before = self.matches(event.obj), self.matches(event.old)
        if event.type == "DELETED":
            return "DELETED" if before or now else None
        if now and not before:
            return "ADDED"
        if before and not now:
            return "DELETED"
        return event.type if now else None


def watch_events(api: Api, call: Call, stop: threading.Event, bookmark_every: float,
                 default_timeout: float) -> Iterator[dict]:
    """The events of one watch request, ending at timeoutSeconds or server stop."""
    query = call.query
    timeout = float(query.get("timeoutSeconds") or default_timeout)
    deadline = time.monotonic() + timeout
    bookmarks = query.get("allowWatchBookmarks") in ("true", "True", "1")
    watch_filter = WatchFilter(call)
    start = query.get("resourceVersion")
    store = api.store
    with store.lock:
        if start in (None, "", "0"):
            last = store.rv
            for obj in store.items(call.rt.key, watch_filter.namespace):
                if watch_filter.matches(obj):
                    yield {"type": "ADDED", "object": api.present(call.rt, obj)}
        else:
            last = int(start)
    next_bookmark = time.monotonic() + bookmark_every
    while not stop.is_set():
        try:
            events = store.events_after(last)
        except ApiError as error:
            yield {"type": "ERROR", "object": error.status()}
            return
        for event in events:
            last = event.rv
            kind = watch_filter.translate(event)
            if kind:
                yield {"type": kind, "object": api.present(call.rt, dict(event.obj))}
        now = time.monotonic()
        if bookmarks and now >= next_bookmark:
            next_bookmark = now + bookmark_every
            yield {"type": "BOOKMARK", "object": {"kind": call.rt.kind, "apiVersion": call.rt.api_version,
                                                  "metadata": {"resourceVersion": str(last)}}}
        if now >= deadline:
            return
        store.wait(last, min(0.2, deadline - now))
