"""One compaction at a time per session, within this process and across processes.

Two requests of one conversation can arrive together (a client's retry, a proxy's parallel
requests). Each reads the session, summarizes and saves: run side by side, both would
summarize the same prefix and offload the same originals twice. A gate per store and session
lets one in at a time; the one that waited then reads what the first saved, and its history
takes the first one's summary (see :mod:`.projection`) instead of making its own.

Threads (``compact``) share a lock per store and session; tasks (``acompact``) an
``asyncio.Lock`` per event loop, store and session. Gates are dropped once no call holds or
waits for one. Replicas in other processes need a store that locks (a
:class:`~synopsis.stores.LockingStore`, such as PostgreSQL's): its lock is taken once the gate
is passed, so a process holds at most one of its connections per session.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

from synopsis.errors import StoreError
from synopsis.stores.protocols import locks

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from synopsis.stores import LockingStore

__all__ = ["async_gate", "gate"]


class _Gate:
    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


class _AsyncGate:
    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()


_gates: weakref.WeakValueDictionary[tuple[int, str], _Gate] = weakref.WeakValueDictionary()
_async_gates: weakref.WeakValueDictionary[tuple[int, int, str], _AsyncGate] = (
    weakref.WeakValueDictionary()
)
_registry = threading.Lock()


@contextmanager
def gate(store: object, session_id: str | None) -> Iterator[None]:
    """Held while one call works on ``session_id`` in ``store`` (nothing to hold without
    either)."""
    if store is None or session_id is None:
        yield
        return
    with _registry:
        key = (id(store), session_id)
        found = _gates.get(key)
        if found is None:
            found = _gates[key] = _Gate()
    if not locks(store):
        with found.lock:
            yield
        return
    # A store that bounds its lock's wait bounds the wait at the gate too: a call of this
    # process waits no longer for another of this process than for another replica.
    if not found.lock.acquire(timeout=store.lock_timeout):
        raise _waited(store, session_id)
    try:
        with store.session_lock(session_id):
            yield
    finally:
        found.lock.release()


def _waited(store: LockingStore, session_id: str) -> StoreError:
    return StoreError(
        f"waited {store.lock_timeout:g} s for session {session_id!r}: another compaction of "
        "it in this process is still running"
    )


@asynccontextmanager
async def async_gate(store: object, session_id: str | None) -> AsyncIterator[None]:
    """:func:`gate` for tasks of the running event loop."""
    if store is None or session_id is None:
        yield
        return
    loop = asyncio.get_running_loop()
    with _registry:
        key = (id(loop), id(store), session_id)
        found = _async_gates.get(key)
        if found is None:
            found = _async_gates[key] = _AsyncGate()
    if not locks(store):
        async with found.lock:
            yield
        return
    try:
        await asyncio.wait_for(found.lock.acquire(), store.lock_timeout)
    except TimeoutError:
        raise _waited(store, session_id) from None
    try:
        async with store.asession_lock(session_id):
            yield
    finally:
        found.lock.release()
