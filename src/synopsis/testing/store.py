"""A store that fails the operations a test chooses, sync and async."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from synopsis.errors import ConfigurationError
from synopsis.stores import MemoryStore, Store

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from synopsis.stores import Compaction, SearchHit, SessionState, StoredMessage
    from synopsis.summarizers import SummaryRecord

__all__ = ["OPERATIONS", "FailingStore"]

OPERATIONS = frozenset(
    {"save", "session", "save_session", "summaries", "summary", "recall", "search", "sessions"}
)
"""What a :class:`FailingStore` can fail, by the name of the sync method (``close`` never
fails: a test must be able to let go of its store)."""


def _broken(operation: str) -> Exception:
    return OSError(f"{operation} is broken")


class FailingStore:
    """A :class:`~synopsis.stores.Store` and :class:`~synopsis.stores.AsyncStore` that passes
    every call to ``inner`` (a new :class:`~synopsis.stores.MemoryStore` by default) except
    those it is told to fail, which raise ``error(name)`` before ``inner`` is touched.

    Args:
        inner: the store that does the work.
        fail: what to fail from the start (more with :meth:`fail`, fewer with :meth:`heal`).
            A sync name (``"save"``) fails the operation in both forms (``save`` and
            ``asave``); an ``a``-prefixed name (``"asave"``) fails only the async form.
        error: builds the exception to raise from the name of the method called (by
            default an :class:`OSError`, "save is broken", as a full disk or a lost
            connection would raise; an exception class works).

    ``calls`` lists the methods called, by name, in order (failed ones too)::

        store = FailingStore(fail={"save"})
        with pytest.raises(StoreError):
            compact(history, model="gpt-4o", store=store, session_id="s", force=True)
        store.heal()
        assert store.recall("s") == []  # nothing half-saved
    """

    def __init__(
        self,
        inner: Store | None = None,
        *,
        fail: Iterable[str] = (),
        error: Callable[[str], BaseException] = _broken,
    ) -> None:
        self.inner: Store = inner if inner is not None else MemoryStore()
        self.error = error
        self.calls: list[str] = []
        """The methods called, by name, in order."""
        self._failing: set[str] = set()
        self.fail(*fail)

    def __repr__(self) -> str:
        return f"FailingStore({self.inner!r}, failing={sorted(self._failing)})"

    @property
    def failing(self) -> frozenset[str]:
        """The names that fail now."""
        return frozenset(self._failing)

    def fail(self, *names: str) -> None:
        """Fail these operations from now on (see the class for the names)."""
        for name in names:
            if name not in OPERATIONS and name.removeprefix("a") not in OPERATIONS:
                known = ", ".join(sorted(OPERATIONS))
                raise ConfigurationError(f"no store operation {name!r} to fail (known: {known})")
        self._failing.update(names)

    def heal(self, *names: str) -> None:
        """Stop failing these operations; with no names, stop failing any."""
        if names:
            self._failing.difference_update(names)
        else:
            self._failing.clear()

    def _enter(self, called: str, operation: str) -> None:
        self.calls.append(called)
        if called in self._failing or operation in self._failing:
            raise self.error(called)

    # -- sync --------------------------------------------------------------------------------

    def save(self, compaction: Compaction) -> None:
        self._enter("save", "save")
        self.inner.save(compaction)

    def session(self, session_id: str) -> SessionState | None:
        self._enter("session", "session")
        return self.inner.session(session_id)

    def save_session(self, state: SessionState) -> None:
        self._enter("save_session", "save_session")
        self.inner.save_session(state)

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        self._enter("summaries", "summaries")
        return self.inner.summaries(session_id)

    def summary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        """One record by id: ``inner``'s own lookup when it has one, else a scan of its
        chain."""
        self._enter("summary", "summary")
        return self._summary(session_id, summary_id)

    def _summary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        lookup = getattr(self.inner, "summary", None)
        if callable(lookup):
            found: SummaryRecord | None = lookup(session_id, summary_id)
            return found
        return next((r for r in self.inner.summaries(session_id) if r.id == summary_id), None)

    def recall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        self._enter("recall", "recall")
        return self.inner.recall(session_id, ids=ids, start=start, stop=stop)

    def search(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        self._enter("search", "search")
        return self.inner.search(session_id, query, limit=limit)

    def sessions(self) -> list[str]:
        self._enter("sessions", "sessions")
        return self.inner.sessions()

    def close(self) -> None:
        self.calls.append("close")
        self.inner.close()

    # -- async: the sync method of ``inner`` on a worker thread, as the bundled stores do ------

    async def asave(self, compaction: Compaction) -> None:
        self._enter("asave", "save")
        await asyncio.to_thread(self.inner.save, compaction)

    async def asession(self, session_id: str) -> SessionState | None:
        self._enter("asession", "session")
        return await asyncio.to_thread(self.inner.session, session_id)

    async def asave_session(self, state: SessionState) -> None:
        self._enter("asave_session", "save_session")
        await asyncio.to_thread(self.inner.save_session, state)

    async def asummaries(self, session_id: str) -> list[SummaryRecord]:
        self._enter("asummaries", "summaries")
        return await asyncio.to_thread(self.inner.summaries, session_id)

    async def asummary(self, session_id: str, summary_id: str) -> SummaryRecord | None:
        self._enter("asummary", "summary")
        return await asyncio.to_thread(self._summary, session_id, summary_id)

    async def arecall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        self._enter("arecall", "recall")
        return await asyncio.to_thread(
            self.inner.recall, session_id, ids=ids, start=start, stop=stop
        )

    async def asearch(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        self._enter("asearch", "search")
        return await asyncio.to_thread(self.inner.search, session_id, query, limit=limit)

    async def asessions(self) -> list[str]:
        self._enter("asessions", "sessions")
        return await asyncio.to_thread(self.inner.sessions)

    async def aclose(self) -> None:
        self.calls.append("aclose")
        await asyncio.to_thread(self.inner.close)
