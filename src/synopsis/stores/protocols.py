"""What a store promises, sync and async. Every bundled store implements both.

A store keeps, per session: the messages a compaction replaced (append-only, with their
original wire items), the chain of summary records, and the pipeline's session state. It
recalls messages by id or by position, and searches their text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeGuard, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractAsyncContextManager, AbstractContextManager

    from synopsis.stores.records import Compaction, SearchHit, SessionState, StoredMessage
    from synopsis.summarizers.records import SummaryRecord

__all__ = ["AsyncStore", "LockingStore", "Store"]


@runtime_checkable
class Store(Protocol):
    """A synchronous store. Errors are :class:`~synopsis.errors.StoreError`; wrong arguments
    are :class:`~synopsis.errors.ConfigurationError`."""

    def save(self, compaction: Compaction) -> None:
        """Save a compaction's records, messages and state atomically: on failure, raise
        ``StoreError`` with nothing written. A record or a message saved again (same record
        id; same session, id and sha256) is ignored; the state replaces the session's."""
        ...

    def session(self, session_id: str) -> SessionState | None:
        """The session's state, or ``None`` for a session never saved."""
        ...

    def save_session(self, state: SessionState) -> None:
        """Replace the session's state alone (a skipped or failed compaction updates the
        governor). An ``updated_at`` of ``None`` is stamped with the current time."""
        ...

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        """The session's summary records, oldest first. A store that also has
        ``summary(session_id, summary_id)`` (every :class:`StoreBase` has) is asked for the
        chain's head alone when a compaction starts, not for every record."""
        ...

    def recall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        """Stored messages in timeline order: those with the given ids (unknown ids skipped),
        or those at positions in ``[start, stop)``, or, with neither, all of them. Ids and a
        range together raise ``ConfigurationError``."""
        ...

    def search(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        """Up to ``limit`` messages holding any word of ``query``, best BM25 match first. Any
        text is a valid query; one without words gives ``[]``."""
        ...

    def sessions(self) -> list[str]:
        """The ids of every session with a saved state, sorted."""
        ...

    def close(self) -> None:
        """Release the store; using it afterwards raises ``StoreError``."""
        ...


@runtime_checkable
class AsyncStore(Protocol):
    """The same methods as :class:`Store`, awaitable, each name prefixed with ``a``."""

    async def asave(self, compaction: Compaction) -> None: ...

    async def asession(self, session_id: str) -> SessionState | None: ...

    async def asave_session(self, state: SessionState) -> None: ...

    async def asummaries(self, session_id: str) -> list[SummaryRecord]: ...

    async def arecall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]: ...

    async def asearch(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]: ...

    async def asessions(self) -> list[str]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class LockingStore(Protocol):
    """A store that several processes share (:class:`~synopsis.stores.PostgresStore`) and
    that locks a session for them: a compaction holds the lock from reading the session to
    saving it, so that two replicas given one conversation at once never both summarize it
    (the second reads what the first saved). Within one process, calls on one store object
    already take turns; this lock is for the rest. ``lock_timeout`` bounds both waits, in
    seconds."""

    lock_timeout: float

    def session_lock(self, session_id: str) -> AbstractContextManager[None]:
        """Held while one call works on the session; waits a bounded time for another
        holder, then raises ``StoreError``."""
        ...

    def asession_lock(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """:meth:`session_lock` for a task; a task cancelled while it waits leaves no lock
        held."""
        ...


_PROVIDED: dict[tuple[type, object], bool] = {}


def _provides(value: object, protocol: object) -> bool:
    """``isinstance(value, protocol)`` for one of these protocols, decided once per class: a
    runtime protocol check looks up every member each time (6 to 8 µs), and a compaction that
    skips asks three of them per call. A store's class decides what it provides."""
    key = (type(value), protocol)
    found = _PROVIDED.get(key)
    if found is None:
        found = _PROVIDED[key] = isinstance(value, protocol)  # type: ignore[arg-type]
    return found


def blocks(store: object) -> TypeGuard[Store]:
    """Whether ``store`` is a :class:`Store` (see :func:`_provides`)."""
    return _provides(store, Store)


def awaits(store: object) -> TypeGuard[AsyncStore]:
    """Whether ``store`` is an :class:`AsyncStore` (see :func:`_provides`)."""
    return _provides(store, AsyncStore)


def locks(store: object) -> TypeGuard[LockingStore]:
    """Whether ``store`` is a :class:`LockingStore` (see :func:`_provides`)."""
    return _provides(store, LockingStore)
