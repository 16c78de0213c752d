"""The real SDKs pointed at a served proxy, and what they sent, to compare with what the
upstream received."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import openai

from synopsis.messages import is_summary_text
from synopsis.testing.server import Recorded, Reply, anthropic_message, chat_completion, response

if TYPE_CHECKING:
    import httpx2

    from tests.proxy.servers import Served

TEXT = "Hello from the upstream"
"""What the upstream answers by default (split into three deltas when streamed)."""

API_KEY = "sk-test"
HOP = frozenset({"host", "content-length", "connection", "accept-encoding", "transfer-encoding"})
"""Headers of one hop: each side of the proxy has its own."""


def answer(recorded: Recorded) -> Reply:
    """The upstream's default: ``TEXT`` in the shape of the route asked."""
    if recorded.path.startswith("/v1/messages"):
        return Reply(anthropic_message(TEXT))
    if recorded.path == "/v1/responses":
        return Reply(response(TEXT))
    return Reply(chat_completion(TEXT))


def openai_client(
    served: Served, sent: list[httpx2.Request] | None = None, **options: Any
) -> openai.OpenAI:
    """An OpenAI client of the proxy that never retries (so the upstream's counts are the
    client's requests); ``sent`` collects each request as the SDK sent it."""
    hooks = {"request": [sent.append]} if sent is not None else {}
    return openai.OpenAI(
        api_key=API_KEY,
        base_url=f"{served.url}/v1",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(event_hooks=hooks),
        **options,
    )


def anthropic_client(
    served: Served, sent: list[httpx2.Request] | None = None, **options: Any
) -> anthropic.Anthropic:
    """An Anthropic client of the proxy, as :func:`openai_client`."""
    hooks = {"request": [sent.append]} if sent is not None else {}
    return anthropic.Anthropic(
        api_key=API_KEY,
        base_url=served.url,
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(event_hooks=hooks),
        **options,
    )


def assert_forwarded(sent: httpx2.Request, recorded: Recorded) -> None:
    """The upstream got every header the SDK sent, unchanged, but those of the hop and the
    proxy's own; and the body's bytes as they were sent."""
    given = {
        k.lower(): v
        for k, v in sent.headers.items()
        if k.lower() not in HOP and not k.lower().startswith("x-synopsis-")
    }
    received = {k: v for k, v in recorded.headers.items() if k not in HOP}
    assert received == given
    assert not [k for k in recorded.headers if k.startswith("x-synopsis-")]
    assert recorded.raw == sent.content


def holds_summary(item: dict[str, Any]) -> bool:
    """Whether a chat or Messages item is (or holds, as a block) a summary synopsis wrote."""
    content = item.get("content")
    if isinstance(content, str):
        return is_summary_text(content)
    blocks = content if isinstance(content, list) else []
    return any(is_summary_text(b.get("text", "")) for b in blocks if isinstance(b, dict))
