"""The clearing tier: old tool outputs replaced by a short placeholder, before any summary.

What the field converged on (Anthropic's ``clear_tool_uses``, Claude Code's microcompact,
LangChain's ``ClearToolUsesEdit``, Gemini CLI's output masking) and what the published
results favour: an agent's old observations are most of its context and the least of what it
needs again, so answering a pressure by clearing them costs no model call and keeps every
request, decision and path the conversation carries in its own words.

The newest tool uses stay whole: the newest ``keep_uses`` of them, and as many more as fit in
``keep_tokens`` of output. Older outputs are cleared oldest first, in one batch, until the
history is down to the target; nothing is cleared unless at least ``at_least`` tokens can be
(so that the cached prefix changes once per pressure, not a little on every request). A
placeholder recognises itself: a cleared output is never cleared again.

This module is pure: what a placeholder says and how a call's arguments are cut are given by
the caller (:mod:`synopsis.compaction.clearing`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from synopsis.errors import ConfigurationError
from synopsis.messages import Message, ToolCallPart, ToolResultPart, is_summary

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["CLEARED_MARKER", "Cleared", "Clearing", "clear_outputs"]

CLEARED_MARKER = "[synopsis: cleared"
"""How every placeholder begins; a result that starts so is never cleared again."""


@dataclass(frozen=True, slots=True)
class Clearing:
    """How the clearing tier runs. ``at_least`` of ``None`` is a twentieth of the window."""

    keep_uses: int = 3
    keep_tokens: int = 0
    at_least: int | None = None
    exclude_tools: frozenset[str] = frozenset()
    clear_inputs: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude_tools", frozenset(self.exclude_tools))
        for name in ("keep_uses", "keep_tokens", "at_least"):
            value = getattr(self, name)
            if value is None and name == "at_least":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(f"{name} must be a whole number >= 0, got {value!r}")

    def least(self, window: int) -> int:
        """The fewest tokens worth clearing in ``window``."""
        return self.at_least if self.at_least is not None else window // 20


@dataclass(frozen=True, slots=True)
class Use:
    """One cleared tool output: ``messages[index].parts[part]``, the tool's ``name`` and the
    tokens its message lost."""

    index: int
    part: int
    name: str
    saved: int


@dataclass(frozen=True, slots=True)
class Cleared:
    """The history with old outputs cleared, what was cleared, and ``tokens`` (overhead
    included) before and after; ``reached`` says the target was reached. With nothing worth
    clearing, ``messages`` are those given and ``uses`` is empty."""

    messages: tuple[Message, ...]
    uses: tuple[Use, ...] = ()
    tokens_before: int = 0
    tokens: int = 0
    reachable: int = 0
    """What clearing every old output would have saved."""
    reached: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.uses)


@dataclass(slots=True)
class _Step:
    changes: list[tuple[int, Message]] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)
    total: int = 0


def _calls(messages: Sequence[Message]) -> dict[str, tuple[int, int]]:
    """Where each call id was made (the latest place, as a provider pairs them)."""
    found: dict[str, tuple[int, int]] = {}
    for i, message in enumerate(messages):
        for j, part in enumerate(message.parts):
            if isinstance(part, ToolCallPart):
                found[part.call_id] = (i, j)
    return found


def _candidates(
    messages: Sequence[Message],
    calls: dict[str, tuple[int, int]],
    config: Clearing,
    count_text: Callable[[str], int],
    whole: Callable[[Message], bool],
) -> list[tuple[int, int]]:
    """The outputs old enough to clear, oldest first, as (message, part)."""
    uses: list[tuple[int, int, ToolResultPart]] = [
        (i, j, part)
        for i, message in enumerate(messages)
        if not is_summary(message)
        for j, part in enumerate(message.parts)
        if isinstance(part, ToolResultPart)
    ]
    seen_uses = seen_tokens = 0
    old: list[tuple[int, int]] = []
    for i, j, part in reversed(uses):
        if seen_uses < config.keep_uses or seen_tokens < config.keep_tokens:
            seen_uses += 1
            if config.keep_tokens:
                seen_tokens += count_text(part.text)
            continue
        at = calls.get(part.call_id)
        name = _name(messages, at, part)
        if (
            name in config.exclude_tools
            or part.text.startswith(CLEARED_MARKER)
            or whole(messages[i])
        ):
            continue
        old.append((i, j))
    old.reverse()
    return old


def _name(messages: Sequence[Message], at: tuple[int, int] | None, part: ToolResultPart) -> str:
    if at is not None:
        call = messages[at[0]].parts[at[1]]
        assert isinstance(call, ToolCallPart)
        return call.name
    return part.name or "a tool"


def clear_outputs(
    messages: Sequence[Message],
    counts: Sequence[int],
    *,
    overhead: int,
    target: int,
    window: int,
    config: Clearing,
    count: Callable[[Message], int],
    count_text: Callable[[str], int],
    placeholder: Callable[[Message, ToolResultPart, ToolCallPart | None], str | None],
    cut_call: Callable[[ToolCallPart], ToolCallPart | None] | None = None,
    whole: Callable[[Message], bool] = lambda _: False,
    start: int = 0,
) -> Cleared:
    """``messages`` (of ``counts`` tokens, ``overhead`` outside them) with old tool outputs
    cleared down to ``target`` tokens, when at least ``config.least(window)`` can be.

    ``placeholder`` gives the text that stands for one output (``None``: it cannot be
    cleared, its original being out of reach); ``cut_call``, with ``clear_inputs``, the call
    of a cleared output with its long arguments cut; ``whole`` marks messages kept verbatim
    (pinned); nothing before ``start`` is cleared (what a provider compacted)."""
    given = tuple(messages)
    before = overhead + sum(counts)
    calls = _calls(given)
    old = [(i, j) for i, j in _candidates(given, calls, config, count_text, whole) if i >= start]
    out = list(given)
    sizes = list(counts)
    total = before
    steps: list[_Step] = []
    by_message: dict[int, list[int]] = {}
    for i, j in old:
        by_message.setdefault(i, []).append(j)
    for i, parts in by_message.items():
        step = _Step()
        message = out[i]
        new_parts = list(message.parts)
        cleared: list[tuple[int, str]] = []
        for j in parts:
            part = new_parts[j]
            assert isinstance(part, ToolResultPart)
            at = calls.get(part.call_id)
            call = out[at[0]].parts[at[1]] if at is not None else None
            assert call is None or isinstance(call, ToolCallPart)
            text = placeholder(given[i], part, call)
            if text is None or len(text) >= len(part.text):
                continue
            new_parts[j] = replace(part, content=text)
            cleared.append((j, _name(given, at, part)))
            if config.clear_inputs and cut_call is not None and at is not None and at[0] != i:
                assert call is not None
                _cut_input(out, step, at, call, cut_call)
        if not cleared:
            continue
        step.changes.append((i, replace(message, parts=tuple(new_parts))))
        saved = 0
        for index, changed in step.changes:
            out[index] = changed
            now = count(changed)
            saved += sizes[index] - now
            sizes[index] = now
        total -= saved
        # What one message's outputs saved, shared among them (a message holds several in
        # Anthropic's format); the calls' cut arguments count toward it.
        step.uses.extend(Use(i, j, name, saved // len(cleared)) for j, name in cleared)
        step.total = total
        steps.append(step)
    reachable = before - total
    if not steps or reachable < config.least(window):
        return Cleared(given, tokens_before=before, tokens=before, reachable=max(0, reachable))
    last = next((k for k, s in enumerate(steps) if s.total <= target), len(steps) - 1)
    result = list(given)
    uses: list[Use] = []
    for step in steps[: last + 1]:
        for index, changed in step.changes:
            result[index] = changed
        uses.extend(step.uses)
    tokens = steps[last].total
    return Cleared(tuple(result), tuple(uses), before, tokens, reachable, tokens <= target)


def _cut_input(
    out: list[Message],
    step: _Step,
    at: tuple[int, int],
    call: ToolCallPart,
    cut_call: Callable[[ToolCallPart], ToolCallPart | None],
) -> None:
    """The call's long arguments cut in its message (which ``step`` then counts)."""
    cut = cut_call(call)
    if cut is None:
        return
    ci, cj = at
    holder = next((m for k, m in step.changes if k == ci), out[ci])
    parts = list(holder.parts)
    parts[cj] = cut
    changed = replace(holder, parts=tuple(parts))
    step.changes = [(k, m) for k, m in step.changes if k != ci]
    step.changes.insert(0, (ci, changed))
