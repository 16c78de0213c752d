"""Anthropic Messages (plain dicts, plus the top-level ``system``) <-> the message model.

The top-level ``system`` becomes a leading SYSTEM message; ``encode`` lifts leading SYSTEM and
DEVELOPER messages back into ``Wire.system``. Tool results stay inside the user message that
holds them, as the model allows. Thinking blocks keep their text and signature, redacted
thinking its data; server tool blocks, search results, compaction and unknown blocks are kept
whole. A caller's own string ``id`` on a message becomes ``Message.id``. Decode then encode gives
equal JSON.

Messages from another format are shaped for Anthropic: ``tool`` messages become user messages
of ``tool_result`` blocks, neighbours of the same role are merged (all results of one assistant
turn must sit in the very next message), and reasoning from another provider is dropped, since
its signature cannot be verified here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from synopsis.errors import ConversationError
from synopsis.formats._common import (
    Wire,
    arguments_mapping,
    expect_history,
    expect_mapping,
    expect_str,
    hint,
    opaque_text,
    own_extra,
    parse_data_url,
    rest,
    take_str,
)
from synopsis.messages import (
    EMPTY,
    MediaPart,
    Message,
    OpaquePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_text,
    thaw,
)

__all__ = ["FORMAT", "decode", "encode"]

FORMAT = "anthropic"
_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}
_WIRE_ROLE = {
    Role.USER: "user",
    Role.TOOL: "user",
    Role.ASSISTANT: "assistant",
    Role.SYSTEM: "system",
    Role.DEVELOPER: "system",
}
_RULE = "message.content"


# ---------------------------------------------------------------- decode


def _decode_media(block: Mapping[str, Any], kind: str, index: int | None) -> MediaPart:
    source = expect_mapping(block.get("source"), index, f"{kind} 'source'", _RULE)
    taken: list[str] = []
    media_type = take_str(source, "media_type", index, _RULE, taken)
    data = take_str(source, "data", index, _RULE, taken)
    url = take_str(source, "url", index, _RULE, taken)
    return MediaPart(
        "image" if kind == "image" else "document",
        media_type=media_type,
        data=data,
        url=url,
        extra={**rest(block, ("type", "source")), "source": rest(source, taken)},
    )


def _parts_text(parts: Sequence[Part]) -> str:
    return message_text(Message(Role.USER, tuple(parts)))


def _decode_result(block: Mapping[str, Any], index: int | None) -> ToolResultPart:
    call_id = expect_str(block, "tool_use_id", index, "tool_result.tool_use_id")
    is_error = block.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise ConversationError(
            "'is_error' must be a boolean", index=index, rule="tool_result.is_error"
        )
    # an explicit false (or null) stays among the extras so that it comes back
    known = ["type", "tool_use_id", "content", *(["is_error"] if is_error else [])]
    extra = rest(block, known)
    content = block.get("content")
    if "content" not in block:
        return ToolResultPart(call_id, "", is_error=bool(is_error), extra=extra)
    if isinstance(content, str):
        return ToolResultPart(call_id, content, is_error=bool(is_error), extra=extra)
    if not isinstance(content, list):
        raise ConversationError(
            f"tool_result 'content' must be a string or a list of blocks, got "
            f"{type(content).__name__}",
            index=index,
            rule="tool_result.content",
        )
    parts = [_decode_block(b, index) for b in content]
    media = tuple(p for p in parts if isinstance(p, TextPart | MediaPart))
    if len(media) == len(parts):
        return ToolResultPart(call_id, media, is_error=bool(is_error), extra=extra)
    # search results and tool references have no place in the model's result content: keep
    # the list whole and show its text
    extra["content"] = content
    return ToolResultPart(call_id, _parts_text(parts), is_error=bool(is_error), extra=extra)


def _decode_block(block: object, index: int | None) -> Part:
    block = expect_mapping(block, index, "content block", _RULE)
    kind = block.get("type")
    if not isinstance(kind, str):
        raise ConversationError("content block needs a string 'type'", index=index, rule=_RULE)
    if kind == "text":
        return TextPart(expect_str(block, "text", index, _RULE), rest(block, ("type", "text")))
    if kind in ("image", "document"):
        return _decode_media(block, kind, index)
    if kind == "tool_use":
        call_id = expect_str(block, "id", index, "tool_use.id")
        name = expect_str(block, "name", index, "tool_use.name")
        args = block.get("input")
        if not isinstance(args, Mapping):
            raise ConversationError(
                f"tool_use 'input' must be an object, got {type(args).__name__}",
                index=index,
                rule="tool_use.input",
            )
        extra = rest(block, ("type", "id", "name", "input"))
        return ToolCallPart(call_id=call_id, name=name, arguments=args, extra=extra)
    if kind == "tool_result":
        return _decode_result(block, index)
    if kind == "thinking":
        taken = ["type", "thinking"]
        text = expect_str(block, "thinking", index, "thinking.thinking")
        signature = take_str(block, "signature", index, "thinking.signature", taken)
        return ReasoningPart(text=text, signature=signature, extra=rest(block, taken))
    if kind == "redacted_thinking":
        data = expect_str(block, "data", index, "redacted_thinking.data")
        return ReasoningPart(redacted=True, encrypted=data, extra=rest(block, ("type", "data")))
    # server_tool_use, *_tool_result, search_result, container_upload, compaction, newer types
    return OpaquePart(kind=kind, raw=block, text=opaque_text(block))


def _no_content(blocks: Sequence[Mapping[str, Any]]) -> tuple[int, ...]:
    """Positions of results without content: they differ from one with "" only on the wire, and
    are noted by position since ids repeat in real histories."""
    return tuple(
        i for i, b in enumerate(blocks) if b["type"] == "tool_result" and "content" not in b
    )


def _decode_content(item: Mapping[str, Any], index: int) -> Message:
    role = item.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise ConversationError(
            f"unknown role {role!r}; expected one of {sorted(_ROLES)}",
            index=index,
            rule="message.role",
        )
    content = item.get("content")
    wire: dict[str, Any] = {"format": FORMAT}
    if isinstance(content, str):
        parts: tuple[Part, ...] = (TextPart(content),)
        wire["content"] = "string"
    elif isinstance(content, list):
        parts = tuple(_decode_block(b, index) for b in content)
        wire["content"] = "list"
        if no_content := _no_content(content):
            wire["no_content"] = no_content
    else:
        raise ConversationError(
            f"'content' must be a string or a list of blocks, got {type(content).__name__}",
            index=index,
            rule=_RULE,
        )
    known = ["role", "content"]
    msg_id = item.get("id")
    if isinstance(msg_id, str):
        known.append("id")  # any other value stays among the extras
    return Message(
        _ROLES[role],
        parts,
        id=msg_id if isinstance(msg_id, str) else None,
        extra=rest(item, known),
        wire=wire,
    )


def _decode_system(system: object) -> Message | None:
    if system is None:
        return None
    if isinstance(system, str):
        parts: tuple[Part, ...] = (TextPart(system),)
        form = "string"
    elif isinstance(system, list):
        parts, form = tuple(_decode_block(b, None) for b in system), "list"
    else:
        raise ConversationError(
            f"'system' must be a string or a list of text blocks, got {type(system).__name__}",
            rule="system.type",
        )
    wire: dict[str, Any] = {"format": FORMAT, "system": form}
    if isinstance(system, list) and (no_content := _no_content(system)):
        wire["no_content"] = no_content
    return Message(Role.SYSTEM, parts, wire=wire)


def decode(items: Sequence[Any], *, system: object = None) -> tuple[Message, ...]:
    """Decode Anthropic ``messages`` (and the request's top-level ``system``, which becomes a
    leading SYSTEM message). Raises ``ConversationError`` naming the message index and rule."""
    history = expect_history(items)
    lead = _decode_system(system)
    decoded = tuple(_decode_content(expect_mapping(item, i), i) for i, item in enumerate(history))
    return (lead, *decoded) if lead is not None else decoded


# ---------------------------------------------------------------- encode


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _encode_media(part: MediaPart, extra: dict[str, Any]) -> dict[str, Any]:
    block_type = "image" if part.kind == "image" else "document"
    kept = extra.pop("source", None)
    if kept is not None:
        fields = (("media_type", part.media_type), ("data", part.data), ("url", part.url))
        source = kept | {k: v for k, v in fields if v is not None}
        return {"type": block_type, **extra, "source": source}
    if part.kind not in ("image", "document", "file"):
        return _text_block(part.placeholder)
    parsed = parse_data_url(part.data) or parse_data_url(part.url)
    default = "image/png" if block_type == "image" else "application/pdf"
    if parsed:
        plain = {"type": "base64", "media_type": parsed[0], "data": parsed[1]}
    elif part.data is not None:
        plain = {"type": "base64", "media_type": part.media_type or default, "data": part.data}
    elif part.url is not None and part.url.startswith(("https://", "http://")):
        plain = {"type": "url", "url": part.url}
    else:
        return _text_block(part.placeholder)
    media_type = plain.get("media_type", part.media_type)
    if part.kind == "file" and media_type != "application/pdf":
        return _text_block(part.placeholder)  # a document block takes PDFs (or plain text)
    return {"type": block_type, "source": plain}


def _encode_result(
    part: ToolResultPart, message: Message, extra: dict[str, Any], absent: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id}
    kept = extra.pop("content", None)
    if kept is not None and part.content == _parts_text([_decode_block(b, None) for b in kept]):
        out["content"] = kept
    elif isinstance(part.content, str):
        own = message.wire.get("format") == FORMAT
        if part.content or (own and not absent):
            out["content"] = part.content
    else:
        blocks = [_encode_block(p, message) for p in part.content]
        out["content"] = [b for b in blocks if b is not None]
    out |= extra
    if part.is_error:
        out["is_error"] = True
    return out


def _encode_block(part: Part, message: Message, absent: bool = False) -> dict[str, Any] | None:
    """One block; None for what another provider's message cannot carry here (its reasoning,
    empty text, which Anthropic rejects)."""
    own = message.wire.get("format") == FORMAT
    extra = own_extra(message, FORMAT, getattr(part, "extra", EMPTY))
    if isinstance(part, TextPart):
        return {**_text_block(part.text), **extra} if part.text or own else None
    if isinstance(part, MediaPart):
        return _encode_media(part, extra)
    if isinstance(part, ToolCallPart):
        call = {"type": "tool_use", "id": part.call_id, "name": part.name}
        return {**call, "input": arguments_mapping(part), **extra}
    if isinstance(part, ToolResultPart):
        return _encode_result(part, message, extra, absent)
    if isinstance(part, ReasoningPart):
        if not own:
            return None
        if part.redacted:
            return {"type": "redacted_thinking", "data": part.encrypted or "", **extra}
        signed = {"signature": part.signature} if part.signature is not None else {}
        return {"type": "thinking", "thinking": part.text, **signed, **extra}
    if own:
        return dict(thaw(part.raw))
    return _text_block(part.text or f"[{part.kind}]")


def _lifts(message: Message) -> bool:
    """A leading SYSTEM/DEVELOPER message goes to ``system`` unless it was decoded from a
    system message inside Anthropic's ``messages`` list."""
    if message.role not in (Role.SYSTEM, Role.DEVELOPER):
        return False
    return message.wire.get("format") != FORMAT or hint(message, FORMAT, "system") is not None


def _encode_system(messages: Sequence[Message]) -> Any:  # noqa: ANN401 - str or block list
    if not messages:
        return None
    first = messages[0]
    if (
        len(messages) == 1
        and hint(first, FORMAT, "system") == "string"
        and len(first.parts) == 1
        and isinstance(first.parts[0], TextPart)
    ):
        return first.parts[0].text
    blocks: list[dict[str, Any]] = []
    foreign = True
    for m in messages:
        if m.wire.get("format") == FORMAT:
            foreign = False
            absent = hint(m, FORMAT, "no_content") or ()
            found = (_encode_block(p, m, i in absent) for i, p in enumerate(m.parts))
            blocks.extend(b for b in found if b is not None)
            continue
        texts = (_parts_text([p]) for p in m.parts if not isinstance(p, ReasoningPart))
        blocks.extend(_text_block(t) for t in texts if t)
    if foreign and len(blocks) <= 1:
        return blocks[0]["text"] if blocks else None
    return blocks


def _own_message(message: Message) -> dict[str, Any]:
    parts = message.parts
    only = parts[0] if len(parts) == 1 else None
    content: str | list[dict[str, Any]]
    if (
        hint(message, FORMAT, "content") == "string"
        and isinstance(only, TextPart)
        and not only.extra
    ):
        content = only.text
    else:
        absent = hint(message, FORMAT, "no_content") or ()
        blocks = (_encode_block(p, message, i in absent) for i, p in enumerate(parts))
        content = [b for b in blocks if b is not None]
    out = {"role": _WIRE_ROLE[message.role], "content": content}
    if message.id is not None:
        out["id"] = message.id
    return out | own_extra(message, FORMAT, message.extra)


def _finish(body: dict[str, Any]) -> dict[str, Any]:
    """The plainest shape for a merged message from another format: results first (Anthropic
    wants them ahead of any text), a lone text block as a string."""
    blocks: list[dict[str, Any]] = body["content"]
    if body["role"] == "user":
        blocks.sort(key=lambda b: b.get("type") != "tool_result")
    if len(blocks) == 1 and blocks[0].keys() == {"type", "text"}:
        return {**body, "content": blocks[0]["text"]}
    return body


def encode(messages: Sequence[Message]) -> Wire:
    """Anthropic ``messages`` plus ``system`` (None when there is no leading system text)."""
    lead = 0
    while lead < len(messages) and _lifts(messages[lead]):
        lead += 1
    out: list[dict[str, Any]] = []
    foreign: list[bool] = []
    for message in messages[lead:]:
        if message.wire.get("format") == FORMAT:
            out.append(_own_message(message))
            foreign.append(False)
            continue
        blocks = [b for p in message.parts if (b := _encode_block(p, message)) is not None]
        if not blocks:
            continue  # nothing Anthropic accepts is left (empty text, foreign reasoning)
        role = _WIRE_ROLE[message.role]
        if foreign and foreign[-1] and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
            foreign.append(True)
    finished = [_finish(m) if f else m for m, f in zip(out, foreign, strict=True)]
    return Wire(finished, _encode_system(messages[:lead]))
