"""Helpers shared by the wire converters: input checking with precise errors, and the rules for
when a message's provider extras may be written back (only into the format they came from)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from synopsis.errors import ConversationError
from synopsis.messages import EMPTY, Message, thaw

__all__ = [
    "Wire",
    "expect_list",
    "expect_mapping",
    "expect_str",
    "hint",
    "optional_str",
    "own_extra",
    "rest",
]


@dataclass(frozen=True, slots=True)
class Wire:
    """A history in a provider's shape. ``system`` is the top-level system prompt for formats
    that keep it outside the list (Anthropic ``system``, Gemini ``systemInstruction``)."""

    messages: list[dict[str, Any]]
    system: Any = None


def expect_mapping(value: Any, index: int, what: str = "message") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConversationError(
            f"{what} must be a JSON object, got {type(value).__name__}",
            index=index,
            rule="message.type",
        )
    return value


def expect_str(item: Mapping[str, Any], key: str, index: int, rule: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        got = "missing" if key not in item else type(value).__name__
        raise ConversationError(f"'{key}' must be a string ({got})", index=index, rule=rule)
    return value


def optional_str(item: Mapping[str, Any], key: str, index: int, rule: str) -> str | None:
    if item.get(key) is None:
        return None
    return expect_str(item, key, index, rule)


def expect_list(value: Any, index: int, what: str, rule: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConversationError(
            f"{what} must be a list, got {type(value).__name__}", index=index, rule=rule
        )
    return value


def rest(item: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    """The keys of ``item`` that the model does not name, kept for the round trip."""
    skip = set(known)
    return {k: v for k, v in item.items() if k not in skip}


def own_extra(message: Message, fmt: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` as plain JSON if ``message`` was decoded from ``fmt``, else nothing: fields of
    one provider must not leak into another provider's request."""
    if message.wire.get("format") != fmt or not extra:
        return {}
    out = thaw(extra)
    assert isinstance(out, dict)
    return out


def hint(message: Message, fmt: str, key: str) -> Any:
    """A converter note recorded when ``message`` was decoded from ``fmt``."""
    if message.wire.get("format") != fmt:
        return None
    return message.wire.get(key, EMPTY.get(key))
