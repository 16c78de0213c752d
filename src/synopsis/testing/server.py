"""A fake OpenAI- and Anthropic-compatible HTTP server: scripted answers, recorded requests.

The real SDKs (``openai``, ``anthropic``) talk to it as they would to the provider, so a test
covers everything between your code and the wire without a network or a key::

    from synopsis.testing.server import FakeLLMServer, chat_completion

    with FakeLLMServer() as server:
        server.add(chat_completion("a summary"))
        client = openai.OpenAI(api_key="test", base_url=server.base_url)
        ...
        assert server.requests[0].body["model"] == "gpt-4o-mini"

Standard library only: a :class:`~http.server.ThreadingHTTPServer` on ``127.0.0.1`` (a free
port) in a background thread. ``POST /v1/chat/completions``, ``/v1/responses`` and
``/v1/messages`` each take the next :class:`Reply` of the script (``add``, ``error``); with
none left they ask ``default``, if given, or answer 500. ``GET /v1/models``, ``POST
/v1/embeddings`` and ``POST /v1/messages/count_tokens`` answer by themselves; anything else
gets a 404. Every request, whatever its method and path, is recorded (method, path, query,
headers, JSON body, raw bytes) before it is answered; :meth:`FakeLLMServer.wait_for` waits,
from another thread, until enough have come.

A request whose body has ``"stream": true`` gets a successful reply as server-sent events in
that endpoint's own format, built from the scripted body (its text split into a few deltas;
see :func:`stream_events`), in a chunked HTTP/1.1 body. ``Reply.cut_after`` breaks such a
stream off after that many text deltas (``cut_cleanly``: ends the body there instead of
dropping the connection), ``Reply.chunk_delay`` paces its events and ``Reply.rewrite`` edits
them. An error status is answered with its JSON body, streamed or not, as the real APIs do.
``picky`` (a :class:`Picky`) refuses what servers of local models refuse, as they refuse it,
and a prompt over a context window as OpenAI, Anthropic, vLLM or llama.cpp's server does.

To stand behind a proxy under test, the server also says how each reply ended:
``finished`` holds the path of every reply sent to its end, ``hangups`` that of every reply
whose client left before it ended (during a ``delay``, between two events of a stream, or
under a write).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self

from synopsis.testing._picky import Picky, prompt_tokens
from synopsis.testing._wire import (
    Event,
    anthropic_message,
    chat_completion,
    cut_events,
    embeddings,
    models,
    response,
    split,
    stream_events,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = [
    "PATHS",
    "Event",
    "FakeLLMServer",
    "Picky",
    "Recorded",
    "Reply",
    "anthropic_message",
    "chat_completion",
    "response",
    "split",
    "stream_events",
]

PATHS = frozenset({"/v1/chat/completions", "/v1/responses", "/v1/messages"})
"""The endpoints answered from the script (``POST``)."""

_FIXED: dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("GET", "/v1/models"): lambda _: models(),
    ("POST", "/v1/embeddings"): embeddings,
    ("POST", "/v1/messages/count_tokens"): lambda body: {"input_tokens": prompt_tokens(body)},
}
"""The endpoints that answer by themselves, from the request alone."""


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a JSON body, its status, and how long to wait before sending it.

    For a streamed request: ``chunk_delay`` is the pause before each event; ``cut_after``
    stops the stream after that many text deltas, by dropping the connection in the middle of
    the chunked body or, with ``cut_cleanly``, by ending the body there as if it were whole;
    ``rewrite`` edits the events before they are sent (to insert an error event, say).
    """

    body: dict[str, Any]
    status: int = 200
    delay: float = 0.0
    cut_after: int | None = None
    cut_cleanly: bool = False
    chunk_delay: float = 0.0
    rewrite: Callable[[list[Event]], list[Event]] | None = None


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it: its path (without the query), its headers (names
    in lower case), its JSON body (``{}`` when it has none or it is not a JSON object), its
    method, its query string (what follows ``?``, undecoded) and its body's bytes."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    method: str = "POST"
    query: str = ""
    raw: bytes = b""


class FakeLLMServer:
    """The fake server. Use it as a context manager (``with FakeLLMServer() as server:``), or
    call :meth:`start` and :meth:`stop`. ``base_url`` (ending in ``/v1``) is what an OpenAI
    client takes; ``root`` (without it) is what an Anthropic client takes.

    Args:
        picky: what the server refuses, as servers of local models do (see :class:`Picky`).
            Settable at any time.
        default: answers a request when the script is empty (a function of the recorded
            request, to answer from what was asked); without it, such a request gets a 500.

    ``script`` holds the replies still to send, in order; ``requests`` every request received,
    in order (clear it between phases of a test). ``finished`` holds the path of each reply
    sent to its end, ``hangups`` that of each reply its client abandoned before the end, in
    the order they ended; a stream cut on purpose (``cut_after`` without ``cut_cleanly``) is
    in neither. A client that leaves once the whole reply is handed to the network is not
    noticed: that reply counts as finished.
    """

    def __init__(
        self,
        *,
        picky: Picky | None = None,
        default: Callable[[Recorded], Reply] | None = None,
    ) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.finished: list[str] = []
        self.hangups: list[str] = []
        self.picky = picky or Picky()
        self.default = default
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._received = threading.Condition(self._lock)

    def __repr__(self) -> str:
        where = self.base_url if self._server is not None else "not started"
        return f"FakeLLMServer({where}, {len(self.script)} scripted, {len(self.requests)} received)"

    def add(
        self,
        body: dict[str, Any],
        *,
        status: int = 200,
        delay: float = 0.0,
        cut_after: int | None = None,
        cut_cleanly: bool = False,
        chunk_delay: float = 0.0,
        rewrite: Callable[[list[Event]], list[Event]] | None = None,
    ) -> None:
        """Script the next reply: ``body`` with ``status`` (see :class:`Reply` for the rest)."""
        self.script.append(Reply(body, status, delay, cut_after, cut_cleanly, chunk_delay, rewrite))

    def error(self, status: int, message: str = "scripted failure", *, delay: float = 0.0) -> None:
        """Script an error reply: ``status`` with a JSON error body carrying ``message``."""
        self.add({"error": {"type": "error", "message": message}}, status=status, delay=delay)

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._server is None:
            raise RuntimeError("the fake server is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"{self.root}/v1"

    def wait_for(self, count: int, timeout: float = 5.0) -> list[Recorded]:
        """Block until at least ``count`` requests are recorded, then return them all (a copy
        of ``requests``). Raises :class:`TimeoutError` if they have not come in ``timeout``
        seconds."""
        with self._received:
            if not self._received.wait_for(lambda: len(self.requests) >= count, timeout):
                raise TimeoutError(
                    f"{len(self.requests)} of {count} requests received in {timeout} seconds"
                )
            return list(self.requests)

    def _record(self, recorded: Recorded) -> None:
        with self._received:
            self.requests.append(recorded)
            self._received.notify_all()

    def _ended(self, path: str, *, finished: bool) -> None:
        with self._lock:
            (self.finished if finished else self.hangups).append(path)

    def _reply_to(self, recorded: Recorded) -> Reply:
        """Record a request and choose its reply: a refusal (``picky``), else the next scripted
        reply, else ``default``'s, else a 500. Called by the request's handler thread."""
        with self._received:
            self.requests.append(recorded)
            self._received.notify_all()
            refused = self.picky.refusal(recorded.body)
            if refused is not None:
                return Reply(refused[1], refused[0])
            if self.script:
                return self.script.popleft()
        if self.default is not None:
            return self.default(recorded)
        return Reply({"error": {"type": "error", "message": "no scripted reply left"}}, 500)

    def start(self) -> Self:
        """Listen on a free port of ``127.0.0.1`` in a background thread."""
        if self._server is not None:
            raise RuntimeError("the fake server is already started")
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and wait for the thread (a no-op when not started)."""
        if self._server is None or self._thread is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeLLMServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a test reads ``requests`` instead."""

    def handle(self) -> None:
        # A client that gives up (a timeout, a stream left unread) closes or resets the
        # connection under a reply being written: that reply is lost, as it would be.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()

    def _read_body(self) -> bytes:
        """The request's body, whether its length is given or it comes in chunks (as a proxy
        that streams what it forwards sends it)."""
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""
        parts = []
        while size := int(self.rfile.readline().split(b";")[0], 16):
            parts.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline().strip():  # trailers, up to the blank line ending the body
            pass
        return b"".join(parts)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._end_headers()
        self.wfile.write(data)

    def _end_headers(self) -> None:
        # One request per connection: a client's pool then holds no connection open after
        # the test (an unclosed socket warns when it is collected, and a suite that makes
        # warnings errors would fail on the fake's account).
        self.send_header("Connection", "close")
        self.end_headers()

    def _wait(self, seconds: float) -> bool:
        """Wait ``seconds`` (none: only look), or less if the client hangs up (a timeout test,
        a stream left unread): then the answer is False, and this thread is free to end
        without keeping :meth:`FakeLLMServer.stop` waiting."""
        readable, _, _ = select.select([self.connection], [], [], seconds)
        if not readable:
            return True
        try:
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:  # the client reset the connection
            return False
        return peeked != b""

    def _stream(self, events: list[Event], reply: Reply) -> bool | None:
        """Server-sent events in a chunked body; a cut drops the connection before the last
        chunk, unless ``cut_cleanly`` ends the body there. Whether the stream was sent to its
        end (None: it was cut on purpose)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._end_headers()
        for event in cut_events(events, reply.cut_after):
            # Looked at before every event, paced or not: a client gone between two events
            # is a hang-up even when the writes would still have fit in the socket's buffer.
            if not self._wait(reply.chunk_delay):
                return False
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        if reply.cut_after is not None and not reply.cut_cleanly:
            return None  # the connection closes with the body unfinished
        self.wfile.write(b"0\r\n\r\n")
        return True

    def _answer(self, path: str, reply: Reply, request: dict[str, Any], *, stream: bool) -> None:
        """Send ``reply`` (after its delay; as events when ``stream`` and it is no error), and
        note whether it reached its end or its client left first."""
        ended: bool | None
        try:
            if reply.delay and not self._wait(reply.delay):
                ended = False
            elif stream and reply.status < 400:
                events = stream_events(path, reply.body, request)
                ended = self._stream(reply.rewrite(events) if reply.rewrite else events, reply)
            else:
                self._send(reply.status, reply.body)
                ended = True
        except (BrokenPipeError, ConnectionResetError):
            ended = False
        if ended is not None:
            self.server.fake._ended(path, finished=ended)

    def do_POST(self) -> None:
        raw = self._read_body()
        path, _, query = self.path.partition("?")
        headers = {k.lower(): v for k, v in self.headers.items()}
        problem: str | None = None
        try:
            body = json.loads(raw or b"{}")
        except ValueError as error:
            body, problem = {}, str(error)
        if not isinstance(body, dict):
            body, problem = {}, "the body is not a JSON object"
        recorded = Recorded(path, headers, body, self.command, query, raw)
        fake = self.server.fake
        scripted = self.command == "POST" and path in PATHS
        fixed = _FIXED.get((self.command, path))
        if problem is not None and (scripted or fixed):
            fake._record(recorded)
            reply = Reply({"error": {"type": "invalid_request_error", "message": problem}}, 400)
        elif scripted:
            reply = fake._reply_to(recorded)
        else:
            fake._record(recorded)
            not_found = {"error": {"type": "not_found", "message": f"{self.command} {path}"}}
            reply = Reply(fixed(body)) if fixed else Reply(not_found, 404)
        self._answer(path, reply, body, stream=scripted and body.get("stream") is True)

    # Every method is recorded and answered alike; only the routes above tell them apart.
    do_GET = do_PUT = do_PATCH = do_DELETE = do_POST
