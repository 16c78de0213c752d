"""The proxy on a real uvicorn server at 127.0.0.1 (a free port), in a thread of the test."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Self

import uvicorn

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from starlette.applications import Starlette


@contextlib.contextmanager
def refusing() -> Iterator[str]:
    """The root of a port held bound but not listening: every connection is refused, and no
    other test (in this worker or another) can start a server on it while the block runs."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


class Stoppable(uvicorn.Server):
    """uvicorn's server, stopped as soon as :meth:`stop` is called: uvicorn itself looks at
    ``should_exit`` every tenth of a second, and the run's hundred and fifty servers each
    waited for that look when their test ended."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._wake: Callable[[], object] = lambda: None

    async def main_loop(self) -> None:
        loop, woken = asyncio.get_running_loop(), asyncio.Event()
        self._wake = lambda: loop.call_soon_threadsafe(woken.set)
        ticks = 0
        while not await self.on_tick(ticks):
            ticks += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), 0.1)

    def stop(self) -> None:
        """From any thread."""
        self.should_exit = True
        self._wake()


class Served:
    """``with Served(app) as server:`` serves ``app`` until the block ends; ``url`` is its
    root. The socket is bound first, so the port is known with no race."""

    def __init__(self, app: Starlette) -> None:
        self.app = app
        # With IPPROTO_TCP named, asyncio sets TCP_NODELAY: without it each response on a
        # kept-alive connection waits about 40 ms for the delayed ACK.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", server_header=False, date_header=False
        )
        self.server = Stoppable(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def state(self) -> Any:
        return self.app.state.proxy

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the proxy's server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
        self.thread.join(10)
        self.sock.close()
