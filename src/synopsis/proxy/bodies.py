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
    the body key of the history and of a system prompt kept apart from it."""

    path: str
    format: FormatName
    api: Api
    items_key: str
    system_key: str | None

    def history(self, body: dict[str, Any]) -> list[Any] | None:
        """The history to compact, or None when the body holds none the proxy can shorten:
        a Responses request that continues a stored response (the provider keeps that
        history) or gives its input as one string."""
        if self.format == "responses" and body.get("previous_response_id") is not None:
            return None
        items = body.get(self.items_key)
        return items if isinstance(items, list) else None

    def system(self, body: dict[str, Any]) -> object:
        return body.get(self.system_key) if self.system_key is not None else None

    def rebuilt(self, body: dict[str, Any], result: CompactionResult) -> dict[str, Any]:
        """``body`` with the compacted history (and system prompt) in place; the other fields
        as the client sent them."""
        out = dict(body)
        out[self.items_key] = result.messages
        # Only Anthropic's system prompt comes back apart from the compacted history; the
        # Responses instructions are measured with it but not part of it, and go unchanged.
        if self.format == "anthropic" and self.system_key is not None and self.system_key in body:
            out[self.system_key] = result.system
        return out


ROUTES: tuple[Route, ...] = (
    Route("/v1/chat/completions", "openai", "openai", "messages", None),
    Route("/v1/responses", "responses", "openai", "input", "instructions"),
    Route("/v1/messages", "anthropic", "anthropic", "messages", "system"),
    Route("/v1/messages/count_tokens", "anthropic", "anthropic", "messages", "system"),
)
