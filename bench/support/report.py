"""Measuring and printing: interleaved rounds, percentiles, verdicts, the machine's load, cProfile output."""
import cProfile
import os
import pstats
import statistics
from contextlib import contextmanager


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def percentile(samples: list[float], pct: int) -> float:
    """The pct-th percentile, interpolated (statistics.quantiles, inclusive method)."""
    return statistics.quantiles(samples, n=100, method="inclusive")[pct - 1]


def nearest_rank(samples: list[float], pct: float) -> float:
    """The pct-th percentile by nearest rank: always one of the samples."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))]


def interleaved(calls: dict, rounds: int, warmup: int) -> dict[str, list[float]]:
    """Run each call (name → a function returning seconds) per round, rotating which goes first, so drift on a noisy
    machine hits all alike; the seconds of the rounds after `warmup`, by name."""
    samples = {name: [] for name in calls}
    order = list(calls.items())
    for number in range(warmup + rounds):
        shift = number % len(order)
        for name, call in order[shift:] + order[:shift]:
            elapsed = call()
            if number >= warmup:
                samples[name].append(elapsed)
    return samples


@contextmanager
def profiled(sort: str, lines: int, title: str | None = None):
    """cProfile the block; print its `lines` most expensive functions by `sort` (after `title`, when given)."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield profiler
    finally:
        profiler.disable()
        if title:
            print(title)
        pstats.Stats(profiler).sort_stats(sort).print_stats(lines)
