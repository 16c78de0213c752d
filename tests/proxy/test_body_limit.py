"""``--max-body-size``: a body over the limit gets a 413 in its route's error shape, counted and
logged, without the proxy reading it whole (or at all, when its ``Content-Length`` says so);
nothing goes upstream. A body at the limit goes through."""

from __future__ import annotations

import json
import logging
import socket
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

if TYPE_CHECKING:
    from synopsis.testing.server import FakeLLMServer
    from tests.proxy.conftest import ServeProxy
    from tests.proxy.servers import Served

LIMIT = 4096
CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
OTHER = "/v1/embeddings"


def _body(size: int) -> bytes:
    """A chat body of exactly ``size`` bytes."""
    head = b'{"model":"gpt-4o","messages":[{"role":"user","content":"'
    tail = b'"}]}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def too_large(served: Served) -> float:
    found = served.state.metrics.registry.get_sample_value(
        "synopsis_proxy_errors_total", {"kind": "too_large"}
    )
    return float(found or 0.0)


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        (CHAT, {"type": "invalid_request_error", "param": None, "code": None}),
        (MESSAGES, {"type": "request_too_large"}),
        (OTHER, {"type": "invalid_request_error", "param": None, "code": None}),
    ],
)
def test_a_body_over_the_limit_gets_a_413_in_its_routes_shape(
    proxy: ServeProxy,
    upstream: FakeLLMServer,
    caplog: pytest.LogCaptureFixture,
    path: str,
    shape: dict[str, Any],
) -> None:
    caplog.set_level(logging.INFO, logger="synopsis.proxy")
    served = proxy(max_body_size=LIMIT)
    answer = httpx2.post(served.url + path, content=_body(LIMIT + 1), timeout=10)
    assert answer.status_code == 413
    error = answer.json()["error"]
    assert {k: error[k] for k in shape} == shape
    assert "larger than this proxy accepts (4096 bytes)" in error["message"]
    assert too_large(served) == 1
    assert upstream.requests == []
    (line,) = [r.getMessage() for r in caplog.records if r.name == "synopsis.proxy"]
    assert "status=413" in line
    assert "over --max-body-size (4096 bytes)" in line


@pytest.mark.parametrize("path", [CHAT, OTHER])
def test_a_body_at_the_limit_goes_through(
    proxy: ServeProxy, upstream: FakeLLMServer, path: str
) -> None:
    served = proxy(max_body_size=LIMIT)
    answer = httpx2.post(served.url + path, content=_body(LIMIT), timeout=10)
    assert answer.status_code != 413
    assert [r.raw for r in upstream.requests] == [_body(LIMIT)]
    assert too_large(served) == 0


def _exchange(served: Served, head: bytes, chunks: list[bytes]) -> bytes:
    """Send ``head`` and then ``chunks`` on a raw connection, and read the answer (whose
    length its headers give); the body is never ended."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head)
        for chunk in chunks:
            sock.sendall(chunk)
        received = b""
        while b"\r\n\r\n" not in received:
            received += sock.recv(65536)
        top, _, body = received.partition(b"\r\n\r\n")
        length = int(next(h for h in top.split(b"\r\n") if h.startswith(b"content-length:"))[15:])
        while len(body) < length:
            body += sock.recv(65536)
        return top + b"\r\n\r\n" + body


def _status_and_body(raw: bytes) -> tuple[bytes, dict[str, Any]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], json.loads(body)


@pytest.mark.parametrize("path", [CHAT, OTHER])
def test_a_body_said_to_be_too_large_is_refused_before_any_of_it_is_read(
    proxy: ServeProxy, upstream: FakeLLMServer, path: str
) -> None:
    served = proxy(max_body_size=LIMIT)
    # A gigabyte announced, not a byte of it sent: the answer comes all the same.
    head = (
        f"POST {path} HTTP/1.1\r\nhost: proxy\r\ncontent-type: application/json\r\n"
        f"content-length: {1 << 30}\r\n\r\n"
    ).encode()
    status, body = _status_and_body(_exchange(served, head, []))
    assert status == b"HTTP/1.1 413 Request Entity Too Large"
    assert body["error"]["message"].startswith("the request body is larger than")
    assert upstream.requests == []


@pytest.mark.parametrize("path", [CHAT, OTHER])
def test_a_chunked_body_is_refused_once_it_passes_the_limit_unended(
    proxy: ServeProxy, upstream: FakeLLMServer, path: str
) -> None:
    served = proxy(max_body_size=LIMIT)
    head = (
        f"POST {path} HTTP/1.1\r\nhost: proxy\r\ncontent-type: application/json\r\n"
        "transfer-encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"x" * 1024
    # Five chunks pass the limit; the body's end never comes, so only a proxy that stops
    # reading at the limit answers.
    framed = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 5
    status, body = _status_and_body(_exchange(served, head, framed))
    assert status == b"HTTP/1.1 413 Request Entity Too Large"
    assert "4096 bytes" in body["error"]["message"]
    assert too_large(served) == 1
    assert upstream.requests == []
