"""The ADK callback benchmark at a tiny size: every path runs on the growing history without
changing it, every call over the trigger does its work (the benchmark raises otherwise), and
the report has its tables; no timing is asserted here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks import bench_adapter_adk as bench
from tests.benchmarks._adapters import histories, run

if TYPE_CHECKING:
    from pathlib import Path

TINY = bench.Plan(sizes=((120, 3),), warmup=1, summarizing=1)


def test_the_benchmark_measures_every_path_and_writes_its_report(tmp_path: Path) -> None:
    results, report, rows = run(bench.main, TINY, tmp_path / "adapter-adk.md")
    (size,) = results.sizes
    assert size.contents == 120
    assert set(size.under) == set(bench.PATHS)
    assert all(ms > 0 for ms in size.under.values())
    assert set(size.over) == {"synopsis", "LlmEventSummarizer", "filter"}
    assert report.startswith("# The ADK callback's cost per model call")
    assert len(rows) == 2  # one row under the trigger, one over it
    assert "Target: the callback within 3x of the bare Compactor" in report


def test_the_history_ends_with_a_response_and_alternates() -> None:
    for history in histories(bench.history):
        assert history[-1].parts is not None
        assert history[-1].parts[0].function_response is not None
        roles = [c.role for c in history]
        assert roles == ["user", *(["model", "user"] * ((len(history) - 1) // 2))]


def test_the_copies_share_their_payloads_but_not_themselves() -> None:
    original = bench.history(5)
    copied = bench.copies(original)
    assert copied == original
    assert all(a is not b for a, b in zip(copied, original, strict=True))
    assert copied[1].parts is not None
    assert original[1].parts is not None
    assert copied[1].parts[0].function_call is original[1].parts[0].function_call


def test_the_report_says_at_which_sizes_the_callback_is_ahead_of_adks_own() -> None:
    def size(contents: int, built_in: float) -> bench.Size:
        under = dict.fromkeys(bench.PATHS, 2.0) | {"EventsCompactionConfig": built_in}
        over = {"synopsis": 1.0, "LlmEventSummarizer": 1.0, "filter": 1.0}
        return bench.Size(contents, 3, under=under, over=over)

    mixed = bench.markdown(bench.Results([size(1000, 1.0), size(10_000, 3.0)], 1.0, "today"))
    assert "on ADK's copies: **no** (ahead at 10,000 contents)." in mixed
    ahead = bench.markdown(bench.Results([size(1000, 3.0), size(10_000, 3.0)], 1.0, "today"))
    assert "on ADK's copies: **yes**." in ahead
