"""The stores benchmark at a tiny size, on the test run's PostgreSQL server: every part
measures what it claims (both stores hold what was loaded and answer every read, the lock is
taken and waited for, the fast path compacts nothing, the replicas answer every request, one
conversation sent to two replicas at once is summarized once) and the report shows it; no
timing is asserted here."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from benchmarks.stores.corpus import Plan
from benchmarks.stores.proxy import CONFIGS
from benchmarks.stores.replicas import classify, count_statements, read_log
from benchmarks.stores.report import markdown, table
from benchmarks.stores.run import Results, run

if TYPE_CHECKING:
    from pathlib import Path

    from tests.postgres import Server

# Eight `synopsis serve` processes start one after another (under coverage when the suite
# measures it), and the module's first test pays for the whole run in its fixture.
pytestmark = pytest.mark.timeout(300)

TINY = Plan(
    sessions=3,
    per_session=60,
    saves=3,
    reads=3,
    locks=5,
    holds=(0.02,),
    contended_rounds=1,
    fast_history=20,
    fast_calls=4,
    proxy_sessions=3,
    proxy_rounds=4,
    proxy_concurrency=2,
    proxy_start=60,
    window=16_000,
    pairs=2,
    batch=20,
    warmup=1,
)


@dataclass
class Run:
    results: Results
    printed: list[str]
    written: str


@pytest.fixture(scope="module")
def ran(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Run:
    folder = tmp_path_factory.mktemp("bench-stores")
    steps: list[str] = []
    results = run(TINY, server.create_database, folder, progress=steps.append)
    assert steps[0].startswith("building ")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print("\n".join(table(results)))
    return Run(results, out.getvalue().splitlines(), markdown(results))


@pytest.fixture(scope="module")
def results(ran: Run) -> Results:
    return ran.results


def test_both_stores_hold_what_was_loaded_and_every_read_is_timed(
    results: Results,
) -> None:
    sqlite, postgres = results.stores
    assert (sqlite.name, postgres.name) == ("SQLite", "PostgreSQL")
    for store in results.stores:
        assert store.messages == TINY.sessions * TINY.per_session
        assert store.load_seconds > 0
        assert store.size_bytes > 0
        for timing in (store.recall_ids, store.recall_range, *store.search.values()):
            assert timing.count == TINY.reads
            assert min(timing.samples) > 0
        assert store.save.count == TINY.saves
        assert set(store.search) == {"rare word", "common word", "two words"}
    # both stores cut words alike, so a query finds as many messages in each
    assert sqlite.hits == postgres.hits
    assert sqlite.hits["common word"] > 0
    assert results.save_bytes > 0


def test_the_queries_are_picked_by_how_many_messages_hold_their_words(
    results: Results,
) -> None:
    rare, common, pair = results.queries
    assert (rare.label, common.label, pair.label) == ("rare word", "common word", "two words")
    assert rare.text.isalpha()
    assert common.text.isalpha()
    assert len(pair.text.split()) == 2
    assert 0 < rare.matching < common.matching <= TINY.per_session


def test_the_lock_is_timed_alone_and_behind_a_holder(results: Results) -> None:
    lock = results.lock
    assert lock.sync.count == lock.asynchronous.count == TINY.locks
    assert min(lock.sync.samples) > 0
    assert [(c.hold, c.waiter) for c in lock.contended] == [(0.02, "sync"), (0.02, "async")]
    for row in lock.contended:
        assert len(row.after_release) == TINY.contended_rounds
        assert min(row.after_release) > 0


def test_the_fast_path_is_timed_with_each_store(results: Results) -> None:
    assert [f.store for f in results.fast] == ["MemoryStore", "SQLite", "PostgreSQL"]
    for f in results.fast:
        assert f.compact.count == f.acompact.count == TINY.fast_calls
        assert min(f.compact.samples) > 0
        assert min(f.acompact.samples) > 0


def test_every_configuration_answers_every_request(results: Results) -> None:
    assert [r.config for r in results.proxy] == list(CONFIGS)
    for r in results.proxy:
        assert r.load.errors == []
        assert r.load.requests == TINY.proxy_sessions * TINY.proxy_rounds
        assert r.load.rate > 0
        # the window is small: conversations compact, and later requests carry the summary
        assert r.summaries > 0
        assert r.offloaded > 0
        assert 0 < len(r.load.compacted) <= r.load.shortened <= r.load.requests
        assert r.cpu["client"] is not None
        assert r.cpu["client"] > 0
        assert r.cpu["replicas"] is not None
        assert r.cpu["replicas"] > 0
        # the fixture's server is not this benchmark's own: neither its CPU time nor its log
        assert r.cpu["PostgreSQL"] is None
        assert r.statements is None
        if r.config.store == "postgres":
            assert r.wal_bytes is not None
            assert r.wal_bytes > 0
            assert r.peak_connections is not None
            assert r.peak_connections >= r.config.replicas
        else:
            assert (r.wal_bytes, r.peak_connections) == (None, None)


def test_one_conversation_sent_to_both_replicas_is_summarized_once(
    results: Results,
) -> None:
    pairs = results.pairs
    assert pairs.errors == []
    assert pairs.summaries == pairs.conversations == TINY.pairs
    # both answers went upstream with the summary in place of the history's start
    assert pairs.shortened == 2 * TINY.pairs
    assert pairs.first.count == pairs.second.count == TINY.pairs


def test_the_report_shows_every_part(ran: Run) -> None:
    text = ran.written
    assert text.startswith("# Stores and replicas\n")
    assert "`python -m benchmarks.stores`" in text
    assert "**The machine has " in text
    assert "**Durability is not alike.**" in text
    assert "| save one compaction (1 record, 20 messages, " in text
    for heading in (
        "## The stores at 180 messages",
        "## The session lock (PostgreSQL)",
        "## A compaction call that compacts nothing (the fast path)",
        "## The proxy: one and two replicas",
        "## One conversation sent to both replicas at once",
        "## Reading the figures",
    ):
        assert f"\n{heading}\n" in text
    for config in CONFIGS:
        assert f"| {config.label} | {TINY.proxy_sessions * TINY.proxy_rounds} | " in text
    assert "| MemoryStore | " in text
    # without the server's log, the statements are not counted, and the report says so
    assert "lock attempts refused: not counted" in text
    assert "Statements during each load, by kind" not in text
    assert ran.printed[0].startswith("stores (ms)")
    assert any(line.startswith("proxy PostgreSQL, 2 replicas, sticky: ") for line in ran.printed)


LOG = """\
2026-01-01 00:00:00.000 UTC [11] LOG:  statement: SET TIME ZONE 'UTC'; SET lock_timeout = 60000
2026-01-01 00:00:00.001 UTC [11] LOG:  execute <unnamed>: SELECT pg_try_advisory_lock($1)
2026-01-01 00:00:00.002 UTC [12] LOG:  execute <unnamed>: SELECT pg_try_advisory_lock($1)
2026-01-01 00:00:00.003 UTC [11] LOG:  execute _pg3_1: SELECT state FROM synopsis_sessions WHERE \
session_id = $1
2026-01-01 00:00:00.004 UTC [13] LOG:  statement: BEGIN
2026-01-01 00:00:00.005 UTC [13] LOG:  execute <unnamed>: INSERT INTO synopsis_summaries \
(session_id, id, record) VALUES ($1, $2, $3) ON CONFLICT (session_id, id) DO NOTHING
2026-01-01 00:00:00.006 UTC [13] LOG:  execute _pg3_0: INSERT INTO synopsis_messages (session_id)
2026-01-01 00:00:00.007 UTC [13] LOG:  execute _pg3_0: INSERT INTO synopsis_messages (session_id)
2026-01-01 00:00:00.008 UTC [13] LOG:  execute <unnamed>: INSERT INTO synopsis_sessions \
(session_id, state, updated_at) VALUES ($1, $2, $3)
2026-01-01 00:00:00.009 UTC [13] LOG:  statement: COMMIT
2026-01-01 00:00:00.010 UTC [11] LOG:  execute <unnamed>: SELECT pg_advisory_unlock($1)
2026-01-01 00:00:00.011 UTC [14] LOG:  statement: CREATE TABLE t (
\t    a integer
\t)
2026-01-01 00:00:00.012 UTC [15] LOG:  execute <unnamed>: SELECT record FROM synopsis_summaries \
WHERE session_id = $1
2026-01-01 00:00:00.013 UTC [15] ERROR:  canceling statement due to lock timeout
"""


def test_the_statement_log_is_counted_by_kind_and_by_transaction(tmp_path: Path) -> None:
    counted = count_statements(LOG)
    assert dict(counted.kinds) == {
        "other": 2,  # the connection's settings, and a statement of another program
        "try-lock": 2,
        "read session": 1,
        "begin": 1,
        "insert summaries": 1,
        "insert messages": 2,
        "upsert session": 1,
        "commit": 1,
        "unlock": 1,
        "read other": 1,
    }
    assert counted.total == 13
    # seven statements on their own, and one BEGIN ... COMMIT holding four
    assert counted.transactions == 8
    # two tries and one unlock: one of the tries found the lock taken
    assert counted.refused == 1
    log = tmp_path / "server.log"
    log.write_text("earlier lines\n" + LOG)
    assert read_log(log, len("earlier lines\n")) == counted


@pytest.mark.parametrize(
    ("statement", "kind"),
    [
        ("SELECT pg_advisory_lock($1)", "lock"),
        ("SELECT pg_advisory_xact_lock($1)", "lock"),
        ("SELECT pg_try_advisory_lock($1)", "try-lock"),
        ("SELECT pg_advisory_unlock($1)", "unlock"),
        ("ROLLBACK", "commit"),
        ("begin", "begin"),
        ("SELECT session_id FROM synopsis_sessions ORDER BY session_id", "read session"),
        ("SELECT 1", "other"),
    ],
)
def test_a_statement_is_classified_by_what_it_does(statement: str, kind: str) -> None:
    assert classify(statement) == kind
