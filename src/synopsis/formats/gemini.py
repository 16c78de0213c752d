"""Gemini ``contents`` (plain dicts, plus ``systemInstruction``) <-> the message model.

Roles are ``user`` and ``model`` (ASSISTANT). Function results stay inside the user turn that
holds them. Gemini often omits call ids and pairs a ``functionResponse`` with the
``functionCall`` of the same name in the turn before; a missing id is therefore derived from the
call turn's position, the function name and its occurrence in that turn, identically for the
call and its response, and the message's ``wire`` notes it so that ``encode`` leaves it out.

The JSON API accepts camelCase and snake_case keys (``functionCall``/``function_call``,
``inlineData``/``inline_data``); whichever was read is written back, and thought signatures stay
on the part they came on. A null field counts as absent and is written back as null, so parts as
google-genai's ``model_dump()`` writes them (every field present, unset ones None) are read. An
explicit null call id stays null. Decode then encode gives equal JSON.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from synopsis.errors import ConversationError
from synopsis.formats._common import (
    Wire,
    arguments_mapping,
    expect_history,
    expect_list,
    expect_mapping,
    expect_str,
    hint,
    media_kind,
    opaque_text,
    optional_str,
    own_extra,
    parse_data_url,
    rest,
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

__all__ = ["FORMAT", "Resume", "decode", "encode", "synthetic_call_id"]

FORMAT = "gemini"
_ROLES = {"user": Role.USER, "model": Role.ASSISTANT}
_RULE = "message.content"
_MEDIA = {"inlineData": "inline_data", "fileData": "file_data"}
_SIGNATURE = ("thoughtSignature", "thought_signature")
# fields that ride along on any part; the one left over names what the part is
_PART_META = frozenset(
    {"thought", *_SIGNATURE, "videoMetadata", "video_metadata", "partMetadata", "part_metadata"}
    | {"mediaResolution", "media_resolution"}
)


def _key(item: Mapping[str, Any], camel: str, snake: str) -> str | None:
    """The spelling of a field that is set: a null one is absent (``model_dump()`` writes every
    field of a part, unset ones as None)."""
    if item.get(camel) is not None:
        return camel
    return snake if item.get(snake) is not None else None


def _spelling(item: Mapping[str, Any], camel: str, snake: str, snaked: bool) -> str:
    """The key to write a field under: the one set, else the one present as null (so that no
    second spelling appears beside it), else the spelling of the enclosing key."""
    if found := _key(item, camel, snake):
        return found
    if camel in item or snake in item:
        return camel if camel in item else snake
    return snake if snaked else camel


def synthetic_call_id(turn: int, name: str, occurrence: int) -> str:
    """The id given to the ``occurrence``-th call of ``name`` in the model turn at ``turn``
    (and to its response). Only letters, digits, ``_`` and ``-``, as other providers require."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:48]
    if safe != name:  # keep distinct names distinct after the substitution
        safe += "_" + hashlib.sha256(name.encode()).hexdigest()[:6]
    return f"gemini_{turn}_{safe}_{occurrence}"


def _render_response(response: object) -> tuple[str, bool]:
    """Result text and error flag of a ``functionResponse.response``: a lone string field
    (``output``, ``result``, ``error`` ...) is the text, anything else its JSON."""
    if response is None:
        return "", False
    if isinstance(response, Mapping) and len(response) == 1:
        (key, value), *_ = response.items()
        if isinstance(value, str):
            return value, key == "error"
    return json.dumps(thaw(response), ensure_ascii=False), False


@dataclass(frozen=True, slots=True)
class Resume:
    """Where decoding contents appended to a decoded history picks up: the index of the next
    content, and the latest content with calls before it (its index, and its call ids by name
    and occurrence), which is all that contents decoded earlier lend to those after them. A
    history's contents then decode one by one, as those of the item-wise formats do."""

    start: int = 0
    turn: int = -1
    ids: Mapping[tuple[str, int], str] = field(default_factory=dict)

    def after(self, messages: Sequence[Message]) -> Resume:
        """The point after ``messages``, the contents decoded from this one."""
        end = self.start + len(messages)
        for j in range(len(messages) - 1, -1, -1):
            calls = [p for p in messages[j].parts if isinstance(p, ToolCallPart)]
            if calls:
                seen: dict[str, int] = {}
                ids: dict[tuple[str, int], str] = {}
                for call in calls:
                    n = seen[call.name] = seen.get(call.name, -1) + 1
                    ids[call.name, n] = call.call_id
                return Resume(end, self.start + j, ids)
        return Resume(end, self.turn, self.ids)


class _Pairing:
    """Call ids of the latest model turn with calls, so that responses without ids pair with
    the calls they answer (the k-th response named f answers the k-th call named f)."""

    def __init__(self, resume: Resume | None = None) -> None:
        self.turn = -1 if resume is None else resume.turn
        self.ids: dict[tuple[str, int], str] = {} if resume is None else dict(resume.ids)
        self.seen: dict[tuple[bool, str], int] = {}
        self.at = -1

    def call_id(self, index: int, calling: bool, name: str, given: str | None) -> str:
        if index != self.at:
            self.at, self.seen = index, {}
        n = self.seen[calling, name] = self.seen.get((calling, name), -1) + 1
        if calling:
            if index != self.turn:
                self.turn, self.ids = index, {}
            self.ids[name, n] = given or synthetic_call_id(index, name, n)
            return self.ids[name, n]
        turn = self.turn if self.turn >= 0 else index
        return given or self.ids.get((name, n)) or synthetic_call_id(turn, name, n)


# ---------------------------------------------------------------- decode


def _decode_media(part: Mapping[str, Any], key: str, index: int | None) -> MediaPart:
    inner = expect_mapping(part[key], index, key, _RULE)
    mime = optional_str(inner, _key(inner, "mimeType", "mime_type") or "mimeType", index, _RULE)
    extra = {**rest(part, (key,)), key: dict(inner)}
    if key in ("inlineData", "inline_data"):
        data = optional_str(inner, "data", index, _RULE)
        return MediaPart(media_kind(mime), media_type=mime, data=data, extra=extra)
    uri = optional_str(inner, _key(inner, "fileUri", "file_uri") or "fileUri", index, _RULE)
    return MediaPart(media_kind(mime), media_type=mime, url=uri, extra=extra)


def _decode_part(part: object, index: int | None, pairing: _Pairing, synth: list[str]) -> Part:
    part = expect_mapping(part, index, "part", _RULE)
    if part.get("text") is not None:
        text = expect_str(part, "text", index, _RULE)
        if part.get("thought") is True:
            sig = next((part[k] for k in _SIGNATURE if isinstance(part.get(k), str)), None)
            return ReasoningPart(text=text, signature=sig, extra=rest(part, ("text",)))
        return TextPart(text, rest(part, ("text",)))
    for camel, snake in _MEDIA.items():
        media_key = _key(part, camel, snake)
        if media_key:
            return _decode_media(part, media_key, index)
    key = _key(part, "functionCall", "function_call") or _key(
        part, "functionResponse", "function_response"
    )
    if key is None:
        kind = next((k for k, v in part.items() if k not in _PART_META and v is not None), "part")
        inner = part.get(kind)
        text = opaque_text(inner) if isinstance(inner, Mapping) else ""
        return OpaquePart(kind=kind, raw=part, text=text)
    calling = key in ("functionCall", "function_call")
    what = "function_call" if calling else "function_response"
    inner = expect_mapping(part[key], index, key, f"{what}.type")
    name = expect_str(inner, "name", index, f"{what}.name")
    given = optional_str(inner, "id", index, f"{what}.id")
    call_id = pairing.call_id(-1 if index is None else index, calling, name, given)
    if not given:  # an empty id pairs by name as a missing one does
        synth.append(call_id)
    extra = {**rest(part, (key,)), key: dict(inner)}
    if calling:
        args = inner.get("args")
        args = {} if args is None else args
        if not isinstance(args, Mapping):
            raise ConversationError(
                f"functionCall 'args' must be an object, got {type(args).__name__}",
                index=index,
                rule="function_call.args",
            )
        return ToolCallPart(call_id=call_id, name=name, arguments=args, extra=extra)
    response = inner.get("response")
    if response is not None and not isinstance(response, Mapping):
        raise ConversationError(
            f"functionResponse 'response' must be an object, got {type(response).__name__}",
            index=index,
            rule="function_response.response",
        )
    text, is_error = _render_response(response)
    return ToolResultPart(call_id, text, is_error=is_error, name=name, extra=extra)


def _decode_content(item: object, index: int, pairing: _Pairing) -> Message:
    item = expect_mapping(item, index)
    wire: dict[str, Any] = {"format": FORMAT}
    if item.get("role") is None:
        role = "user"
        wire["role"] = "absent" if "role" not in item else "null"
    else:
        role = item["role"]
        if not isinstance(role, str) or role not in _ROLES:
            raise ConversationError(
                f"unknown role {role!r}; expected 'user' or 'model'",
                index=index,
                rule="message.role",
            )
    synth: list[str] = []
    parts: tuple[Part, ...] = ()
    if (form := _parts_form(item)) == "present":
        raw = expect_list(item["parts"], index, "'parts'", _RULE)
        parts = tuple(_decode_part(p, index, pairing, synth) for p in raw)
    else:
        wire["parts"] = form
    if synth:
        wire["synth_ids"] = tuple(synth)
    return Message(_ROLES[role], parts, extra=rest(item, ("role", "parts")), wire=wire)


def _parts_form(item: Mapping[str, Any]) -> str:
    if "parts" not in item:
        return "absent"
    return "null" if item["parts"] is None else "present"


def _decode_system(system: object) -> Message | None:
    if system is None:
        return None
    wire: dict[str, Any] = {"format": FORMAT}
    extra: dict[str, Any] = {}
    if isinstance(system, str):
        parts: tuple[Part, ...] = (TextPart(system),)
        wire["system"] = "string"
    elif isinstance(system, Mapping | list):
        raw = system.get("parts") if isinstance(system, Mapping) else system
        raw = expect_list([] if raw is None else raw, None, "'parts'", "system.type")
        parts = tuple(_decode_part(p, None, _Pairing(), []) for p in raw)
        wire["system"] = "content" if isinstance(system, Mapping) else "list"
        if isinstance(system, Mapping):
            extra = rest(system, ("parts",))
            wire["parts"] = _parts_form(system)
    else:
        raise ConversationError(
            f"'systemInstruction' must be a Content object or a string, got "
            f"{type(system).__name__}",
            rule="system.type",
        )
    return Message(Role.SYSTEM, parts, extra=extra, wire=wire)


def decode(
    items: Sequence[Any], *, system: object = None, resume: Resume | None = None
) -> tuple[Message, ...]:
    """Decode Gemini ``contents`` (and ``systemInstruction``, which becomes a leading SYSTEM
    message). Raises ``ConversationError`` naming the content index and rule. With
    ``resume``, ``items`` are contents appended to a history decoded before, and decode as
    they would with it (see :class:`Resume`)."""
    history = expect_history(items)
    pairing = _Pairing(resume)
    lead = _decode_system(system)
    start = 0 if resume is None else resume.start
    decoded = tuple(
        _decode_content(item, i, pairing) for i, item in enumerate(history, start=start)
    )
    return (lead, *decoded) if lead is not None else decoded


# ---------------------------------------------------------------- encode


class _Encoder:
    def __init__(self, call_ids: bool) -> None:
        self.call_ids = call_ids
        self.names: dict[str, str] = {}  # call id -> function name, to name foreign results

    def media(self, part: MediaPart, extra: dict[str, Any]) -> dict[str, Any]:
        for camel, snake in _MEDIA.items():
            key = _key(extra, camel, snake)
            if key is None:
                continue
            inner = dict(extra.pop(key))
            snaked = key == snake
            mime = _spelling(inner, "mimeType", "mime_type", snaked)
            where = (
                "data" if camel == "inlineData" else _spelling(inner, "fileUri", "file_uri", snaked)
            )
            value = part.data if camel == "inlineData" else part.url
            for name, v in ((mime, part.media_type), (where, value)):
                if v is not None:
                    inner[name] = v
            return {**extra, key: inner}
        parsed = parse_data_url(part.url) or parse_data_url(part.data)
        mime_type = part.media_type or "application/octet-stream"
        if parsed:
            return {**extra, "inlineData": {"mimeType": parsed[0], "data": parsed[1]}}
        if part.data is not None:
            return {**extra, "inlineData": {"mimeType": mime_type, "data": part.data}}
        if part.url is not None:
            return {**extra, "fileData": {"mimeType": mime_type, "fileUri": part.url}}
        return {"text": part.placeholder}

    def call(self, part: ToolCallPart | ToolResultPart, message: Message) -> dict[str, Any]:
        extra = own_extra(message, FORMAT, part.extra)
        calling = isinstance(part, ToolCallPart)
        camel, snake = ("functionCall", "function_call")
        if not calling:
            camel, snake = ("functionResponse", "function_response")
        key = _key(extra, camel, snake) or camel
        kept = extra.pop(key, None)
        inner = dict(kept or {})
        if isinstance(part, ToolCallPart):
            self.names[part.call_id] = part.name
            inner["name"] = part.name
            # absent and null args both read as {}; either comes back while there are none
            if inner.get("args") is not None or kept is None or part.arguments:
                inner["args"] = arguments_mapping(part)
        else:
            named = part.name if part.name is not None else self.names.get(part.call_id)
            inner["name"] = "unknown" if named is None else named
            was = _render_response(kept.get("response")) if kept is not None else None
            if was != (part.content, part.is_error):
                inner["response"] = {"error" if part.is_error else "output": part.text}
        # an id goes back where Gemini sent one; generateContent rejects "id" in requests on
        # several hosts, so other ids (another provider's, a part added later) only on request
        synthesised = part.call_id in (hint(message, FORMAT, "synth_ids") or ())
        if "id" in inner:
            # an explicit null (or empty) id comes back as it was while the id is still the
            # derived one
            if not synthesised:
                inner["id"] = part.call_id
        elif kept is None and self.call_ids and not synthesised:
            inner["id"] = part.call_id
        return {**extra, key: inner}

    def part(self, part: Part, message: Message) -> dict[str, Any] | None:
        own = message.wire.get("format") == FORMAT
        extra = own_extra(message, FORMAT, getattr(part, "extra", EMPTY))
        if isinstance(part, TextPart):
            return {"text": part.text, **extra} if part.text or own else None
        if isinstance(part, ReasoningPart):
            return {"text": part.text, "thought": True, **extra} if own else None
        if isinstance(part, MediaPart):
            return self.media(part, extra)
        if isinstance(part, ToolCallPart | ToolResultPart):
            return self.call(part, message)
        if own:
            return dict(thaw(part.raw))
        return {"text": part.text or f"[{part.kind}]"}

    def parts(self, message: Message) -> list[dict[str, Any]]:
        return [b for p in message.parts if (b := self.part(p, message)) is not None]

    def system(self, messages: Sequence[Message]) -> Any:  # noqa: ANN401 - as it was given
        if not messages:
            return None
        first = messages[0]
        form = hint(first, FORMAT, "system")
        only = first.parts[0] if len(first.parts) == 1 else None
        if len(messages) == 1 and form == "string" and isinstance(only, TextPart):
            return only.text
        parts: list[dict[str, Any]] = []
        extra: dict[str, Any] = {}
        for m in messages:
            if m.wire.get("format") == FORMAT:
                parts.extend(self.parts(m))
                extra |= own_extra(m, FORMAT, m.extra)
                continue
            visible = [p for p in m.parts if not isinstance(p, ReasoningPart)]
            text = message_text(Message(Role.SYSTEM, tuple(visible)))
            if text:
                parts.append({"text": text})
        if len(messages) == 1 and form == "list":
            return parts
        if not parts and form is None:
            return None
        if not parts and hint(first, FORMAT, "parts") == "absent":
            return extra
        if not parts and hint(first, FORMAT, "parts") == "null":
            return {**extra, "parts": None}
        return {**extra, "parts": parts}


def _lifts(message: Message) -> bool:
    return message.role in (Role.SYSTEM, Role.DEVELOPER)


def _finish(body: dict[str, Any]) -> dict[str, Any]:
    if body["role"] == "user":  # responses ahead of any text, as a response turn expects
        body["parts"].sort(key=lambda p: _key(p, "functionResponse", "function_response") is None)
    return body


def encode(messages: Sequence[Message], *, call_ids: bool = False) -> Wire:
    """Gemini ``contents`` plus ``systemInstruction`` (None without a leading system message).

    Ids of calls decoded from Gemini go back as they came. Ids from other formats are left out
    unless ``call_ids`` is true: Gemini pairs results by name and order, and several hosts
    reject ``functionCall.id`` in requests."""
    enc = _Encoder(call_ids)
    lead = 0
    while lead < len(messages) and _lifts(messages[lead]):
        lead += 1
    system = enc.system(messages[:lead])
    out: list[dict[str, Any]] = []
    foreign: list[bool] = []
    for message in messages[lead:]:
        parts = enc.parts(message)
        role = "model" if message.role is Role.ASSISTANT else "user"
        if message.wire.get("format") == FORMAT:
            body: dict[str, Any] = {}
            role_form = hint(message, FORMAT, "role")
            if role_form != "absent":
                body["role"] = None if role_form == "null" else role
            parts_form = hint(message, FORMAT, "parts")
            if parts or parts_form is None:
                body["parts"] = parts
            elif parts_form == "null":
                body["parts"] = None
            out.append(body | own_extra(message, FORMAT, message.extra))
            foreign.append(False)
        elif not parts:
            continue  # nothing Gemini accepts is left (empty text, foreign reasoning)
        elif foreign and foreign[-1] and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})
            foreign.append(True)
    return Wire([_finish(c) if f else c for c, f in zip(out, foreign, strict=True)], system)
