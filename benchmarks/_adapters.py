"""What the adapter benchmarks (``bench_adapter_*``) share beyond :mod:`benchmarks._harness`:
the window no history reaches, the "Measured ..." line of each report, the turns the paths
take, the medians of the timed calls, the growing of a history step by step, and the plan of a
run (its sizes and untimed calls) and the size named on the command line.

Only what is the same in every adapter benchmark is here; what each one measures, and how it
words its report, stays in its own module.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from benchmarks._harness import load_average

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

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


def measured(started: str, module: str, seconds: float, packages: str) -> str:
    """The report's line on where, with what and how long the run was, and how loaded the
    machine was when it ended (a busy machine slows every path alike)."""
    load = load_average()
    return (
        f"Measured {started} on `{platform.platform()}` "
        f"({os.cpu_count()} CPUs) with Python {platform.python_version()}, {packages}, "
        f"by `python -m benchmarks.{module}` in {seconds:.0f} s "
        f"(load average {load:.1f} at the end)."
    )


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
