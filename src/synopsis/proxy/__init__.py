"""``synopsis serve``: an OpenAI- and Anthropic-compatible proxy that keeps any agent inside
its model's window, with no change to the agent.

Point a client's base URL at the proxy (``OPENAI_BASE_URL=http://127.0.0.1:8787/v1``,
``ANTHROPIC_BASE_URL=http://127.0.0.1:8787``): each request's history is compacted for the
model it names, through the session's projection (the summary stands for the start of the
history the client resends, byte for byte the same until the next compaction), and forwarded;
the answer comes back as the upstream sent it. See ``docs/proxy.md``.

``create_app`` needs the ``proxy`` extra: ``pip install "synopsis[proxy]"``; importing this
package does not (the command's help reads :mod:`.defaults`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synopsis.proxy.defaults import UPSTREAMS as DEFAULT_UPSTREAMS

if TYPE_CHECKING:
    from synopsis.proxy.app import create_app

__all__ = ["DEFAULT_UPSTREAMS", "create_app"]

_EXTRA = ("httpx2", "orjson", "prometheus_client", "starlette", "uvicorn")


def __getattr__(name: str) -> Any:  # noqa: ANN401 - the attribute asked for
    if name != "create_app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    for module in _EXTRA:
        try:
            importlib.import_module(module)
        except ImportError:
            raise ImportError(
                f'the proxy needs the "proxy" extra ({module} is missing): '
                'pip install "synopsis[proxy]"'
            ) from None
    from synopsis.proxy.app import create_app  # noqa: PLC0415

    return create_app
