"""Top-level conveniences that join the formats, the token counters and the model table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synopsis.formats import FormatName, decode
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["count_tokens"]


def count_tokens(
    messages_or_text: str | Sequence[Any] | Mapping[str, Any],
    model: str | None = None,
    *,
    format: FormatName | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> int:
    """Tokens in a text, or in a history of any supported format (message framing and tool
    definitions included), with the tokenizer of ``model``'s family. Offline."""
    counter = counter_for_model(model)
    if isinstance(messages_or_text, str):
        return counter.count_text(messages_or_text)
    decoded = decode(messages_or_text, format)
    return counter.count_messages(decoded.messages, tools=tools)
