"""The provider-neutral message model: frozen values that every other module works on.

A converter (``synopsis.formats``) turns a provider's wire shape into these values and back.
Fields the model does not name are kept in ``extra`` (on messages and on parts) so that a
round trip gives back equal JSON. Nothing here mutates; functions return new tuples.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, TypeVar

from synopsis.errors import ConversationError

__all__ = [
    "EMPTY",
    "MediaPart",
    "Message",
    "OpaquePart",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "content_hash",
    "derived",
    "message_id",
    "message_ids",
    "message_text",
    "thaw",
]

EMPTY: Mapping[str, Any] = MappingProxyType({})
_T = TypeVar("_T")
_A = TypeVar("_A")


def _empty() -> Mapping[str, Any]:
    return EMPTY


_SHARED: dict[tuple[Any, ...], Mapping[str, Any]] = {}
"""Read-only mappings made once and shared, by their items: the converter's notes and the
extras of a part repeat on nearly every message (``{"type": "function", "function": {}}``,
``{"format": "openai", "content": "string"}``), and a copy each made a long history twice as
many objects for the garbage collector to walk."""
_SHARED_IDS: set[int] = {id(EMPTY)}
_SHARED_LIMIT = 4096
"""At most this many shared mappings are kept (the first ones seen); later ones are copies."""
_SHAREABLE = frozenset({str, int, bool, type(None)})
"""Values compared by type and value (``1 == True``, and a float's sign is lost in ``==``)."""
_SHORT = 64


def _shared(items: dict[str, Any]) -> Mapping[str, Any]:
    """``items`` read-only: the shared mapping of the same items (in the same order, each value
    of the same type) when the values are short scalars or shared mappings themselves."""
    key: list[tuple[Any, ...]] = []
    for name, value in items.items():
        kind = type(value)
        if kind in _SHAREABLE and (kind is not str or len(value) <= _SHORT):
            key.append((name, kind, value))
        elif kind is MappingProxyType and id(value) in _SHARED_IDS:
            key.append((name, kind, id(value)))  # kept alive by the table: the id is its own
        else:
            return MappingProxyType(items)
    found = _SHARED.get(made := tuple(key))
    if found is None:
        found = MappingProxyType(items)
        if len(_SHARED) < _SHARED_LIMIT:
            _SHARED[made] = found
            _SHARED_IDS.add(id(found))
    return found


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy, one level deep: for converter notes, which hold no caller data."""
    if not value:
        return EMPTY
    if isinstance(value, MappingProxyType):
        return value
    return _shared(dict(value))


_ATOMS = frozenset({str, int, float, bool, type(None)})
"""Values a read-only copy keeps as they are, told by their exact type: checking them against
the ``Mapping`` ABC first costs more than the copy of a small extra."""


def _deep_frozen(value: object) -> Any:  # noqa: ANN401 - plain JSON of any shape
    """A read-only copy all the way down (mappings to mapping proxies, lists to tuples).

    Decoded values would otherwise share nested dicts with the caller's input, so editing that
    input after decoding would change a message, its hash and its derived id.
    """
    if type(value) in _ATOMS:
        return value
    if isinstance(value, Mapping):
        if not value:
            return EMPTY
        if id(value) in _SHARED_IDS:
            return value  # shared: read-only all the way down already
        return _shared({k: _deep_frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_deep_frozen(v) for v in value)
    return value


def _frozen_extra(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not value:
        return EMPTY
    if type(value) is MappingProxyType and id(value) in _SHARED_IDS:
        return value
    frozen: Mapping[str, Any] = _deep_frozen(value)
    return frozen


def _require(ok: bool, what: str, value: object, rule: str) -> None:
    if not ok:
        raise ConversationError(f"{what}, not {type(value).__name__}", rule=rule)


class Role(StrEnum):
    """Who speaks. ``TOOL`` carries results in OpenAI-style histories; Anthropic and Gemini
    carry results inside ``USER`` messages, which the model represents as they are."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    extra: Mapping[str, Any] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            _require(isinstance(self.text, str), "text must be a string", self.text, "part.text")
        if self.extra is not EMPTY:
            object.__setattr__(self, "extra", _frozen_extra(self.extra))

    def __hash__(self) -> int:
        return hash(("t", self.text))


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A request by the model to run a tool.

    ``arguments`` is kept as the provider sent it: a JSON text for OpenAI (which may not even
    parse), a mapping for Anthropic and Gemini.
    """

    call_id: str
    name: str
    arguments: str | Mapping[str, Any] = ""
    extra: Mapping[str, Any] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        _require(
            isinstance(self.call_id, str),
            "a call id must be a string",
            self.call_id,
            "tool_call.id",
        )
        _require(
            isinstance(self.name, str), "a tool name must be a string", self.name, "tool_call.name"
        )
        if self.extra is not EMPTY:
            object.__setattr__(self, "extra", _frozen_extra(self.extra))
        if type(self.arguments) is str:
            return  # the common case, told apart before the ABC's slower check
        _require(
            isinstance(self.arguments, str | Mapping),
            "tool arguments must be a JSON text or a mapping",
            self.arguments,
            "tool_call.arguments",
        )
        if isinstance(self.arguments, Mapping):
            object.__setattr__(self, "arguments", _deep_frozen(self.arguments))

    def __hash__(self) -> int:
        return hash(("c", self.call_id, self.name))

    @property
    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(_thaw(self.arguments), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class MediaPart:
    """An image, audio clip, document or file, referenced rather than inlined in the model.

    ``token_estimate`` is what the provider is expected to charge for it; ``None`` lets the
    token counter apply its default for the kind.
    """

    kind: Literal["image", "audio", "document", "file", "video"]
    media_type: str | None = None
    url: str | None = None
    data: str | None = None
    filename: str | None = None
    token_estimate: int | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", _frozen_extra(self.extra))

    def __hash__(self) -> int:
        return hash(("m", self.kind, self.url, self.filename))

    @property
    def placeholder(self) -> str:
        """A short, deterministic stand-in used when media must be rendered as text."""
        where = self.filename or self.url or (self.media_type or self.kind)
        if self.url and self.url.startswith("data:"):
            where = self.media_type or self.kind
        approx = f", ~{self.token_estimate} tokens" if self.token_estimate else ""
        return f"[{self.kind}: {where}{approx}]"


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The answer to a tool call. ``content`` is a plain string when the wire had one, else the
    parts the provider allows inside a result (text and media)."""

    call_id: str
    content: str | tuple[TextPart | MediaPart, ...] = ""
    is_error: bool = False
    name: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        _require(
            isinstance(self.call_id, str),
            "a call id must be a string",
            self.call_id,
            "tool_result.id",
        )
        if self.extra is not EMPTY:
            object.__setattr__(self, "extra", _frozen_extra(self.extra))
        if not isinstance(self.content, str):
            _require(
                isinstance(self.content, list | tuple),
                "tool result content must be a string or a sequence of parts",
                self.content,
                "tool_result.content",
            )
            content = tuple(self.content)
            for item in content:
                _require(
                    isinstance(item, TextPart | MediaPart),
                    "a tool result holds text and media parts",
                    item,
                    "tool_result.content",
                )
            object.__setattr__(self, "content", content)

    def __hash__(self) -> int:
        return hash(("r", self.call_id, self.content))

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text if isinstance(p, TextPart) else p.placeholder for p in self.content)


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """Model thinking. Opaque: signatures and encrypted content must go back byte-identical, so
    nothing in synopsis edits one; it is kept whole or dropped whole."""

    text: str = ""
    signature: str | None = None
    encrypted: str | None = None
    redacted: bool = False
    extra: Mapping[str, Any] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        _require(
            isinstance(self.text, str),
            "thinking text must be a string",
            self.text,
            "reasoning.text",
        )
        object.__setattr__(self, "extra", _frozen_extra(self.extra))

    def __hash__(self) -> int:
        return hash(("z", self.text, self.signature, self.encrypted))


@dataclass(frozen=True, slots=True)
class OpaquePart:
    """A block or item the model does not interpret (server tool blocks, provider compaction
    items, citations-only blocks). Kept verbatim; ``text`` is what counting and rendering see."""

    kind: str
    raw: Mapping[str, Any]
    text: str = ""

    def __post_init__(self) -> None:
        _require(
            isinstance(self.raw, Mapping),
            "an opaque block must be a mapping",
            self.raw,
            "opaque.raw",
        )
        object.__setattr__(self, "raw", _frozen_extra(self.raw))

    def __hash__(self) -> int:
        return hash(("o", self.kind, self.text))


Part: TypeAlias = TextPart | ToolCallPart | ToolResultPart | MediaPart | ReasoningPart | OpaquePart
_PART_TYPES = (TextPart, ToolCallPart, ToolResultPart, MediaPart, ReasoningPart, OpaquePart)


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation.

    ``id`` is the caller's own id when the wire carried one (Responses items do); otherwise
    ``None``, and :func:`message_id` derives a stable one from position and content.
    ``extra`` holds top-level wire fields the model does not name. ``wire`` holds the
    converter's notes on the original shape (its format, whether content was a bare string),
    which an exact round trip needs; it is not part of the message's identity.
    """

    role: Role
    parts: tuple[Part, ...] = ()
    id: str | None = None
    name: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty)
    wire: Mapping[str, Any] = field(default_factory=_empty, compare=False)
    # Both read for every message on every call (the counter's cache, the chain's hashes):
    # worked out once per message, which never changes.
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    _sha256: str | None = field(default=None, init=False, repr=False, compare=False)
    _counted: tuple[int, int] | None = field(default=None, init=False, repr=False, compare=False)
    """The last count a counter gave (that counter's token, the count): a history read once
    is counted several times per call, and a cache lookup by value compares whole messages."""
    _derived: dict[object, Any] | None = field(default=None, init=False, repr=False, compare=False)
    """Shortened copies the reductions made of this message, by what made them: the same
    message reduced the same way on the next call is then the same object, whose count and
    hash are already known (see :func:`derived`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.role, Role):
            try:
                object.__setattr__(self, "role", Role(self.role))
            except ValueError:
                known = ", ".join(r.value for r in Role)
                raise ConversationError(
                    f"unknown role {self.role!r}; expected one of {known}", rule="message.role"
                ) from None
        parts = self.parts
        if type(parts) is not tuple:
            _require(
                isinstance(parts, list | tuple),
                "parts must be a sequence",
                parts,
                "message.parts",
            )
            parts = tuple(parts)
            object.__setattr__(self, "parts", parts)
        for part in parts:
            if not isinstance(part, _PART_TYPES):
                _require(False, "a message holds parts", part, "message.parts")
        # Most messages carry no extras and share their converter's notes: left as they are.
        if self.extra is not EMPTY:
            object.__setattr__(self, "extra", _frozen_extra(self.extra))
        if self.wire is not EMPTY:
            object.__setattr__(self, "wire", _frozen(self.wire))

    def __hash__(self) -> int:
        found = self._hash
        if found is None:
            found = hash((self.role, self.id, self.name, self.parts))
            object.__setattr__(self, "_hash", found)
        return found

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))

    @property
    def has_reasoning(self) -> bool:
        return any(isinstance(p, ReasoningPart) for p in self.parts)

    @property
    def text(self) -> str:
        return message_text(self)


def _thaw(value: object) -> Any:  # noqa: ANN401 - plain JSON of any shape
    """Turn read-only mappings back into plain JSON values."""
    if type(value) in _ATOMS:
        return value
    if value is EMPTY:
        return {}
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in value]
    return value


def thaw(value: object) -> Any:  # noqa: ANN401 - plain JSON of any shape
    """Public form of :func:`_thaw`, used by the converters."""
    return _thaw(value)


def message_text(message: Message) -> str:
    """All human-readable text of a message, parts joined by newlines (media as placeholders,
    tool calls as ``name(arguments)``)."""
    out: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            out.append(part.text)
        elif isinstance(part, ToolCallPart):
            out.append(f"{part.name}({part.arguments_text})")
        elif isinstance(part, ToolResultPart):
            out.append(part.text)
        elif isinstance(part, MediaPart):
            out.append(part.placeholder)
        elif isinstance(part, ReasoningPart):
            out.append(part.text)
        else:
            out.append(part.text)
    return "\n".join(s for s in out if s)


def _part_key(part: Part) -> list[object]:
    if isinstance(part, TextPart):
        return ["t", part.text, _thaw(part.extra)]
    if isinstance(part, ToolCallPart):
        return ["c", part.call_id, part.name, _thaw(part.arguments), _thaw(part.extra)]
    if isinstance(part, ToolResultPart):
        content = (
            part.content if isinstance(part.content, str) else [_part_key(p) for p in part.content]
        )
        return ["r", part.call_id, content, part.is_error, part.name, _thaw(part.extra)]
    if isinstance(part, MediaPart):
        return [
            "m",
            part.kind,
            part.media_type,
            part.url,
            part.data,
            part.filename,
            _thaw(part.extra),
        ]
    if isinstance(part, ReasoningPart):
        return ["z", part.text, part.signature, part.encrypted, part.redacted, _thaw(part.extra)]
    return ["o", part.kind, _thaw(part.raw), part.text]


def content_hash(message: Message) -> str:
    """sha256 (hex) of a canonical JSON form of the message: equal messages hash equal."""
    found = message._sha256
    if found is not None:
        return found
    key = [
        message.role.value,
        message.name,
        message.id,
        [_part_key(p) for p in message.parts],
        _thaw(message.extra),
    ]
    blob = json.dumps(key, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    found = hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
    object.__setattr__(message, "_sha256", found)
    return found


def derived(message: Message, key: Hashable, build: Callable[[Message, _A], _T], arg: _A) -> _T:
    """``build(message, arg)``, made once per message and ``key``: for what is a function of
    the message (which is frozen) and of ``key`` alone, ``arg`` being what ``key`` names."""
    cache = message._derived
    if cache is None:
        cache = {}
        object.__setattr__(message, "_derived", cache)
    if key in cache:
        found: _T = cache[key]
        return found
    made = cache[key] = build(message, arg)
    return made


def message_id(message: Message, position: int) -> str:
    """The caller's id if the message has one, else ``m{position}-{first 12 hex of hash}``."""
    if message.id:
        return message.id
    return f"m{position}-{content_hash(message)[:12]}"


def message_ids(messages: Sequence[Message]) -> tuple[str, ...]:
    return tuple(message_id(m, i) for i, m in enumerate(messages))
