"""What the adapter benchmarks (``bench_adapter_*``) share: the window no history reaches, the
start stamp and the "Measured ..." line of each report, the number format and layout of its
tables, the collector-off timing of one call (plain or on an event loop), the turns the paths
take, the medians of the timed calls, the growing of a history step by step, the plan of a run
(its sizes and untimed calls) and the size named on the command line, and the writing of the
results file.

Only what is the same in every benchmark is here; what each one measures, and how it words its
report, stays in its own module.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib.metadata
import os
import platform
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
    from pathlib import Path

T = TypeVar("T")

HUGE = 1_000_000_000
"""A window no history here reaches."""
FULL_SIZES = ((1_000, 60), (10_000, 20))
"""The sizes of a full run: (entries, timed calls), smallest first."""


@dataclass(frozen=True)
class Plan:
    """What a run measures; a benchmark's own plan adds its own counts."""

    sizes: tuple[tuple[int, int], ...]
    """(entries, timed calls) per size, smallest first: an entry is a message, a content or an
    item, whatever the framework's history holds."""
    warmup: int = 3
    """Untimed calls before each path's timed ones."""


PlanT = TypeVar("PlanT", bound=Plan)


def now() -> str:
    """When a run starts, as its report states it."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def figure(value: float) -> str:
    """Milliseconds as the tables show them: three significant digits, whole from 100."""
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A markdown table's lines, every column right-aligned (its cells are counts and
    figures)."""
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "---:|" * len(columns),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def versions(*names: str) -> str:
    """``name version`` of each installed distribution, comma-separated."""
    return ", ".join(f"{n} {importlib.metadata.version(n)}" for n in names)


def measured(started: str, module: str, seconds: float, packages: str) -> str:
    """The report's line on where, with what and how long the run was, and how loaded the
    machine was when it ended (a busy machine slows every path alike)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"Measured {started} on `{platform.platform()}` "
        f"({os.cpu_count()} CPUs) with Python {platform.python_version()}, {packages}, "
        f"by `python -m benchmarks.{module}` in {seconds:.0f} s "
        f"(load average {load:.1f} at the end)."
    )


def timed(call: Callable[[], T]) -> tuple[float, T]:
    """Milliseconds of one call, the collector off (as timeit has it): a collection that
    another path's garbage started would land on whichever call runs then."""
    gc.disable()
    try:
        start = time.perf_counter()
        out = call()
        return (time.perf_counter() - start) * 1000, out
    finally:
        gc.enable()


def timed_on(loop: asyncio.AbstractEventLoop, call: Callable[[], Awaitable[T]]) -> tuple[float, T]:
    """``timed`` for a coroutine, run to its end on ``loop``."""
    gc.disable()
    try:
        start = time.perf_counter()
        out = loop.run_until_complete(call())
        return (time.perf_counter() - start) * 1000, out
    finally:
        gc.enable()


def in_turn(calls: Mapping[str, T], n: int) -> list[tuple[str, T]]:
    """The paths of the ``n``-th step, the first of them moved on by one each step: the path
    timed right after the history grew (its new objects still cold in the cache, the
    collector's count high) is not always the same one."""
    order = list(calls.items())
    k = n % len(order)
    return order[k:] + order[:k]


def medians(samples: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """The median of each path's timed calls."""
    return {p: statistics.median(s) for p, s in samples.items()}


def grown(start: list[T], step: Callable[[int], list[T]], n: int) -> list[T]:
    """``start`` and then ``step(0)``, ``step(1)``, ... until it is at least ``n`` long: ``n``,
    or ``n + 1`` when a step's two entries would be split (so that it ends with a tool's
    result)."""
    out = list(start)
    k = 0
    while len(out) < n:
        out += step(k)
        k += 1
    return out


def plan_from(argv: Sequence[str], full: PlanT) -> PlanT:
    """``full``, or a single size when the command line names one (``entries calls``)."""
    if not argv[2:3]:
        return full
    return dataclasses.replace(full, sizes=((int(argv[1]), int(argv[2])),))


def write(path: Path | None, text: str) -> None:
    """The report to ``path`` (nowhere if ``None``), saying which file it went to."""
    if path is not None:
        path.write_text(text, encoding="utf-8")
        print(f"written: {path.name}")
