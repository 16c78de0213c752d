"""Fixtures of the proxy's tests: a fake upstream answering every route, and proxies in front
of it, each served by a real uvicorn on 127.0.0.1."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from synopsis.proxy import create_app
from synopsis.testing.server import FakeLLMServer
from tests.proxy.sdk_clients import answer
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from collections.abc import Iterator


class ServeProxy(Protocol):
    def __call__(self, **options: Any) -> Served: ...


@pytest.fixture
def upstream() -> Iterator[FakeLLMServer]:
    """A fake upstream that answers every route with the text ``sdk_clients.TEXT`` (in the
    route's shape) once its script is empty."""
    with FakeLLMServer(default=answer) as server:
        yield server


@pytest.fixture
def proxy(upstream: FakeLLMServer) -> Iterator[ServeProxy]:
    """``proxy(**options)``: a served proxy of ``create_app(**options)``, both upstreams the
    ``upstream`` fixture unless given, the machine's ``SYNOPSIS_*`` variables ignored;
    stopped at the end of the test."""
    with contextlib.ExitStack() as stack:

        def serve(**options: Any) -> Served:
            options.setdefault("upstream_openai", upstream.root)
            options.setdefault("upstream_anthropic", upstream.root)
            options.setdefault("environ", {})
            return stack.enter_context(Served(create_app(**options)))

        yield serve
