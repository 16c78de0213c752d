"""The ``"synopsis"`` format's own JSON: messages as JSON, so the store can keep them like wire
items.

Every field of every part goes out and comes back (``wire`` included), with a ``type`` tag per
part; :func:`message_from_json` of :func:`message_to_json` equals the message.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from synopsis.errors import ConversationError
from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    thaw,
)

__all__ = ["message_from_json", "message_to_json"]

_PARTS: dict[str, type[Part]] = {
    "text": TextPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
    "media": MediaPart,
    "reasoning": ReasoningPart,
    "opaque": OpaquePart,
}
_TAGS = {cls: tag for tag, cls in _PARTS.items()}


def _part(part: Part) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _TAGS[type(part)]}
    for f in fields(part):
        value = getattr(part, f.name)
        if isinstance(value, tuple):  # a tool result's content parts
            value = [_part(p) for p in value]
        out[f.name] = thaw(value)
    return out


def _unpart(data: dict[str, Any]) -> Part:
    data = dict(data)
    tag = data.pop("type", None)
    cls = _PARTS.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise ConversationError("a stored part has an unknown type", rule="store.part")
    if isinstance(data.get("content"), list):
        data["content"] = tuple(_unpart(p) for p in data["content"])
    return cls(**data)


def message_to_json(message: Message) -> str:
    """``message`` as JSON text (non-ASCII kept as is)."""
    body: dict[str, Any] = {
        "role": message.role.value,
        "parts": [_part(p) for p in message.parts],
        "id": message.id,
        "name": message.name,
        "extra": thaw(message.extra),
        "wire": thaw(message.wire),
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _tuples(value: object) -> object:
    """JSON arrays back to the tuples converter notes are written with."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def message_from_json(text: str) -> Message:
    """The message :func:`message_to_json` wrote."""
    body = json.loads(text)
    return Message(
        Role(body["role"]),
        tuple(_unpart(p) for p in body["parts"]),
        id=body["id"],
        name=body["name"],
        extra=body["extra"],
        wire={k: _tuples(v) for k, v in body["wire"].items()},
    )
