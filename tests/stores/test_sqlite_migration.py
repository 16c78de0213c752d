"""A SQLite file of schema version 1, written as synopsis wrote it before forget existed, opens
in the current store: upgraded in one transaction, its data whole, and forgettable. Then what
schema 2 guards: only forget deletes, and the full-text index forgets with it."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from synopsis.errors import StoreError
from synopsis.messages import Role
from synopsis.stores import SessionState, SQLiteStore
from synopsis.stores.sqlite import SCHEMA_VERSION
from tests.stores.helpers import T0, compaction, record, stored, three

if TYPE_CHECKING:
    from pathlib import Path

    from synopsis.stores import StoredMessage
    from synopsis.summarizers import SummaryRecord

# The statements the store ran on every open while its schema was version 1, verbatim.
V1_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS synopsis_schema (version INTEGER NOT NULL)",
    "INSERT INTO synopsis_schema (version) "
    "SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM synopsis_schema)",
    """CREATE TABLE IF NOT EXISTS messages (
        seq INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        id TEXT NOT NULL,
        position INTEGER NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        format TEXT NOT NULL,
        data BLOB NOT NULL,
        compaction_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (session_id, id, sha256)
    )""",
    "CREATE INDEX IF NOT EXISTS messages_timeline ON messages (session_id, position, seq)",
    """CREATE TABLE IF NOT EXISTS summaries (
        seq INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        id TEXT NOT NULL,
        record TEXT NOT NULL,
        UNIQUE (session_id, id)
    )""",
    """CREATE TABLE IF NOT EXISTS sessions (
        session_id TEXT PRIMARY KEY,
        state TEXT NOT NULL
    )""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5 (
        text, content='messages', content_rowid='seq', tokenize='unicode61 remove_diacritics 0'
    )""",
    """CREATE TRIGGER IF NOT EXISTS messages_indexed AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, text) VALUES (new.seq, new.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS messages_append_only BEFORE UPDATE ON messages BEGIN
        SELECT RAISE(ABORT, 'synopsis keeps offloaded messages append-only');
    END""",
    """CREATE TRIGGER IF NOT EXISTS messages_kept BEFORE DELETE ON messages BEGIN
        SELECT RAISE(ABORT, 'synopsis keeps offloaded messages append-only');
    END""",
)
V1_COLUMNS = "session_id, id, position, role, text, sha256, format, data, compaction_id, created_at"


def write_v1(
    path: Path,
    saves: list[tuple[list[SummaryRecord], list[StoredMessage], SessionState]],
) -> None:
    """A version 1 file holding ``saves``, each written as the version 1 store wrote a save."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("BEGIN IMMEDIATE")
    for statement in V1_SCHEMA:
        db.execute(statement)
    for records, messages, state in saves:
        db.executemany(
            "INSERT OR IGNORE INTO summaries (session_id, id, record) VALUES (?, ?, ?)",
            [(state.session_id, r.id, json.dumps(r.model_dump(mode="json"))) for r in records],
        )
        db.executemany(
            f"INSERT OR IGNORE INTO messages ({V1_COLUMNS}) VALUES ({', '.join('?' * 10)})",
            [
                (
                    *(m.session_id, m.id, m.position, m.role, m.text, m.sha256, m.format),
                    m.data.encode("utf-8", "surrogatepass"),
                    m.compaction_id,
                    m.created_at.isoformat(),
                )
                for m in messages
            ],
        )
        db.execute(
            "INSERT INTO sessions (session_id, state) VALUES (?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET state = excluded.state",
            (state.session_id, json.dumps(state.to_json())),
        )
    db.execute("COMMIT")
    db.close()


def schema(path: Path) -> tuple[list[tuple[str, str]], list[int]]:
    """The file's tables, indexes and triggers with their SQL, and its version rows."""
    with sqlite3.connect(path) as db:
        objects = db.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
        versions = [r[0] for r in db.execute("SELECT version FROM synopsis_schema ORDER BY 1")]
    db.close()
    return objects, versions


def fts_is_sound(store: SQLiteStore) -> None:
    """FTS5's own check: the index holds exactly the rows and words of ``messages``."""
    assert store._db is not None
    store._db.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def saves() -> list[tuple[list[SummaryRecord], list[StoredMessage], SessionState]]:
    first = record(narrative="naïve 🙂 \ud800")
    second = record(first, minutes=2)
    a_rows = [
        stored(0, "please fix the parser in app.py", compaction=first.id, session="a"),
        replace(
            stored(1, "reading app.py now", compaction=first.id, session="a", role=Role.ASSISTANT),
            data='{"role":"assistant","content":"lone \\ud83d escape, and \ud83d raw"}',
        ),
        stored(2, "the parser tests pass", compaction=second.id, session="a"),
    ]
    b_summary, b_rows = three("b")
    return [
        ([first], a_rows[:2], SessionState("a", summary_id=first.id, compactions=1, updated_at=T0)),
        (
            [second],
            a_rows[2:],
            SessionState("a", summary_id=second.id, compactions=2, offset=3, updated_at=T0),
        ),
        ([b_summary], b_rows, SessionState("b", summary_id=b_summary.id, updated_at=T0)),
        ([], [], SessionState("c", offset=1, updated_at=T0)),
    ]


def test_a_version_1_file_opens_upgraded_with_its_data_whole(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    written = saves()
    write_v1(path, written)
    assert schema(path)[1] == [1]
    with sqlite3.connect(path) as db, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM messages WHERE session_id = 'b'")
    db.close()

    store = SQLiteStore(path)
    objects, versions = schema(path)
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    assert SCHEMA_VERSION == 4
    assert {"forgetting", "messages_kept", "messages_unindexed", "requests", "requests_rollup"} <= {
        name for name, _ in objects
    }
    a_messages = written[0][1] + written[1][1]
    assert store.recall("a") == a_messages
    assert store.recall("a")[1].data == a_messages[1].data  # the lone surrogate, kept raw
    assert store.summaries("a") == written[0][0] + written[1][0]
    assert store.session("a") == written[1][2]
    assert store.recall("b") == written[2][1]
    assert store.sessions() == ["a", "b", "c"]
    assert {h.message for h in store.search("a", "parser")} == {a_messages[0], a_messages[2]}
    fts_is_sound(store)

    # What the new schema allows: forgetting, in the index too.
    assert store.forget("a") is True
    assert store.search("a", "parser") == []
    assert store.recall("a") == []
    assert [s.session_id for s in store.stats()] == ["b", "c"]
    assert [h.message for h in store.search("b", "parser")] == [written[2][1][0]]
    fts_is_sound(store)
    store.close()

    # A second open is a no-op: the same schema, no version added.
    SQLiteStore(path).close()
    assert schema(path) == (objects, versions)
    with SQLiteStore(path) as again:
        assert again.sessions() == ["b", "c"]
        assert again.recall("b") == written[2][1]


def test_a_new_file_and_an_upgraded_one_have_the_same_schema(tmp_path: Path) -> None:
    write_v1(tmp_path / "old.db", [])
    SQLiteStore(tmp_path / "old.db").close()
    SQLiteStore(tmp_path / "new.db").close()
    old, new = schema(tmp_path / "old.db"), schema(tmp_path / "new.db")
    assert old[1] == new[1]
    # Only the spacing of the statements version 1 ran differs.
    assert [name for name, _ in old[0]] == [name for name, _ in new[0]]
    for (_, a), (_, b) in zip(old[0], new[0], strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            flat = " ".join(a.replace("IF NOT EXISTS ", "").split())
            assert flat == " ".join(b.split())


def test_only_forget_deletes_and_nothing_updates(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    summary, rows = three()
    store.save(compaction(summary, rows))
    store.close()
    with sqlite3.connect(path) as db:
        for sql in ("UPDATE messages SET text = 'x'", "DELETE FROM messages"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                db.execute(sql)
        # Named in the forgetting table, a session's messages may go, but still not change.
        db.execute("INSERT INTO forgetting (session_id) VALUES ('s1')")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute("UPDATE messages SET text = 'x'")
        db.rollback()
    db.close()
    with SQLiteStore(path) as again:
        assert again.recall("s1") == rows
        assert again.forget("s1") is True
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM forgetting").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (0,)
    db.close()


def test_a_forget_that_fails_takes_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    summary, rows = three()
    store.save(compaction(summary, rows))
    assert store._db is not None
    # The state's deletion fails, after the messages' and the summaries' went through.
    store._db.execute(
        "CREATE TEMP TRIGGER refuse BEFORE DELETE ON sessions BEGIN SELECT RAISE(ABORT, 'no'); END"
    )
    with pytest.raises(StoreError, match="failed: no"):
        store.forget("s1")
    assert store.recall("s1") == rows
    assert store.summaries("s1") == [summary]
    assert [h.message for h in store.search("s1", "tests")] == [rows[2]]
    fts_is_sound(store)
    store._db.execute("DROP TRIGGER refuse")
    assert store.forget("s1") is True
    assert store.stats() == []
    fts_is_sound(store)
    store.close()


# The request records' table as schema 3 made it, verbatim.
V3_REQUESTS = (
    """CREATE TABLE requests (
        seq INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        session_id TEXT NOT NULL,
        record TEXT NOT NULL
    )""",
    "CREATE INDEX requests_at ON requests (at, seq)",
    "CREATE INDEX requests_session ON requests (session_id, at, seq)",
)
V3_RECORD = (
    '{{"at": "{at}", "session_id": "{session}", "model": "gpt-4o", "route": "/r", '
    '"format": "openai", "status": 200, "messages_in": 3, "tokens_before": {tokens}, '
    '"tokens_after": 10, "compacted": {compacted}, "code": null, "shared_messages": null, '
    '"summarizer_calls": 1, "summarizer_seconds": 0.5, "ms_total": 1.5}}'
)


def test_a_version_3_file_keeps_its_request_records_and_rolls_them_up(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    write_v1(path, [])
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("CREATE TABLE forgetting (session_id TEXT PRIMARY KEY)")
        for statement in V3_REQUESTS:
            db.execute(statement)
        db.execute("INSERT INTO synopsis_schema (version) VALUES (2), (3)")
        for at, session, tokens, compacted in (
            ("2025-06-15T10:30:00.000000", "a", 100, "true"),
            ("2025-06-15T11:30:00.000000", "b", 200, "false"),
            ("2025-06-15T12:30:00.000000", "a", 300, "false"),
        ):
            text = V3_RECORD.format(
                at=at + "+00:00", session=session, tokens=tokens, compacted=compacted
            )
            db.execute(
                "INSERT INTO requests (at, session_id, record) VALUES (?, ?, ?)",
                (at, session, text),
            )
    db.close()
    with SQLiteStore(path) as store:
        assert schema(path)[1] == [1, 2, 3, 4]
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
        assert (b.key, b.requests) == ("b", 1)
