"""Where each compacting route's request body keeps the history, its system prompt and tools,
and how the compacted history is written back into it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from synopsis.compaction import CompactionResult
    from synopsis.formats import FormatName
    from synopsis.proxy.errors import Api

__all__ = ["ROUTES", "Route"]


@dataclass(frozen=True, slots=True)
class Route:
    """A compacting route: its path, the history's format, whose error shape it answers in,
    and the body key of the history."""

    path: str
    format: FormatName
    api: Api
    items_key: str

    def history(self, body: dict[str, Any]) -> list[Any] | None:
        """The history to compact, or None when the body holds none the proxy can shorten:
        a Responses request that continues a stored response (the provider keeps that
        history) or gives its input as one string."""
        if self.format == "responses" and body.get("previous_response_id") is not None:
            return None
        items = body.get(self.items_key)
        return items if isinstance(items, list) else None

    def system(self, body: dict[str, Any]) -> object:
        """The system prompt the body keeps apart from its history: Anthropic's ``system``,
        the Responses ``instructions``. It is measured and kept with the history."""
        key = _SYSTEM.get(self.format)
        return body.get(key) if key is not None else None

    def rebuilt(self, body: dict[str, Any], result: CompactionResult) -> dict[str, Any]:
        """``body`` with the compacted history (and Anthropic's system prompt, whose blocks a
        compaction may change) in place; the other fields, the Responses ``instructions``
        among them, as the client sent them."""
        out = dict(body)
        out[self.items_key] = result.messages
        if self.format == "anthropic" and "system" in body:
            out["system"] = result.system
        return out


_SYSTEM = {"anthropic": "system", "responses": "instructions"}


ROUTES: tuple[Route, ...] = (
    Route("/v1/chat/completions", "openai", "openai", "messages"),
    Route("/v1/responses", "responses", "openai", "input"),
    Route("/v1/messages", "anthropic", "anthropic", "messages"),
    Route("/v1/messages/count_tokens", "anthropic", "anthropic", "messages"),
)
