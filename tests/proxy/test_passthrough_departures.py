"""A client that leaves a relayed (passthrough) request before the upstream's headers has the
upstream request closed at once, counted and logged as gone (499), not held until
``--timeout``: a hundred of them leave the connection pool to the next client. A client that
leaves while its body is still coming is let go the same way."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import TYPE_CHECKING

import httpx2
import orjson
import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from synopsis.testing.server import chat_completion
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.requests import Request

    from tests.proxy.conftest import ServeProxy

LEAVERS = 100
"""httpx2's default pool holds 100 connections: as many stuck requests would fill it."""


class SlowUpstream:
    """Answers chat completions at once; every other path only once its client hangs up
    (never, for a proxy that holds the request open), counting those open meanwhile."""

    def __init__(self) -> None:
        self.open = 0
        self.seen = 0

        async def chat(request: Request) -> Response:
            await request.body()
            return Response(orjson.dumps(chat_completion("prompt")), media_type="application/json")

        async def stall(request: Request) -> Response:
            self.open += 1
            self.seen += 1
            try:
                while (await request.receive())["type"] != "http.disconnect":
                    pass
            finally:
                self.open -= 1
            return Response(status_code=204)

        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", chat, methods=["POST"]),
                Route("/{path:path}", stall, methods=["GET", "POST"]),
            ]
        )


def eventually(check: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _counted(served: Served, name: str, labels: dict[str, str]) -> float:
    found = served.state.metrics.registry.get_sample_value(name, labels)
    return float(found or 0.0)


async def _leave(url: str, count: int) -> list[BaseException | httpx2.Response]:
    """``count`` clients asking for ``url`` at once, each giving up a second after it sent
    its request (connecting may take longer on a busy machine)."""
    limits = httpx2.Limits(max_connections=count, max_keepalive_connections=0)
    timeout = httpx2.Timeout(1.0, connect=30.0, pool=30.0)
    async with httpx2.AsyncClient(timeout=timeout, limits=limits) as client:
        return await asyncio.gather(
            *(client.get(url) for _ in range(count)), return_exceptions=True
        )


def test_clients_that_leave_a_relayed_request_free_the_upstream_for_the_next(
    proxy: ServeProxy,
) -> None:
    slow = SlowUpstream()
    with Served(slow.app) as upstream:
        served = proxy(upstream_openai=upstream.url)
        left = asyncio.run(_leave(served.url + "/v1/models", LEAVERS))
        assert [type(r) for r in left] == [httpx2.ReadTimeout] * LEAVERS
        errors = "synopsis_proxy_errors_total"
        # Each let go as its client left, not at --timeout (600 s), and its upstream request
        # closed (most reached the upstream; on a busy machine a few clients may have left
        # before their request was sent on).
        assert eventually(
            lambda: _counted(served, errors, {"kind": "client_gone"}) == LEAVERS, within=10.0
        )
        assert slow.seen > 0
        assert eventually(lambda: slow.open == 0, within=5.0), f"{slow.open} still open"
        answer = httpx2.post(
            served.url + "/v1/chat/completions",
            json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            timeout=5.0,
        )
        assert answer.status_code == 200
        assert answer.json()["choices"][0]["message"]["content"] == "prompt"
        assert _counted(served, errors, {"kind": "upstream_unreachable"}) == 0
        requests = "synopsis_proxy_requests_total"
        assert _counted(served, requests, {"route": "other", "status": "499"}) == LEAVERS


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/embeddings"])
def test_a_client_that_leaves_midway_through_its_body_is_counted_as_gone(
    proxy: ServeProxy, path: str
) -> None:
    served = proxy()
    head = (
        f"POST {path} HTTP/1.1\r\nhost: proxy\r\ncontent-type: application/json\r\n"
        "content-length: 1000\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(head + b'{"model": "gpt-4o", "mess')
        time.sleep(0.2)  # the proxy starts reading it
    route = path if path.endswith("completions") else "other"
    assert eventually(
        lambda: (
            _counted(served, "synopsis_proxy_requests_total", {"route": route, "status": "499"})
            == 1
        ),
        within=5.0,
    )
    kind = {"kind": "client_gone"}
    assert _counted(served, "synopsis_proxy_errors_total", kind) == 1
