"""What the adapter benchmarks' smoke tests (``test_bench_adapter_*``) share: running a
benchmark's ``main`` at a tiny plan and reading back the report it wrote, and the history of a
benchmark at a few sizes, each checked for its length."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

T = TypeVar("T")
R = TypeVar("R")


class Sized(Protocol):
    @property
    def sizes(self) -> tuple[tuple[int, int], ...]: ...


P = TypeVar("P", bound=Sized)


def run(main: Callable[[P, Path], R], plan: P, out: Path) -> tuple[R, str, list[str]]:
    """``main`` at ``plan`` (one size), its report written to ``out``: the results, the report,
    and the report's rows for that size (one per table)."""
    results = main(plan, out)
    report = out.read_text(encoding="utf-8")
    ((entries, _),) = plan.sizes
    rows = [line for line in report.splitlines() if line.startswith(f"| {entries:,} |")]
    return results, report, rows


def histories(history: Callable[[int], list[T]]) -> list[list[T]]:
    """``history`` at a few sizes, odd and even, each ``n`` long or one longer (never cut
    between a tool call and its result)."""
    out: list[list[T]] = []
    for n in (2, 3, 120, 121):
        entries = history(n)
        assert len(entries) in (n, n + 1)
        out.append(entries)
    return out
