"""The pydantic-ai capability benchmark at a tiny size: every path runs on the growing
history, the call over the trigger does compact (the benchmark raises otherwise), and the
report has its tables and says why the built-in is absent; no timing is asserted here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_ai import messages as pm

from benchmarks import bench_adapter_pydantic_ai as bench
from tests.benchmarks._adapters import histories, run

if TYPE_CHECKING:
    from pathlib import Path

TINY = bench.Plan(sizes=((120, 3),), warmup=1)


def test_the_benchmark_measures_every_path_and_writes_its_report(tmp_path: Path) -> None:
    results, report, rows = run(bench.main, TINY, tmp_path / "adapter-pydantic_ai.md")
    (size,) = results.sizes
    assert size.messages == 120
    assert set(size.under) == set(bench.PATHS)
    assert all(ms > 0 for ms in size.under.values())
    assert size.compacting > 0
    assert report.startswith("# The pydantic-ai capability's cost per model call")
    assert len(rows) == 2  # one row under the trigger, one over it
    assert "| n/a | n/a |" in rows[0]
    assert "Target: each capability within 3x of the bare Compactor" in report
    assert "name a Python that has it with --harness-python" in report


def test_a_built_in_row_is_reported_with_its_ratio() -> None:
    results = bench.Results(
        [bench.Size(1000, 5, under=dict.fromkeys(bench.PATHS, 2.0) | {bench.BUILT_IN: 1.0})],
        1.0,
        "today",
        "ran in its own Python",
    )
    report = bench.report(results)
    assert "| 1 | 0.5x |" in report
    assert "Cheaper than the built-in under its trigger: **no**." in report
    # Ahead at one size and not at the other: the report says where.
    mixed = bench.Results(
        [
            bench.Size(1000, 5, under=dict.fromkeys(bench.PATHS, 2.0) | {bench.BUILT_IN: 1.0}),
            bench.Size(10_000, 5, under=dict.fromkeys(bench.PATHS, 2.0) | {bench.BUILT_IN: 3.0}),
        ],
        1.0,
        "today",
        "ran in its own Python",
    )
    assert "**no** (ahead at 10,000 messages)." in bench.report(mixed)


def test_the_history_ends_with_a_tool_return_and_pairs_every_call() -> None:
    for history in histories(bench.history):
        last = history[-1]
        assert isinstance(last, pm.ModelRequest)
        assert isinstance(last.parts[0], pm.ToolReturnPart)
        calls = [p.tool_call_id for m in history for p in m.parts if isinstance(p, pm.ToolCallPart)]
        returns = [
            p.tool_call_id for m in history for p in m.parts if isinstance(p, pm.ToolReturnPart)
        ]
        assert calls == returns
