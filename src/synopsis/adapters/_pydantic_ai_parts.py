"""How the pydantic-ai adapter reads a pydantic-ai message as one synopsis message, and makes
one back: every part counted (thinking with its signature, files and images as media, native
tool parts and provider compaction items as opaque blocks), and a shortened message rebuilt
from its original so that what was not shortened stays the run's own."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic_ai import messages as pm

from synopsis import (
    MediaPart,
    Message,
    OpaquePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["from_message", "shortened_part", "to_message"]

_SYSTEM = {"pydantic_ai": "system-prompt"}
"""Marks the text of a ``SystemPromptPart``: Anthropic sends it apart, but it is counted."""
_FEEDBACK = {"pydantic_ai": "retry-feedback"}
_MEDIA_KINDS: dict[str, Any] = {
    "image": "image",
    "audio": "audio",
    "video": "video",
    "application": "document",
    "text": "document",
}


# -- pydantic-ai message -> synopsis Message ---------------------------------------------


def _media(item: object) -> MediaPart | None:
    if isinstance(item, pm.BinaryContent):
        kind = _MEDIA_KINDS.get(item.media_type.split("/", 1)[0], "file")
        return MediaPart(
            kind, media_type=item.media_type, data=item.base64, filename=item.identifier
        )
    if isinstance(item, pm.FileUrl):
        kind = _MEDIA_KINDS.get(item.media_type.split("/", 1)[0], "file")
        return MediaPart(kind, media_type=item.media_type, url=item.url)
    if isinstance(item, pm.UploadedFile):
        return MediaPart("file", media_type=item.media_type, filename=item.file_id)
    return None


def _user_content(content: str | Sequence[Any]) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)]
    out: list[Part] = []
    for item in content:
        if isinstance(item, str):
            out.append(TextPart(item))
        elif isinstance(item, pm.TextContent):
            out.append(TextPart(item.content))
        elif (media := _media(item)) is not None:
            out.append(media)
        # A CachePoint is a marker for the provider's cache, not content: nothing to count.
    return out


def _opaque(part: Any, text: str) -> OpaquePart:  # noqa: ANN401 - any pydantic-ai part
    kind = str(getattr(part, "part_kind", type(part).__name__))
    return OpaquePart(kind, {"part_kind": kind}, text)


def _request_part(part: Any) -> list[Part]:  # noqa: ANN401 - any request part
    if isinstance(part, pm.UserPromptPart):
        return _user_content(part.content)
    if isinstance(part, pm.SystemPromptPart):
        return [TextPart(part.content, extra=_SYSTEM)]
    if isinstance(part, pm.BaseToolReturnPart):
        return [
            ToolResultPart(
                part.tool_call_id,
                part.model_response_str(),
                is_error=part.outcome in pm.ERROR_OUTCOMES,
                name=part.tool_name,
            )
        ]
    if isinstance(part, pm.RetryPromptPart):  # a legacy part, as histories saved by v1 load
        if part.tool_name is not None:
            return [ToolResultPart(part.tool_call_id, part.model_response(), True, part.tool_name)]
        return [TextPart(part.model_response(), extra=_FEEDBACK)]
    if isinstance(part, pm.RetryFeedbackPart):
        return [TextPart(part.model_response(), extra=_FEEDBACK)]
    if isinstance(part, pm.SpeechPart):
        return [_opaque(part, part.transcript or "")]
    # The deltas and instruction parts the framework records: rendered by the model classes,
    # short, and kept through the original object.
    return [_opaque(part, str(getattr(part, "content", "") or ""))]


def _response_part(part: Any) -> Part:  # noqa: ANN401 - any response part
    if isinstance(part, pm.TextPart):
        return TextPart(part.content)
    if isinstance(part, pm.ToolCallPart):
        return ToolCallPart(part.tool_call_id, part.tool_name, part.args_as_json_str())
    if isinstance(part, pm.ThinkingPart):
        return ReasoningPart(part.content, signature=part.signature)
    if isinstance(part, pm.FilePart):
        media = _media(part.content)
        assert media is not None  # a FilePart holds BinaryContent
        return media
    if isinstance(part, pm.NativeToolCallPart):
        return _opaque(part, f"{part.tool_name}({part.args_as_json_str()})")
    if isinstance(part, pm.NativeToolReturnPart):
        return _opaque(part, part.model_response_str())
    if isinstance(part, pm.SpeechPart):
        return _opaque(part, part.transcript or "")
    return _opaque(part, str(getattr(part, "content", "") or ""))


def to_message(message: pm.ModelMessage) -> Message:
    """One pydantic-ai message as one synopsis message: a request is a user turn, a response
    an assistant turn, part for part."""
    if isinstance(message, pm.ModelResponse):
        return Message(Role.ASSISTANT, tuple(_response_part(p) for p in message.parts))
    parts: list[Part] = []
    for part in message.parts:
        parts.extend(_request_part(part))
    return Message(Role.USER, tuple(parts))


# -- synopsis Message -> pydantic-ai message ---------------------------------------------


def _new_request_part(part: Part) -> pm.ModelRequestPart:
    if isinstance(part, ToolResultPart):
        return pm.ToolReturnPart(part.name or "", part.text, part.call_id)
    text = part.text if isinstance(part, TextPart | OpaquePart | ReasoningPart) else ""
    if isinstance(part, TextPart) and part.extra.get("pydantic_ai") == _SYSTEM["pydantic_ai"]:
        return pm.SystemPromptPart(text)
    if isinstance(part, MediaPart):
        text = part.placeholder
    elif isinstance(part, ToolCallPart):
        text = f"{part.name}({part.arguments_text})"
    return pm.UserPromptPart(text)


def _new_response_part(part: Part) -> pm.ModelResponsePart:
    if isinstance(part, ToolCallPart):
        return pm.ToolCallPart(part.name, part.arguments_text, part.call_id)
    if isinstance(part, ReasoningPart):
        return pm.ThinkingPart(part.text, signature=part.signature)
    if isinstance(part, MediaPart):
        return pm.TextPart(part.placeholder)
    if isinstance(part, ToolResultPart):
        return pm.TextPart(part.text)
    return pm.TextPart(part.text)


def from_message(message: Message) -> pm.ModelMessage:
    """A new pydantic-ai message for one synopsis made: a summary is a ``ModelRequest`` with
    one ``UserPromptPart``."""
    if message.role is Role.ASSISTANT:
        return pm.ModelResponse(parts=[_new_response_part(p) for p in message.parts])
    return pm.ModelRequest(parts=[_new_request_part(p) for p in message.parts])


def shortened_part(original: Any, old: Part, new: Part, response: bool) -> Any:  # noqa: ANN401 - a part
    """``original`` (a pydantic-ai part) with what the reductions changed from ``old`` to
    ``new``; the part itself when they left it alone."""
    if new == old:
        return original
    if isinstance(new, ToolResultPart) and isinstance(original, pm.BaseToolReturnPart):
        return replace(original, content=new.text)
    if isinstance(new, ToolCallPart) and isinstance(original, pm.BaseToolCallPart):
        return replace(original, args=new.arguments_text)
    # The reductions change no other part; should one, it is made anew.
    return _new_response_part(new) if response else _new_request_part(new)
