"""Following a job's log stream (`?follow=true`) to its end, across the server's timeouts and dropped connections."""
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .client import ApiClient
from .errors import ConnectionFailed
from .sse import ServerEvent

# Waits before reconnecting after a stream broke off with nothing new; one more failure than this gives up.
RECONNECT_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)


def event_data(event: ServerEvent) -> dict:
    try:
        data = json.loads(event.data)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ConnectionFailed(f"The server sent a `{event.name}` event this CLI cannot read.", code="BadStream")
    return data


@dataclass
class LogFollower:
    """Calls `on_line` for each line, once, in order, `on_status` for each new status (and reason), and returns the
    `end` event's data (status, reason, exit code)."""

    client: ApiClient
    path: str
    on_line: Callable[[dict], None]
    sleep: Callable[[float], None] = time.sleep
    last_id: str | None = None
    on_status: Callable[[dict], None] = lambda status: None
    connected: bool = field(default=False, init=False)
    lines_seen: int = field(default=0, init=False)
    # Each connection starts with the current status: a reconnect must not print it again.
    status_seen: tuple | None = field(default=None, init=False)

    def run(self) -> dict:
        failures = 0
        while True:
            seen, problem = self.lines_seen, None
            try:
                kind, data = self.read_stream()
            except ConnectionFailed as error:
                if not self.connected:
                    raise  # never reached the stream: nothing to resume, say so now
                kind, data, problem = "dropped", None, error
            if kind == "end":
                return data
            if kind == "timeout" or self.lines_seen > seen:
                failures = 0
                continue  # the server closed a long stream, or a stream that delivered broke: resume at once
            failures += 1
            if failures > len(RECONNECT_DELAYS):
                raise problem or ConnectionFailed("The log stream keeps closing before the job ends.", code="StreamClosed")
            self.sleep(RECONNECT_DELAYS[failures - 1])

    def opened(self) -> None:
        self.connected = True

    def new_status(self, status: dict) -> None:
        seen = (status.get("status"), status.get("status_reason"))
        if seen != self.status_seen:
            self.status_seen = seen
            self.on_status(status)

    def read_stream(self) -> tuple[str, dict | None]:
        """One connection: ("end" | "timeout", data) when the server says so, ("closed", None) when it just stops."""
        for event in self.client.events(self.path, {"follow": "true"}, self.last_id, on_open=self.opened):
            if event.name == "line":
                line = event_data(event)
                self.on_line(line)
                # Last-Event-ID makes the server resume after this line: nothing is printed twice.
                self.last_id = event.id if event.id is not None else str(line.get("seq"))
                self.lines_seen += 1
            elif event.name == "status":
                self.new_status(event_data(event))
            elif event.name in ("end", "timeout"):
                return event.name, event_data(event)
        return "closed", None
