"""The page benchmark at a tiny size, on SQLite and the test run's PostgreSQL server: the
store holds what was built, every page answers and is timed each round, and the report shows
every page for every store; no timing is asserted here."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from benchmarks import bench_ui as bench
from synopsis.stores import SQLiteStore

if TYPE_CHECKING:
    from pathlib import Path

    from tests.postgres import Server

pytestmark = pytest.mark.timeout(180)

TINY = bench.Plan(
    sessions=6, messages=300, requests=60, largest_messages=80, largest_requests=20, rounds=2
)


@pytest.fixture(scope="module")
def results(server: Server, tmp_path_factory: pytest.TempPathFactory) -> bench.Results:
    return bench.run(TINY, tmp_path_factory.mktemp("bench-ui"), server.create_database)


def test_the_sizes_add_up_with_the_largest_first() -> None:
    assert bench.shares(100, 4, 40) == [40, 20, 20, 20]
    assert bench.shares(101, 4, 40) == [40, 21, 20, 20]
    assert bench.shares(7, 1, 3) == [7]


def test_a_session_compacts_where_its_history_drops() -> None:
    last = datetime(2026, 1, 1, tzinfo=UTC)
    records = bench.session_records("s", 12, 3, last, 2)
    assert [r.at for r in records] == sorted(r.at for r in records)
    assert records[-1].at == last
    assert sum(r.compacted for r in records) == 3
    for previous, record in itertools.pairwise(records):
        assert record.tokens_before is not None
        assert record.tokens_after is not None
        assert record.tokens_before > (previous.tokens_before or 0)
        if record.compacted:
            assert record.tokens_after < (previous.tokens_after or 0)
            assert record.summarizer_calls == 1
    assert {r.format for r in records} == {"anthropic"}


def test_the_built_store_holds_the_plan(tmp_path: Path) -> None:
    built = bench.build(TINY, datetime.now(UTC))
    assert len(built.compactions) == TINY.sessions
    assert sum(len(c.messages) for c in built.compactions) == TINY.messages
    assert len(built.records) == TINY.requests
    assert built.largest == "session-0000"
    assert len(built.compactions[0].messages) == TINY.largest_messages
    assert built.query.isalpha()
    with SQLiteStore(tmp_path / "ui.db") as store:
        assert bench.fill(store, built, batch=7) > 0
        assert sum(store.message_counts().values()) == TINY.messages
        assert sum(r.requests for r in store.request_rollup("session")) == TINY.requests
        state = store.session(built.largest)
        assert state is not None
        assert state.compactions == -(-TINY.largest_messages // TINY.batch)
        assert store.search(built.largest, built.query)


def test_every_page_is_timed_on_every_store(results: bench.Results) -> None:
    assert [r.name for r in results.runs] == ["SQLite", "PostgreSQL"]
    for run in results.runs:
        assert run.fill_seconds > 0
        assert len(run.pages) == 8
        for page in run.pages:
            assert len(page.samples) == len(page.cpu) == TINY.rounds
            assert min(page.samples) > 0
            assert min(page.cpu) >= 0
            assert page.size > 0
    # the export and the session page carry the largest session's originals
    sizes = {p.name: p.size for p in results.runs[0].pages}
    assert sizes["its export (Markdown)"] > sizes["search in it"]


def test_the_report_shows_every_page_against_the_target(results: bench.Results) -> None:
    text = bench.markdown(results)
    for page in results.runs[0].pages:
        assert f"| {page.name} | `{page.path}` |" in text
    assert "SQLite CPU p50 | PostgreSQL p50" in text
    for q, label in ((0.5, "p50"), (0.95, "p95")):
        over = results.over(q)
        assert (f"under {bench.TARGET_MS:.0f} ms at {label}" in text) == (not over)
        assert (f"Over {bench.TARGET_MS:.0f} ms at {label}: " in text) == bool(over)
