"""``synopsis serve``: an OpenAI- and Anthropic-compatible proxy that keeps any agent inside
its model's window, with no change to the agent.

Point a client's base URL at the proxy (``OPENAI_BASE_URL=http://127.0.0.1:8787/v1``,
``ANTHROPIC_BASE_URL=http://127.0.0.1:8787``): each request's history is compacted for the
model it names, through the session's projection (the summary stands for the start of the
history the client resends, byte for byte the same until the next compaction), and forwarded;
the answer comes back as the upstream sent it. See ``docs/proxy.md``.

Needs the ``proxy`` extra: ``pip install "synopsis[proxy]"``.
"""

from __future__ import annotations

try:
    import httpx2  # noqa: F401
    import orjson  # noqa: F401
    import prometheus_client  # noqa: F401
    import starlette  # noqa: F401
except ImportError as error:  # pragma: no cover - the extra is installed where tests run
    raise ImportError(
        f'the proxy needs the "proxy" extra ({error.name} is missing): '
        'pip install "synopsis[proxy]"'
    ) from error

from synopsis.proxy.app import DEFAULT_UPSTREAMS, create_app

__all__ = ["DEFAULT_UPSTREAMS", "create_app"]
