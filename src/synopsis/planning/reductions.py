"""Cheap reductions that need no summarizer, applied before any summarizing.

- *Argument truncation* (adk-deepagents' ``TruncateArgsConfig``): once usage passes 70% of the
  window, string arguments longer than 2,000 characters of file-writing tools (``write_file``,
  ``edit_file``) older than the last 20 messages keep a 20-character prefix and a marker. The
  record of which tool ran with which target survives; the file body, already on disk, goes.
- *Duplicate results*: an old tool result identical to an earlier one becomes a short
  reference to the first, keeping its call id so the pair stays intact.
- *Oversized parts* (zrb's message-level threshold, by default half the conversation
  threshold): a single text or tool-result part that large is *marked* for message-level
  summarization; the summarizer replaces its content and leaves its pair intact.

Each reduction recognises its own output and leaves it alone, so running them twice changes
nothing. Messages that are not touched keep their identity (token caches stay warm).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, TypeAlias

from synopsis.errors import ConfigurationError
from synopsis.messages import (
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    derived,
    is_summary_text,
    keeps_shape,
    thaw,
)
from synopsis.planning.triggers import Measure, Trigger

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "DUPLICATE_MARKER",
    "SUMMARY_MARKER",
    "Oversized",
    "Reduced",
    "Reduction",
    "Reductions",
    "TruncateArgs",
    "reduce",
    "truncate_call",
]

DUPLICATE_MARKER = "[synopsis: identical to the result of tool call"
SUMMARY_MARKER = "Summary of tool output:"
"""How message-level summaries begin; a part that starts so is never marked again."""


@dataclass(frozen=True, slots=True)
class TruncateArgs:
    tools: frozenset[str] = frozenset({"write_file", "edit_file"})
    trigger: Trigger = field(default_factory=lambda: Trigger.fraction(0.7))
    keep_messages: int = 20
    max_length: int = 2000
    prefix: int = 20
    marker: str = "...(argument truncated)"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", frozenset(self.tools))
        for name in ("keep_messages", "max_length", "prefix"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(f"{name} must be a whole number >= 0, got {value!r}")
        if self.prefix + len(self.marker) >= self.max_length:
            raise ConfigurationError(
                f"prefix ({self.prefix}) plus the marker must be shorter than max_length "
                f"({self.max_length}), or truncating would not shorten anything"
            )


@dataclass(frozen=True, slots=True)
class Reductions:
    """Which reductions run. ``None`` switches one off."""

    truncate_args: TruncateArgs | None = field(default_factory=TruncateArgs)
    dedupe_results: bool = True
    dedupe_min_chars: int = 200
    dedupe_keep_messages: int = 20
    message_threshold: float | None = 0.5
    """A part above this share of the conversation threshold is marked (zrb: 50%)."""


@dataclass(frozen=True, slots=True)
class Reduction:
    kind: Literal["truncate_args", "dedupe_result"]
    index: int
    part: int
    chars_before: int
    chars_after: int
    detail: str


@dataclass(frozen=True, slots=True)
class Oversized:
    """A part to summarize on its own: ``messages[index].parts[part]``, ``tokens`` long."""

    index: int
    part: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Reduced:
    messages: tuple[Message, ...]
    applied: tuple[Reduction, ...] = ()
    oversized: tuple[Oversized, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def _truncate_value(
    value: object, cfg: TruncateArgs, note: Callable[[str], str] | None = None
) -> tuple[object, int]:
    """``value`` with its long strings cut, and how many characters went."""
    if isinstance(value, str):
        if len(value) > cfg.max_length:
            cut = value[: cfg.prefix] + cfg.marker
            noted = cut + note(value) if note is not None else cut
            # A note that would make the cut longer than the original is left out.
            cut = noted if len(noted) < len(value) else cut
            return cut, len(value) - len(cut)
        return value, 0
    if isinstance(value, dict):
        out: dict[str, object] = {}
        saved = 0
        for k, v in value.items():
            out[k], s = _truncate_value(v, cfg, note)
            saved += s
        return out, saved
    if isinstance(value, list):
        items: list[object] = []
        saved = 0
        for v in value:
            new, s = _truncate_value(v, cfg, note)
            items.append(new)
            saved += s
        return items, saved
    return value, 0


def truncate_call(
    part: ToolCallPart, cfg: TruncateArgs, note: Callable[[str], str] | None = None
) -> ToolCallPart | None:
    """``part`` with long string arguments cut to a prefix and the marker (JSON kept valid), or
    ``None`` when nothing is long enough to cut or the arguments are not JSON. ``note`` gives
    what to say after the marker about the text cut (what it named), where that is shorter."""
    if isinstance(part.arguments, str):
        try:
            parsed = json.loads(part.arguments)
        except ValueError:
            return None  # arguments that are not JSON are left as they are, never made invalid
        new, saved = _truncate_value(parsed, cfg, note)
        if not saved:
            return None
        try:
            text = json.dumps(new, ensure_ascii=False, allow_nan=False)
        except ValueError:
            return None  # a number JSON cannot hold once parsed (1e400): leave the call alone
        return replace(part, arguments=text)
    new, saved = _truncate_value(thaw(part.arguments), cfg, note)
    if not saved:
        return None
    assert isinstance(new, dict)
    return replace(part, arguments=new)


def _result_text(part: ToolResultPart) -> str | None:
    if keeps_shape(part):
        return None  # an object the provider takes only in its shape: no note may replace it
    if isinstance(part.content, str):
        return part.content
    if all(isinstance(p, TextPart) for p in part.content):
        return part.text
    return None


def reduce(
    messages: Sequence[Message],
    counts: Sequence[int],
    *,
    measure: Measure,
    threshold: int,
    config: Reductions | None = None,
    count_text: Callable[[str], int] | None = None,
) -> Reduced:
    """Apply the switched-on reductions to ``messages`` (per-message token ``counts`` and the
    whole request's ``measure``); ``threshold`` is the conversation's token threshold.
    Oversized parts are marked only when ``count_text`` is given."""
    config = config or Reductions()
    out = list(messages)
    applied: list[Reduction] = []
    if config.truncate_args is not None and config.truncate_args.trigger.fires(measure):
        _truncate_args(out, config.truncate_args, applied)
    if config.dedupe_results:
        _dedupe_results(out, config, applied)
    oversized: list[Oversized] = []
    if config.message_threshold is not None and count_text is not None:
        limit = config.message_threshold * threshold
        oversized = _oversized(out, counts, limit, count_text)
    return Reduced(tuple(out), tuple(applied), tuple(oversized))


_Cuts: TypeAlias = "tuple[Message, tuple[tuple[int, int, int, str], ...]]"
"""A message with its long arguments cut, and what was cut: part, characters before and
after, and the call's name."""


def _truncate_args(out: list[Message], cfg: TruncateArgs, applied: list[Reduction]) -> None:
    for i in range(max(0, len(out) - cfg.keep_messages)):
        message = out[i]
        if not any(isinstance(p, ToolCallPart) and p.name in cfg.tools for p in message.parts):
            continue
        # Cut once per message and configuration: the next call finds the same copy.
        cut, cuts = derived(message, ("truncate_args", cfg), _cut, cfg)
        out[i] = cut
        applied.extend(Reduction("truncate_args", i, *c) for c in cuts)


def _cut(message: Message, cfg: TruncateArgs) -> _Cuts:
    parts = list(message.parts)
    cuts: list[tuple[int, int, int, str]] = []
    for j, part in enumerate(parts):
        if not isinstance(part, ToolCallPart) or part.name not in cfg.tools:
            continue
        cut = truncate_call(part, cfg)
        if cut is not None:
            parts[j] = cut
            cuts.append(
                (j, len(part.arguments_text), len(cut.arguments_text), f"{part.name} arguments")
            )
    return (replace(message, parts=tuple(parts)) if cuts else message), tuple(cuts)


def _dedupe_results(out: list[Message], config: Reductions, applied: list[Reduction]) -> None:
    # Keyed by the text itself: a string keeps its hash, and equal texts are compared only
    # when their hashes meet, where a digest would read every result in full.
    first: dict[str, str] = {}
    limit = max(0, len(out) - config.dedupe_keep_messages)
    for i, message in enumerate(out):
        if not any(isinstance(p, ToolResultPart) for p in message.parts):
            continue
        notes: list[tuple[int, str]] = []
        for j, part in enumerate(message.parts):
            if not isinstance(part, ToolResultPart):
                continue
            text = _result_text(part)
            if (
                text is None
                or len(text) < config.dedupe_min_chars
                or text.startswith(DUPLICATE_MARKER)
            ):
                continue
            origin = first.get(text)
            if origin is None:
                first[text] = part.call_id
                continue
            if i >= limit:
                continue
            note = f"{DUPLICATE_MARKER} {origin!r}; {len(text):,} characters]"
            notes.append((j, note))
            applied.append(Reduction("dedupe_result", i, j, len(text), len(note), origin))
        if notes:
            # The same notes on the same message give the same copy on the next call.
            noted = tuple(notes)
            out[i] = derived(message, ("dedupe_result", noted), _noted, noted)


def _noted(message: Message, notes: tuple[tuple[int, str], ...]) -> Message:
    parts = list(message.parts)
    for j, note in notes:
        part = parts[j]
        assert isinstance(part, ToolResultPart)
        parts[j] = replace(part, content=note)
    return replace(message, parts=tuple(parts))


def _oversized(
    out: Sequence[Message], counts: Sequence[int], limit: float, count_text: Callable[[str], int]
) -> list[Oversized]:
    found: list[Oversized] = []
    for i, message in enumerate(out):
        if counts[i] <= limit:
            continue  # no part can exceed the limit when its whole message does not
        for j, part in enumerate(message.parts):
            text = _part_text(part)
            # A summary of synopsis's own is replaced by the next summary, never digested: a
            # digest of it would leave the history with no summary at all.
            if (
                text is None
                or text.startswith((SUMMARY_MARKER, DUPLICATE_MARKER))
                or is_summary_text(text)
            ):
                continue
            tokens = count_text(text)
            if tokens > limit:
                found.append(Oversized(i, j, tokens))
    return found


def _part_text(part: object) -> str | None:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolResultPart):
        return None if keeps_shape(part) else part.text
    return None
