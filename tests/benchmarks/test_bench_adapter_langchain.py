"""The LangChain middleware benchmark at a tiny size: every path runs on the growing history
without changing it, both summarizing calls do summarize (the benchmark raises otherwise),
and the report has its tables; no timing is asserted here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks import bench_adapter_langchain as bench
from tests.benchmarks._adapters import histories, run

if TYPE_CHECKING:
    from pathlib import Path

TINY = bench.Plan(sizes=((120, 3),), warmup=1, summarizing=1, reloads=1)


def test_the_benchmark_measures_every_path_and_writes_its_report(tmp_path: Path) -> None:
    results, report, rows = run(bench.main, TINY, tmp_path / "adapter-langchain.md")
    (size,) = results.sizes
    assert size.messages == 120
    assert set(size.under) == set(bench.PATHS)
    assert all(ms > 0 for ms in size.under.values())
    assert set(size.summarizing) == {"synopsis", "built-in"}
    assert size.reload > 0
    assert report.startswith("# The LangChain middleware's cost per model call")
    assert len(rows) == 2  # one row under the trigger, one over it
    assert "Target: each middleware within 3x of the bare Compactor" in report


def test_the_history_ends_with_a_tool_result_and_pairs_every_call() -> None:
    for history in histories(bench.history):
        assert type(history[-1]).__name__ == "ToolMessage"
        calls = [c["id"] for m in history for c in getattr(m, "tool_calls", [])]
        results = [getattr(m, "tool_call_id", None) for m in history[2::2]]
        assert calls == results
