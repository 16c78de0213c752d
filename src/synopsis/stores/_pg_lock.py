"""The lock per session of :class:`~synopsis.stores.PostgresStore`: a session-level advisory
lock held on one pooled connection of its own from reading a session to saving it (see
:mod:`.postgres`), taken by a thread or, asking again at growing intervals, by a task."""

from __future__ import annotations

import asyncio
import threading
import time
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from synopsis.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["Pooled", "SessionLocks"]

_LOCK_POLL = (0.005, 0.2)
"""An async waiter asks for the lock again after this long, doubling up to the second value:
it waits on the event loop, not in a thread that a long wait would take from the pool."""


class Pooled(Protocol):
    """What the lock needs of its store."""

    url: str
    lock_timeout: float
    _pool: ConnectionPool[psycopg.Connection[Any]] | None

    def _live(self) -> ConnectionPool[psycopg.Connection[Any]]: ...

    def _failures(self) -> AbstractContextManager[None]: ...

    def _key(self, session_id: str) -> int: ...

    def _unlock(self, conn: psycopg.Connection[Any], key: int) -> None: ...

    def _try_lock(self, key: int) -> psycopg.Connection[Any] | None: ...

    def _let_go(self, done: asyncio.Future[Any], key: int) -> None: ...


class SessionLocks:
    """The :class:`~synopsis.stores.protocols.LockingStore` half of the PostgreSQL store."""

    @contextmanager
    def session_lock(self: Pooled, session_id: str) -> Iterator[None]:
        """Held on a connection of its own until the block ends (see the module docstring)."""
        key = self._key(session_id)
        pool = self._live()
        with self._failures():
            conn = pool.getconn()
            try:
                conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            except BaseException:
                pool.putconn(conn)
                raise
        try:
            yield
        finally:
            self._unlock(conn, key)

    def _unlock(self: Pooled, conn: psycopg.Connection[Any], key: int) -> None:
        import psycopg  # noqa: PLC0415

        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except psycopg.Error:
            conn.close()  # a connection that ends lets go of its locks
        finally:
            pool = self._pool
            if pool is not None:
                pool.putconn(conn)
            else:
                conn.close()

    def _try_lock(self: Pooled, key: int) -> psycopg.Connection[Any] | None:
        pool = self._live()
        with self._failures():
            conn = pool.getconn()
            try:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            except BaseException:
                pool.putconn(conn)
                raise
        if row == (True,):
            return conn
        pool.putconn(conn)
        return None

    @asynccontextmanager
    async def asession_lock(self: Pooled, session_id: str) -> AsyncIterator[None]:
        """:meth:`session_lock` for a task: it asks again at growing intervals rather than
        wait in a thread, and a task cancelled at any point leaves no lock held."""
        key = self._key(session_id)
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + self.lock_timeout
        pause = _LOCK_POLL[0]
        while True:
            attempt = loop.run_in_executor(None, self._try_lock, key)
            try:
                conn = await asyncio.shield(attempt)
            except asyncio.CancelledError:
                attempt.add_done_callback(lambda done: self._let_go(done, key))
                raise
            if conn is not None:
                break
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"the store {self.url} waited {self.lock_timeout:g} s for session "
                    f"{session_id!r}: another compaction of it is still running"
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LOCK_POLL[1])
        try:
            yield
        finally:
            release = loop.run_in_executor(None, self._unlock, conn, key)
            await asyncio.shield(release)

    def _let_go(self: Pooled, done: asyncio.Future[Any], key: int) -> None:
        """The lock a cancelled waiter's last attempt took after all, released: in a thread
        of its own, since the loop's executor refuses work once the loop is closing (a
        waiter cancelled by ``asyncio.run`` ending)."""
        failed = done.cancelled() or done.exception() is not None
        conn = None if failed else done.result()
        if conn is not None:
            threading.Thread(target=self._unlock, args=(conn, key), daemon=True).start()
