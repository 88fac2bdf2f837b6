"""Idle verdicts from signal tables, and the servers' answers turned into signals, hostile ones included (pure)."""
from datetime import UTC, datetime, timedelta

import pytest

from compute.idle import BadAnswer, Probe, Signal, code_server_signals, duration_words, jupyter_signals, verdict

NOW = datetime(2026, 12, 2, 15, 0, tzinfo=UTC)
MIN30 = timedelta(minutes=30)
STARTED = NOW - timedelta(hours=5)


def ago(minutes: float) -> datetime:
    return NOW - timedelta(minutes=minutes)


def ok(*signals: Signal) -> Probe:
    return Probe("jupyter", True, signals)


@pytest.mark.parametrize(("probes", "since", "idle", "last", "source"), [
    # nothing open, started long ago: idle, no activity ever
    ([ok()], STARTED, True, None, ""),
    # started 10 minutes ago: its whole threshold first
    ([ok()], ago(10), False, None, ""),
    ([ok(Signal("kernel", ago(31), detail="python3 kernel idle"))], STARTED, True, ago(31), "python3 kernel idle"),
    ([ok(Signal("kernel", ago(29), detail="python3 kernel idle"))], STARTED, False, ago(29), "python3 kernel idle"),
    # a busy kernel is activity now, whatever its last_activity says
    ([ok(Signal("kernel", ago(300), busy=True, detail="python3 kernel busy"))], STARTED, False, NOW, "python3 kernel busy"),
    # the newest of several sources wins
    ([ok(Signal("kernel", ago(50), detail="k")), ok(Signal("terminal", ago(5), detail="terminal"))], STARTED, False,
     ago(5), "terminal"),
    ([ok(Signal("kernel", ago(50))), Probe("vscode", True, (Signal("vscode", ago(40), detail="VS Code"),))], STARTED,
     True, ago(40), "VS Code"),
    # a failed probe is never idle, even with everything else long quiet
    ([ok(Signal("kernel", ago(500))), Probe("vscode", False, error="refused")], STARTED, False, ago(500), "kernel"),
    ([], STARTED, False, None, ""),
    # a clock ahead of Dockyard's counts as now, never later
    ([ok(Signal("terminal", NOW + timedelta(days=3650), detail="terminal"))], STARTED, False, NOW, "terminal"),
    # activity before the instance started (an earlier run) does not shorten the threshold
    ([ok(Signal("kernel", ago(600), detail="k"))], ago(20), False, ago(600), "k"),
])
def test_verdicts(probes, since, idle, last, source):
    result = verdict(probes, MIN30, NOW, since)
    assert (result.idle, result.last_activity, result.source) == (idle, last, source)


def test_the_reason_says_for_how_long_and_what_was_last():
    result = verdict([ok(Signal("kernel", datetime(2026, 12, 2, 14, 2, tzinfo=UTC), detail="python3 kernel idle"))],
                     MIN30, NOW, STARTED)
    assert result.reason == "Stopped: idle for 30 min; last activity 14:02 UTC, python3 kernel idle."
    assert verdict([ok()], MIN30, NOW, STARTED).reason == "Stopped: idle for 30 min; no activity since it started."
    failed = verdict([Probe("vscode", False, error="VS Code could not be reached")], MIN30, NOW, STARTED)
    assert failed.reason == "Not idle: a probe failed (vscode: VS Code could not be reached)."


@pytest.mark.parametrize(("span", "words"), [
    (timedelta(seconds=3), "3 s"), (MIN30, "30 min"), (timedelta(hours=2), "2 h"), (timedelta(minutes=125), "2 h 5 min"),
    (timedelta(days=3), "72 h"),
])
def test_duration_words(span, words):
    assert duration_words(span) == words


STATUS = {"started": "2026-12-02T09:00:00.000000Z", "last_activity": "2026-12-02T14:59:00.000000Z", "connections": 0,
          "kernels": 1}
KERNEL = {"id": "k1", "name": "python3", "last_activity": "2026-12-02T14:02:00.123456Z", "execution_state": "idle",
          "connections": 1}


def test_jupyter_answers_become_kernel_and_terminal_signals():
    signals = jupyter_signals(STATUS, [KERNEL, {**KERNEL, "execution_state": "busy"}],
                              [{"name": "1", "last_activity": "2026-12-02T14:30:00+00:00"}])
    assert [(item.source, item.busy, item.detail) for item in signals] == [
        ("kernel", False, "python3 kernel idle"), ("kernel", True, "python3 kernel busy"), ("terminal", False, "terminal")]
    assert signals[0].at == datetime(2026, 12, 2, 14, 2, 0, 123456, tzinfo=UTC)
    # /api/status's own last_activity is read (checked) but not counted: a tab's polling moves it
    assert jupyter_signals(STATUS, [], []) == ()


def test_code_server_heartbeat():
    (signal,) = code_server_signals({"status": "alive", "lastHeartbeat": 1764687720000})
    assert signal.source == "vscode" and signal.at == datetime.fromtimestamp(1764687720, UTC)
    assert code_server_signals({"status": "expired", "lastHeartbeat": 0})[0].at is None


@pytest.mark.parametrize("status, kernels, terminals", [
    ([], [], []), ("x", [], []), (None, [], []),
    (STATUS, {"k": 1}, []), (STATUS, ["k"], []), (STATUS, [{"execution_state": 3}], []),
    (STATUS, [{**KERNEL, "last_activity": "2026-12-02T14:02:00"}], []),  # no zone
    (STATUS, [{**KERNEL, "last_activity": "yesterday"}], []),
    (STATUS, [{**KERNEL, "last_activity": 1764687720}], []),
    (STATUS, [{**KERNEL, "last_activity": "9" * 5000}], []),
    ({**STATUS, "last_activity": "not a time"}, [], []),
    (STATUS, [], "terminals"), (STATUS, [], [["1"]]),
    (STATUS, [KERNEL] * 10001, []),
])
def test_malformed_jupyter_answers_are_refused(status, kernels, terminals):
    with pytest.raises(BadAnswer):
        jupyter_signals(status, kernels, terminals)


@pytest.mark.parametrize("healthz", [
    [], {"status": "alive"}, {"status": "dead", "lastHeartbeat": 1}, {"status": "alive", "lastHeartbeat": "1"},
    {"status": "alive", "lastHeartbeat": float("nan")}, {"status": "alive", "lastHeartbeat": float("inf")},
    {"status": "alive", "lastHeartbeat": -5}, {"status": "alive", "lastHeartbeat": 10 ** 30},
    {"status": "alive", "lastHeartbeat": True},
])
def test_malformed_heartbeats_are_refused(healthz):
    with pytest.raises(BadAnswer):
        code_server_signals(healthz)
