"""The shared half of every bundled store: the async methods, which run the sync ones on a
worker thread, and ``with`` support. A store then implements both protocols at once."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime, timedelta

    from synopsis.stores.records import (
        Compaction,
        SearchHit,
        SessionState,
        SessionStats,
        StoredMessage,
    )
    from synopsis.stores.requests import RequestRecord, RequestRollup, RollupBy
    from synopsis.summarizers.records import SummaryRecord


class StoreBase(ABC):
    """Subclasses implement the sync methods (thread-safe: the async ones call them from a
    worker thread) and get :class:`~synopsis.stores.protocols.AsyncStore` for free."""

    @abstractmethod
    def save(self, compaction: Compaction) -> None: ...

    @abstractmethod
    def session(self, session_id: str) -> SessionState | None: ...

    @abstractmethod
    def save_session(self, state: SessionState) -> None: ...

    @abstractmethod
    def summaries(self, session_id: str) -> list[SummaryRecord]: ...

    def summary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        """One summary record by its id (a compaction reads the head of the chain alone: a
        long session's chain holds thousands). This default reads them all; override it."""
        return next((r for r in self.summaries(session_id) if r.id == summary_id), None)

    @abstractmethod
    def recall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]: ...

    @abstractmethod
    def search(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]: ...

    @abstractmethod
    def sessions(self) -> list[str]: ...

    @abstractmethod
    def close(self) -> None: ...

    # -- lifecycle: what an operator does to a store, never the compaction -----------------

    @abstractmethod
    def forget(self, session_id: str) -> bool:
        """Delete everything kept for the session (its messages, summaries and state) in one
        transaction; whether there was anything. The only way a stored message goes."""

    @abstractmethod
    def prune(self, older_than: datetime | timedelta) -> list[str]:
        """Forget every session whose state was last saved before ``older_than`` (a moment,
        or that long ago: its ``updated_at``, which every save stamps), each in its own
        transaction; their ids, sorted."""

    @abstractmethod
    def stats(self) -> list[SessionStats]:
        """What each session with a saved state keeps, by session id."""

    @abstractmethod
    def states(self) -> list[SessionState]:
        """Every session's saved state, by session id, in one read."""

    def message_counts(self) -> dict[str, int]:
        """The originals each session with a saved state keeps, by session id: what
        :meth:`stats` counts, without the sizes, which read every stored byte (the
        operator's page lists the sessions on every visit). This default takes them from
        :meth:`stats`; the bundled SQL stores count from an index."""
        return {s.session_id: s.messages for s in self.stats()}

    # -- per-request records: the proxy's figures, kept apart from the sessions -------------

    @abstractmethod
    def save_requests(self, records: Sequence[RequestRecord]) -> None:
        """Append the records, all or none."""

    @abstractmethod
    def requests(
        self,
        session_id: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> list[RequestRecord]:
        """Up to ``limit`` records, newest first: the session's (``None``: every session's),
        at ``since`` or later and before ``until``."""

    @abstractmethod
    def prune_requests(
        self, older_than: datetime | timedelta | None = None, *, keep: int | None = None
    ) -> int:
        """Remove the records from before ``older_than`` (a moment, or that long ago), then
        all but the newest ``keep``; how many went."""

    @abstractmethod
    def request_rollup(
        self,
        by: RollupBy,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[RequestRollup]:
        """The records (the session's, or every session's; at ``since`` or later and before
        ``until``) grouped ``by`` their session, model, hour or day (UTC) or error kind, in
        one query: by key, or for ``hour`` and ``day`` by time. ``"error"`` groups only the
        records that ended with an error."""

    async def arequest_rollup(
        self,
        by: RollupBy,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[RequestRollup]:
        return await asyncio.to_thread(
            self.request_rollup, by, session_id=session_id, since=since, until=until
        )

    async def astates(self) -> list[SessionState]:
        return await asyncio.to_thread(self.states)

    async def asave_requests(self, records: Sequence[RequestRecord]) -> None:
        await asyncio.to_thread(self.save_requests, records)

    async def asave(self, compaction: Compaction) -> None:
        await asyncio.to_thread(self.save, compaction)

    async def asession(self, session_id: str) -> SessionState | None:
        return await asyncio.to_thread(self.session, session_id)

    async def asave_session(self, state: SessionState) -> None:
        await asyncio.to_thread(self.save_session, state)

    async def asummaries(self, session_id: str) -> list[SummaryRecord]:
        return await asyncio.to_thread(self.summaries, session_id)

    async def asummary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        return await asyncio.to_thread(self.summary, session_id, summary_id)

    async def arecall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        return await asyncio.to_thread(self.recall, session_id, ids=ids, start=start, stop=stop)

    async def asearch(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        return await asyncio.to_thread(self.search, session_id, query, limit=limit)

    async def asessions(self) -> list[str]:
        return await asyncio.to_thread(self.sessions)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def aforget(self, session_id: str) -> bool:
        return await asyncio.to_thread(self.forget, session_id)

    async def aprune(self, older_than: datetime | timedelta) -> list[str]:
        return await asyncio.to_thread(self.prune, older_than)

    async def astats(self) -> list[SessionStats]:
        return await asyncio.to_thread(self.stats)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
