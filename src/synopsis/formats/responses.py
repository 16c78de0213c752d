"""OpenAI Responses API input items (plain dicts) <-> the message model.

One item is one message, never grouped: a ``function_call`` is an assistant message holding one
tool call, a ``reasoning`` item an assistant message holding one reasoning part, and so on. The
item's ``id`` becomes ``Message.id``. Tool items other than functions (``custom_tool_call``,
``local_shell_call``, ``shell_call``, ``computer_call`` ...) become tool calls and results when
they carry a ``call_id`` (a ``local_shell_call_output`` names its call by its ``id``); provider
items the model cannot interpret (``compaction``, ``mcp_call``, ``web_search_call``,
``item_reference``, unknown types) are kept whole as opaque parts. Decode then encode gives the
same JSON, keys in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
    opaque_text,
    own_extra,
    parse_data_url,
    rest,
    take_str,
)
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

__all__ = ["FORMAT", "decode", "encode", "encode_message"]

FORMAT = "responses"
_MESSAGE_ROLES = frozenset({"user", "system", "developer", "assistant"})
_CONTENT_RULE = "message.content"
_ROLE_NAMES = frozenset(r.value for r in Role)
_Content = TextPart | MediaPart | OpaquePart  # what a message item's content holds
_SEP = ","
"""Joins an item's keys in the converter's note of their order."""


def _keys(item: Mapping[str, Any], lead: Sequence[str]) -> dict[str, str]:
    """The note of the item's keys in their order, when the encoder would not write them so
    (clients and SDKs order them each their own way): the encoder writes ``lead`` first, then
    the rest in their order. No note either when a key is not a string or holds the
    separator: the encoder's own order is then used."""
    names = list(item)
    if names[: len(lead)] == lead or not all(type(k) is str and _SEP not in k for k in names):
        return {}
    return {"keys": _SEP.join(names)}


def _present(item: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    return [k for k in names if k in item]


def _ordered(out: dict[str, Any], message: Message) -> dict[str, Any]:
    """``out`` with its keys in the order the item had; keys it did not have come last."""
    keys = message.wire.get("keys")  # only an item of this format is encoded so
    if keys is None:
        return out
    ordered = {k: out[k] for k in keys.split(_SEP) if k in out}
    ordered.update(out)
    return ordered


def _text_type(role: Role) -> str:
    return "output_text" if role is Role.ASSISTANT else "input_text"


def _item_id(item: Mapping[str, Any], known: list[str]) -> str | None:
    """The item's id when it is a string (a null id stays among the extras)."""
    value = item.get("id")
    if isinstance(value, str):
        known.append("id")
        return value
    return None


# ---------------------------------------------------------------- decode


def _decode_block(block: object, index: int, text_type: str) -> Part:
    block = expect_mapping(block, index, "content part", _CONTENT_RULE)
    kind = block.get("type")
    if not isinstance(kind, str):
        raise ConversationError(
            "content part needs a string 'type'", index=index, rule=_CONTENT_RULE
        )
    taken = ["type"]
    if kind in ("input_text", "output_text"):
        extra = rest(block, ("type", "text"))
        if kind != text_type:
            extra["type"] = kind
        return TextPart(expect_str(block, "text", index, _CONTENT_RULE), extra)
    if kind == "input_image":
        url = take_str(block, "image_url", index, _CONTENT_RULE, taken)
        parsed = parse_data_url(url)
        return MediaPart(
            "image", media_type=parsed[0] if parsed else None, url=url, extra=rest(block, taken)
        )
    if kind == "input_file":
        data = take_str(block, "file_data", index, _CONTENT_RULE, taken)
        url = take_str(block, "file_url", index, _CONTENT_RULE, taken)
        name = take_str(block, "filename", index, _CONTENT_RULE, taken)
        parsed = parse_data_url(data)
        return MediaPart(
            "file",
            media_type=parsed[0] if parsed else None,
            url=url,
            data=data,
            filename=name,
            extra=rest(block, taken),
        )
    if kind == "input_audio":
        # the SDK nests data/format under "input_audio"; older clients sent them flat
        nested = block.get("input_audio")
        if nested is not None and not isinstance(nested, Mapping):
            raise ConversationError(
                f"'input_audio' must be an object, got {type(nested).__name__}",
                index=index,
                rule=_CONTENT_RULE,
            )
        source = nested if isinstance(nested, Mapping) else block
        inner: list[str] = []
        data = take_str(source, "data", index, _CONTENT_RULE, inner)
        fmt = take_str(source, "format", index, _CONTENT_RULE, inner)
        if isinstance(nested, Mapping):
            extra = {**rest(block, [*taken, "input_audio"]), "input_audio": rest(nested, inner)}
        else:
            extra = rest(block, taken + inner)
        media_type = None if fmt is None else f"audio/{fmt}"
        return MediaPart("audio", media_type=media_type, data=data, extra=extra)
    text = block.get("refusal") if kind == "refusal" else block.get("text")
    return OpaquePart(kind=kind, raw=block, text=text if isinstance(text, str) else "")


def _decode_message(item: Mapping[str, Any], index: int, typed: bool) -> Message:
    role = item.get("role")
    if not isinstance(role, str) or role not in _MESSAGE_ROLES:
        raise ConversationError(
            f"unknown role {role!r}; expected one of {sorted(_MESSAGE_ROLES)}",
            index=index,
            rule="message.role",
        )
    known = ["type", "role", "content"]
    msg_id = _item_id(item, known)
    content = item.get("content")
    parts: tuple[Part, ...]
    if isinstance(content, str):
        parts, form = (TextPart(content),), "string"
    elif isinstance(content, list):
        text_type = _text_type(Role(role))
        parts, form = tuple(_decode_block(b, index, text_type) for b in content), "parts"
    else:
        raise ConversationError(
            f"'content' must be a string or a list of parts, got {type(content).__name__}",
            index=index,
            rule=_CONTENT_RULE,
        )
    lead = [*(["type"] if typed else []), *(["id"] if msg_id is not None else []), "role"]
    keys = _keys(item, [*lead, "content"])
    wire = {"format": FORMAT, "item": "message", "typed": typed, "content": form, **keys}
    return Message(Role(role), parts, id=msg_id, extra=rest(item, known), wire=wire)


def _render(output: object) -> str:
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _decode_output(
    item: Mapping[str, Any], index: int, strict: bool, call_key: str = "call_id"
) -> tuple[ToolResultPart, str]:
    """The result part of an output item and the shape its ``output`` had; ``call_key`` names
    the field holding the call's id. Outputs that are not text or content parts (a computer
    screenshot, shell stdout records) are rendered as JSON text and kept whole in the part's
    extras; ``strict`` rejects them instead."""
    kind = item["type"]
    call_id = expect_str(item, call_key, index, f"{kind}.{call_key}")
    if "output" not in item and not strict:
        return ToolResultPart(call_id), "absent"
    output = item.get("output")
    if isinstance(output, str):
        return ToolResultPart(call_id, output), "string"
    if isinstance(output, list):
        blocks = [b for b in output if isinstance(b, Mapping) and isinstance(b.get("type"), str)]
        if len(blocks) == len(output) or strict:
            parts = [_decode_block(b, index, "input_text") for b in output]
            media = [p for p in parts if isinstance(p, TextPart | MediaPart)]
            if len(media) == len(parts):
                return ToolResultPart(call_id, tuple(media)), "parts"
    if strict:
        raise ConversationError(
            f"'output' must be a string or a list of text, image and file parts, got "
            f"{type(output).__name__}",
            index=index,
            rule=f"{kind}.output",
        )
    return ToolResultPart(call_id, _render(output), extra={"output": output}), "raw"


def _decode_reasoning(item: Mapping[str, Any], index: int) -> Message:
    blocks: list[Mapping[str, Any]] = []
    wire: dict[str, Any] = {"format": FORMAT, "item": "reasoning"}
    if "summary" not in item:
        # the API requires it (rule R6), but the converter only records its absence: the
        # validator reports it, and the round trip stays exact
        wire["missing_summary"] = True
    for key in ("summary", "content"):
        # a null content is allowed (and kept among the extras); a null summary is not
        if key in item and (key == "summary" or item[key] is not None):
            rule = f"reasoning.{key}"
            found = expect_list(item.get(key), index, f"reasoning '{key}'", rule)
            blocks += (expect_mapping(b, index, "reasoning part", rule) for b in found)
    known = ["type", "summary", "content"]
    msg_id = _item_id(item, known)
    encrypted = take_str(item, "encrypted_content", index, "reasoning.encrypted_content", known)
    text = "\n".join(b["text"] for b in blocks if isinstance(b.get("text"), str))
    kept = {k: item[k] for k in ("summary", "content") if k in item}
    lead = ["type", *(["id"] if msg_id is not None else []), *kept]
    wire |= _keys(item, [*lead, *(["encrypted_content"] if encrypted is not None else [])])
    part = ReasoningPart(text=text, encrypted=encrypted, extra=kept)
    return Message(Role.ASSISTANT, (part,), id=msg_id, extra=rest(item, known), wire=wire)


def _decode_call(item: Mapping[str, Any], index: int, kind: str) -> Message:
    known = ["type", "call_id"]
    msg_id = _item_id(item, known)
    call_id = expect_str(item, "call_id", index, f"{kind}.call_id")
    wire: dict[str, Any] = {"format": FORMAT, "item": kind}
    if kind == "function_call" or "name" in item:
        name = expect_str(item, "name", index, f"{kind}.name")
        known.append("name")
    else:
        name, wire["unnamed"] = kind, True
    args: str | Mapping[str, Any]
    if kind == "function_call" or "arguments" in item:
        raw = item.get("arguments")
        if not isinstance(raw, str | Mapping):
            raise ConversationError(
                f"'arguments' must be a string, got {type(raw).__name__}",
                index=index,
                rule=f"{kind}.arguments",
            )
        args, wire["args"] = raw, "arguments"
    elif isinstance(item.get("input"), str):
        args, wire["args"] = item["input"], "input"
    else:
        # shell, computer and patch calls carry their request as item fields (action,
        # operation ...); those fields are the arguments
        args, wire["args"] = rest(item, [*known, "id", "status"]), None
        known.extend(args)
    if wire["args"]:
        known.append(wire["args"])
    lead = ["type", *(["id"] if msg_id is not None else []), "call_id"]
    lead += [
        *([] if wire.get("unnamed") else ["name"]),
        *([wire["args"]] if wire["args"] else args),
    ]
    wire |= _keys(item, lead)
    part = ToolCallPart(call_id=call_id, name=name, arguments=args)
    return Message(Role.ASSISTANT, (part,), id=msg_id, extra=rest(item, known), wire=wire)


def _decode_item(item: object, index: int) -> Message:
    item = expect_mapping(item, index, "item")
    if "type" not in item and "role" in item:
        return _decode_message(item, index, typed=False)
    kind = item.get("type")
    if not isinstance(kind, str):
        raise ConversationError(
            "an item needs a string 'type' (or a 'role' for a message)",
            index=index,
            rule="item.type",
        )
    if kind == "message":
        return _decode_message(item, index, typed=True)
    if kind == "reasoning":
        return _decode_reasoning(item, index)
    has_call_id = "call_id" in item
    if kind == "function_call" or (has_call_id and kind.endswith("_call")):
        return _decode_call(item, index, kind)
    if kind == "function_call_output" or (has_call_id and kind.endswith("_call_output")):
        result, form = _decode_output(item, index, strict=kind == "function_call_output")
        known = ["type", "call_id", "output"]
        msg_id = _item_id(item, known)
        lead = ["type", *(["id"] if msg_id is not None else []), "call_id", "output"]
        wire = {"format": FORMAT, "item": kind, "output": form, **_keys(item, _present(item, lead))}
        return Message(Role.TOOL, (result,), id=msg_id, extra=rest(item, known), wire=wire)
    if kind == "local_shell_call_output" and isinstance(item.get("id"), str):
        # Its ``id`` is the ``call_id`` of the local_shell_call it answers (the SDK's type
        # has no other): the pair is one like any call and its output.
        result, form = _decode_output(item, index, strict=False, call_key="id")
        lead = _present(item, ["type", "id", "output"])
        wire = {
            "format": FORMAT,
            "item": kind,
            "output": form,
            "call_key": "id",
            **_keys(item, lead),
        }
        known = ["type", "id", "output"]
        return Message(Role.TOOL, (result,), extra=rest(item, known), wire=wire)
    # compaction, compaction_trigger, item_reference, mcp_call, mcp_list_tools, the MCP
    # approvals, web_search_call and other server tool items, anything newer
    role = item.get("role")
    named = Role(role) if isinstance(role, str) and role in _ROLE_NAMES else None
    # an item_reference's id names another item, not this one
    msg_id = item.get("id") if kind != "item_reference" else None
    part = OpaquePart(kind=kind, raw=item, text=opaque_text(item))
    wire = {"format": FORMAT, "item": "opaque"}
    return Message(
        named or Role.ASSISTANT,
        (part,),
        id=msg_id if isinstance(msg_id, str) else None,
        wire=wire,
    )


def decode(items: Sequence[Any]) -> tuple[Message, ...]:
    """Decode a list of Responses input items. Raises ``ConversationError`` naming the item
    index and rule for anything that is not one."""
    return tuple(_decode_item(item, i) for i, item in enumerate(expect_history(items)))


# ---------------------------------------------------------------- encode


def _placeholder(part: MediaPart, text_type: str) -> dict[str, Any]:
    return {"type": text_type, "text": part.placeholder}


def _encode_media(
    part: MediaPart, own: bool, extra: dict[str, Any], text_type: str
) -> dict[str, Any]:
    if part.kind == "image":
        url = part.url
        if url is None and part.data is not None:
            url = data_url(part.media_type, part.data)
        if url is None and not own:
            return _placeholder(part, text_type)
        out = {"type": "input_image", **extra}
        if url is not None:
            out["image_url"] = url
        if not own:
            out["detail"] = "auto"
        return out
    if part.kind == "audio":
        fmt = None if part.media_type is None else part.media_type.split("/", 1)[-1]
        if own and not isinstance(extra.get("input_audio"), Mapping):
            flat = {"type": "input_audio", **extra}
            flat |= {k: v for k, v in (("data", part.data), ("format", fmt)) if v is not None}
            return flat
        if part.data is None and not own:
            return _placeholder(part, text_type)
        inner = {**extra.pop("input_audio", {})}
        fmt = fmt if own else fmt or "wav"
        inner |= {k: v for k, v in (("data", part.data), ("format", fmt)) if v is not None}
        return {"type": "input_audio", **extra, "input_audio": inner}
    if not own and part.data is None and part.url is None:
        return _placeholder(part, text_type)
    if not own and part.kind == "video":
        return _placeholder(part, text_type)
    out = {"type": "input_file", **extra}
    if part.data is not None:
        out["file_data"] = part.data if own else data_url(part.media_type, part.data)
    if part.url is not None:
        out["file_url"] = part.url
    if part.filename is not None:
        out["filename"] = part.filename
    return out


def _encode_block(part: _Content, message: Message, text_type: str) -> dict[str, Any]:
    own = message.wire.get("format") == FORMAT
    if isinstance(part, OpaquePart):
        return (
            dict(thaw(part.raw))
            if own
            else {"type": text_type, "text": part.text or f"[{part.kind}]"}
        )
    extra = own_extra(message, FORMAT, part.extra)
    if isinstance(part, TextPart):
        return {"type": text_type, "text": part.text, **extra}
    return _encode_media(part, own, extra, text_type)


def _encode_output(result: ToolResultPart, message: Message) -> Any:  # noqa: ANN401 - any JSON
    extra = own_extra(message, FORMAT, result.extra)
    if "output" in extra and result.content == _render(extra["output"]):
        return extra["output"]
    if isinstance(result.content, str):
        return result.content
    return [_encode_block(p, message, "input_text") for p in result.content]


def _encode_call(call: ToolCallPart, message: Message, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "call_id": call.call_id}
    if not hint(message, FORMAT, "unnamed"):
        out["name"] = call.name
    key = hint(message, FORMAT, "args") if kind != "function_call" else "arguments"
    args: Any = call.arguments
    if key is None and isinstance(args, Mapping):
        payload: dict[str, Any] = thaw(args)
        return out | payload
    if isinstance(args, Mapping):
        own = message.wire.get("format") == FORMAT
        args = thaw(args) if own else call.arguments_text
    out[key or "arguments"] = args
    return out


def _encode_reasoning(part: ReasoningPart, message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "reasoning", **own_extra(message, FORMAT, part.extra)}
    if not hint(message, FORMAT, "missing_summary"):
        out.setdefault("summary", [])  # required even when empty (rule R6)
    if part.encrypted is not None:
        out["encrypted_content"] = part.encrypted
    return out


def _encode_own(message: Message) -> dict[str, Any] | None:
    """The item a message decoded from Responses came from, or None when its parts no longer
    fit that item (the caller then encodes it as a new message)."""
    kind = hint(message, FORMAT, "item") or ""
    parts = message.parts
    one = parts[0] if len(parts) == 1 else None
    head: dict[str, Any] = {}
    if kind == "opaque" and isinstance(one, OpaquePart):
        return dict(thaw(one.raw))
    if message.id is not None:
        head["id"] = message.id
    extra = own_extra(message, FORMAT, message.extra)
    body: dict[str, Any]
    if kind == "message" and message.role is not Role.TOOL:
        content = [p for p in parts if isinstance(p, TextPart | MediaPart | OpaquePart)]
        if len(content) != len(parts):
            return None
        head = ({"type": "message"} if hint(message, FORMAT, "typed") else {}) | head
        body = {"role": message.role.value, "content": _content(message, content)}
    elif kind == "reasoning" and isinstance(one, ReasoningPart):
        body = _encode_reasoning(one, message)
    elif kind.endswith("_call") and isinstance(one, ToolCallPart):
        body = _encode_call(one, message, kind)
    elif kind.endswith("_call_output") and isinstance(one, ToolResultPart):
        body = {"type": kind, hint(message, FORMAT, "call_key") or "call_id": one.call_id}
        if not (hint(message, FORMAT, "output") == "absent" and one.content == ""):
            body["output"] = _encode_output(one, message)
    else:
        return None
    # "type" first, then "id": the order of the API's own examples, and of most clients
    first = {"type": body["type"]} if "type" in body else {}
    return _ordered(first | head | body | extra, message)


def _content(message: Message, parts: Sequence[_Content]) -> str | list[dict[str, Any]]:
    form = hint(message, FORMAT, "content")
    first = parts[0] if len(parts) == 1 else None
    if isinstance(first, TextPart) and (
        form == "string" or (form is None and not own_extra(message, FORMAT, first.extra))
    ):
        return first.text
    text_type = _text_type(message.role)
    return [_encode_block(p, message, text_type) for p in parts]


def encode_message(message: Message) -> list[dict[str, Any]]:
    """One model message as Responses items: content parts become one message item, each tool
    call a ``function_call``, each result a ``function_call_output``. Reasoning from another
    provider is dropped (its signature means nothing here)."""
    if message.wire.get("format") == FORMAT:
        exact = _encode_own(message)
        if exact is not None:
            return [exact]
    role = Role.USER if message.role is Role.TOOL else message.role
    out: list[dict[str, Any]] = []
    pending: list[_Content] = []

    def flush() -> None:
        if pending:
            out.append({"role": role.value, "content": _content(message, pending)})
            pending.clear()

    for part in message.parts:
        if isinstance(part, TextPart | MediaPart | OpaquePart):
            pending.append(part)
            continue
        flush()
        if isinstance(part, ToolCallPart):
            out.append(_encode_call(part, message, "function_call"))
        elif isinstance(part, ToolResultPart):
            output = _encode_output(part, message)
            out.append({"type": "function_call_output", "call_id": part.call_id, "output": output})
        elif message.wire.get("format") == FORMAT:
            out.append(_encode_reasoning(part, message))
    flush()
    if not message.parts:
        out.append({"role": role.value, "content": ""})
    return out


def encode(messages: Sequence[Message]) -> Wire:
    out: list[dict[str, Any]] = []
    for message in messages:
        out.extend(encode_message(message))
    return Wire(out)
