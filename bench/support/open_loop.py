"""Requests sent open loop: item i handed to one of a few client threads at start + i/rate, whatever the answers do."""
import queue
import threading
import time
from contextlib import AbstractContextManager


def open_loop(names: list[str], sender, threads: int, rate: float | None = None, start_in: float = 0.05,
              join_timeout: float = 120) -> dict:
    """Send every name (at `rate`/s when given, else as fast as the threads go); `sender()` is entered once per thread
    and gives `send(number, name)`, which raises on a failed request. Returns when each was sent and answered
    (time.monotonic()), the start of the schedule and how far sending fell behind it."""
    work: queue.Queue = queue.Queue()
    sent, answered, failures = {}, {}, []

    def poster():
        context: AbstractContextManager = sender()
        with context as send:
            while (item := work.get()) is not None:
                number, name = item
                sent[name] = time.monotonic()
                try:
                    send(number, name)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    failures.append((name, repr(exc)[:300]))
                answered[name] = time.monotonic()

    pool = [threading.Thread(target=poster, name=f"poster-{n}", daemon=True) for n in range(threads)]
    for thread in pool:
        thread.start()
    start = time.monotonic() + start_in
    try:
        for number, name in enumerate(names):
            if rate:
                delay = start + number / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            work.put((number, name))
    finally:
        for _ in pool:
            work.put(None)
        for thread in pool:
            thread.join(timeout=join_timeout)
    assert not failures, failures[:3]
    assert len(answered) == len(names), f"{len(names) - len(answered)} requests did not finish"
    lag = max(sent[name] - (start + number / rate) for number, name in enumerate(names)) if rate else 0.0
    return {"sent": sent, "answered": answered, "lag": lag, "start": start}
