"""Reading a Server-Sent Events stream (the WHATWG rules the API's `?follow=true` streams follow), line by line (pure)."""
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerEvent:
    """One dispatched event: its type, its data (lines joined by newlines) and the last event id seen so far."""

    name: str
    data: str
    id: str | None


def parse_events(lines: Iterable[str]) -> Iterator[ServerEvent]:
    """Events from a stream's lines; comments (keepalives) are skipped and an unfinished last event is dropped."""
    name, data, last_id = "message", [], None
    for line in lines:
        if not line:
            if data:
                yield ServerEvent(name, "\n".join(data), last_id)
            name, data = "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id" and "\0" not in value:
            last_id = value  # the id outlives its event: it is what a reconnect sends as Last-Event-ID
