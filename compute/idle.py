"""Idle shutdown of a compute instance: its servers' answers become activity signals, the signals a verdict (pure).

What counts (measured on a real JupyterLab, docs/compute-instances.md): a kernel's and a terminal's own activity, a
busy kernel, VS Code's heartbeat (code-server beats while a browser holds a connection) and Dockyard jobs. Jupyter's
`/api/status` `last_activity` does not count: every API call moves it, so an open but unused JupyterLab tab, which
polls the API, would keep the instance alive for ever. A probe that fails never counts as idle.
"""
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

SOURCES = ("jupyter", "kernel", "terminal", "vscode", "ssh", "job")


@dataclass(frozen=True)
class Signal:
    """One piece of activity: where (`source`), when (`at`; None = never), and whether it is going on now (`busy`)."""

    source: str
    at: datetime | None
    busy: bool = False
    detail: str = ""


@dataclass(frozen=True)
class Probe:
    """What one server answered: its signals, or the reason it could not be read (`ok` False)."""

    name: str
    ok: bool
    signals: tuple[Signal, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Verdict:
    """Idle or not, the newest activity seen (`source` says what it was) and a sentence for the state reason."""

    idle: bool
    last_activity: datetime | None
    source: str
    reason: str


class BadAnswer(ValueError):
    """A server's answer that does not have the shape its API documents."""


def parse_time(value: object) -> datetime | None:
    """An ISO-8601 time with its zone (Jupyter's `last_activity`); None for null; BadAnswer otherwise."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64:
        raise BadAnswer("a time is not a string")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadAnswer(f"not a time: {value[:40]!r}") from None
    if moment.tzinfo is None:
        raise BadAnswer("a time without its zone")
    return moment.astimezone(UTC)


def epoch_ms(value: object) -> datetime | None:
    """code-server's `lastHeartbeat` (epoch milliseconds; 0 = never) as a time."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise BadAnswer("lastHeartbeat is not a number of milliseconds")
    if value == 0:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        raise BadAnswer("lastHeartbeat is out of range") from None


def _mapping(value: object, what: str) -> dict:
    if not isinstance(value, dict):
        raise BadAnswer(f"{what} is not an object")
    return value


def _listing(value: object, what: str) -> list:
    if not isinstance(value, list) or len(value) > 10000:
        raise BadAnswer(f"{what} is not a list")
    return value


def kernel_signal(kernel: object) -> Signal:
    """A kernel of `/api/kernels`: busy is activity now; otherwise its own last activity counts. A kernel nobody
    connected to stays `starting` for ever (measured), so starting is not taken for busy."""
    kernel = _mapping(kernel, "a kernel")
    state = kernel.get("execution_state")
    if not isinstance(state, str):
        raise BadAnswer("a kernel has no execution_state")
    name = kernel.get("name") if isinstance(kernel.get("name"), str) else "kernel"
    at = parse_time(kernel.get("last_activity"))
    busy = state == "busy"
    return Signal("kernel", at, busy=busy, detail=f"{name[:40]} kernel {state[:20]}")


def jupyter_signals(status: object, kernels: object, terminals: object) -> tuple[Signal, ...]:
    """Signals from Jupyter's `/api/status`, `/api/kernels` and `/api/terminals` (BadAnswer if any is malformed)."""
    status = _mapping(status, "/api/status")
    parse_time(status.get("last_activity"))  # checked, not counted: every API call (a tab's polling) moves it
    signals = [kernel_signal(kernel) for kernel in _listing(kernels, "/api/kernels")]
    for terminal in _listing(terminals, "/api/terminals"):
        terminal = _mapping(terminal, "a terminal")
        signals.append(Signal("terminal", parse_time(terminal.get("last_activity")), detail="terminal"))
    return tuple(signals)


def code_server_signals(healthz: object) -> tuple[Signal, ...]:
    """VS Code's heartbeat from code-server's `/healthz` ({status: alive|expired, lastHeartbeat: epoch ms})."""
    healthz = _mapping(healthz, "/healthz")
    if healthz.get("status") not in ("alive", "expired"):
        raise BadAnswer("/healthz has no status")
    return (Signal("vscode", epoch_ms(healthz.get("lastHeartbeat")), detail="VS Code"),)


def _clamped(at: datetime, now: datetime) -> datetime:
    return min(at, now)


def newest(signals: list[Signal], now: datetime) -> Signal | None:
    """The most recent signal (busy ones are happening now), or None when nothing ever happened."""
    timed = [Signal(item.source, now if item.busy else _clamped(item.at, now), item.busy, item.detail)
             for item in signals if item.busy or item.at is not None]
    return max(timed, key=lambda item: (item.at, item.busy), default=None)


def duration_words(span: timedelta) -> str:
    """'30 min', '2 h 5 min', '45 s' (tests shorten minutes to seconds)."""
    seconds = int(span.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    hours, minutes = divmod(seconds // 60, 60)
    return f"{hours} h {minutes} min" if hours and minutes else f"{hours} h" if hours else f"{minutes} min"


def idle_reason(threshold: timedelta, last: Signal | None) -> str:
    """'Stopped: idle for 30 min; last activity 14:02 UTC, kernel idle.'"""
    if last is None:
        return f"Stopped: idle for {duration_words(threshold)}; no activity since it started."
    return (f"Stopped: idle for {duration_words(threshold)}; last activity {last.at.strftime('%H:%M UTC')}, "
            f"{last.detail or last.source}.")


def verdict(probes: list[Probe], threshold: timedelta, now: datetime, running_since: datetime) -> Verdict:
    """Idle when every probe answered and nothing happened for `threshold`, counted from the newest activity or
    from when the instance started running, whichever is later (a fresh instance has its whole threshold)."""
    last = newest([signal for probe in probes if probe.ok for signal in probe.signals], now)
    when, source = (last.at, last.detail or last.source) if last else (None, "")
    failed = [probe for probe in probes if not probe.ok]
    if failed or not probes:
        why = "; ".join(f"{probe.name}: {probe.error}" for probe in failed) or "nothing was probed"
        return Verdict(False, when, source, f"Not idle: a probe failed ({why}).")
    since = max(when, running_since) if when else running_since
    if now - since < threshold:
        return Verdict(False, when, source, f"Active: idle for {duration_words(max(now - since, timedelta(0)))}.")
    return Verdict(True, when, source, idle_reason(threshold, last))
