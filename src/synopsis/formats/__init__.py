"""Wire formats: detect a history's provider shape, decode it into the message model, encode
it back.

Format names: ``"openai"`` (chat completions dicts), ``"responses"`` (Responses input items),
``"anthropic"`` (Messages, with the top-level ``system``), ``"gemini"`` (``contents`` with
``systemInstruction``) and ``"synopsis"`` (already :class:`~synopsis.messages.Message` values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, cast

from synopsis.errors import UnknownFormatError
from synopsis.formats import anthropic, gemini, openai_chat, responses
from synopsis.formats._common import Wire
from synopsis.formats.body import body_items, body_system, wire_items
from synopsis.formats.native import message_from_json, message_to_json
from synopsis.messages import Message, Role, TextPart

__all__ = [
    "FORMATS",
    "PROFILE_OF_FORMAT",
    "Decoded",
    "FormatName",
    "Wire",
    "body_items",
    "body_system",
    "decode",
    "detect",
    "encode",
    "message_from_json",
    "message_to_json",
    "wire_items",
]

FormatName = Literal["openai", "responses", "anthropic", "gemini", "synopsis"]
FORMATS: tuple[FormatName, ...] = ("openai", "responses", "anthropic", "gemini", "synopsis")
PROFILE_OF_FORMAT: Mapping[FormatName, str] = MappingProxyType(
    {
        "openai": "openai",
        "responses": "responses",
        "anthropic": "anthropic",
        "gemini": "gemini",
        "synopsis": "openai",
    }
)
"""The validation profile a history in each format is checked against when no provider is
named (synopsis's own messages are checked as OpenAI chat)."""

_RESPONSES_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "compaction",
        "compaction_trigger",
        "item_reference",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
    }
)
# "input_audio" and "refusal" parts have the same shape in chat completions, so they betray
# nothing
_RESPONSES_PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file"})
_ANTHROPIC_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "document",
        "search_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "container_upload",
    }
)


@dataclass(frozen=True, slots=True)
class Decoded:
    format: FormatName
    messages: tuple[Message, ...]


def _item_format(item: Mapping[str, Any]) -> FormatName | None:
    """The format one list element betrays, or None when it fits several."""
    kind = item.get("type")
    if isinstance(kind, str) and (
        kind in _RESPONSES_TYPES or kind.endswith(("_call", "_call_output"))
    ):
        return "responses"
    if "parts" in item or item.get("role") == "model":
        return "gemini"
    # system and developer messages open Responses inputs too (and Anthropic allows a system
    # message mid-list), so only tool roles are decisive
    role = item.get("role")
    if role in ("tool", "function") or "tool_calls" in item:
        return "openai"
    if "function_call" in item or "tool_call_id" in item:
        return "openai"
    content = item.get("content")
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            btype = block.get("type")
            if not isinstance(btype, str):
                continue
            anthropic = btype in _ANTHROPIC_BLOCKS or btype.endswith("_tool_result")
            if anthropic or (btype in ("image", "document") and "source" in block):
                return "anthropic"
            if btype in _RESPONSES_PART_TYPES:
                return "responses"
            if btype in ("image_url", "file"):
                return "openai"
    return None


def detect(data: object) -> FormatName:
    """Name the format of a history (a list of messages or items, or a request body holding
    one). Plain role/content messages fit both OpenAI and Anthropic; they are called
    ``"openai"``. Raises :class:`UnknownFormatError` when no format fits."""
    if isinstance(data, Mapping):
        if "contents" in data:
            return "gemini"
        if "input" in data and isinstance(data["input"], list | str):
            return "responses"
        if "messages" in data:
            inner = detect(data["messages"])
            if "system" in data and inner == "openai":
                return "anthropic"
            return inner
        raise UnknownFormatError(
            "a JSON object must hold 'messages', 'input' or 'contents'", rule="format.detect"
        )
    if isinstance(data, str | bytes) or not isinstance(data, Sequence):
        raise UnknownFormatError(
            f"a history must be a list of messages, got {type(data).__name__}",
            rule="format.detect",
        )
    seen: FormatName | None = None
    for i, item in enumerate(data):
        if isinstance(item, Message):
            return "synopsis"
        if not isinstance(item, Mapping):
            raise UnknownFormatError(
                f"history entries must be JSON objects, got {type(item).__name__}",
                index=i,
                rule="format.detect",
            )
        found = _item_format(item)
        if found is not None:
            return found
        if "role" in item or "content" in item:
            seen = "openai"
    if seen is None and data:
        raise UnknownFormatError(
            "no entry has a 'role', 'type' or 'parts' of any known format", rule="format.detect"
        )
    return seen or "openai"


def decode(data: object, format: FormatName | None = None, *, system: object = None) -> Decoded:
    """Decode ``data`` (a list, or a request body) into messages. ``system`` is a system
    prompt passed apart from the list (Anthropic's and Gemini's top-level one, or one given
    apart from an OpenAI chat or Responses list): it opens the messages."""
    fmt = format or detect(data)
    items = body_items(data, fmt)
    system = body_system(data, fmt, system)
    if fmt == "openai":
        return Decoded(fmt, (*_apart(system, fmt), *openai_chat.decode(items)))
    if fmt == "responses":
        return Decoded(fmt, (*_apart(system, fmt), *responses.decode(items)))
    if fmt == "anthropic":
        return Decoded(fmt, anthropic.decode(items, system=system))
    if fmt == "gemini":
        return Decoded(fmt, gemini.decode(items, system=system))
    if fmt == "synopsis":
        if isinstance(items, str | bytes) or not isinstance(items, Sequence):
            raise UnknownFormatError("a history must be a list of messages", rule="history.type")
        for i, m in enumerate(items):
            if not isinstance(m, Message):
                raise UnknownFormatError(
                    f"format 'synopsis' takes Message values, got {type(m).__name__}",
                    index=i,
                    rule="message.type",
                )
        return Decoded(fmt, tuple(items))
    raise UnknownFormatError(
        f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", rule="format.name"
    )


def _apart(system: object, fmt: FormatName) -> tuple[Message, ...]:
    """A system prompt given apart from an OpenAI chat or Responses list (``system=``, or a
    Responses body's ``instructions``), as the system message that opens the history: it is
    measured and kept like one, and :func:`separate_system` tells it from the list's own."""
    if system is None:
        return ()
    if isinstance(system, str):
        parts: tuple[TextPart, ...] = (TextPart(system),)
    elif isinstance(system, Sequence) and all(
        isinstance(b, Mapping) and isinstance(b.get("text"), str) for b in system
    ):
        parts = tuple(TextPart(b["text"]) for b in system)  # text blocks, as Anthropic's
    else:
        raise UnknownFormatError(
            f"a system prompt given apart from a {fmt} history must be text or text blocks, "
            f"got {type(system).__name__}",
            rule="system.type",
        )
    return (Message(Role.SYSTEM, parts, wire={"format": fmt, "system": "apart"}),)


def encode(messages: Sequence[Message], format: FormatName) -> Wire:
    """Encode messages into ``format``. For ``"synopsis"`` the messages come back as they are."""
    if format == "openai":
        return openai_chat.encode(messages)
    if format == "responses":
        return responses.encode(messages)
    if format == "anthropic":
        return anthropic.encode(messages)
    if format == "gemini":
        return gemini.encode(messages)
    if format == "synopsis":
        return Wire(cast("list[dict[str, Any]]", list(messages)))
    raise UnknownFormatError(
        f"unknown format {format!r}; expected one of {', '.join(FORMATS)}", rule="format.name"
    )
