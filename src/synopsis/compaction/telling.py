"""What a completed compaction tells: where it aimed and landed, what kept it from its target
when it missed by more than the tolerance, and, in an emergency, what filled the room."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.messages import Role, ToolCallPart, ToolResultPart, is_person_message, is_summary
from synopsis.planning.units import analyze

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from synopsis.compaction.state import Run
    from synopsis.messages import Message
    from synopsis.planning import Decision, Measure, SplitPlan

__all__ = ["TOLERANCE", "emergency_cause", "off_target"]

TOLERANCE = 0.10
"""How far from its target, as a share of the window, a compaction may land unremarked."""


def _what(message: Message) -> str:
    if message.role is Role.TOOL or any(isinstance(p, ToolResultPart) for p in message.parts):
        return "a tool's output"
    if any(isinstance(p, ToolCallPart) for p in message.parts):
        return "a tool call"
    return "a request" if is_person_message(message) else f"a {message.role.value} message"


def emergency_cause(run: Run, decision: Decision, before: Measure, *, paced: bool) -> str:
    """Why a compaction was an emergency: one new message larger than the room the last
    compaction left, the new messages together, or (with no last compaction whose output
    this history grew from: ``paced`` false) a history past the window's limit. Empty for
    any other compaction."""
    if decision.code != "emergency":
        return ""
    setup, given = run.setup, run.opened.given
    state = decision.state
    limit = setup.limit
    breaker = (
        "; the summarizer's breaker is open, so the rules summarized" if decision.rules_only else ""
    )
    if not paced or state.length_after_last is None or state.tokens_after_last is None:
        return (
            f"the history reached {before.tokens:,} tokens, past the {limit:,} the window "
            f"leaves for the answer{breaker}"
        )
    count = setup.counter.count_message
    fresh = range(min(state.length_after_last, len(given)), len(given))
    room = max(0, limit - state.tokens_after_last)
    sizes = [(count(given[i]), i) for i in fresh]
    largest = max(sizes, default=(0, -1))
    if largest[0] > room:
        size, index = largest
        return (
            f"one new message (message {index}, {_what(given[index])} of {size:,} tokens) is "
            f"larger than the {room:,} tokens of room the last compaction left{breaker}"
        )
    grown = max(0, before.tokens - state.tokens_after_last)
    return (
        f"{len(sizes)} new messages ({grown:,} tokens) filled the {room:,} tokens of room the "
        f"last compaction left{breaker}"
    )


def off_target(
    run: Run,
    after: Measure,
    current: Sequence[Message],
    first: SplitPlan | None,
    *,
    held: bool,
) -> str:
    """What kept a compaction from landing within :data:`TOLERANCE` of its target (empty
    when it did): the protected head, the tail the caller asked to keep, a unit kept whole
    that is larger than the room, a summary that came out shorter than its share, or a
    history that holds no more to keep. ``current`` is the history the passes cut, ``first``
    the first pass's plan and ``held`` whether the caller's tail was kept whole."""
    setup, room = run.setup, run.room
    window = setup.window
    gap = after.tokens - room.target
    if abs(gap) <= TOLERANCE * window:
        return ""
    share = (
        f"{after.tokens / window:.0%} of the window against a target of {room.target / window:.0%}"
    )
    count = setup.counter.count_message
    if gap > 0:
        if room.fixed > room.target - setup.min_summary_tokens:
            return (
                f"{share}: the protected head (system prompt, first request, tool definitions) "
                f"takes {room.fixed:,} tokens alone"
            )
        if held:
            return f"{share}: the tail kept as asked ({setup.keep.describe()}) is that large"
        start = first.boundary if first is not None else 0
        size, index = _largest_unit(current[start:], count)
        if size > room.tail:
            return (
                f"{share}: a unit kept whole (from message {start + index}, {size:,} tokens) "
                f"is larger than the {room.tail:,} the target leaves the tail, even with its "
                "large parts made small"
            )
        return f"{share}: the summary and the kept messages could not be made smaller"
    records = run.ledger.records
    if (
        records
        and not any(r.truncated for r in records)
        and any(r.model != setup.rules.model for r in records)
    ):
        return f"{share}: the summary came out shorter than its share of the room"
    if first is not None and first.boundary > 0:
        unit = analyze(current).unit(first.boundary - 1)
        size = sum(count(current[i]) for i in unit)
        summarized = not any(is_summary(current[i]) or i in first.head for i in unit)
        if summarized and size > room.target - after.tokens:
            return (
                f"{share}: the unit before the kept tail (from message {unit.start}, {size:,} "
                "tokens) does not fit the room left, even with its large parts made small"
            )
    return f"{share}: the history holds no more to keep once its large parts are made small"


def _largest_unit(messages: Sequence[Message], count: Callable[[Message], int]) -> tuple[int, int]:
    """The tokens and the first index of the largest unit of ``messages``."""
    structure = analyze(messages)
    best = (0, 0)
    index = 0
    while index < len(messages):
        unit = structure.unit(index)
        size = sum(count(messages[i]) for i in unit)
        best = max(best, (size, unit.start))
        index = unit.stop
    return best
