"""What the hostile-input tests share: proxies served in front of a recording upstream, a
client that speaks raw HTTP/1.1 on a socket (an HTTP library would tidy what a hostile client
sends), and the property every answer must have."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import uvicorn

from synopsis.proxy import create_app
from synopsis.testing.server import FakeLLMServer
from tests.proxy.sdk_clients import answer
from tests.proxy.servers import Served, Stoppable

if TYPE_CHECKING:
    from collections.abc import Iterator

    import httpx2
    from starlette.applications import Starlette

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
COUNT = "/v1/messages/count_tokens"
SHAPES = {CHAT: "openai", RESPONSES: "openai", MESSAGES: "anthropic", COUNT: "anthropic"}


class Lines(logging.Handler):
    """Every record of the loggers it is attached to, kept."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def proxy(self) -> list[str]:
        return [r.getMessage() for r in self.records if r.name == "synopsis.proxy"]

    def tracebacks(self) -> list[logging.LogRecord]:
        """What the server logged beyond the proxy's lines (uvicorn's errors, tracebacks)."""
        return [r for r in self.records if r.name.startswith("uvicorn") and r.levelno >= 30]


@contextlib.contextmanager
def listening() -> Iterator[Lines]:
    """The proxy's log lines and the server's errors, while the block runs."""
    lines = Lines()
    loggers = [logging.getLogger(n) for n in ("synopsis.proxy", "uvicorn.error")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(lines)
        logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(lines)
            logger.setLevel(level)


@dataclass
class Rig:
    """A proxy served in front of a recording fake upstream, and what both logged."""

    served: Served
    fake: FakeLLMServer
    lines: Lines

    @property
    def port(self) -> int:
        return self.served.port

    def errors(self) -> float:
        """Errors counted so far, of every kind."""
        registry = self.served.state.metrics.registry
        total = 0.0
        for metric in registry.collect():
            if metric.name == "synopsis_proxy_errors":
                total += sum(s.value for s in metric.samples if s.name.endswith("_total"))
        return total


@contextlib.contextmanager
def rigged(base: str = "", **options: Any) -> Iterator[Rig]:
    """A proxy whose upstreams are a fake's root plus ``base``."""
    options.setdefault("environ", {})
    with (
        listening() as lines,
        FakeLLMServer(default=answer) as fake,
        Served(
            create_app(
                upstream_openai=fake.root + base, upstream_anthropic=fake.root + base, **options
            )
        ) as served,
    ):
        yield Rig(served, fake, lines)


@dataclass
class Answer:
    """A response as read off the socket."""

    status: int
    headers: dict[str, str]
    body: bytes
    whole: bool = True
    """The body came to the end its framing announced (else the connection dropped first)."""
    extra: dict[str, Any] = field(default_factory=dict)


def _dechunked(data: bytes) -> tuple[bytes, bool]:
    out = bytearray()
    while True:
        size_line, sep, rest = data.partition(b"\r\n")
        if not sep:
            return bytes(out), False
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            return bytes(out), True
        if len(rest) < size + 2:
            out += rest[:size]
            return bytes(out), False
        out += rest[:size]
        data = rest[size + 2 :]


def parse(raw: bytes) -> Answer:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.split(b"\r\n")
    status = int(status_line.split()[1])
    headers: dict[str, str] = {}
    for header in header_lines:
        key, _, value = header.partition(b":")
        headers[key.strip().lower().decode()] = value.strip().decode("latin-1")
    if headers.get("transfer-encoding") == "chunked":
        body, whole = _dechunked(body)
        return Answer(status, headers, body, whole)
    length = int(headers.get("content-length", len(body)))
    return Answer(status, headers, body[:length], len(body) >= length)


def send_raw(port: int, data: bytes, *, timeout: float = 10.0) -> Answer:
    """``data`` sent on a new connection, and the answer read until the server closes it
    (send ``connection: close``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return parse(read_all(sock))


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    return b"".join(chunks)


def request(
    method: str, target: bytes | str, body: bytes = b"", headers: dict[bytes, bytes] | None = None
) -> bytes:
    """A whole HTTP/1.1 request's bytes, exactly as given (nothing normalised)."""
    target = target.encode() if isinstance(target, str) else target
    lines = [method.encode() + b" " + target + b" HTTP/1.1", b"host: proxy", b"connection: close"]
    for key, value in (headers or {}).items():
        lines.append(key + b": " + value)
    if body or method == "POST":
        lines.append(b"content-length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def assert_shaped(api: str, status: int, body: bytes) -> dict[str, Any]:
    """``body`` is an error of ``status`` in ``api``'s own shape (that its SDK reads)."""
    import orjson  # noqa: PLC0415

    assert status >= 400
    parsed = orjson.loads(body)
    if api == "anthropic":
        assert set(parsed) == {"type", "error"}
        assert parsed["type"] == "error"
        assert set(parsed["error"]) == {"type", "message"}
    else:
        assert set(parsed) == {"error"}
        assert set(parsed["error"]) == {"message", "type", "param", "code"}
    assert isinstance(parsed["error"]["type"], str)
    assert isinstance(parsed["error"]["message"], str)
    assert parsed["error"]["message"]
    return dict(parsed["error"])


def assert_upstreams_or_shaped(
    rig: Rig, api: str, answer: Answer | httpx2.Response, reached_before: int, errors_before: float
) -> None:
    """The property: the answer is the upstream's (which then got the request), or an error
    in ``api``'s shape with a status of 400 or more, counted and logged; never plain text,
    never a traceback."""
    status = answer.status if isinstance(answer, Answer) else answer.status_code
    body = answer.body if isinstance(answer, Answer) else answer.content
    content_type = answer.headers.get("content-type", "")
    assert "text/plain" not in content_type
    reached = len(rig.fake.requests) > reached_before
    if not reached:
        assert content_type == "application/json"
        assert_shaped(api, status, body)
        assert rig.errors() > errors_before
    assert not rig.lines.tracebacks()
    # No input here is a bug's: the guard's 500 is the net under the proxy, never its answer.
    internal = rig.served.state.metrics.registry.get_sample_value(
        "synopsis_proxy_errors_total", {"kind": "internal"}
    )
    assert not internal


@contextlib.contextmanager
def served_with(app: Starlette, **config: Any) -> Iterator[int]:
    """``app`` on a real uvicorn with ``config`` (a protocol class, say); its port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = Stoppable(
        uvicorn.Config(app, log_level="warning", lifespan="on", date_header=False, **config)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    try:
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:  # pragma: no cover
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.stop()
        thread.join(10)
        sock.close()
