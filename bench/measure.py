"""What every comparison shares: alternating rounds, medians, percentiles, ratios, table rows."""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Row",
    "Section",
    "alternate",
    "collector_paused",
    "median",
    "percentile",
    "ratio",
    "timed",
]


@dataclass(frozen=True)
class Row:
    """One line of the results table; ``passed`` is None when the line has no target."""

    benchmark: str
    contender: str
    median: str
    ratio: str = ""
    target: str = ""
    passed: bool | None = None
    # How far off the target is, said in words, for the list of failures.
    shortfall: str = ""


@dataclass
class Section:
    """The result of one benchmark: its table rows, its raw data for the JSON, its errors."""

    name: str
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def alternate(
    contenders: Mapping[str, Callable[[], float]],
    rounds: int,
    *,
    label: str,
    unit: str = "s",
    warmup: bool = True,
) -> dict[str, list[float]]:
    """Measure every contender once per round, in turn, for ``rounds`` rounds.

    Every other round runs them in reverse order, so that none is always first
    (after an idle machine) or always last (after a warm one). With ``warmup``,
    each is first run once untimed: imports, bytecode and page caches are then
    warm for all. Prints one line per round; returns each contender's samples,
    in round order.
    """
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    if warmup:
        for name in names:
            contenders[name]()
    for number in range(rounds):
        order = names if number % 2 == 0 else names[::-1]
        for name in order:
            gc.collect()  # garbage of the previous contender is not this one's cost
            samples[name].append(contenders[name]())
        line = "  ".join(f"{name} {samples[name][-1]:,.4g}{unit}" for name in names)
        print(f"  {label} round {number + 1}/{rounds}: {line}", flush=True)
    return samples


@contextmanager
def collector_paused() -> Iterator[None]:
    """Collect the bench's garbage now, then keep Python's collector off until the block ends.

    For the parts that time events as this process reads them: one full
    collection of the bench's own heap, late in a full run, once took 291 ms in
    the middle of the event streams and read as the server's delay (p99 174 ms,
    where the part alone read about 1 ms). Processes forked inside the block
    start with the collector off too.
    """
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def timed(function: Callable[[], object]) -> float:
    """Run ``function`` once and return how long it took, in seconds."""
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def median(values: Sequence[float]) -> float:
    """The median of ``values`` (nan when there are none)."""
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value at least ``fraction`` of all reach."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def ratio(value: float, reference: float) -> float:
    """``value / reference``, nan when the reference is zero or missing."""
    if not reference or math.isnan(reference):
        return math.nan
    return value / reference
