"""Landing where a compaction aims: the verbatim tail fitted to the room the target leaves it.

A compaction shares the window out before it cuts (:mod:`synopsis.planning.room`): the fixed
part, the summary, and the tail kept verbatim. The split search keeps whole units, so a tail
holding one large unit (a tool's long output, a long answer) either overshoots its room, and
the compaction lands near the trigger and fires again a request later, or leaves that unit to
the summary and lands far under its target. Both are fixed here, in the same compaction:

- a tail over its room has its largest parts made small (a result digested, long arguments
  cut; the originals are offloaded like any reduced message) until it fits;
- a tail well under its room takes in the unit just before it, made small, when that is what
  it takes for the unit to fit.

Each change is planned again, so the split still falls on a safe boundary. What is made small,
in order: tool results, then call arguments, then what the model wrote, then what a person
wrote; never the system prompt, a summary, the first request or the latest one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

from synopsis.compaction.budgets import TURN_START_SLACK, turn_start_tail
from synopsis.compaction.shrink import shrink_parts
from synopsis.messages import Role, is_person_message, is_summary
from synopsis.planning import Keep, plan_split
from synopsis.planning.units import Structure, analyze

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from synopsis.compaction.state import Opened, Run
    from synopsis.messages import Message
    from synopsis.planning import SplitPlan
    from synopsis.planning.room import Room

__all__ = ["FILL_SLACK", "Planner", "Tail", "fit_tail", "land", "tail_budget"]

Planner: TypeAlias = "Callable[[Sequence[Message], Sequence[int]], SplitPlan | None]"
"""The first pass's split of a history, with the compaction's options, given its messages
and their token counts."""

FILL_SLACK = 0.05
"""A tail this share of the window under its room takes in the unit before it (made small):
the landing's tolerance is twice that."""
_ROUNDS = 4
"""Plans a fitting may try: each shrinks the tail or takes in one unit, and most need one."""


@dataclass(frozen=True, slots=True)
class Tail:
    """The history with its tail fitted, and how the pass loop is to split it: ``keep``,
    whether the caller's tail is ``hold``-ed whole, and how far a cut may reach back to a
    turn start (``turn_start``; ``None``: zrb's share)."""

    messages: tuple[Message, ...]
    keep: Keep
    hold: bool
    turn_start: int | None
    counts: list[int]
    """The tokens of each of ``messages``."""
    structure: Structure
    """Where ``messages`` may be cut (made small or not, their units are the same)."""


def land(
    run: Run, messages: tuple[Message, ...], keep: Keep, *, emergency: bool, forced: bool = False
) -> Tail:
    """The tail of this compaction: fitted to its room with the automatic tail (``keep`` is
    then its resolved size); a tail the caller sized is held whole, but in an emergency, where
    it gives way to the room as little as it must. A compaction asked for (``forced``) is
    for a summary of what lies before its tail: nothing is made small to fit it."""
    setup = run.setup
    budget: int | None = int(keep.value)
    hold = False
    counts = [setup.counter.count_message(m) for m in messages]
    structure = analyze(messages)
    if setup.keep.kind != "auto":
        budget = tail_budget(run.room, keep, counts, setup.window, emergency=emergency)
        if budget is None:
            hold = True
        elif budget < sum(counts[keep.desired_boundary(counts, 0, setup.window) :]):
            keep = Keep.tokens(budget)
            run.ledger.give_way()
    # A compaction asked for may reach back to a turn start anywhere in the room.
    turn_start = turn_start_tail(setup, run.room, None if forced else budget)
    if forced and setup.keep.kind == "auto":
        turn_start = run.room.target - run.room.fixed
    if budget is not None and not forced:
        planner = partial(
            plan_split,
            keep=keep,
            threshold=setup.trigger.token_threshold(setup.window) or setup.window,
            window=setup.window,
            protect=setup.protect,
            min_tail=setup.governor.min_tail_messages,
            structure=structure,
            turn_start_tail=turn_start,
        )
        messages, counts = fit_tail(
            run.opened, messages, counts, structure, budget=budget, plan=planner
        )
    return Tail(messages, keep, hold, turn_start, counts, structure)


def tail_budget(
    room: Room, keep: Keep, counts: Sequence[int], window: int, *, emergency: bool
) -> int | None:
    """In an emergency, the tokens a tail the caller sized (``keep``) may take: the room's
    when it asked for more, its own size when less; ``None`` outside one, where the caller's
    tail is kept as asked."""
    if not emergency:
        return None
    asked = sum(counts[keep.desired_boundary(counts, 0, window) :])
    return min(room.tail, asked)


def fit_tail(
    opened: Opened,
    messages: tuple[Message, ...],
    counts: list[int],
    structure: Structure,
    *,
    budget: int,
    plan: Planner,
) -> tuple[tuple[Message, ...], list[int]]:
    """``messages`` (of ``counts`` tokens each, cut where ``structure`` says) with the tail
    ``plan`` cuts fitted to ``budget`` tokens (see the module docstring), and their counts;
    the same messages when they fit already or nothing can be made small. Making a part
    small changes no unit, so ``structure`` holds throughout."""
    setup = opened.setup
    count = setup.counter.count_message
    slack = int(FILL_SLACK * setup.window)
    # The split may reach a little past the budget to begin the tail at a turn start: that
    # much is no reason to make anything small.
    over = budget + int(TURN_START_SLACK * setup.window)
    keep = _untouchable(messages)
    for _ in range(_ROUNDS):
        found = plan(messages, counts)
        if found is None:
            break
        start = found.boundary
        if found.tokens_tail > over:
            smaller = shrink_parts(
                opened, messages, range(start, len(messages)), found.tokens_tail - budget, keep
            )
        elif budget - found.tokens_tail > slack and start > 0 and start - 1 not in found.head:
            smaller = _take_in(opened, messages, counts, found, structure, budget=budget, keep=keep)
        else:
            break
        if smaller is None:
            break
        counts = [
            n if new is old else count(new)
            for n, new, old in zip(counts, smaller, messages, strict=True)
        ]
        messages = smaller
        keep = _untouchable(messages)
    return messages, counts


def _take_in(
    opened: Opened,
    messages: tuple[Message, ...],
    counts: Sequence[int],
    found: SplitPlan,
    structure: Structure,
    *,
    budget: int,
    keep: frozenset[int],
) -> tuple[Message, ...] | None:
    """``messages`` with the unit just before the tail made small enough to join it, or
    ``None`` when it cannot be (or would fit as it is: the split then had its reasons)."""
    start = found.boundary
    unit = structure.unit(start - 1)
    if any(i in keep or i in found.head for i in unit):
        return None
    spare = budget - found.tokens_tail
    size = sum(counts[i] for i in unit)
    if size <= spare:
        return None
    smaller = shrink_parts(opened, messages, unit, size - spare, keep)
    if smaller is None:
        return None
    count = opened.setup.counter.count_message
    if sum(count(smaller[i]) for i in unit) > spare:
        return None  # made smaller, but still too large to join: the summary takes it
    return smaller


def _untouchable(messages: Sequence[Message]) -> frozenset[int]:
    """What is never made small here: system messages, summaries, and the first and the
    latest message a person wrote (the task as stated and as it stands)."""
    people = [i for i, m in enumerate(messages) if is_person_message(m) and not is_summary(m)]
    fixed = {i for i, m in enumerate(messages) if m.role is Role.SYSTEM or is_summary(m)}
    return frozenset(fixed | set(people[:1]) | set(people[-1:]))
