"""An upstream that breaks off a whole (not streamed) answer: the client gets a 502 in its
provider's shape, never a truncated body presented as whole."""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING

import openai
import pytest

from tests.proxy.sdk_clients import openai_client

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.proxy.conftest import ServeProxy


@pytest.fixture
def breaking() -> Iterator[str]:
    """A server that answers each request with a promise of 1,000 bytes, sends 10, and hangs
    up; its root URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(1 << 20)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: 1000\r\n\r\n" + b'{"id": "ch'
                )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_whole_answer_broken_off_is_a_502(breaking: str, proxy: ServeProxy) -> None:
    served = proxy(upstream_openai=breaking)
    with openai_client(served) as client, pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hello"}]
        )
    assert failed.value.status_code == 502
    assert "broke off" in str(failed.value)
    metrics = served.state.metrics.render().decode()
    assert 'synopsis_proxy_errors_total{kind="upstream_broken"} 1.0' in metrics
