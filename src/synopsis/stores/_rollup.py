"""The SQL of a request rollup, for the SQLite and PostgreSQL stores alike.

A record's figures that a rollup sums are kept in columns of their own beside its JSON
(:data:`NAMES`, filled by :func:`figures` at every save and, for the rows written before,
by the migration that adds them), and in an index by session and time that holds them all:
a rollup reads that index alone, a tenth of the table's bytes, and a rollup by session reads
it in its order (``python -m benchmarks.bench_rollup``).

One query per rollup: the groups' sums, and the newest record of each group (its model and
format) found by the group's last time, which the ``(at, seq)`` index finds at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synopsis.stores.requests import FELL_BACK, RequestRollup, bucket

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from synopsis.stores.requests import RequestRecord, RollupBy

__all__ = [
    "LISTED",
    "NAMES",
    "PG_COLUMNS",
    "SQLITE_COLUMNS",
    "figures",
    "from_row",
    "pg_backfill",
    "postgres_query",
    "sqlite_backfill",
    "sqlite_query",
]

# name, SQLite type, PostgreSQL type, and the value of a row written before the column.
_COLUMNS: tuple[tuple[str, str, str, str, str], ...] = (
    ("model", "TEXT NOT NULL DEFAULT ''", "text NOT NULL DEFAULT ''",
     "coalesce(json_extract(record, '$.model'), '')", "coalesce(record::jsonb->>'model', '')"),
    ("format", "TEXT NOT NULL DEFAULT ''", "text NOT NULL DEFAULT ''",
     "coalesce(json_extract(record, '$.format'), '')", "coalesce(record::jsonb->>'format', '')"),
    ("compacted", "INTEGER NOT NULL DEFAULT 0", "integer NOT NULL DEFAULT 0",
     "coalesce(json_extract(record, '$.compacted'), 0)",
     "coalesce((record::jsonb->>'compacted')::boolean::integer, 0)"),
    ("tokens_before", "INTEGER", "bigint",
     "json_extract(record, '$.tokens_before')", "(record::jsonb->>'tokens_before')::bigint"),
    ("tokens_after", "INTEGER", "bigint",
     "json_extract(record, '$.tokens_after')", "(record::jsonb->>'tokens_after')::bigint"),
    ("summarizer_calls", "INTEGER NOT NULL DEFAULT 0", "bigint NOT NULL DEFAULT 0",
     "coalesce(json_extract(record, '$.summarizer_calls'), 0)",
     "coalesce((record::jsonb->>'summarizer_calls')::bigint, 0)"),
    ("summarizer_seconds", "REAL NOT NULL DEFAULT 0", "double precision NOT NULL DEFAULT 0",
     "coalesce(json_extract(record, '$.summarizer_seconds'), 0)",
     "coalesce((record::jsonb->>'summarizer_seconds')::double precision, 0)"),
    # Records from before these fields hold none of them: their defaults, as they read.
    ("error", "TEXT", "text", "NULL", "NULL"),
    ("fell_back", "INTEGER NOT NULL DEFAULT 0", "integer NOT NULL DEFAULT 0", "0", "0"),
    ("shared_tokens", "INTEGER", "bigint", "NULL", "NULL"),
    ("client_shared_tokens", "INTEGER", "bigint", "NULL", "NULL"),
)  # fmt: skip
NAMES = tuple(c[0] for c in _COLUMNS)
LISTED = ", ".join(NAMES)
SQLITE_COLUMNS = tuple(f"{c[0]} {c[1]}" for c in _COLUMNS)
PG_COLUMNS = tuple(f"{c[0]} {c[2]}" for c in _COLUMNS)


def _backfill(table: str, values: Sequence[tuple[str, str]]) -> str:
    return f"UPDATE {table} SET " + ", ".join(f"{name} = {value}" for name, value in values)


def sqlite_backfill() -> str:
    """The statement that fills the columns of the rows written before them."""
    return _backfill("requests", [(c[0], c[3]) for c in _COLUMNS if c[3] not in ("NULL", "0")])


def pg_backfill() -> str:
    return _backfill(
        "synopsis_requests", [(c[0], c[4]) for c in _COLUMNS if c[4] not in ("NULL", "0")]
    )


def figures(record: RequestRecord) -> tuple[Any, ...]:
    """The record's values of :data:`NAMES`, in order."""
    return (
        record.model,
        record.format,
        int(record.compacted),
        record.tokens_before,
        record.tokens_after,
        record.summarizer_calls,
        record.summarizer_seconds,
        record.error,
        int(any(line.startswith(FELL_BACK) for line in record.events)),
        record.shared_tokens,
        record.client_shared_tokens,
    )


_SUMS = (
    "count(*), sum(compacted), coalesce(sum(tokens_before), 0), "
    "coalesce(sum(tokens_after), 0), sum(summarizer_calls), sum(summarizer_seconds), "
    "count(error), sum(fell_back), min(at), max(at) AS last, "
    "coalesce(sum(shared_tokens), 0), coalesce(sum(client_shared_tokens), 0)"
)


def _query(
    table: str,
    key: str,
    by: RollupBy,
    *,
    mark: str,
    order: str,
    bounds: tuple[str | None, object, object],
) -> tuple[str, list[object]]:
    """The rollup's one statement and its parameters. ``key`` is the group's expression of a
    row of ``{t}``; ``bounds`` the session, ``since`` and ``until`` (each None for none)."""
    session_id, since, until = bounds
    where, params = "", list[object]()
    for cond, value in (("session_id =", session_id), ("at >=", since), ("at <", until)):
        if value is not None:
            where += f" AND {table}.{cond} {mark}"
            params.append(value)
    if by == "error":
        where += f" AND {table}.error IS NOT NULL"
    # The newest record of a group: at the group's last time (an index lookup), the latest
    # written among those of that time that belong to the group. The time filters hold by
    # themselves there (the group's last time passed them); a session filter does not.
    same = "" if by in ("hour", "day") else f" AND {key.format(t='r')} = g.key"
    if session_id is not None and by != "session":
        same += f" AND r.session_id = {mark}"
        params.append(session_id)
    sql = (
        f"WITH g AS (SELECT {key.format(t=table)} AS key, {_SUMS} FROM {table} "
        f"WHERE 1 = 1{where} GROUP BY 1) "
        f"SELECT g.*, n.model, n.format FROM g JOIN {table} n ON n.seq = "
        f"(SELECT r.seq FROM {table} r WHERE r.at = g.last{same} ORDER BY r.seq DESC LIMIT 1) "
        f"ORDER BY {order}"
    )
    return sql, params


_SQLITE_KEYS = {
    "session": "{t}.session_id",
    "model": "{t}.model",
    "error": "{t}.error",
    # Stamps are fixed-width UTC text: the hour and the day are their first characters.
    "hour": "substr({t}.at, 1, 13)",
    "day": "substr({t}.at, 1, 10)",
}
_PG_KEYS = {
    "session": "{t}.session_id",
    "model": "{t}.model",
    "error": "{t}.error",
    "hour": "date_trunc('hour', {t}.at)",
    "day": "date_trunc('day', {t}.at)",
}


def sqlite_query(
    by: RollupBy, *, session_id: str | None, since: str | None, until: str | None
) -> tuple[str, list[object]]:
    """The SQLite rollup (times as :func:`~synopsis.stores.requests.stamp` writes them)."""
    return _query(
        "requests", _SQLITE_KEYS[by], by, mark="?", order="g.key", bounds=(session_id, since, until)
    )


def postgres_query(
    by: RollupBy, *, session_id: str | None, since: datetime | None, until: datetime | None
) -> tuple[str, list[object]]:
    """The PostgreSQL rollup: keys in code point order, as Python sorts them."""
    order = "g.key" if by in ("hour", "day") else 'g.key COLLATE "C"'
    bounds = (session_id, since, until)
    return _query("synopsis_requests", _PG_KEYS[by], by, mark="%s", order=order, bounds=bounds)


def from_row(by: RollupBy, row: Sequence[Any], when: Callable[[Any], datetime]) -> RequestRollup:
    """A row of either query as a rollup; ``when`` reads a time as the store keeps it."""
    first, last = when(row[9]), when(row[10])
    # A time's group is named by the hour or day its last record falls in.
    key = bucket(last, by) if by == "hour" or by == "day" else str(row[0])  # noqa: PLR1714
    return RequestRollup(
        key=key,
        requests=int(row[1]),
        compacted=int(row[2]),
        tokens_before=int(row[3]),
        tokens_after=int(row[4]),
        summarizer_calls=int(row[5]),
        summarizer_seconds=float(row[6]),
        errors=int(row[7]),
        fallbacks=int(row[8]),
        first_at=first,
        last_at=last,
        model=str(row[13]),
        format=str(row[14]),
        shared_tokens=int(row[11]),
        client_shared_tokens=int(row[12]),
    )


def read_query(
    table: str, mark: str, bounds: tuple[object, object, object], limit: int
) -> tuple[str, list[object]]:
    """The newest records of ``table`` within ``bounds`` (session id, first and end moment,
    each None for no bound, as the store writes them), ``limit`` at most; ``mark`` is the
    driver's placeholder."""
    sql, params = f"SELECT record FROM {table} WHERE 1 = 1", list[object]()
    for column, op, value in zip(("session_id", "at", "at"), ("=", ">=", "<"), bounds, strict=True):
        if value is not None:
            sql += f" AND {column} {op} {mark}"
            params.append(value)
    return f"{sql} ORDER BY at DESC, seq DESC LIMIT {mark}", [*params, limit]


def prune_statements(table: str, mark: str) -> tuple[str, str]:
    """The statements that remove ``table``'s records from before a moment, and all but the
    newest N."""
    return (
        f"DELETE FROM {table} WHERE at < {mark}",
        f"DELETE FROM {table} WHERE seq NOT IN "
        f"(SELECT seq FROM {table} ORDER BY at DESC, seq DESC LIMIT {mark})",
    )
