"""A store in process memory: for tests, notebooks and short-lived agents. It keeps the same
promises as the SQLite store (append-only messages but for :meth:`~MemoryStore.forget`, atomic
saves, BM25 search), but nothing outlives the process."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from synopsis.errors import StoreError
from synopsis.stores import _query
from synopsis.stores._base import StoreBase
from synopsis.stores._cutoff import cutoff
from synopsis.stores.records import SearchHit, SessionState, SessionStats, StoredMessage
from synopsis.stores.requests import (
    RequestRecord,
    RequestRollup,
    RollupBy,
    bucket,
    check_read,
    check_retention,
    check_rollup,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.stores.records import Compaction
    from synopsis.summarizers.records import SummaryRecord

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _Session:
    messages: list[tuple[int, StoredMessage]] = field(default_factory=list)
    keys: set[tuple[str, str]] = field(default_factory=set)
    by_id: dict[str, list[int]] = field(default_factory=dict)
    """Each message id's rows in ``messages``: a recall by ids reads those alone."""
    summaries: dict[str, SummaryRecord] = field(default_factory=dict)
    state: SessionState | None = None


class MemoryStore(StoreBase):
    """Dicts behind a lock. Safe to share between threads and with the async methods."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._corpus = _query.Corpus()
        # Each message's word counts, by its sequence number: made at the first search after
        # it was saved, not when saving (a long session that is never searched keeps none).
        self._documents: dict[int, _query.Document] = {}
        self._unindexed: list[tuple[int, StoredMessage]] = []
        self._seq = 0
        self._requests: list[tuple[datetime, int, RequestRecord]] = []
        self._closed = False

    def __repr__(self) -> str:
        return f"MemoryStore(sessions={len(self._sessions)})"

    def _check(self) -> None:
        if self._closed:
            raise StoreError("the memory store is closed")

    def _stamped(self, state: SessionState) -> SessionState:
        if state.updated_at is None:
            return replace(state, updated_at=datetime.now(UTC))
        return state

    def save(self, compaction: Compaction) -> None:
        # Compaction validated its parts when it was built, and nothing below can fail: the
        # save is all or nothing without a rollback.
        state = self._stamped(compaction.state)
        with self._lock:
            self._check()
            entry = self._sessions.setdefault(compaction.session_id, _Session())
            for record in compaction.records:
                entry.summaries.setdefault(record.id, record)
            for message in compaction.messages:
                key = (message.id, message.sha256)
                if key in entry.keys:
                    continue
                entry.keys.add(key)
                self._seq += 1
                entry.by_id.setdefault(message.id, []).append(len(entry.messages))
                entry.messages.append((self._seq, message))
                self._unindexed.append((self._seq, message))
            entry.state = state

    def session(self, session_id: str) -> SessionState | None:
        with self._lock:
            self._check()
            entry = self._sessions.get(session_id)
            return None if entry is None else entry.state

    def save_session(self, state: SessionState) -> None:
        stamped = self._stamped(state)
        with self._lock:
            self._check()
            self._sessions.setdefault(state.session_id, _Session()).state = stamped

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        with self._lock:
            self._check()
            entry = self._sessions.get(session_id)
            return [] if entry is None else list(entry.summaries.values())

    def summary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        with self._lock:
            self._check()
            entry = self._sessions.get(session_id)
            return None if entry is None else entry.summaries.get(summary_id)

    # The reads and writes of one session's state and records touch a few dicts under a lock
    # held for microseconds: done on the event loop, not on a worker thread, whose hand-off
    # cost more than the work (a proxy's request under the trigger does two of them).

    async def asave(self, compaction: Compaction) -> None:
        self.save(compaction)

    async def asession(self, session_id: str) -> SessionState | None:
        return self.session(session_id)

    async def asave_session(self, state: SessionState) -> None:
        self.save_session(state)

    async def asummary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        return self.summary(session_id, summary_id)

    def _index(self) -> None:
        """Word counts for what was saved since the last search; the caller holds the lock.
        The collection statistics are the whole store's, as FTS5 keeps them."""
        for seq, message in self._unindexed:
            document = _query.Document.of(message.text)
            self._corpus.add(document)
            self._documents[seq] = document
        self._unindexed.clear()

    def _timeline(self, session_id: str) -> list[tuple[int, StoredMessage]]:
        entry = self._sessions.get(session_id)
        rows = [] if entry is None else list(entry.messages)
        return sorted(rows, key=lambda row: (row[1].position, row[0]))

    def recall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        _query.check_recall(ids, start, stop)
        with self._lock:
            self._check()
            if ids is not None:
                # A compaction's few originals out of a long session: those rows alone.
                entry = self._sessions.get(session_id) or _Session()
                rows = {i for wanted in set(ids) for i in entry.by_id.get(wanted, ())}
                picked = sorted(
                    (entry.messages[i] for i in rows), key=lambda row: (row[1].position, row[0])
                )
                return [row[1] for row in picked]
            timeline = [row[1] for row in self._timeline(session_id)]
        return [m for m in timeline if _query.in_range(m.position, start, stop)]

    def search(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        _query.check_limit(limit)
        terms = _query.query_words(query)
        with self._lock:
            self._check()
            if not terms or limit <= 0:
                return []
            self._index()
            documents = self._documents
            scored = [
                (-self._corpus.score(documents[seq], terms), message.position, seq, message)
                for seq, message in self._timeline(session_id)
                if any(term in documents[seq].counts for term in terms)
            ]
        scored.sort(key=lambda row: row[:3])
        return [
            SearchHit(message, -score, _query.snippet(message.text, terms))
            for score, _, _, message in scored[:limit]
        ]

    def sessions(self) -> list[str]:
        with self._lock:
            self._check()
            return sorted(self._sessions)

    # -- lifecycle ---------------------------------------------------------------------------

    def _forget(self, session_id: str) -> bool:
        """The caller holds the lock. What was counted for the session's messages leaves the
        collection statistics too: a later search scores as if they had never been saved."""
        entry = self._sessions.pop(session_id, None)
        if entry is None:
            return False
        for seq, _ in entry.messages:
            document = self._documents.pop(seq, None)
            if document is not None:
                self._corpus.remove(document)
        self._unindexed = [row for row in self._unindexed if row[1].session_id != session_id]
        return True

    def forget(self, session_id: str) -> bool:
        with self._lock:
            self._check()
            return self._forget(session_id)

    def prune(self, older_than: datetime | timedelta) -> list[str]:
        moment = cutoff(older_than)
        with self._lock:
            self._check()
            old = [sid for sid, entry in self._sessions.items() if _before(entry.state, moment)]
            return sorted(sid for sid in old if self._forget(sid))

    def stats(self) -> list[SessionStats]:
        with self._lock:
            self._check()
            kept = [
                (sid, entry.state, list(entry.messages), list(entry.summaries.values()))
                for sid, entry in sorted(self._sessions.items())
                if entry.state is not None
            ]
        # Sized outside the lock: the values are immutable, and a large session takes a while.
        return [
            SessionStats(
                sid,
                len(rows),
                len(records),
                sum(_size(m.data) + _size(m.text) for _, m in rows)
                + sum(len(json.dumps(r.model_dump(mode="json"))) for r in records),
                state.updated_at,
            )
            for sid, state, rows, records in kept
        ]

    def states(self) -> list[SessionState]:
        with self._lock:
            self._check()
            return [
                entry.state
                for _, entry in sorted(self._sessions.items())
                if entry.state is not None
            ]

    # -- per-request records ------------------------------------------------------------------

    def save_requests(self, records: Sequence[RequestRecord]) -> None:
        with self._lock:
            self._check()
            for record in records:
                self._seq += 1
                self._requests.append((record.at, self._seq, record))

    def requests(
        self,
        session_id: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> list[RequestRecord]:
        check_read(since, until, limit)
        with self._lock:
            self._check()
            rows = sorted(self._requests, reverse=True)
        picked = (
            r
            for at, _, r in rows
            if (session_id is None or r.session_id == session_id)
            and (since is None or at >= since)
            and (until is None or at < until)
        )
        return [r for _, r in zip(range(limit), picked, strict=False)]

    def request_rollup(
        self,
        by: RollupBy,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[RequestRollup]:
        check_rollup(by, since, until)
        with self._lock:
            self._check()
            rows = sorted(self._requests)
        groups: dict[object, list[RequestRecord]] = {}
        for at, _, record in rows:
            if (
                (session_id is None or record.session_id == session_id)
                and (since is None or at >= since)
                and (until is None or at < until)
            ):
                key = _key(record, by)
                if key is not None:
                    groups.setdefault(key, []).append(record)
        named = {_name(key, records, by): records for key, records in groups.items()}
        # Hour and day keys are ISO times in UTC, which sort as the times do.
        return [_rollup(key, named[key]) for key in sorted(named)]

    def prune_requests(
        self, older_than: datetime | timedelta | None = None, *, keep: int | None = None
    ) -> int:
        moment = check_retention(older_than, keep)
        with self._lock:
            self._check()
            rows = sorted(self._requests, reverse=True)
            kept = [row for row in rows if moment is None or row[0] >= moment]
            if keep is not None:
                kept = kept[:keep]
            gone = len(rows) - len(kept)
            self._requests = kept[::-1]
        return gone

    def close(self) -> None:
        with self._lock:
            self._closed = True


def _size(text: str) -> int:
    """What ``text`` takes as the SQLite store writes it: UTF-8, a lone surrogate kept."""
    return len(text.encode("utf-8", "surrogatepass"))


def _key(record: RequestRecord, by: RollupBy) -> object:
    """The group of ``record`` in a rollup ``by`` (None: in none); a time's is its hour or
    day as numbers, named once per group (:func:`_name`)."""
    if by == "session":
        return record.session_id
    if by == "model":
        return record.model
    if by == "error":
        return record.error
    at = record.at
    return (at.year, at.month, at.day, at.hour if by == "hour" else 0)


def _name(key: object, records: list[RequestRecord], by: RollupBy) -> str:
    if by == "hour" or by == "day":  # noqa: PLR1714 - narrows the literal for mypy
        return bucket(records[0].at, by)
    return str(key)


def _rollup(key: str, records: list[RequestRecord]) -> RequestRollup:
    """One group's rollup; ``records`` oldest first (the last is the newest)."""
    newest = records[-1]
    return RequestRollup(
        key=key,
        requests=len(records),
        compacted=sum(r.compacted for r in records),
        tokens_before=sum(r.tokens_before or 0 for r in records),
        tokens_after=sum(r.tokens_after or 0 for r in records),
        summarizer_calls=sum(r.summarizer_calls for r in records),
        summarizer_seconds=sum(r.summarizer_seconds for r in records),
        errors=sum(r.error is not None for r in records),
        fallbacks=sum(r.fell_back for r in records),
        first_at=records[0].at,
        last_at=newest.at,
        model=newest.model,
        format=newest.format,
        shared_tokens=sum(r.shared_tokens or 0 for r in records),
        client_shared_tokens=sum(r.client_shared_tokens or 0 for r in records),
    )


def _before(state: SessionState | None, moment: datetime) -> bool:
    """Whether the state was last saved before ``moment`` (every save stamps the time)."""
    return state is not None and state.updated_at is not None and state.updated_at < moment
