"""The load benchmark at a tiny size: both parts measure what they claim (requests timed
alone and while a large request is compacted, every worker count driven and counted) and the
report's section lands in proxy.md without disturbing what else it holds; no timing target
is asserted here."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from benchmarks.bench_proxy import request_body
from benchmarks.compare.inputs import load_transcripts

from benchmarks import bench_proxy_load as bench

if TYPE_CHECKING:
    from pathlib import Path

# The upstream and three `synopsis serve` runs start in processes of their own.
pytestmark = pytest.mark.timeout(240)

TINY = bench.Plan(
    large_messages=200,
    large_bytes=600_000,
    samples=4,
    small_messages=10,
    worker_counts=(1, 2),
    worker_seconds=1.0,
    in_flight=2,
    worker_messages=20,
    worker_warmup=1.0,
    fast_sizes=(20, 60),
    fast_rounds=3,
)


@dataclass
class Run:
    results: bench.Results
    printed: str
    written: str


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Run:
    path: Path = tmp_path_factory.mktemp("bench") / "proxy.md"
    path.write_text("# The proxy's own cost\n\nWhat bench_proxy wrote.\n", encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        results = bench.main(TINY, path)
    return Run(results, out.getvalue(), path.read_text(encoding="utf-8"))


def test_the_large_request_is_compacted_while_others_are_timed(ran: Run) -> None:
    flight = ran.results.flight
    assert (flight.large_status, flight.large_compacted) == (200, True)
    assert flight.large_bytes > TINY.large_bytes * 0.8
    assert flight.large_seconds > 0
    for kind in ("healthz", "small"):
        assert len(flight.alone[kind]) == TINY.samples
        assert min(flight.alone[kind]) > 0
        assert len(flight.during[kind]) == len(flight.during["healthz"])


def test_each_worker_count_serves_without_error(ran: Run) -> None:
    counts = [(t.workers, t.errors) for t in ran.results.workers]
    assert counts == [(1, 0), (2, 0)]
    assert all(t.requests > 0 and t.per_second > 0 for t in ran.results.workers)


def test_the_fast_path_is_timed_both_ways_at_each_size(ran: Run) -> None:
    fast = ran.results.fast
    assert [p.messages for p in fast] == [20, 60]
    assert fast[0].body_bytes < fast[1].body_bytes
    assert all(p.on_loop_ms > 0 and p.in_thread_ms > 0 for p in fast)
    assert "| 60 messages | " in ran.written
    assert "fast path at 60 messages" in ran.printed


def test_the_section_lands_after_what_the_file_held(ran: Run) -> None:
    text = ran.written
    assert text.startswith("# The proxy's own cost\n\nWhat bench_proxy wrote.\n\n## Under load\n")
    assert "### A large request in flight" in text
    assert "| 2 | " in text
    assert "workers 2: " in ran.printed
    # run again, the section is replaced, not repeated
    again = bench.with_section(text, bench.section(ran.results))
    assert again.count(bench.HEADING) == 1
    assert again.startswith("# The proxy's own cost\n")
    assert bench.with_section("", "## Under load\n") == "## Under load\n"


def test_a_large_history_is_about_the_size_asked() -> None:
    history = bench.large_history(load_transcripts(), 100, 200_000)
    body = request_body(history)
    assert 140_000 < len(body) < 280_000  # the system prompt is not padded
    assert history[-1]["content"].endswith("bench-mark-large-0")
