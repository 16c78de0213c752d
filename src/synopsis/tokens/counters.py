"""Token counters: the :class:`TokenCounter` protocol and its offline implementations.

A history's count is ``reply priming + sum(count_message(m)) + tool definitions``, so it is
additive over messages: ``count(a + b) == count(a) + count(b) - count([])``. Each message's
count is cached by the message's value (messages are frozen and hashable; equal ones count
the same), so recounting a history after an append tokenizes only the new message, even when
the history was decoded afresh from the caller's items. A message also keeps the last count
it was given, with the counter that gave it: the same message object, read again by the next
call or by another step of the same call, then needs no lookup by value (which compares whole
messages). The cache's bound is on the counter's own memory; a message that carries its count
does not refresh its place in it.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol, runtime_checkable

from synopsis.errors import ConfigurationError, ConversationError
from synopsis.messages import (
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    thaw,
)
from synopsis.tokens._vocab import ENCODINGS, get_encoding
from synopsis.tokens.families import family_for_model
from synopsis.tokens.framing import FRAMING, Framing, Provider, check_provider
from synopsis.tokens.media import estimate_media

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "ENCRYPTED_CHARS_PER_TOKEN",
    "CacheInfo",
    "HeuristicCounter",
    "MessageCounter",
    "TiktokenCounter",
    "TokenCounter",
    "counter_for_model",
]

DEFAULT_CACHE_SIZE: Final[int] = 131_072
_LINE_START = re.compile(r"(?<=\n)(?=[^\s/])")
"""Where a line begins with anything but white space or a slash: no piece of o200k's or
cl100k's pre-tokenizer spans it (a newline ends a piece, but for o200k's run of punctuation,
which may take newlines and slashes after it)."""
_PIECEWISE_FROM = 2_000
"""Texts at least this long are counted line by line (see TiktokenCounter.count_text)."""
_PIECES_KEPT = 16_384
_PIECE_CHARS = 100_000
"""Longer pieces are counted but not kept: a summary's lines, with the indented lines under
them, are kept; a tool output of one long line is not."""
_KEPT_CHARS = 8_000_000
"""At most this many characters of lines are kept; then they are forgotten and kept again."""
# Encrypted reasoning is base64 of ciphertext about as long as the reasoning's UTF-8 text:
# 4 base64 characters per 3 bytes, about 4 bytes per token, so about 16/3 characters a token.
ENCRYPTED_CHARS_PER_TOKEN: Final[float] = 16 / 3
_TOKENS = itertools.count(1)
"""A counter's token, new for each counter and each cleared cache (``next`` is atomic)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text, of one message, and of a whole prompt."""

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_messages(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int: ...


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    size: int
    maxsize: int


def _check_cache_size(cache_size: int) -> int:
    if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
        raise ConfigurationError(f"cache_size must be a non-negative int, not {cache_size!r}")
    return cache_size


def _tool_fields(tool: Mapping[str, Any]) -> tuple[str, str, Any]:
    """``(name, description, schema)`` of an OpenAI, Responses or Anthropic tool definition;
    anything else is counted as its whole JSON."""
    inner = tool.get("function")
    if isinstance(inner, Mapping):
        tool = inner
    name, description = tool.get("name"), tool.get("description")
    if isinstance(name, str):
        schema = tool.get("parameters", tool.get("input_schema"))
        if schema is None:
            schema = {k: v for k, v in tool.items() if k not in ("name", "description", "type")}
        return name, description if isinstance(description, str) else "", schema
    return "", "", tool


def _json(value: object) -> str:
    return json.dumps(thaw(value), ensure_ascii=False, separators=(",", ":"), default=str)


def _expand_tools(tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Gemini groups functions as ``{"functionDeclarations": [...]}``; list them one by one."""
    out: list[Mapping[str, Any]] = []
    for tool in tools:
        group = tool.get("functionDeclarations", tool.get("function_declarations"))
        if isinstance(group, Sequence) and not isinstance(group, str):
            out.extend(g for g in group if isinstance(g, Mapping))
        else:
            out.append(tool)
    return out


class MessageCounter:
    """Shared logic: framing, parts, media, tools and the count cache (by message value).

    Subclasses say how text becomes tokens by overriding :meth:`_count_texts`.
    """

    def __init__(self, provider: str, *, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self.provider: Provider = check_provider(provider)
        self.framing: Framing = FRAMING[self.provider]
        self._maxsize = _check_cache_size(cache_size)
        # Keyed by the message's value: equal messages have the same count, and a history
        # decoded afresh on every call (what compact() does) still hits.
        self._cache: OrderedDict[Message, int] = OrderedDict()
        # What a message keeps of its count is this counter's only while it holds this very
        # token: a cleared cache takes a new one. A number, not an object: a pair of numbers
        # on each message is left alone by the garbage collector, which a pair holding an
        # object is not (a long history's every message is one more thing for it to walk).
        self._token = next(_TOKENS)
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    # ------------------------------------------------------------ to override

    def _count_texts(self, texts: Sequence[str]) -> int:
        raise NotImplementedError

    # ------------------------------------------------------------ public

    def count_text(self, text: str) -> int:
        return self._count_texts((text,))

    def _cached(self, message: Message) -> int | None:
        """The cached count of ``message``, if any; the caller holds the lock."""
        kept = message._counted
        if kept is not None and kept[0] == self._token:
            return kept[1]
        count = self._cache.get(message)
        if count is not None:
            self._cache.move_to_end(message)
            object.__setattr__(message, "_counted", (self._token, count))
        return count

    def count_message(self, message: Message) -> int:
        with self._lock:
            cached = self._cached(message)
            if cached is not None:
                self._hits += 1
                return cached
        count = self._count_uncached(message)
        with self._lock:
            self._store(message, count)
        return count

    def count_messages(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        total = self.framing.reply_priming
        missing: list[Message] = []
        with self._lock:
            for message in messages:
                cached = self._cached(message)
                if cached is not None:
                    total += cached
                else:
                    missing.append(message)
            self._hits += len(messages) - len(missing)
        counts = [self._count_uncached(m) for m in missing]
        with self._lock:
            for message, count in zip(missing, counts, strict=True):
                self._store(message, count)
        total += sum(counts)
        if tools is not None:
            total += self.count_tools(tools)
        return total

    def count_tools(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        """Tokens for the tool definitions of a request (0 for none): name, description and
        compact JSON schema of each, plus the provider's per-tool and preamble overhead."""
        if tools is None:
            return 0
        if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
            raise ConversationError(
                f"tools must be a list of tool definitions, not {type(tools).__name__}",
                rule="tools",
            )
        for i, tool in enumerate(tools):
            if not isinstance(tool, Mapping):
                raise ConversationError(
                    f"tool definition {i} must be a JSON object, not {type(tool).__name__}",
                    rule="tools",
                )
        if not tools:
            return 0
        listed = _expand_tools(tools)
        texts: list[str] = []
        for tool in listed:
            name, description, schema = _tool_fields(tool)
            texts.extend((name, description, _json(schema)))
        framing = self.framing
        return (
            framing.tools_preamble
            + framing.per_tool_definition * len(listed)
            + self._count_texts(texts)
        )

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._cache), self._maxsize)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self._token = next(_TOKENS)
            self._hits = self._misses = 0
        self._clear_texts()

    def _clear_texts(self) -> None:
        """Forget what a subclass keeps of the texts it counted (nothing here)."""

    # ------------------------------------------------------------ internals

    def _store(self, message: Message, count: int) -> None:
        """Insert into the LRU; the caller holds the lock."""
        self._misses += 1
        if self._maxsize == 0:
            return
        self._cache[message] = count
        self._cache.move_to_end(message)
        object.__setattr__(message, "_counted", (self._token, count))
        if len(self._cache) > self._maxsize:
            self._cache.popitem(last=False)

    def _count_uncached(self, message: Message) -> int:
        framing = self.framing
        fixed = framing.per_message
        texts: list[str] = []
        if message.name:
            fixed += framing.per_name
            texts.append(message.name)
        for part in message.parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ToolCallPart):
                fixed += framing.per_tool_call
                texts.append(part.name)
                texts.append(part.arguments_text)
            elif isinstance(part, ToolResultPart):
                fixed += framing.per_tool_result
                if part.name:
                    texts.append(part.name)
                if isinstance(part.content, str):
                    texts.append(part.content)
                else:
                    for inner in part.content:
                        if isinstance(inner, TextPart):
                            texts.append(inner.text)
                        else:
                            fixed += estimate_media(inner, self.provider, self.count_text)
            elif isinstance(part, MediaPart):
                fixed += estimate_media(part, self.provider, self.count_text)
            elif isinstance(part, ReasoningPart):
                if part.encrypted:
                    fixed += math.ceil(len(part.encrypted) / ENCRYPTED_CHARS_PER_TOKEN)
                else:
                    texts.append(part.text)
            else:  # OpaquePart
                texts.append(part.text)
        return fixed + self._count_texts(texts)


class TiktokenCounter(MessageCounter):
    """Exact counts with a bundled tiktoken encoding (ordinary text: special-token strings in
    user text are counted as text), times ``factor`` for providers whose tokenizer differs.

    The vocabulary is loaded on first use, once per process.
    """

    def __init__(
        self,
        encoding: str = "o200k_base",
        provider: str = "openai",
        factor: float = 1.0,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if encoding not in ENCODINGS:
            known = ", ".join(sorted(ENCODINGS))
            raise ConfigurationError(f"unknown encoding {encoding!r}; expected one of {known}")
        if isinstance(factor, bool) or not isinstance(factor, int | float):
            raise ConfigurationError(f"factor must be a number, not {factor!r}")
        if not math.isfinite(factor) or factor <= 0:
            raise ConfigurationError(f"factor must be positive and finite, not {factor!r}")
        super().__init__(provider, cache_size=cache_size)
        self.encoding_name = encoding
        self.factor = float(factor)
        self._encoding: tiktoken.Encoding | None = None
        self._pieces: dict[str, int] = {}
        self._kept_chars = 0

    def __repr__(self) -> str:
        return (
            f"TiktokenCounter(encoding={self.encoding_name!r}, provider={self.provider!r}, "
            f"factor={self.factor!r})"
        )

    @property
    def encoding(self) -> tiktoken.Encoding:
        found = self._encoding
        if found is None:
            found = self._encoding = get_encoding(self.encoding_name)
        return found

    def _count_texts(self, texts: Sequence[str]) -> int:
        encode = self.encoding.encode_ordinary
        return self._scaled(sum(len(encode(t)) for t in texts if t))

    def _scaled(self, raw: int) -> int:
        if self.factor == 1.0:
            return raw
        return math.ceil(round(raw * self.factor, 6))

    def _clear_texts(self) -> None:
        self._pieces.clear()
        self._kept_chars = 0

    def count_text(self, text: str) -> int:
        """Tokens of ``text``. A long text is counted line by line, each line's count kept:
        a summarizer fitting a summary to its budget counts one rendering after another that
        share most of their lines. The count is exact: the encoding's pre-tokenizer never
        joins a newline to what follows it (see ``_LINE_START``), so the tokens of the
        pieces split there add up to the tokens of the whole."""
        if len(text) < _PIECEWISE_FROM:
            return self._count_texts((text,))
        encode = self.encoding.encode_ordinary
        kept = self._pieces
        raw = 0
        for piece in _LINE_START.split(text):
            count = kept.get(piece)
            if count is None:
                count = len(encode(piece))
                if len(piece) <= _PIECE_CHARS:
                    self._kept_chars += len(piece)
                    if len(kept) >= _PIECES_KEPT or self._kept_chars > _KEPT_CHARS:
                        kept.clear()  # what the next renderings share is counted again, once
                        self._kept_chars = len(piece)
                    kept[piece] = count
            raw += count
        return self._scaled(raw)


class HeuristicCounter(MessageCounter):
    """No tokenizer: ``ceil(characters / chars_per_token)`` per message, plus the framing."""

    def __init__(
        self,
        chars_per_token: float = 4.0,
        provider: str = "openai",
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if isinstance(chars_per_token, bool) or not isinstance(chars_per_token, int | float):
            raise ConfigurationError(f"chars_per_token must be a number, not {chars_per_token!r}")
        if not math.isfinite(chars_per_token) or chars_per_token <= 0:
            raise ConfigurationError(
                f"chars_per_token must be positive and finite, not {chars_per_token!r}"
            )
        super().__init__(provider, cache_size=cache_size)
        self.chars_per_token = float(chars_per_token)

    def __repr__(self) -> str:
        return (
            f"HeuristicCounter(chars_per_token={self.chars_per_token!r}, "
            f"provider={self.provider!r})"
        )

    def _count_texts(self, texts: Sequence[str]) -> int:
        return math.ceil(round(sum(map(len, texts)) / self.chars_per_token, 6))


@functools.lru_cache(maxsize=32)
def _shared(encoding: str, provider: str, factor: float) -> TiktokenCounter:
    return TiktokenCounter(encoding, provider, factor)


def counter_for_model(model: str | None) -> TokenCounter:
    """A counter for ``model`` (see :mod:`synopsis.tokens.families` for the rules and factors).

    Counters are shared per family, so their message caches serve every caller.
    """
    family = family_for_model(model)
    return _shared(family.encoding, family.provider, family.factor)
