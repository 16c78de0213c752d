"""OpenAI Chat Completions messages (plain dicts) <-> the message model.

Covers the ``developer`` role, content-part lists (text, image_url, input_audio, file,
refusal), ``tool_calls`` (function and custom), the legacy ``function_call`` / ``function``
role, ``name``, and a caller's own message ``id`` (which becomes ``Message.id``). Unknown keys
are kept and written back, so decode then encode gives equal JSON.

The legacy ``function_call`` has no id; it is given ``function:<name>`` (with a suffix when a
real call of that message already uses that id), and the ``function`` message that follows
gets the same one. The message's ``wire`` names that id, so the encoder never mistakes a real
tool call for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from synopsis.errors import ConversationError
from synopsis.formats._common import (
    Wire,
    data_url,
    expect_history,
    expect_list,
    expect_mapping,
    expect_str,
    hint,
    own_extra,
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
    thaw,
)

__all__ = ["FORMAT", "decode", "encode", "encode_message"]

FORMAT = "openai"
_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
_ROLE = {role.value: role for role in Role}
_LEGACY_PREFIX = "function:"
_PLAIN_CALL = {
    kind: ToolCallPart("", "", extra={"type": kind, kind: {}}).extra
    for kind in ("function", "custom")
}
"""The extras of a call with nothing but its id, type, name and arguments (nearly every one):
made read-only once, not for each call."""
_NOTES: dict[tuple[tuple[str, Any], ...], Mapping[str, Any]] = {}
"""The converter's notes on a message, read-only, by their items: a long history has a few
shapes (string content, a list of calls...) repeated on every message."""
_NOTES_KEPT = 256


# ---------------------------------------------------------------- decode


def _decode_block(block: object, index: int) -> Part:
    block = expect_mapping(block, index, "content part")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise ConversationError(
            "content part needs a string 'type'", index=index, rule="message.content"
        )
    if kind == "text":
        return TextPart(
            expect_str(block, "text", index, "message.content"), rest(block, ("type", "text"))
        )
    if kind == "image_url":
        inner = expect_mapping(block.get("image_url"), index, "image_url")
        return MediaPart(
            kind="image",
            url=expect_str(inner, "url", index, "message.content"),
            extra={**rest(block, ("type", "image_url")), "image_url": rest(inner, ("url",))},
        )
    # optional fields the model holds only when they are strings; a null stays in the extras
    # so that it comes back
    taken: list[str] = []
    if kind == "input_audio":
        inner = expect_mapping(block.get("input_audio"), index, "input_audio")
        data = take_str(inner, "data", index, "message.content", taken)
        fmt = take_str(inner, "format", index, "message.content", taken)
        return MediaPart(
            kind="audio",
            data=data,
            media_type=None if fmt is None else f"audio/{fmt}",
            extra={**rest(block, ("type", "input_audio")), "input_audio": rest(inner, taken)},
        )
    if kind == "file":
        inner = expect_mapping(block.get("file"), index, "file")
        data = take_str(inner, "file_data", index, "message.content", taken)
        filename = take_str(inner, "filename", index, "message.content", taken)
        return MediaPart(
            kind="file",
            data=data,
            filename=filename,
            extra={**rest(block, ("type", "file")), "file": rest(inner, taken)},
        )
    text = block.get("refusal") if kind == "refusal" else block.get("text")
    return OpaquePart(kind=kind, raw=block, text=text if isinstance(text, str) else "")


def _decode_content(item: Mapping[str, Any], index: int) -> tuple[tuple[Part, ...], str]:
    """Parts of ``content`` and the shape it had: string, parts, null or absent."""
    if "content" not in item:
        return (), "absent"
    content = item["content"]
    if content is None:
        return (), "null"
    if isinstance(content, str):
        return (TextPart(content),), "string"
    if isinstance(content, list):
        return tuple(_decode_block(b, index) for b in content), "parts"
    raise ConversationError(
        f"'content' must be a string, a list of parts or null, got {type(content).__name__}",
        index=index,
        rule="message.content",
    )


def _legacy_id(name: str, taken: set[str]) -> str:
    """An id for a ``function_call`` that no real call of the same message has."""
    base = candidate = _LEGACY_PREFIX + name
    n = 0
    while candidate in taken:
        n += 1
        candidate = f"{base}#{n}"
    return candidate


def _message_id(item: Mapping[str, Any], known: list[str]) -> str | None:
    """The caller's own id when it is a string (any other value stays among the extras)."""
    value = item.get("id")
    if isinstance(value, str):
        known.append("id")
        return value
    return None


def _decode_call(call: object, index: int, no_args: list[int], position: int) -> ToolCallPart:
    call = expect_mapping(call, index, "tool call")
    call_id = expect_str(call, "id", index, "tool_call.id")
    kind = call.get("type", "function")
    if kind not in ("function", "custom"):
        raise ConversationError(
            f"tool call type {kind!r} is not supported", index=index, rule="tool_call.type"
        )
    body = expect_mapping(call.get(kind), index, f"tool call '{kind}'")
    name = expect_str(body, "name", index, "tool_call.name")
    args_key = "arguments" if kind == "function" else "input"
    if args_key not in body:
        no_args.append(position)  # by position: ids repeat in real histories
    args = body.get(args_key, "")
    if not isinstance(args, str | Mapping):
        raise ConversationError(
            f"tool call {args_key} must be a string", index=index, rule="tool_call.arguments"
        )
    if len(call) == 3 and "type" in call and len(body) == 2 and args_key in body:
        extra: Mapping[str, Any] = _PLAIN_CALL[kind]  # id, type and kind; name and arguments
    else:
        extra = {**rest(call, ("id", kind)), kind: rest(body, ("name", args_key))}
    return ToolCallPart(call_id=call_id, name=name, arguments=args, extra=extra)


def _decode_one(item: object, index: int, legacy: dict[str, str]) -> Message:
    """``legacy`` maps a function name to the id given to the latest ``function_call`` of that
    name, so that the ``function`` message answering it gets the same id."""
    item = expect_mapping(item, index)
    role = item.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise ConversationError(
            f"unknown role {role!r}; expected one of {sorted(_ROLES)}",
            index=index,
            rule="message.role",
        )
    taken: list[str] = []  # a null name stays among the extras, so that it comes back
    name = take_str(item, "name", index, "message.name", taken)
    msg_id = _message_id(item, taken)
    parts, form = _decode_content(item, index)
    wire: dict[str, Any] = {"format": FORMAT, "content": form}

    if role in ("tool", "function"):
        if role == "tool":
            call_id = expect_str(item, "tool_call_id", index, "tool.call_id")
            extra = rest(item, ("role", "content", "tool_call_id", *taken))
        else:
            if name is None:
                raise ConversationError(
                    "a 'function' message needs a 'name'", index=index, rule="function.name"
                )
            call_id = legacy.get(name, _LEGACY_PREFIX + name)
            wire["legacy_id"] = call_id
            extra = rest(item, ("role", "content", *taken))
        content: str | tuple[TextPart | MediaPart, ...]
        if form == "parts":
            bad = [p for p in parts if not isinstance(p, TextPart | MediaPart)]
            if bad:
                raise ConversationError(
                    "tool message content may hold only text and media parts",
                    index=index,
                    rule="message.content",
                )
            content = tuple(p for p in parts if isinstance(p, TextPart | MediaPart))
        else:
            content = parts[0].text if parts and isinstance(parts[0], TextPart) else ""
        result = ToolResultPart(call_id=call_id, content=content, name=name)
        return Message(Role.TOOL, (result,), id=msg_id, name=name, extra=extra, wire=_notes(wire))

    calls: list[ToolCallPart] = []
    known = ["role", "content", *taken]
    if role == "assistant":
        if "tool_calls" in item and item["tool_calls"] is not None:
            raw_calls = expect_list(item["tool_calls"], index, "'tool_calls'", "tool_calls.type")
            no_args: list[int] = []
            calls = [_decode_call(c, index, no_args, i) for i, c in enumerate(raw_calls)]
            if no_args:
                wire["no_args"] = tuple(no_args)
            wire["tool_calls"] = "list"
            if not raw_calls:
                # written back only then: a list emptied later (calls dropped by a repair) is
                # left out, since OpenAI rejects an empty one (rule C4)
                wire["tool_calls_empty"] = True
            known.append("tool_calls")
        if item.get("function_call") is not None:
            fc = expect_mapping(item["function_call"], index, "function_call")
            fname = expect_str(fc, "name", index, "tool_call.name")
            # the legacy form always sent its arguments as JSON text
            fargs = expect_str(fc, "arguments", index, "tool_call.arguments")
            legacy_id = _legacy_id(fname, {c.call_id for c in calls})
            calls.append(
                ToolCallPart(
                    call_id=legacy_id,
                    name=fname,
                    arguments=fargs,
                    extra=rest(fc, ("name", "arguments")),
                )
            )
            legacy[fname] = wire["legacy_id"] = legacy_id
            known.append("function_call")
    return Message(
        _ROLE[role],
        (*parts, *calls),
        id=msg_id,
        name=name,
        extra=rest(item, known) or EMPTY,
        wire=_notes(wire),
    )


def _notes(wire: dict[str, Any]) -> Mapping[str, Any]:
    """``wire`` read-only, the same object for every message with the same notes."""
    key = tuple(wire.items())
    found = _NOTES.get(key)
    if found is None:
        found = MappingProxyType(wire)
        if len(_NOTES) < _NOTES_KEPT:
            _NOTES[key] = found
    return found


def decode(items: Sequence[Any]) -> tuple[Message, ...]:
    """Decode a list of chat-completions message dicts. Raises ``ConversationError`` naming the
    message index and rule for anything that is not a chat-completions message."""
    legacy: dict[str, str] = {}
    return tuple(_decode_one(item, i, legacy) for i, item in enumerate(expect_history(items)))


# ---------------------------------------------------------------- encode


def _encode_block(part: Part, message: Message) -> dict[str, Any]:
    own = message.wire.get("format") == FORMAT
    extra = own_extra(message, FORMAT, getattr(part, "extra", {}))
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text, **extra}
    if isinstance(part, MediaPart):
        if part.kind == "image" and (part.url is not None or part.data is not None):
            url = part.url
            if url is None:
                url = data_url(part.media_type or "image/png", part.data or "")
            inner = {"url": url, **extra.pop("image_url", {})}
            return {"type": "image_url", "image_url": inner, **extra}
        if part.kind == "audio" and (part.data is not None or own):
            fmt = None if own else "wav"
            if part.media_type is not None:
                fmt = part.media_type.split("/", 1)[-1]
            fields = (("data", part.data), ("format", fmt))
            inner = {**extra.pop("input_audio", {})} | {k: v for k, v in fields if v is not None}
            return {"type": "input_audio", "input_audio": inner, **extra}
        if own or (part.kind in ("file", "document") and part.data is not None):
            inner = {**extra.pop("file", {})}
            if part.data is not None:
                inner["file_data"] = part.data if own else data_url(part.media_type, part.data)
            if part.filename is not None:
                inner["filename"] = part.filename
            return {"type": "file", "file": inner, **extra}
        return {"type": "text", "text": part.placeholder}
    if isinstance(part, OpaquePart):
        if message.wire.get("format") == FORMAT:
            return dict(thaw(part.raw))
        return {"type": "text", "text": part.text or f"[{part.kind}]"}
    raise AssertionError(f"not a content part: {type(part).__name__}")  # pragma: no cover


def _encode_content(message: Message, parts: Sequence[Part], form: str | None) -> object:
    """Content in the shape it arrived in, or the plainest shape for new messages."""
    if form == "absent" and not parts:
        return _ABSENT
    if form == "null" and not parts:
        return None
    if form == "string" and len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    plain = (isinstance(p, TextPart) and not own_extra(message, FORMAT, p.extra) for p in parts)
    if form is None and all(plain):
        if not parts:
            return None if message.role is Role.ASSISTANT else ""
        if len(parts) == 1:
            assert isinstance(parts[0], TextPart)
            return parts[0].text
    return [_encode_block(p, message) for p in parts]


_ABSENT: Any = object()


def _with_content(out: dict[str, Any], content: object) -> dict[str, Any]:
    if content is not _ABSENT:
        out["content"] = content
    return out


def _encode_result(
    result: ToolResultPart, message: Message, extra: Mapping[str, Any]
) -> dict[str, Any]:
    form = hint(message, FORMAT, "content")
    content: object
    if isinstance(result.content, str):
        content = None if form == "null" and not result.content else result.content
        if form == "absent" and not result.content:
            content = _ABSENT
    else:
        content = [_encode_block(p, message) for p in result.content]
    if result.call_id == hint(message, FORMAT, "legacy_id"):
        out: dict[str, Any] = {"role": "function", "name": result.name or message.name or ""}
        return {**_with_content(out, content), **extra}
    out = {"role": "tool"}
    _with_content(out, content)
    out["tool_call_id"] = result.call_id
    if message.name is not None and message.role is Role.TOOL:
        out["name"] = message.name
    return {**out, **extra}


def _encode_call(call: ToolCallPart, message: Message, no_args: bool) -> dict[str, Any]:
    extra = own_extra(message, FORMAT, call.extra)
    # the type, not the presence of a "custom" key: an unknown key of that name on a function
    # call is only an extra
    kind = "custom" if extra.get("type") == "custom" else "function"
    args_key = "arguments" if kind == "function" else "input"
    args: Any = call.arguments
    if isinstance(args, Mapping):
        args = thaw(args) if message.wire.get("format") == FORMAT else call.arguments_text
    body = {"name": call.name, args_key: args, **extra.pop(kind, {})}
    if no_args and args == "":
        del body[args_key]
    if not extra and message.wire.get("format") != FORMAT:
        extra = {"type": "function"}
    return {"id": call.call_id, **extra, kind: body}


def encode_message(message: Message) -> list[dict[str, Any]]:
    """One model message as one or more chat-completions messages (results held in a user
    message, as Anthropic and Gemini keep them, become ``tool`` messages first)."""
    extra = own_extra(message, FORMAT, message.extra)
    if message.id is not None and message.wire.get("format") == FORMAT:
        extra = {"id": message.id, **extra}
    form = hint(message, FORMAT, "content")
    results = message.tool_results
    if message.role is Role.TOOL or results:
        out = [
            _encode_result(r, message, extra if message.role is Role.TOOL else {}) for r in results
        ]
        # a user message can carry neither calls nor reasoning in chat completions
        skip = ToolResultPart | ToolCallPart | ReasoningPart
        others = [p for p in message.parts if not isinstance(p, skip)]
        if others and message.role is not Role.TOOL:
            user = {"role": "user", "content": _encode_content(message, others, None)}
            out.append(user | extra)
        return out

    visible = [p for p in message.parts if not isinstance(p, ToolCallPart | ReasoningPart)]
    msg: dict[str, Any] = {"role": message.role.value}
    _with_content(msg, _encode_content(message, visible, form))
    if message.name is not None:
        msg["name"] = message.name
    calls = message.tool_calls
    if message.role is Role.ASSISTANT:
        legacy_id = hint(message, FORMAT, "legacy_id")
        regular = [c for c in calls if c.call_id != legacy_id]
        if regular or hint(message, FORMAT, "tool_calls_empty"):
            absent = hint(message, FORMAT, "no_args") or ()
            msg["tool_calls"] = [
                _encode_call(c, message, i in absent) for i, c in enumerate(regular)
            ]
        for c in calls:
            if c.call_id == legacy_id:
                args = c.arguments if isinstance(c.arguments, str) else c.arguments_text
                msg["function_call"] = {
                    "name": c.name,
                    "arguments": args,
                    **own_extra(message, FORMAT, c.extra),
                }
    return [msg | extra]


def encode(messages: Sequence[Message]) -> Wire:
    out: list[dict[str, Any]] = []
    for m in messages:
        out.extend(encode_message(m))
    return Wire(out)
