"""A store in a PostgreSQL database that several processes and machines share (the ``postgres``
extra: psycopg 3 and its connection pool).

Everything :class:`~synopsis.stores.SQLiteStore` promises holds here: append-only messages
whose wire items come back byte for byte, a save that is one transaction, search over the
messages' words. Three things are PostgreSQL's own:

- **A lock per session** (:meth:`PostgresStore.session_lock`): a session-level advisory lock,
  held on one pooled connection from reading a session to saving it, so two replicas given
  one conversation at once take turns and the second reuses the first one's summary. Waiting
  is bounded by ``lock_timeout``. A process that dies while it holds one loses its
  connection, and PostgreSQL releases the lock with it; its half-done compaction wrote
  nothing, as every save is one transaction.
- **Full-text search** with a ``tsvector`` column under a GIN index, ranked by ``ts_rank``.
  The words are cut as every store cuts them and given to PostgreSQL as lexemes, not to its
  parser (:mod:`._pg_words` says why).
- **Versioned migrations** (:mod:`._pg_schema`) at first use, under an advisory lock so
  replicas starting together migrate once; a schema newer than this code understands is
  refused.

Text and wire items are kept as ``bytea`` (UTF-8 written with ``surrogatepass``): PostgreSQL
text holds neither a NUL nor a lone surrogate, and a tool's output may hold either.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from synopsis.errors import ConfigurationError, StoreError
from synopsis.stores import _query, _rollup
from synopsis.stores._base import StoreBase
from synopsis.stores._cutoff import cutoff
from synopsis.stores._pg_lock import SessionLocks
from synopsis.stores._pg_schema import MIGRATION_KEY, MIGRATIONS, SCHEMA_VERSION
from synopsis.stores._pg_words import tsquery, tsvector
from synopsis.stores.records import SearchHit, SessionState, SessionStats, StoredMessage
from synopsis.stores.requests import (
    RequestRecord,
    RequestRollup,
    RollupBy,
    check_read,
    check_retention,
    check_rollup,
)
from synopsis.summarizers.records import SummaryRecord

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import psycopg
    from psycopg_pool import ConnectionPool

    from synopsis.stores.records import Compaction

__all__ = ["SCHEMA_VERSION", "PostgresStore", "tsquery", "tsvector"]

_COLUMNS = "session_id, id, position, role, text, sha256, format, data, compaction_id, created_at"
_INSERT = (
    f"INSERT INTO synopsis_messages ({_COLUMNS}, words) "
    "VALUES (%s, %s, %s, %s, %b, %s, %s, %b, %s, %s, %s::tsvector) "
    "ON CONFLICT (session_id, id, sha256) DO NOTHING"
)


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _message(row: Sequence[Any]) -> StoredMessage:
    session_id, id_, position, role, text, sha256, fmt, data, compaction_id, created_at = row
    return StoredMessage(
        session_id=session_id,
        id=id_,
        position=position,
        role=role,
        text=bytes(text).decode("utf-8", "surrogatepass"),
        sha256=sha256,
        format=fmt,
        data=bytes(data).decode("utf-8", "surrogatepass"),
        compaction_id=compaction_id,
        created_at=created_at,
    )


def _aware(moment: datetime) -> datetime:
    """A ``timestamptz`` as read (in UTC: every connection is set so)."""
    return moment.astimezone(UTC)


def _where(url: str) -> str:
    """The URL less its credentials: what errors and ``repr`` show."""
    import psycopg  # noqa: PLC0415
    from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415 - the postgres extra

    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(f"not a PostgreSQL URL: {exc}") from None
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host') or ''}{port}/{parts.get('dbname') or ''}"


class PostgresStore(SessionLocks, StoreBase):
    """A store in the PostgreSQL database at ``url`` (``postgresql://user:password@host/db``;
    any libpq URL or key-value string). Thread-safe: a pool of up to ``pool_size``
    connections, each compaction in flight holding one for its session's lock. The lock's
    wait, and any other lock a statement waits for, is bounded by ``lock_timeout`` seconds;
    reaching the server by ``connect_timeout``."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 20,
        lock_timeout: float = 60.0,
        connect_timeout: float = 10.0,
    ) -> None:
        try:
            import psycopg  # noqa: PLC0415
            from psycopg_pool import ConnectionPool  # noqa: PLC0415
        except ImportError as error:
            raise ConfigurationError(
                'a PostgreSQL store needs: pip install "synopsis[postgres]"'
            ) from error
        if not isinstance(url, str):
            raise ConfigurationError(f"url must be a string, got {url!r}")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ConfigurationError(
                f"pool_size must be a whole number of at least 1, got {pool_size!r}"
            )
        for name, value in (("lock_timeout", lock_timeout), ("connect_timeout", connect_timeout)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigurationError(
                    f"{name} must be a number of seconds above 0, got {value!r}"
                )
        self.url = _where(url)
        self.lock_timeout = float(lock_timeout)
        self.connect_timeout = float(connect_timeout)
        millis = max(1, round(self.lock_timeout * 1000))

        def configure(conn: psycopg.Connection[Any]) -> None:
            # UTC: a stored time comes back in the zone it went in, however the server is set.
            conn.execute(f"SET TIME ZONE 'UTC'; SET lock_timeout = {millis}")

        options = {"autocommit": True, "connect_timeout": max(1, round(self.connect_timeout))}
        # One connection first, for the schema: a server that cannot be reached says why
        # (the pool would only time out), and the pool then starts on a migrated schema.
        try:
            first = psycopg.connect(url, **options)  # type: ignore[arg-type]
        except psycopg.Error as exc:
            raise StoreError(f"cannot reach the store {self.url}: {exc}") from exc
        with first, self._failures():
            configure(first)
            self._schema = self._migrate(first)
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs=options,
            configure=configure,
            timeout=self.lock_timeout + self.connect_timeout,
            open=False,
            name="synopsis",
        )
        self._pool.open(wait=False)

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    # -- connections, errors and the schema ------------------------------------------------

    def _live(self) -> ConnectionPool[psycopg.Connection[Any]]:
        if self._pool is None:
            raise StoreError(f"the store {self.url} is closed")
        return self._pool

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """psycopg's and the pool's errors as ``StoreError``s that name the store."""
        import psycopg  # noqa: PLC0415
        from psycopg_pool import PoolTimeout  # noqa: PLC0415

        try:
            yield
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreError(
                f"the store {self.url} waited {self.lock_timeout:g} s for a lock: {exc}"
            ) from exc
        except PoolTimeout as exc:
            raise StoreError(f"no connection to the store {self.url} was free: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"the store {self.url} failed: {exc}") from exc
        except UnicodeEncodeError as exc:
            # A lone surrogate in an id (psycopg itself refuses a NUL, as a DataError).
            raise StoreError(f"the store {self.url} cannot hold a value: {exc}") from exc

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        pool = self._live()
        with self._failures(), pool.connection() as conn:
            yield conn

    def _migrate(self, conn: psycopg.Connection[Any]) -> str:
        """Bring the schema to :data:`SCHEMA_VERSION`; the schema's name (the session locks'
        namespace)."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_KEY,))
            row = conn.execute("SELECT current_schema(), to_regclass('synopsis_schema')").fetchone()
            assert row is not None
            schema, table = row
            if schema is None:
                raise StoreError(f"the store {self.url} has no schema to create tables in")
            version = 0
            if table is not None:
                found = conn.execute("SELECT max(version) FROM synopsis_schema").fetchone()
                version = found[0] if found is not None and found[0] is not None else 0
            else:
                conn.execute("CREATE TABLE synopsis_schema (version integer NOT NULL)")
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"the store {self.url} was written by a newer synopsis (schema version "
                    f"{version}; this one reads up to {SCHEMA_VERSION}): upgrade synopsis to "
                    "use it"
                )
            for number in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[number - 1]:
                    conn.execute(statement)
                conn.execute("INSERT INTO synopsis_schema (version) VALUES (%s)", (number,))
        return str(schema)

    def _key(self, session_id: str) -> int:
        """The session's advisory lock key, within this schema: 64 bits of a digest, so any
        session id (one holding a NUL too) has one."""
        digest = hashlib.sha256(f"{self._schema}\x1f{session_id}".encode("utf-8", "surrogatepass"))
        return int.from_bytes(digest.digest()[:8], signed=True)

    # -- the store -----------------------------------------------------------------------------

    @staticmethod
    def _put_state(conn: psycopg.Connection[Any], state: SessionState) -> None:
        if state.updated_at is None:
            state = replace(state, updated_at=datetime.now(UTC))
        conn.execute(
            "INSERT INTO synopsis_sessions (session_id, state, updated_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (session_id) DO UPDATE "
            "SET state = excluded.state, updated_at = excluded.updated_at",
            (state.session_id, json.dumps(state.to_json()), state.updated_at),
        )

    def save(self, compaction: Compaction) -> None:
        records = [
            (compaction.session_id, r.id, json.dumps(r.model_dump(mode="json")))
            for r in compaction.records
        ]
        rows = [
            (
                m.session_id,
                m.id,
                m.position,
                m.role,
                _bytes(m.text),
                m.sha256,
                m.format,
                _bytes(m.data),
                m.compaction_id,
                m.created_at,
                tsvector(m.text),
            )
            for m in compaction.messages
        ]
        with self._connection() as conn, conn.transaction():
            with conn.cursor() as cursor:
                if records:
                    cursor.executemany(
                        "INSERT INTO synopsis_summaries (session_id, id, record) "
                        "VALUES (%s, %s, %s) ON CONFLICT (session_id, id) DO NOTHING",
                        records,
                    )
                if rows:
                    cursor.executemany(_INSERT, rows)
            self._put_state(conn, compaction.state)

    def session(self, session_id: str) -> SessionState | None:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT state FROM synopsis_sessions WHERE session_id = %s", (session_id,)
            ).fetchone()
        return None if row is None else SessionState.from_text(session_id, row[0])

    def save_session(self, state: SessionState) -> None:
        with self._connection() as conn:
            self._put_state(conn, state)

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT record FROM synopsis_summaries WHERE session_id = %s ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [SummaryRecord.model_validate(json.loads(r[0])) for r in rows]

    def summary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT record FROM synopsis_summaries WHERE session_id = %s AND id = %s",
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
        sql = f"SELECT {_COLUMNS} FROM synopsis_messages WHERE session_id = %s"
        params: list[object] = [session_id]
        if ids is not None:
            sql += " AND id = ANY(%s)"
            params.append(list(ids))
        if start is not None:
            sql += " AND position >= %s"
            params.append(start)
        if stop is not None:
            sql += " AND position < %s"
            params.append(stop)
        with self._connection() as conn, conn.cursor(binary=True) as cursor:
            rows = cursor.execute(sql + " ORDER BY position, seq", params).fetchall()
        return [_message(r) for r in rows]

    def search(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        _query.check_limit(limit)
        terms = _query.query_words(query)
        wanted = tsquery(terms)
        self._live()
        if not wanted or limit <= 0:
            return []
        with self._connection() as conn, conn.cursor(binary=True) as cursor:
            rows = cursor.execute(
                f"SELECT {_COLUMNS}, ts_rank(words, q)::float8 AS score "
                "FROM synopsis_messages, CAST(%s AS tsquery) AS q "
                "WHERE session_id = %s AND words @@ q "
                "ORDER BY score DESC, position, seq LIMIT %s",
                (wanted, session_id, limit),
            ).fetchall()
        hits = [(_message(r[:10]), float(r[10])) for r in rows]
        return [SearchHit(m, score, _query.snippet(m.text, terms)) for m, score in hits]

    def sessions(self) -> list[str]:
        with self._connection() as conn:
            rows = conn.execute(
                'SELECT session_id FROM synopsis_sessions ORDER BY session_id COLLATE "C"'
            ).fetchall()
        return [str(r[0]) for r in rows]

    # -- lifecycle ---------------------------------------------------------------------------

    def forget(self, session_id: str) -> bool:
        with self._connection() as conn, conn.transaction():
            # Under the session's lock: a compaction of it in flight finishes first.
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._key(session_id),))
            conn.execute("INSERT INTO synopsis_forgetting (session_id) VALUES (%s)", (session_id,))
            found = 0
            for table in ("synopsis_messages", "synopsis_summaries", "synopsis_sessions"):
                cursor = conn.execute(
                    f"DELETE FROM {table} WHERE session_id = %s",
                    (session_id,),
                )
                found += cursor.rowcount
            conn.execute("DELETE FROM synopsis_forgetting WHERE session_id = %s", (session_id,))
        return found > 0

    def prune(self, older_than: datetime | timedelta) -> list[str]:
        moment = cutoff(older_than)
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT session_id FROM synopsis_sessions WHERE updated_at < %s", (moment,)
            ).fetchall()
        return sorted(str(r[0]) for r in rows if self.forget(str(r[0])))

    def stats(self) -> list[SessionStats]:
        with self._connection() as conn:
            rows = conn.execute(
                """SELECT s.session_id, coalesce(m.n, 0), coalesce(r.n, 0),
                    coalesce(m.size, 0) + coalesce(r.size, 0), s.updated_at
                FROM synopsis_sessions s
                LEFT JOIN (
                    SELECT session_id, count(*) AS n,
                        sum(octet_length(data) + octet_length(text)) AS size
                    FROM synopsis_messages GROUP BY session_id
                ) m USING (session_id)
                LEFT JOIN (
                    SELECT session_id, count(*) AS n, sum(octet_length(record)) AS size
                    FROM synopsis_summaries GROUP BY session_id
                ) r USING (session_id)
                """
                'ORDER BY s.session_id COLLATE "C"'
            ).fetchall()
        return [
            SessionStats(str(sid), int(n), int(k), int(size), updated)
            for sid, n, k, size, updated in rows
        ]

    def message_counts(self) -> dict[str, int]:
        with self._connection() as conn:
            rows = conn.execute(
                """SELECT s.session_id, coalesce(m.n, 0) FROM synopsis_sessions s
                LEFT JOIN (
                    SELECT session_id, count(*) AS n FROM synopsis_messages GROUP BY session_id
                ) m USING (session_id)
                """
                'ORDER BY s.session_id COLLATE "C"'
            ).fetchall()
        return {str(sid): int(n) for sid, n in rows}

    def states(self) -> list[SessionState]:
        with self._connection() as conn:
            rows = conn.execute(
                'SELECT session_id, state FROM synopsis_sessions ORDER BY session_id COLLATE "C"'
            ).fetchall()
        return [SessionState.from_text(str(sid), state) for sid, state in rows]

    # -- per-request records ------------------------------------------------------------------

    def save_requests(self, records: Sequence[RequestRecord]) -> None:
        rows = [(r.at, r.session_id, r.to_json(), *_rollup.figures(r)) for r in records]
        marks = ", ".join(["%s"] * (3 + len(_rollup.NAMES)))
        with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO synopsis_requests (at, session_id, record, {_rollup.LISTED}) "
                f"VALUES ({marks})",
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
        sql, params = _rollup.postgres_query(by, session_id=session_id, since=since, until=until)
        with self._connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_rollup.from_row(by, row, _aware) for row in rows]

    def requests(
        self,
        session_id: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> list[RequestRecord]:
        check_read(since, until, limit)
        sql, params = _rollup.read_query(
            "synopsis_requests", "%s", (session_id, since, until), limit
        )
        with self._connection() as conn:
            return [RequestRecord.from_json(r[0]) for r in conn.execute(sql, params).fetchall()]

    def prune_requests(
        self, older_than: datetime | timedelta | None = None, *, keep: int | None = None
    ) -> int:
        moment = check_retention(older_than, keep)
        before, beyond = _rollup.prune_statements("synopsis_requests", "%s")
        gone = 0
        with self._connection() as conn, conn.transaction():
            if moment is not None:
                gone += conn.execute(before, (moment,)).rowcount
            if keep is not None:
                gone += conn.execute(beyond, (keep,)).rowcount
        return gone

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
