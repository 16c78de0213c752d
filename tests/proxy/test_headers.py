"""What a strict client sees of the headers: never two ``server``, ``date`` or
``content-length`` (one from the upstream, one from the proxy's own server), for a whole
answer and for a stream."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx2
import pytest

if TYPE_CHECKING:
    from synopsis.testing.server import FakeLLMServer
    from tests.proxy.conftest import ServeProxy

FRAMING = ("server", "date", "content-length", "transfer-encoding", "connection")


@pytest.mark.parametrize("stream", [False, True])
def test_no_framing_header_comes_twice(
    upstream: FakeLLMServer, proxy: ServeProxy, stream: bool
) -> None:
    served = proxy()
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    with httpx2.Client(base_url=served.url) as client:
        answer = client.post("/v1/chat/completions", json=body)
    assert answer.status_code == 200
    for name in FRAMING:
        assert len(answer.headers.get_list(name)) <= 1, name
    # The upstream's own server header does not reach the client.
    assert "BaseHTTP" not in answer.headers.get("server", "")
    assert len(upstream.requests) == 1
