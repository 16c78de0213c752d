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
        history) or gives its input as one string. Responses ``instructions`` open the
        history as a system message, so that they are measured and kept like any system
        prompt; :meth:`rebuilt` takes that message out again."""
        if self.format == "responses" and body.get("previous_response_id") is not None:
            return None
        items = body.get(self.items_key)
        if not isinstance(items, list):
            return None
        lead = _instructions(self, body)
        return items if lead is None else [lead, *items]

    def system(self, body: dict[str, Any]) -> object:
        """The system prompt synopsis is given apart from the history (Anthropic's)."""
        return body.get("system") if self.format == "anthropic" else None

    def rebuilt(self, body: dict[str, Any], result: CompactionResult) -> dict[str, Any]:
        """``body`` with the compacted history (and system prompt) in place; the other fields
        as the client sent them (Responses ``instructions`` among them)."""
        out = dict(body)
        items = result.messages
        lead = _instructions(self, body)
        if lead is not None and items and items[0] == lead:
            items = items[1:]
        out[self.items_key] = items
        if self.format == "anthropic" and "system" in body:
            out["system"] = result.system
        return out


def _instructions(route: Route, body: dict[str, Any]) -> dict[str, Any] | None:
    """The system message Responses ``instructions`` stand for, if the body has them."""
    text = body.get("instructions") if route.format == "responses" else None
    return {"role": "system", "content": text} if isinstance(text, str) and text else None


ROUTES: tuple[Route, ...] = (
    Route("/v1/chat/completions", "openai", "openai", "messages"),
    Route("/v1/responses", "responses", "openai", "input"),
    Route("/v1/messages", "anthropic", "anthropic", "messages"),
    Route("/v1/messages/count_tokens", "anthropic", "anthropic", "messages"),
)
