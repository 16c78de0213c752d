"""The upstream the proxy and stores benchmarks send to: a bare ASGI app on uvicorn that reads
the whole body, finds the marker the request's last message carries and answers a small chat
completion naming it (for ``"stream": true``, that answer as server-sent events), without
parsing the body, so that its own cost is small and the same on every path. Asked with
:data:`CHECK_HEADER`, it adds the CRC-32 of the bytes it received; with :data:`PACE_HEADER`, it
waits between a stream's events.

``python -m benchmarks._upstream`` serves it (:class:`benchmarks._harness.Child` starts it so),
printing its root URL and stopping when its stdin closes.
"""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import threading
import time
import zlib
from typing import TYPE_CHECKING, Any, Self

import orjson
import uvicorn

from synopsis.testing.server import chat_completion, stream_events

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

MODEL = "gpt-4o"
PATH = "/v1/chat/completions"
MARK = re.compile(rb"bench-mark-[0-9a-z-]+")
CHECK_HEADER = "x-bench-check"
"""Asks the upstream for the CRC-32 of the body it received (the mix-up check)."""
PACE_HEADER = "x-bench-pace"
"""Seconds the upstream waits before each event of a stream (concurrent sessions)."""


async def lifespan(receive: Receive, send: Send) -> None:
    """An ASGI lifespan with nothing to start or stop."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def read_body(receive: Receive) -> bytes:
    """A request's whole body."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def upstream(scope: Scope, receive: Receive, send: Send) -> None:
    """The upstream: a chat completion naming the request's marker, streamed or not."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    body = await read_body(receive)
    headers = dict(scope["headers"])
    marks = MARK.findall(body[-4096:])
    text = marks[-1].decode() if marks else "no-mark"
    if CHECK_HEADER.encode() in headers:
        text += f" crc={zlib.crc32(body):08x}"
    answer = chat_completion(text, model=MODEL)
    answer["usage"] = {"prompt_tokens": len(body) // 4, "completion_tokens": 3}
    # The client writes "stream" before the history: it is found without parsing the body.
    if b'"stream":true' not in body[:100]:
        head = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": orjson.dumps(answer)})
        return
    pace = float(headers.get(PACE_HEADER.encode(), b"0"))
    head = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": head})
    for event in stream_events(PATH, answer, {}):
        if pace:
            await asyncio.sleep(pace)
        await send({"type": "http.response.body", "body": event.encode(), "more_body": True})
    await send({"type": "http.response.body", "body": b""})


class Served:
    """``with Served(app) as server:`` serves ``app`` on uvicorn at 127.0.0.1 (a free port,
    bound first so it is known with no race) in a thread until the block ends: the recipe of
    the proxy's tests, but for the socket's protocol (see below)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        # IPPROTO_TCP named, not left 0: asyncio sets TCP_NODELAY on the connections of a
        # socket only when it says TCP, and without it every request after a connection's
        # first waits ~40 ms on Nagle's algorithm and the peer's delayed ACK.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", server_header=False, date_header=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def answer_text(data: bytes) -> str:
    """The text of a chat completion, whole or streamed."""
    if data.startswith(b"{"):
        return str(orjson.loads(data)["choices"][0]["message"]["content"])
    return streamed_text(data)


def streamed_text(data: bytes) -> str:
    """The text of a chat completion stream: its content deltas, joined."""
    out = []
    for line in data.split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            for choice in orjson.loads(line[6:]).get("choices") or ():
                out.append((choice.get("delta") or {}).get("content") or "")
    return "".join(out)


def main() -> None:
    """A child process's life: serve the upstream, print its root, stop when stdin closes."""
    with Served(upstream) as served:
        print(served.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
