"""What only the PostgreSQL store does: its schema's versions, its lock per session, its
word index's limits, and its errors. The contract it shares with the other stores is in
``test_contract*.py``; replicas and processes in ``test_postgres_concurrency.py``."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConfigurationError, StoreError
from synopsis.messages import Role
from synopsis.stores import MemoryStore, PostgresStore, SessionState, open_store
from synopsis.stores._pg_schema import MIGRATIONS
from synopsis.stores._query import words
from synopsis.stores.postgres import SCHEMA_VERSION, tsquery, tsvector
from synopsis.stores.records import Compaction
from tests.stores.helpers import T0, compaction, record, stored, three

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from tests.postgres import Server


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(postgres_url) as opened:
        yield opened


def _admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url, autocommit=True)


# -- the schema -------------------------------------------------------------------------------


def test_the_schema_is_made_once_and_opening_again_changes_nothing(postgres_url: str) -> None:
    summary, rows = three()
    with PostgresStore(postgres_url) as first:
        first.save(compaction(summary, rows))
    with PostgresStore(postgres_url) as again:
        assert again.recall("s1") == rows
    with _admin(postgres_url) as db:
        versions = [r[0] for r in db.execute("SELECT version FROM synopsis_schema").fetchall()]
    assert versions == list(range(1, SCHEMA_VERSION + 1))


def test_replicas_starting_together_migrate_once(postgres_url: str) -> None:
    opened: list[PostgresStore] = []
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def open_one() -> None:
        start.wait()
        try:
            opened.append(PostgresStore(postgres_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in opened:
        s.close()
    assert errors == []
    with _admin(postgres_url) as db:
        assert db.execute("SELECT count(*) FROM synopsis_schema").fetchone() == (SCHEMA_VERSION,)


# The request records' table as schema 2 made it, verbatim.
V2_REQUESTS = (
    """CREATE TABLE synopsis_requests (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at timestamptz NOT NULL,
        session_id text NOT NULL,
        record text NOT NULL
    )""",
    "CREATE INDEX synopsis_requests_at ON synopsis_requests (at, seq)",
    "CREATE INDEX synopsis_requests_session ON synopsis_requests (session_id, at, seq)",
)


def test_a_version_2_database_is_upgraded_and_keeps_its_records(postgres_url: str) -> None:
    with _admin(postgres_url) as db, db.transaction():
        db.execute("CREATE TABLE synopsis_schema (version integer NOT NULL)")
        for statement in (*MIGRATIONS[0], *V2_REQUESTS):
            db.execute(statement)
        db.execute("INSERT INTO synopsis_schema (version) VALUES (1), (2)")
        for minutes, session, tokens, compacted in (
            (0, "a", 100, "true"),
            (60, "b", 200, "false"),
            (90, "a", 300, "false"),
        ):
            at = T0 + timedelta(minutes=minutes)
            text = (
                f'{{"at": "{at.isoformat()}", "session_id": "{session}", "model": "gpt-4o", '
                '"route": "/r", "format": "openai", "status": 200, "messages_in": 3, '
                f'"tokens_before": {tokens}, "tokens_after": 10, "compacted": {compacted}, '
                '"code": null, "shared_messages": null, "summarizer_calls": 1, '
                '"summarizer_seconds": 0.5, "ms_total": 1.5}'
            )
            db.execute(
                "INSERT INTO synopsis_requests (at, session_id, record) VALUES (%s, %s, %s)",
                (at, session, text),
            )
    with PostgresStore(postgres_url) as store:
        assert [r.tokens_before for r in store.requests()] == [300, 200, 100]
        assert store.requests()[0].events == ()
        a, b = store.request_rollup("session")
        assert (a.key, a.requests, a.compacted, a.tokens_before, a.tokens_after) == (
            "a",
            2,
            1,
            400,
            20,
        )
        assert (a.summarizer_calls, a.summarizer_seconds, a.errors, a.model) == (
            2,
            1.0,
            0,
            "gpt-4o",
        )
        assert (b.key, b.requests, b.last_at) == ("b", 1, T0 + timedelta(minutes=60))
        assert [(d.key, d.requests) for d in store.request_rollup("day")] == [
            (T0.replace(hour=0, minute=0).isoformat(), 3)
        ]
    with _admin(postgres_url) as db:
        versions = [r[0] for r in db.execute("SELECT version FROM synopsis_schema ORDER BY 1")]
    assert versions == list(range(1, SCHEMA_VERSION + 1))


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    PostgresStore(postgres_url).close()
    with _admin(postgres_url) as db:
        db.execute("INSERT INTO synopsis_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer synopsis"):
        PostgresStore(postgres_url)


def test_a_database_without_a_schema_to_write_in_is_refused(postgres_url: str) -> None:
    with pytest.raises(StoreError, match="no schema"):
        PostgresStore(postgres_url + "?options=-csearch_path%3D")


def test_messages_cannot_be_changed_or_deleted_behind_the_store(
    store: PostgresStore, postgres_url: str
) -> None:
    summary, rows = three()
    store.save(compaction(summary, rows))
    with _admin(postgres_url) as db:
        for statement in (
            "UPDATE synopsis_messages SET role = 'user'",
            "DELETE FROM synopsis_messages",
        ):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                db.execute(statement)
    assert store.recall("s1") == rows


def test_a_save_of_a_state_alone_writes_the_state(store: PostgresStore) -> None:
    store.save(Compaction("s1", (), (), SessionState("s1", compactions=2)))
    state = store.session("s1")
    assert state is not None
    assert state.compactions == 2
    assert store.summaries("s1") == []
    assert store.recall("s1") == []


# -- the word index ---------------------------------------------------------------------------


def test_a_tsvector_holds_each_word_with_its_positions() -> None:
    # "fix_it" is two words: "_" separates words, as in SQLite's index.
    assert tsvector("Fix the parser, then fix_it: FIX") == (
        "'fix':1,5,7 'the':2 'parser':3 'then':4 'it':6"
    )


def test_a_tsvector_keeps_within_postgresql_limits() -> None:
    long_word = "x" * 3000
    many = " ".join(["same"] * 20_000)
    vector = tsvector(f"{long_word} {many} late")
    assert long_word not in vector
    positions = vector.split(" ")[0].removeprefix("'same':").split(",")
    assert len(positions) == 256
    assert vector.endswith("'late':16383")
    distinct = " ".join(f"w{i:07d}" for i in range(200_000))  # 1.6 MB of distinct words
    assert len(tsvector(distinct).encode()) < 3_000_000
    assert "'w0000000':1" in tsvector(distinct)
    assert tsquery(["ok", long_word]) == "'ok'"


def test_huge_texts_are_saved_and_found(store: PostgresStore) -> None:
    summary = record()
    distinct = " ".join(f"w{i:07d}" for i in range(150_000))
    rows = [
        stored(0, distinct, compaction=summary.id, role=Role.TOOL),
        stored(1, "y" * 5000 + " needle " + "step " * 30_000, compaction=summary.id),
    ]
    store.save(compaction(summary, rows))
    assert [h.message.position for h in store.search("s1", "w0000001")] == [0]
    assert [h.message.position for h in store.search("s1", "needle")] == [1]
    assert store.recall("s1") == rows


TEXT = st.text(st.sampled_from("abc dé_ÉXY 12\x00\ud800.:"), max_size=30)


@given(st.lists(TEXT, min_size=1, max_size=8), st.lists(TEXT, min_size=1, max_size=3))
def test_search_finds_what_the_memory_store_finds(server: Server, texts, queries) -> None:
    """The same words match as in every other store (the ranking is PostgreSQL's own)."""
    url = _property_url(server)
    summary = record()
    rows = [stored(i, t, compaction=summary.id) for i, t in enumerate(texts)]
    memory = MemoryStore()
    session = f"p{next(_sessions)}"
    saved = Compaction(
        session, summary, [replace(r, session_id=session) for r in rows], SessionState(session)
    )
    memory.save(saved)
    with PostgresStore(url) as store:
        store.save(saved)
        for query in queries:
            found = {h.message for h in store.search(session, query, limit=50)}
            assert found == {h.message for h in memory.search(session, query, limit=50)}
            if found:
                assert set(words(query)) & {w for m in found for w in words(m.text)}


_urls: dict[int, str] = {}
_sessions = iter(range(10**9))


def _property_url(server: Server) -> str:
    """One database for every example of the property (each example its own session)."""
    if id(server) not in _urls:
        _urls[id(server)] = server.create_database()
    return _urls[id(server)]


# -- the session lock -------------------------------------------------------------------------


def test_the_session_lock_waits_a_bounded_time(postgres_url: str) -> None:
    with (
        PostgresStore(postgres_url, lock_timeout=0.2) as holder,
        PostgresStore(postgres_url, lock_timeout=0.2) as waiter,
        holder.session_lock("s1"),
    ):
        with (
            pytest.raises(StoreError, match=r"waited 0\.2 s for a lock"),
            waiter.session_lock("s1"),
        ):
            pass  # pragma: no cover - never entered
        with waiter.session_lock("another"):  # other sessions are not held
            pass
        # In another schema the same session is another lock.
        with _admin(postgres_url) as db:
            db.execute("CREATE SCHEMA other")
        other_schema = postgres_url + "?options=-csearch_path%3Dother"
        with PostgresStore(other_schema) as elsewhere, elsewhere.session_lock("s1"):
            pass
    with PostgresStore(postgres_url, lock_timeout=0.2) as after, after.session_lock("s1"):
        pass


def test_the_async_lock_waits_then_gives_up(postgres_url: str) -> None:
    async def scenario() -> None:
        with (
            PostgresStore(postgres_url, lock_timeout=0.3) as holder,
            PostgresStore(postgres_url, lock_timeout=0.3) as waiter,
        ):
            async with holder.asession_lock("s1"):
                with pytest.raises(StoreError, match="another compaction of it"):
                    async with waiter.asession_lock("s1"):
                        pass  # pragma: no cover - never entered
                released = asyncio.Event()

                async def take_later() -> None:
                    async with waiter.asession_lock("s1"):
                        released.set()

                later = asyncio.create_task(take_later())
                await asyncio.sleep(0.05)
                assert not released.is_set()
            await asyncio.wait_for(later, 5)
            assert released.is_set()

    asyncio.run(scenario())


def test_a_cancelled_async_waiter_leaves_no_lock_held(postgres_url: str) -> None:
    async def scenario() -> None:
        with (
            PostgresStore(postgres_url) as first,
            PostgresStore(postgres_url, lock_timeout=2) as second,
        ):
            entered: list[bool] = []

            async def wait_for_it() -> None:
                async with first.asession_lock("s1"):
                    entered.append(True)  # pragma: no cover - cancelled before

            # Cancelled while it waits between two attempts, or while an attempt is in
            # flight: an attempt that took the lock after all lets go of it once it returns.
            for held, pause in ((True, 0.1), (True, 0.0), (False, 0.0)):
                if held:
                    async with second.asession_lock("s1"):
                        task = asyncio.create_task(wait_for_it())
                        await asyncio.sleep(pause)
                        task.cancel()
                        with pytest.raises(asyncio.CancelledError):
                            await task
                        await asyncio.sleep(0.1)  # its last attempt has returned by now
                else:
                    task = asyncio.create_task(wait_for_it())
                    await asyncio.sleep(0)
                    task.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await task
                assert entered == []
                await asyncio.wait_for(_taken(second, "s1"), 5)

    asyncio.run(scenario())


async def _taken(store: PostgresStore, session: str) -> None:
    async with store.asession_lock(session):
        pass


def test_a_lock_whose_connection_died_is_let_go(postgres_url: str) -> None:
    with PostgresStore(postgres_url, pool_size=2) as store, _admin(postgres_url) as admin:
        with store.session_lock("s1"):
            admin.execute(
                "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_database d "
                "ON d.oid = l.database WHERE l.locktype = 'advisory' "
                "AND d.datname = current_database() AND l.pid <> pg_backend_pid()"
            )
        with PostgresStore(postgres_url, lock_timeout=0.5) as other, other.session_lock("s1"):
            pass
        store.save(compaction(*three()))  # the pool replaced the dead connection


def test_a_lock_asked_for_on_a_dead_connection_is_a_store_error(postgres_url: str) -> None:
    with PostgresStore(postgres_url, pool_size=1) as store, _admin(postgres_url) as admin:
        asks: list[Callable[[], object]] = [
            lambda: store.session_lock("s1").__enter__(),
            lambda: asyncio.run(_taken(store, "s1")),
        ]
        for ask in asks:
            _kill_the_pools_connections(store, admin)
            with pytest.raises(StoreError, match="failed"):
                ask()


def _others(admin: psycopg.Connection[tuple[object, ...]]) -> int:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    ).fetchone()
    assert row is not None
    return int(str(row[0]))


def _kill_the_pools_connections(
    store: PostgresStore, admin: psycopg.Connection[tuple[object, ...]]
) -> None:
    """Every other connection to the database ended, once the pool holds a connection ready
    (it replaces a broken one in the background; one killed while it was still being set up
    would only be made again, and the next request would find a live one)."""
    pool = store._pool
    assert pool is not None
    deadline = time.monotonic() + 10
    while pool.get_stats().get("pool_available", 0) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    while _others(admin) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_lock_held_when_the_store_closes_is_let_go(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    with store.session_lock("s1"):
        store.close()
    with PostgresStore(postgres_url, lock_timeout=0.5) as other, other.session_lock("s1"):
        pass


def test_forget_waits_for_a_compaction_in_flight(postgres_url: str) -> None:
    with (
        PostgresStore(postgres_url, lock_timeout=0.2) as holder,
        PostgresStore(postgres_url, lock_timeout=0.2) as operator,
    ):
        holder.save(compaction(*three()))
        with holder.session_lock("s1"), pytest.raises(StoreError, match="lock"):
            operator.forget("s1")
        assert operator.forget("s1")


# -- errors -----------------------------------------------------------------------------------


def test_arguments_are_checked(postgres_url: str) -> None:
    for bad in (
        {"pool_size": 0},
        {"pool_size": True},
        {"lock_timeout": 0},
        {"connect_timeout": "1"},
    ):
        with pytest.raises(ConfigurationError):
            PostgresStore(postgres_url, **bad)
    with pytest.raises(ConfigurationError, match="string"):
        PostgresStore(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="not a PostgreSQL URL"):
        PostgresStore("postgresql://[")


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot reach") as caught:
        PostgresStore("postgresql://me:secret@127.0.0.1:1/db", connect_timeout=1)
    assert "secret" not in str(caught.value)
    assert "postgresql://me@127.0.0.1:1/db" in str(caught.value)


def test_repr_and_errors_hide_the_password(postgres_url: str) -> None:
    with_password = postgres_url.replace("postgres@", "postgres:hunter2@")
    with PostgresStore(with_password) as store:
        assert "hunter2" not in repr(store)
        assert repr(store).startswith("PostgresStore('postgresql://postgres@127.0.0.1:")


def test_values_postgresql_text_cannot_hold_are_store_errors(store: PostgresStore) -> None:
    with pytest.raises(StoreError, match="NUL"):
        store.session("a\x00b")
    with pytest.raises(StoreError, match="cannot hold"):
        store.session("\ud800")


def test_a_failing_statement_is_a_store_error(store: PostgresStore, postgres_url: str) -> None:
    with _admin(postgres_url) as db:
        db.execute("ALTER TABLE synopsis_sessions RENAME TO gone")
    with pytest.raises(StoreError, match="failed"):
        store.sessions()


def test_a_pool_with_no_free_connection_is_a_store_error(postgres_url: str) -> None:
    with (
        PostgresStore(postgres_url, pool_size=1, lock_timeout=0.2, connect_timeout=1) as store,
        store.session_lock("s1"),
        pytest.raises(StoreError, match="no connection"),
    ):
        store.sessions()


def test_a_closed_store_refuses_everything(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.close()
    store.close()  # twice is fine
    for call in (
        store.sessions,
        lambda: store.search("s1", "x"),
        lambda: store.search("s1", ""),
        lambda: store.session_lock("s1").__enter__(),
    ):
        with pytest.raises(StoreError, match="closed"):
            call()


def test_the_extra_is_named_when_psycopg_is_missing(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg_pool", None)
    with pytest.raises(ConfigurationError, match=r"synopsis\[postgres\]"):
        PostgresStore(postgres_url)


def test_a_url_names_a_postgres_store_everywhere(postgres_url: str) -> None:
    from synopsis import Compactor  # noqa: PLC0415

    opened = open_store(postgres_url)
    assert isinstance(opened, PostgresStore)
    opened.close()
    compactor = Compactor(environ={"SYNOPSIS_STORE": postgres_url}, session_id="s1")
    assert isinstance(compactor.setup.store, PostgresStore)
    compactor.close()


def test_a_call_of_the_same_process_waits_no_longer_than_lock_timeout(postgres_url: str) -> None:
    """Calls of one process on one store take turns at the gate before the lock in the
    database: the store's timeout bounds that wait too."""
    from synopsis.compaction.gates import async_gate, gate  # noqa: PLC0415

    with PostgresStore(postgres_url, lock_timeout=0.2) as store:
        failures: list[BaseException] = []

        def second() -> None:
            try:
                with gate(store, "s1"):
                    pass  # pragma: no cover - never entered
            except StoreError as exc:
                failures.append(exc)

        with gate(store, "s1"):
            waiter = threading.Thread(target=second)
            waiter.start()
            waiter.join()
        assert "in this process" in str(failures[0])
        with gate(store, "s1"):  # and the gate is free again
            pass

        async def scenario() -> None:
            async with async_gate(store, "s1"):
                with pytest.raises(StoreError, match=r"waited 0\.2 s .* in this process"):
                    async with async_gate(store, "s1"):
                        pass  # pragma: no cover - never entered
            async with async_gate(store, "s1"):
                pass

        asyncio.run(scenario())
