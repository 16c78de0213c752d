"""Helpers shared by the wire converters: input checking with precise errors, and the rules for
when a message's provider extras may be written back (only into the format they came from)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from synopsis.errors import ConversationError
from synopsis.messages import EMPTY, Message, ToolCallPart, thaw

__all__ = [
    "MediaKind",
    "Wire",
    "arguments_mapping",
    "data_url",
    "expect_history",
    "expect_list",
    "expect_mapping",
    "expect_str",
    "hint",
    "media_kind",
    "opaque_text",
    "optional_str",
    "own_extra",
    "parse_data_url",
    "rest",
    "take_str",
]

MediaKind = Literal["image", "audio", "document", "file", "video"]


@dataclass(frozen=True, slots=True)
class Wire:
    """A history in a provider's shape. ``system`` is the top-level system prompt for formats
    that keep it outside the list (Anthropic ``system``, Gemini ``systemInstruction``)."""

    messages: list[dict[str, Any]]
    system: Any = None


def expect_history(items: object) -> Sequence[Any]:
    # a str is a Sequence too, and a dict is the usual mistake (a request body, not its list)
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise ConversationError(
            f"a history must be a list of messages, got {type(items).__name__}",
            rule="history.type",
        )
    return items


def expect_mapping(
    value: object, index: int | None, what: str = "message", rule: str = "message.type"
) -> Mapping[str, Any]:
    if type(value) is dict:
        return value  # what JSON gives, told apart before the ABC's slower check
    if not isinstance(value, Mapping):
        raise ConversationError(
            f"{what} must be a JSON object, got {type(value).__name__}", index=index, rule=rule
        )
    return value


def expect_str(item: Mapping[str, Any], key: str, index: int | None, rule: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        got = "missing" if key not in item else type(value).__name__
        raise ConversationError(f"'{key}' must be a string ({got})", index=index, rule=rule)
    return value


def optional_str(item: Mapping[str, Any], key: str, index: int | None, rule: str) -> str | None:
    if item.get(key) is None:
        return None
    return expect_str(item, key, index, rule)


def take_str(
    item: Mapping[str, Any], key: str, index: int | None, rule: str, taken: list[str]
) -> str | None:
    """An optional string field, noted in ``taken`` when the model holds it. An explicit null is
    not taken, so it stays among the extras and comes back as null."""
    value = optional_str(item, key, index, rule)
    if value is not None:
        taken.append(key)
    return value


def expect_list(value: object, index: int | None, what: str, rule: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConversationError(
            f"{what} must be a list, got {type(value).__name__}", index=index, rule=rule
        )
    return value


def rest(item: Mapping[str, Any], known: Collection[str]) -> dict[str, Any]:
    """The keys of ``item`` that the model does not name, kept for the round trip. ``known``
    is a handful of names: looked up where it is, not made a set first."""
    return {k: v for k, v in item.items() if k not in known}


def own_extra(message: Message, fmt: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` as plain JSON if ``message`` was decoded from ``fmt``, else nothing: fields of
    one provider must not leak into another provider's request."""
    if message.wire.get("format") != fmt or not extra:
        return {}
    out = thaw(extra)
    assert isinstance(out, dict)
    return out


def hint(message: Message, fmt: str, key: str) -> Any:  # noqa: ANN401 - notes are any JSON
    """A converter note recorded when ``message`` was decoded from ``fmt``."""
    if message.wire.get("format") != fmt:
        return None
    return message.wire.get(key, EMPTY.get(key))


def parse_data_url(url: str | None) -> tuple[str, str] | None:
    """``(media_type, base64 data)`` of a ``data:<type>;base64,<data>`` URL, else None."""
    if not url or not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")] or "application/octet-stream", data


def data_url(media_type: str | None, data: str) -> str:
    """``data`` as a data URL; data that already is one is kept as it is."""
    if data.startswith("data:"):
        return data
    return f"data:{media_type or 'application/octet-stream'};base64,{data}"


def media_kind(media_type: str | None) -> MediaKind:
    major = (media_type or "").split("/", 1)[0]
    if major in ("image", "audio", "video"):
        return major  # type: ignore[return-value]
    if media_type in ("application/pdf", "text/plain"):
        return "document"
    return "file"


def arguments_mapping(call: ToolCallPart) -> dict[str, Any]:
    """Arguments as the JSON object Anthropic and Gemini require. OpenAI's argument text may
    not parse, or parse to a non-object; it is then wrapped so nothing the model sent is lost."""
    if isinstance(call.arguments, Mapping):
        out = thaw(call.arguments)
        assert isinstance(out, dict)
        return out
    if not call.arguments.strip():
        return {}
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        return {"arguments": call.arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": call.arguments}


def opaque_text(raw: Mapping[str, Any]) -> str:
    """Readable text of a block or item kept verbatim, for counting and rendering."""
    for key in ("text", "content", "output", "code", "summary"):
        value = raw.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            texts = [
                v["text"]
                for v in value
                if isinstance(v, Mapping) and isinstance(v.get("text"), str)
            ]
            if texts:
                return "\n".join(texts)
        if isinstance(value, Mapping):
            inner = opaque_text(value)
            if inner:
                return inner
    return ""
