"""A token counter whose counts a test can work out by hand."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from synopsis.errors import ConfigurationError
from synopsis.messages import thaw

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from synopsis.messages import Message

__all__ = ["FixedCounter"]


class FixedCounter:
    """A :class:`~synopsis.tokens.TokenCounter` that counts by arithmetic, not by a tokenizer,
    so that where a compaction triggers and what it keeps follow from numbers in the test.

    Args:
        per_message: what every message counts on top of its text, whatever it holds
            (``FixedCounter(per_message=100)`` alone: a history of 40 messages is 4,000).
        chars_per_token: a text counts one token per this many characters, rounded up (the
            text of a message is :attr:`~synopsis.messages.Message.text`: its text, tool calls
            as ``name(arguments)``, tool results). Unset: text counts nothing.

    A whole prompt counts its messages, plus the JSON text of its tool definitions.
    """

    def __init__(self, per_message: int = 0, *, chars_per_token: int | None = None) -> None:
        if isinstance(per_message, bool) or not isinstance(per_message, int) or per_message < 0:
            raise ConfigurationError(f"per_message must be an int >= 0, not {per_message!r}")
        if chars_per_token is not None and (
            isinstance(chars_per_token, bool)
            or not isinstance(chars_per_token, int)
            or chars_per_token < 1
        ):
            raise ConfigurationError(
                f"chars_per_token must be an int >= 1 or None, not {chars_per_token!r}"
            )
        if per_message == 0 and chars_per_token is None:
            raise ConfigurationError("a FixedCounter needs per_message or chars_per_token")
        self.per_message = per_message
        self.chars_per_token = chars_per_token

    def __repr__(self) -> str:
        return (
            f"FixedCounter(per_message={self.per_message}, chars_per_token={self.chars_per_token})"
        )

    def count_text(self, text: str) -> int:
        if self.chars_per_token is None:
            return 0
        return -(-len(text) // self.chars_per_token)

    def count_message(self, message: Message) -> int:
        return self.per_message + self.count_text(message.text)

    def count_messages(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        total = sum(self.count_message(m) for m in messages)
        if tools:
            total += self.count_text(json.dumps(thaw(list(tools))))
        return total
