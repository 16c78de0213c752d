"""The Agents SDK adapter benchmark at a tiny size: every path runs on the growing history
without compacting it, the filter compacts over the trigger (the benchmark raises otherwise),
the SDK's summarizing session is tried offline, and the report has its tables; no timing is
asserted here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks import bench_adapter_agents as bench
from tests.benchmarks._adapters import histories, run

if TYPE_CHECKING:
    from pathlib import Path

TINY = bench.Plan(sizes=((120, 3),), warmup=1)


def test_the_benchmark_measures_every_path_and_writes_its_report(tmp_path: Path) -> None:
    results, report, rows = run(bench.main, TINY, tmp_path / "adapter-agents.md")
    (size,) = results.sizes
    assert size.items == 120
    assert set(size.under) == set(bench.PATHS)
    assert set(size.session) == set(bench.SESSION_PATHS)
    assert all(ms > 0 for ms in [*size.under.values(), *size.session.values()])
    assert size.compacting > 0
    assert "/v1/responses/compact" in results.built_in
    assert "404" in results.built_in
    assert report.startswith("# The OpenAI Agents SDK adapter's cost per model call")
    assert len(rows) == 2
    assert "Target: the filter and the session within 3x of the bare Compactor" in report


def test_the_history_ends_with_a_tool_output_and_pairs_every_call() -> None:
    for items in histories(bench.history):
        assert items[-1]["type"] == "function_call_output"
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
        assert calls == outputs
