"""Argument checks and the default clock shared by the summarizers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from synopsis.errors import ConfigurationError, ConversationError
from synopsis.messages import Message

__all__ = ["history", "utc_now", "whole_number"]


def history(messages: object) -> Sequence[Message]:
    """``messages`` when it is a sequence of :class:`Message`; else a ``ConversationError``
    naming the first thing that is not one."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ConversationError("a history must be a sequence of messages", rule="history.type")
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            raise ConversationError(
                f"expected a Message, got {type(message).__name__}",
                index=index,
                rule="history.type",
            )
    return messages


def whole_number(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


def utc_now() -> datetime:
    return datetime.now(UTC)
