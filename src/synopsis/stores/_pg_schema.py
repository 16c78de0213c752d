"""The PostgreSQL store's schema, as the versioned migrations that make it: the store runs
those it has not run yet, in one transaction, at first use (see :mod:`.postgres`)."""

from __future__ import annotations

import hashlib

from synopsis.stores import _rollup

__all__ = ["MIGRATIONS", "MIGRATION_KEY", "SCHEMA_VERSION"]

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1
        """CREATE TABLE synopsis_messages (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id text NOT NULL,
            id text NOT NULL,
            position integer NOT NULL,
            role text NOT NULL,
            text bytea NOT NULL,
            sha256 text NOT NULL,
            format text NOT NULL,
            data bytea NOT NULL,
            compaction_id text NOT NULL,
            created_at timestamptz NOT NULL,
            words tsvector NOT NULL,
            UNIQUE (session_id, id, sha256)
        )""",
        "CREATE INDEX synopsis_messages_timeline ON synopsis_messages (session_id, position, seq)",
        "CREATE INDEX synopsis_messages_words ON synopsis_messages USING gin (words)",
        """CREATE TABLE synopsis_summaries (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id text NOT NULL,
            id text NOT NULL,
            record text NOT NULL,
            UNIQUE (session_id, id)
        )""",
        """CREATE TABLE synopsis_sessions (
            session_id text PRIMARY KEY,
            state text NOT NULL,
            updated_at timestamptz NOT NULL
        )""",
        "CREATE INDEX synopsis_sessions_updated ON synopsis_sessions (updated_at)",
        # Append-only but for forget(): a deletion must name its session in this table first,
        # in the same transaction, so no stray DELETE takes an original away.
        "CREATE TABLE synopsis_forgetting (session_id text PRIMARY KEY)",
        """CREATE FUNCTION synopsis_messages_kept() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' AND EXISTS (
                SELECT 1 FROM synopsis_forgetting WHERE session_id = OLD.session_id
            ) THEN
                RETURN OLD;
            END IF;
            RAISE EXCEPTION 'synopsis keeps offloaded messages append-only';
        END $$""",
        """CREATE TRIGGER synopsis_messages_kept BEFORE UPDATE OR DELETE ON synopsis_messages
            FOR EACH ROW EXECUTE FUNCTION synopsis_messages_kept()""",
    ),
    (  # 2: what each proxied request did (figures only), kept apart from the sessions.
        """CREATE TABLE synopsis_requests (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at timestamptz NOT NULL,
            session_id text NOT NULL,
            record text NOT NULL
        )""",
        "CREATE INDEX synopsis_requests_at ON synopsis_requests (at, seq)",
        "CREATE INDEX synopsis_requests_session ON synopsis_requests (session_id, at, seq)",
    ),
    (  # 3: the figures a rollup sums, in columns of their own.
        *(f"ALTER TABLE synopsis_requests ADD COLUMN {c}" for c in _rollup.PG_COLUMNS),
        _rollup.pg_backfill(),
        "DROP INDEX synopsis_requests_session",
        "CREATE INDEX synopsis_requests_rollup ON synopsis_requests (session_id, at, seq) "
        f"INCLUDE ({_rollup.LISTED})",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

MIGRATION_KEY = int.from_bytes(hashlib.sha256(b"synopsis schema").digest()[:8], signed=True)
