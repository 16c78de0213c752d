"""A store in one SQLite file (standard library only): WAL mode, append-only messages (but for
:meth:`~SQLiteStore.forget`), an FTS5 index over their text ranked with ``bm25()``, a save that
is one transaction, and a versioned schema that an older file is upgraded to when it opens.

Wire items are kept as UTF-8 bytes written with ``surrogatepass``: JSON text may hold a lone
surrogate (a truncated emoji in a tool result), which SQLite cannot store as text, and recall
must give the item back exactly as it was given.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synopsis.errors import StoreError
from synopsis.stores import _query, _rollup
from synopsis.stores._base import StoreBase
from synopsis.stores._cutoff import cutoff
from synopsis.stores._paths import default_database_path
from synopsis.stores.records import SearchHit, SessionState, SessionStats, StoredMessage
from synopsis.stores.requests import (
    RequestRecord,
    RequestRollup,
    RollupBy,
    check_read,
    check_retention,
    check_rollup,
    stamp,
)
from synopsis.summarizers.records import SummaryRecord

if TYPE_CHECKING:
    import os
    from collections.abc import Iterator, Sequence

    from synopsis.stores.records import Compaction

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

_APPEND_ONLY = "synopsis keeps offloaded messages append-only"

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1
        # seq is the rowid the FTS index points at; an INTEGER PRIMARY KEY survives VACUUM.
        """CREATE TABLE messages (
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
        "CREATE INDEX messages_timeline ON messages (session_id, position, seq)",
        """CREATE TABLE summaries (
            seq INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            id TEXT NOT NULL,
            record TEXT NOT NULL,
            UNIQUE (session_id, id)
        )""",
        """CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            state TEXT NOT NULL
        )""",
        """CREATE VIRTUAL TABLE messages_fts USING fts5 (
            text, content='messages', content_rowid='seq',
            tokenize='unicode61 remove_diacritics 0'
        )""",
        # INSERT OR IGNORE fires no trigger for an ignored row, so a re-save indexes nothing.
        """CREATE TRIGGER messages_indexed AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts (rowid, text) VALUES (new.seq, new.text);
        END""",
        f"""CREATE TRIGGER messages_append_only BEFORE UPDATE ON messages BEGIN
            SELECT RAISE(ABORT, '{_APPEND_ONLY}');
        END""",
        f"""CREATE TRIGGER messages_kept BEFORE DELETE ON messages BEGIN
            SELECT RAISE(ABORT, '{_APPEND_ONLY}');
        END""",
    ),
    (  # 2: forget() may delete a session's messages; nothing else may.
        # A deletion must name its session here first, in the same transaction: a stray
        # DELETE still takes no original away.
        "CREATE TABLE forgetting (session_id TEXT PRIMARY KEY)",
        "DROP TRIGGER messages_kept",
        f"""CREATE TRIGGER messages_kept BEFORE DELETE ON messages
        WHEN old.session_id NOT IN (SELECT session_id FROM forgetting) BEGIN
            SELECT RAISE(ABORT, '{_APPEND_ONLY}');
        END""",
        # The index is external-content: FTS5 forgets a row only when told its text, and
        # its BM25 statistics (rows, tokens, hits per word) with it.
        """CREATE TRIGGER messages_unindexed AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text)
            VALUES ('delete', old.seq, old.text);
        END""",
    ),
    (  # 3: what each proxied request did (figures only), kept apart from the sessions.
        """CREATE TABLE requests (
            seq INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            session_id TEXT NOT NULL,
            record TEXT NOT NULL
        )""",
        "CREATE INDEX requests_at ON requests (at, seq)",
        "CREATE INDEX requests_session ON requests (session_id, at, seq)",
    ),
    (  # 4: the figures a rollup sums, in columns of their own (json_extract was too slow),
        # and in an index that holds them all: a rollup reads it, not the records' JSON.
        *(f"ALTER TABLE requests ADD COLUMN {c}" for c in _rollup.SQLITE_COLUMNS),
        _rollup.sqlite_backfill(),
        "DROP INDEX requests_session",
        f"CREATE INDEX requests_rollup ON requests (session_id, at, seq, {_rollup.LISTED})",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)

_COLUMNS = "session_id, id, position, role, text, sha256, format, data, compaction_id, created_at"
_SELECT = ", ".join(f"messages.{c}" for c in _COLUMNS.split(", "))
_Row = tuple[str, str, int, str, str, str, str, bytes, str, str]


def _row(message: StoredMessage) -> _Row:
    return (
        message.session_id,
        message.id,
        message.position,
        message.role,
        message.text,
        message.sha256,
        message.format,
        message.data.encode("utf-8", "surrogatepass"),
        message.compaction_id,
        message.created_at.isoformat(),
    )


def _message(row: Sequence[Any]) -> StoredMessage:
    session_id, id_, position, role, text, sha256, fmt, data, compaction_id, created_at = row
    return StoredMessage(
        session_id=session_id,
        id=id_,
        position=position,
        role=role,
        text=text,
        sha256=sha256,
        format=fmt,
        data=data.decode("utf-8", "surrogatepass"),
        compaction_id=compaction_id,
        created_at=datetime.fromisoformat(created_at),
    )


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        # A no-op if SQLite already rolled back on its own (it may, on a full disk).
        db.rollback()
        raise
    db.commit()


def _version(db: sqlite3.Connection, path: str) -> int:
    """The file's schema version (0: an empty file); a file synopsis must not write to, or
    cannot read, is refused."""
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a synopsis database ({exc})") from exc
    if not tables:
        return 0
    if "synopsis_schema" not in tables:
        raise StoreError(
            f"{path} is an SQLite database of another program (it has no synopsis_schema "
            "table); synopsis will not write to it"
        )
    version = db.execute("SELECT max(version) FROM synopsis_schema").fetchone()[0]
    if not isinstance(version, int) or version < 1:
        raise StoreError(f"{path} has a damaged synopsis_schema table (version {version!r})")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer synopsis (schema version {version}; this one "
            f"reads up to {SCHEMA_VERSION}): upgrade synopsis to open it"
        )
    return version


def _migrate(db: sqlite3.Connection, path: str) -> None:
    """Bring the file to :data:`SCHEMA_VERSION` in one transaction: all of the steps it
    lacks, or none. The version is read again under the write lock, so two processes opening
    an old file at once upgrade it once."""
    with _transaction(db):
        version = _version(db, path)
        if version == 0:
            db.execute("CREATE TABLE synopsis_schema (version INTEGER NOT NULL)")
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[number - 1]:
                db.execute(statement)
            db.execute("INSERT INTO synopsis_schema (version) VALUES (?)", (number,))


class SQLiteStore(StoreBase):
    """A store in the SQLite file at ``path`` (``None``: ``synopsis.db`` in the user's data
    directory, see :func:`~synopsis.stores.default_database_path`). Thread-safe: one
    connection behind a lock. Several processes may share the file (WAL, busy timeout)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_database_path()
        self._lock = threading.Lock()
        where = str(self.path)
        try:
            db = sqlite3.connect(
                self.path, timeout=10.0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the store {where}: {exc}") from exc
        try:
            # Read first, outside a transaction: a file that is not synopsis's own is left
            # as it was, its journal mode too.
            _version(db, where)
            db.execute("PRAGMA journal_mode = WAL")
            _migrate(db, where)
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"cannot open the store {where}: {exc}") from exc
            raise
        self._db: sqlite3.Connection | None = db

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    @contextmanager
    def _locked(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._db is None:
                raise StoreError(f"the store {self.path} is closed")
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise StoreError(f"the store {self.path} failed: {exc}") from exc
            except UnicodeEncodeError as exc:
                raise StoreError(f"the store {self.path} cannot hold a value: {exc}") from exc

    @staticmethod
    def _put_state(db: sqlite3.Connection, state: SessionState) -> None:
        if state.updated_at is None:
            state = replace(state, updated_at=datetime.now(UTC))
        db.execute(
            "INSERT INTO sessions (session_id, state) VALUES (?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET state = excluded.state",
            (state.session_id, json.dumps(state.to_json())),
        )

    def save(self, compaction: Compaction) -> None:
        # ASCII JSON: a lone surrogate in a record's text survives as an escape.
        records = [
            (compaction.session_id, r.id, json.dumps(r.model_dump(mode="json")))
            for r in compaction.records
        ]
        rows = [_row(m) for m in compaction.messages]
        with self._locked() as db, _transaction(db):
            db.executemany(
                "INSERT OR IGNORE INTO summaries (session_id, id, record) VALUES (?, ?, ?)",
                records,
            )
            db.executemany(
                f"INSERT OR IGNORE INTO messages ({_COLUMNS}) VALUES ({', '.join('?' * 10)})",
                rows,
            )
            self._put_state(db, compaction.state)

    def session(self, session_id: str) -> SessionState | None:
        with self._locked() as db:
            row = db.execute(
                "SELECT state FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else SessionState.from_text(session_id, row[0])

    def save_session(self, state: SessionState) -> None:
        with self._locked() as db:
            self._put_state(db, state)

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        with self._locked() as db:
            rows = db.execute(
                "SELECT record FROM summaries WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        return [SummaryRecord.model_validate(json.loads(r[0])) for r in rows]

    def summary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        with self._locked() as db:
            row = db.execute(
                "SELECT record FROM summaries WHERE session_id = ? AND id = ?",
                (session_id, summary_id),
            ).fetchone()
        return None if row is None else SummaryRecord.model_validate(json.loads(row[0]))

    def recall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        _query.check_recall(ids, start, stop)
        sql = f"SELECT {_SELECT} FROM messages WHERE session_id = ?"
        params: list[object] = [session_id]
        if ids is not None:
            # One JSON parameter, however many ids: no limit on bound variables to run into.
            sql += " AND id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(list(ids)))
        if start is not None:
            sql += " AND position >= ?"
            params.append(start)
        if stop is not None:
            sql += " AND position < ?"
            params.append(stop)
        with self._locked() as db:
            rows = db.execute(sql + " ORDER BY position, seq", params).fetchall()
        return [_message(r) for r in rows]

    def search(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        _query.check_limit(limit)
        terms = _query.query_words(query)
        with self._locked() as db:
            if not terms or limit <= 0:
                return []
            rows = db.execute(
                f"SELECT {_SELECT}, -bm25(messages_fts) "
                "FROM messages_fts JOIN messages ON messages.seq = messages_fts.rowid "
                "WHERE messages_fts MATCH ? AND messages.session_id = ? "
                "ORDER BY bm25(messages_fts), messages.position, messages.seq LIMIT ?",
                (_query.fts_expression(terms), session_id, limit),
            ).fetchall()
        # The extract is cut in Python: FTS5's snippet() is quadratic in a long text's matches.
        hits = [(_message(r[:10]), float(r[10])) for r in rows]
        return [SearchHit(m, score, _query.snippet(m.text, terms)) for m, score in hits]

    def sessions(self) -> list[str]:
        with self._locked() as db:
            rows = db.execute("SELECT session_id FROM sessions ORDER BY session_id").fetchall()
        return [str(r[0]) for r in rows]

    # -- lifecycle ---------------------------------------------------------------------------

    def forget(self, session_id: str) -> bool:
        with self._locked() as db, _transaction(db):
            # The trigger that keeps messages lets a deletion through for this session alone.
            db.execute("INSERT INTO forgetting (session_id) VALUES (?)", (session_id,))
            found = 0
            for table in ("messages", "summaries", "sessions"):
                cursor = db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
                found += cursor.rowcount
            db.execute("DELETE FROM forgetting WHERE session_id = ?", (session_id,))
        return found > 0

    def prune(self, older_than: datetime | timedelta) -> list[str]:
        moment = cutoff(older_than)
        with self._locked() as db:
            rows = db.execute(
                "SELECT session_id, json_extract(state, '$.updated_at') FROM sessions"
            ).fetchall()
        # Compared as times, not as text: an ISO string may or may not carry microseconds.
        old = [str(sid) for sid, updated in rows if updated and _parsed(updated) < moment]
        return sorted(sid for sid in old if self.forget(sid))

    def stats(self) -> list[SessionStats]:
        # Sizes in bytes: a BLOB's length is its bytes, a TEXT's its characters up to any NUL.
        with self._locked() as db:
            rows = db.execute(
                """SELECT s.session_id, coalesce(m.n, 0), coalesce(r.n, 0),
                    coalesce(m.size, 0) + coalesce(r.size, 0),
                    json_extract(s.state, '$.updated_at')
                FROM sessions s
                LEFT JOIN (
                    SELECT session_id, count(*) AS n,
                        sum(length(data) + length(CAST(text AS BLOB))) AS size
                    FROM messages GROUP BY session_id
                ) m USING (session_id)
                LEFT JOIN (
                    SELECT session_id, count(*) AS n, sum(length(CAST(record AS BLOB))) AS size
                    FROM summaries GROUP BY session_id
                ) r USING (session_id)
                ORDER BY s.session_id"""
            ).fetchall()
        return [
            SessionStats(str(sid), n, k, size, _parsed(updated) if updated else None)
            for sid, n, k, size, updated in rows
        ]

    def message_counts(self) -> dict[str, int]:
        with self._locked() as db:
            rows = db.execute(
                """SELECT s.session_id, coalesce(m.n, 0) FROM sessions s
                LEFT JOIN (SELECT session_id, count(*) AS n FROM messages GROUP BY session_id) m
                USING (session_id) ORDER BY s.session_id"""
            ).fetchall()
        return {str(sid): int(n) for sid, n in rows}

    def states(self) -> list[SessionState]:
        with self._locked() as db:
            rows = db.execute("SELECT session_id, state FROM sessions ORDER BY session_id")
            found = rows.fetchall()
        return [SessionState.from_text(sid, state) for sid, state in found]

    # -- per-request records ------------------------------------------------------------------

    def save_requests(self, records: Sequence[RequestRecord]) -> None:
        rows = [(stamp(r.at), r.session_id, r.to_json(), *_rollup.figures(r)) for r in records]
        marks = ", ".join("?" * (3 + len(_rollup.NAMES)))
        with self._locked() as db, _transaction(db):
            db.executemany(
                f"INSERT INTO requests (at, session_id, record, {_rollup.LISTED}) VALUES ({marks})",
                rows,
            )

    def request_rollup(
        self,
        by: RollupBy,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[RequestRollup]:
        check_rollup(by, since, until)
        sql, params = _rollup.sqlite_query(
            by,
            session_id=session_id,
            since=None if since is None else stamp(since),
            until=None if until is None else stamp(until),
        )
        with self._locked() as db:
            rows = db.execute(sql, params).fetchall()
        return [_rollup.from_row(by, row, _stamped) for row in rows]

    def requests(
        self,
        session_id: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> list[RequestRecord]:
        check_read(since, until, limit)
        bounds = (
            session_id,
            None if since is None else stamp(since),
            None if until is None else stamp(until),
        )
        sql, params = _rollup.read_query("requests", "?", bounds, limit)
        with self._locked() as db:
            return [RequestRecord.from_json(r[0]) for r in db.execute(sql, params).fetchall()]

    def prune_requests(
        self, older_than: datetime | timedelta | None = None, *, keep: int | None = None
    ) -> int:
        moment = check_retention(older_than, keep)
        before, beyond = _rollup.prune_statements("requests", "?")
        gone = 0
        with self._locked() as db, _transaction(db):
            if moment is not None:
                gone += db.execute(before, (stamp(moment),)).rowcount
            if keep is not None:
                gone += db.execute(beyond, (keep,)).rowcount
        return gone

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _stamped(text: str) -> datetime:
    """A time as :func:`~synopsis.stores.requests.stamp` wrote it."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _parsed(updated: str) -> datetime:
    return datetime.fromisoformat(updated).astimezone(UTC)
