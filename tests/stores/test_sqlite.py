"""What only the SQLite store promises: one transaction per save, WAL, the default file, and
refusing files that are not its own."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from synopsis.errors import StoreError
from synopsis.stores import SessionState, SQLiteStore, data_dir, default_database_path
from synopsis.stores.sqlite import SCHEMA_VERSION
from tests.stores.helpers import compaction, record, stored

if TYPE_CHECKING:
    from pathlib import Path


def rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as db:
        count: int = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    db.close()
    return count


def nothing_more_written(store: SQLiteStore, path: Path, before: list[int]) -> None:
    assert [rows(path, t) for t in ("summaries", "messages", "messages_fts", "sessions")] == before
    state = store.session("s1")
    assert state is not None
    assert state.compactions == 1


def first_save(path: Path) -> SQLiteStore:
    store = SQLiteStore(path)
    summary = record()
    store.save(compaction(summary, [stored(0, "small first message", compaction=summary.id)]))
    return store


def test_a_full_disk_leaves_nothing_half_written(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = first_save(path)
    summary = record()
    big = [
        stored(1, "fits", compaction=summary.id),
        stored(2, "does not fit " * 50_000, compaction=summary.id),
    ]
    db = store._db  # the store's own connection: max_page_count is per connection
    assert db is not None
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages + 2}")
    with pytest.raises(StoreError, match="full"):
        store.save(compaction(summary, big, compactions=2))
    nothing_more_written(store, path, [1, 1, 1, 1])
    assert store.recall("s1", start=1) == []
    db.execute("PRAGMA max_page_count = 1073741823")
    store.save(compaction(summary, big, compactions=2))
    assert store.recall("s1", start=1) == big
    assert {h.message.id for h in store.search("s1", "fit fits")} == {m.id for m in big}
    store.close()


def test_a_value_sqlite_cannot_hold_rolls_the_save_back(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = first_save(path)
    summary = record()
    good = stored(1, "good", compaction=summary.id)
    bad = replace(stored(2, "bad", compaction=summary.id), id="lone \ud800 id")
    with pytest.raises(StoreError, match="cannot hold"):
        store.save(compaction(summary, [good, bad], compactions=2))
    nothing_more_written(store, path, [1, 1, 1, 1])
    store.save(compaction(summary, [good], compactions=2))
    assert store.recall("s1", start=1) == [good]
    store.close()


def test_messages_cannot_be_edited_or_deleted(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first_save(path).close()
    with sqlite3.connect(path) as db:
        for sql in ("UPDATE messages SET text = 'x'", "DELETE FROM messages"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                db.execute(sql)
    db.close()


def test_wal_is_on_and_the_schema_versioned(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = first_save(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # One row per step the file went through, the newest last.
        versions = db.execute("SELECT version FROM synopsis_schema ORDER BY version").fetchall()
        assert versions == [(n,) for n in range(1, SCHEMA_VERSION + 1)]
    db.close()
    store.close()
    SQLiteStore(path).close()  # reopening adds no version row
    assert rows(path, "synopsis_schema") == SCHEMA_VERSION


def test_threads_can_share_a_store(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")

    async def many() -> None:
        await asyncio.gather(
            *(store.asave_session(SessionState(f"s{n}", offset=n)) for n in range(20))
        )

    asyncio.run(many())
    assert len(store.sessions()) == 20
    store.close()


def test_an_in_memory_database_works() -> None:
    store = SQLiteStore(":memory:")
    summary = record()
    message = stored(0, "hello", compaction=summary.id)
    store.save(compaction(summary, [message]))
    assert store.recall("s1") == [message]
    store.close()


def test_the_default_file_honours_synopsis_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNOPSIS_DATA_DIR", str(tmp_path / "data" / "nested"))
    store = SQLiteStore()
    assert store.path == tmp_path / "data" / "nested" / "synopsis.db"
    store.save_session(SessionState("s1"))
    store.close()
    assert store.path.is_file()
    with SQLiteStore(None) as again:
        assert again.sessions() == ["s1"]


@pytest.mark.parametrize(
    ("platform", "env", "want"),
    [
        ("linux", {"SYNOPSIS_DATA_DIR": "~/x"}, "HOME/x"),
        ("linux", {}, "HOME/.local/share/synopsis"),
        ("linux", {"XDG_DATA_HOME": "/xdg"}, "/xdg/synopsis"),
        ("linux", {"XDG_DATA_HOME": "relative"}, "HOME/.local/share/synopsis"),
        ("darwin", {}, "HOME/Library/Application Support/synopsis"),
        ("win32", {"LOCALAPPDATA": "/local"}, "/local/synopsis"),
        ("win32", {}, "HOME/AppData/Local/synopsis"),
    ],
)
def test_the_data_directory_per_platform(
    platform: str, env: dict[str, str], want: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    got = data_dir(env, platform)
    assert str(got) == want.replace("HOME", str(tmp_path))


def test_the_default_path_reads_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNOPSIS_DATA_DIR", str(tmp_path / "d"))
    assert data_dir() == tmp_path / "d"
    assert default_database_path() == tmp_path / "d" / "synopsis.db"
    assert (tmp_path / "d").is_dir()


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    text = "these are my notes, not a database\n" * 200
    path.write_text(text)
    with pytest.raises(StoreError, match="is not a synopsis database"):
        SQLiteStore(path)
    assert path.read_text() == text


def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE accounts (id INTEGER)")
    db.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="another program"):
        SQLiteStore(path)
    assert path.read_bytes() == before
    assert not (tmp_path / "other.db-wal").exists()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first_save(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE synopsis_schema SET version = ?", (SCHEMA_VERSION + 1,))
    db.close()
    with pytest.raises(StoreError, match="newer synopsis"):
        SQLiteStore(path)


def test_a_damaged_schema_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE synopsis_schema (version INTEGER NOT NULL)")
    db.close()
    with pytest.raises(StoreError, match="damaged"):
        SQLiteStore(path)


def test_tables_of_the_wrong_shape_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE synopsis_schema (version INTEGER NOT NULL)")
        db.execute("INSERT INTO synopsis_schema VALUES (1)")
        db.execute("CREATE TABLE messages (other TEXT)")
    db.close()
    # It claims version 1 without version 1's parts: the upgrade fails, and leaves nothing.
    with pytest.raises(StoreError, match=r"cannot open the store .*no such trigger"):
        SQLiteStore(path)
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        assert db.execute("SELECT version FROM synopsis_schema").fetchall() == [(1,)]
    db.close()
    assert tables == {"synopsis_schema", "messages"}


def test_a_path_that_cannot_be_opened_is_reported(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open the store"):
        SQLiteStore(tmp_path / "missing-dir" / "s.db")
