"""How one compaction shares out its window: the room (:mod:`synopsis.planning.room`) for the
run, the tail the keep policy resolves to, the summary's budget once the split is known, and
the room a compaction left unused given back to a rule summary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.compaction.rebuild import summary_for
from synopsis.errors import ConfigurationError
from synopsis.messages import Role, is_person_message, is_summary
from synopsis.planning import Keep
from synopsis.planning.room import Room, lower_tail, share_room, summary_budget

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from synopsis.compaction.setup import Setup
    from synopsis.compaction.state import Ledger, Opened, Run
    from synopsis.messages import Message
    from synopsis.planning import Decision, Measure, SplitPlan
    from synopsis.summarizers import SummaryRecord

__all__ = [
    "MIN_SUMMARY_TOKENS",
    "keep_for",
    "refill",
    "refill_cap",
    "room_for",
    "shorten",
    "squeeze",
    "summary_budget_for",
    "summary_index",
    "turn_start_tail",
]

MIN_SUMMARY_TOKENS = 256
"""No summary gets less, whatever its room: less than its frame and a sentence is no summary."""


def room_for(
    opened: Opened,
    overhead: int,
    messages: Sequence[Message],
    landing: float,
    cap: int | None = None,
) -> Room:
    """How this compaction shares out the window (:mod:`synopsis.planning.room`), from the
    tokens no summary saves: the ``overhead`` and the messages protected at the head.
    ``landing`` is the target ratio the session aims at (lower than the configured one once
    the refill breaker lowered it: then the summary's share is lowered too), and ``cap`` the
    most the target may be for the session's pace (met by a shorter tail alone)."""
    setup = opened.setup
    protect = setup.protect
    head = 0
    first_user = protect.first_user
    for message in messages:
        if protect.system and message.role in (Role.SYSTEM, Role.DEVELOPER):
            head += setup.counter.count_message(message)
        elif first_user and is_person_message(message) and not is_summary(message):
            head += setup.counter.count_message(message)
            first_user = False
    keep = setup.keep
    room = share_room(
        window=setup.window,
        limit=setup.limit,
        threshold=setup.trigger.token_threshold(setup.window),
        fixed=overhead + head,
        target_ratio=landing,
        reset_ratio=setup.governor.reset_ratio,
        summary_ratio=setup.summary_ratio,
        floor=setup.min_summary_tokens,
        ceiling=setup.max_summary_tokens,
        tail=_tail_tokens(keep, setup.window),
    )
    if cap is None or keep.kind != "auto":
        return room
    return lower_tail(room, cap)


def refill_cap(setup: Setup, decision: Decision, before: Measure, *, paced: bool) -> int | None:
    """The most a compaction may aim at so that the room it leaves holds ``refill_requests``
    more requests at the pace the session grew since the last compaction: a session that
    filled the last room within a few requests would otherwise compact again as soon (a
    shorter tail makes the room; see :func:`~synopsis.planning.room.lower_tail`). ``None``
    with no pace to go by (no compaction yet, more requests since than are counted, or a
    history that is not the last compaction's output grown: ``paced`` false)."""
    state = decision.state
    config = setup.governor
    if (
        not paced
        or state.tokens_after_last is None
        or state.requests < 1
        or state.requests >= config.paced_requests
    ):
        return None
    pace = -(-max(0, before.tokens - state.tokens_after_last) // state.requests)
    return setup.limit - config.refill_requests * pace


def _tail_tokens(keep: Keep, window: int) -> int | None:
    """The tail a keep policy asks for in tokens, when it says so before the split."""
    if keep.kind == "tokens":
        return int(keep.value)
    if keep.kind == "fraction":
        return int(keep.value * window)
    return None


def keep_for(setup: Setup, room: Room, decision: Decision, before: Measure) -> Keep:
    """The keep policy, an automatic tail resolved to the tokens the room leaves it; a
    compaction asked for below the target keeps at most half of what could be summarized."""
    keep = setup.keep
    if keep.kind != "auto":
        return keep
    tail = room.tail
    if decision.code == "forced":
        tail = min(tail, max(0, before.tokens - room.fixed) // 2)
    return Keep.tokens(tail)


def turn_start_tail(setup: Setup, room: Room, budget: int | None) -> int | None:
    """A tail fitted to ``budget`` tokens may reach back to a turn start a little beyond it
    (less than the landing's tolerance): zrb's 70% of the trigger would keep some 70k tokens
    of a long agent turn at 128k, leave too little to summarize and land far over the
    target. ``None`` (zrb's share) for a tail the caller sized and kept as asked."""
    if budget is None:
        return None
    return budget + int(TURN_START_SLACK * setup.window)


TURN_START_SLACK = 0.04
"""How far past its room a tail may reach to begin at a turn start, as a share of the window."""


def summary_budget_for(run: Run, plan: SplitPlan) -> int:
    """What the summary may take: what the kept messages leave of the target, and at least
    its planned share when the tail came out larger than planned (a tail of large tool
    results, or one that cannot be cut shorter), between the floor and the summarizer's
    ceiling; beyond its planned share, never more than leaves the whole within the window
    less the reserve (see :mod:`synopsis.planning.room`)."""
    setup, room = run.setup, run.room
    kept = run.overhead + plan.tokens_head + plan.tokens_tail
    budget = summary_budget(
        max(room.target - kept, room.summary),
        floor=setup.min_summary_tokens,
        ceiling=setup.max_summary_tokens,
    )
    # The room's target never exceeds the limit, so a budget from it leaves the whole within
    # the window less the reserve. A tail too large to leave room is not met by cutting the
    # record (its content would be lost for good): the next pass cuts the tail shorter and
    # updates this record.
    floor = setup.min_summary_tokens
    # Never more than what it replaces: a summary as long as its messages saves nothing.
    return min(max(budget, floor), max(plan.tokens_summarized, floor))


def summary_index(ledger: Ledger, messages: Sequence[Message]) -> int | None:
    """Where the newest summary this compaction wrote stands in ``messages``, if it does."""
    last = ledger.last
    if last is None:
        return None
    return next((i for i, m in enumerate(messages) if m is last.message), None)


def refill(
    run: Run,
    final: tuple[Message, ...],
    after: Measure,
    limit: int,
    *,
    offload_ref: str | None,
    valid: Callable[[tuple[Message, ...]], bool],
) -> tuple[tuple[Message, ...], Measure]:
    """The rule summary written again with the room the compaction left unused. Its budget
    was set before the tail was known for certain (a tail of large results shrunk after the
    split), and a summary cut while the target still has room forgets for nothing. When the
    compaction took several passes, each updating the last one's record, the new summary is
    written once over everything they summarized, from the record the session had before,
    room to spare or not: what the first pass cut to fit its smaller room comes back. Only
    the offline rules, which cost nothing to run again; the record keeps the newest id, and
    the history must still fit within ``limit`` (under what the caller sent) and be valid,
    or the first one stands."""
    setup, ledger, room = run.setup, run.ledger, run.room
    last = ledger.last
    index = summary_index(ledger, final)
    if last is None or index is None:
        return final, after
    made = ledger.records[-last.made :]
    if not any(r.truncated for r in made) or any(r.model != setup.rules.model for r in made):
        return final, after
    spare = min(room.target, limit) - after.tokens
    budget = min(last.budget + spare, setup.max_summary_tokens)
    if last.made == 1 and (spare < MIN_SUMMARY_TOKENS or budget <= last.budget):
        return final, after
    # Several passes are written as one even with no room to spare: the same budget spent
    # once over everything keeps what matters most of all of it. The rules met that budget
    # for these passes already, so the frame fits it.
    budget = max(budget, last.budget)
    message, record = _rewrite(run, budget, offload_ref)
    refilled = (*final[:index], message, *final[index + 1 :])
    measured = run.opened.measure(refilled)
    if measured.tokens > limit or not valid(refilled):
        return final, after
    ledger.rewrite(record, message, budget)
    return refilled, measured


def squeeze(
    run: Run, kept: tuple[Message, ...], index: int, over: int, *, offload_ref: str | None
) -> tuple[Message, ...]:
    """``kept`` with the summary at ``index`` (the newest this compaction wrote) written again
    by the rules, ``over`` tokens shorter and more, below the floor if it must be: the last
    resort before a compaction gives up because the kept messages and a summary at its floor
    are a few tokens too many. Nothing changes when even the summary's frame would not fit."""
    count = run.setup.counter.count_message
    allowed = count(kept[index]) - over
    budget = allowed - _SQUEEZE_MARGIN
    # The budget is the rendered record's; the message around it (its framing, where the
    # originals are stored) costs a little more, so each further try takes off what is left.
    while budget > 0:
        try:
            message, record = _rewrite(run, budget, offload_ref)
        except ConfigurationError:
            break  # not even the frame fits
        excess = count(message) - allowed
        if excess <= 0:
            run.ledger.rewrite(record, message, budget)
            return (*kept[:index], message, *kept[index + 1 :])
        # Cuts come in steps: what fits a little less may be the same record.
        budget = min(budget, run.setup.rules.measure(record)) - excess
    return kept


def shorten(
    run: Run,
    kept: tuple[Message, ...],
    index: int,
    over: int,
    previous: SummaryRecord,
    *,
    offload_ref: str | None,
) -> tuple[Message, ...]:
    """``kept`` with the session's summary at ``index`` (``previous``'s, which this compaction
    kept as it was) written again by the rules, ``over`` tokens shorter and more, as this
    compaction's record: the last resort when the summary is all there is left to shorten.
    Nothing changes when not even its frame would fit."""
    setup, opened = run.setup, run.opened
    count = setup.counter.count_message
    allowed = count(kept[index]) - over
    budget = allowed - _SQUEEZE_MARGIN
    while budget > 0:
        try:
            record = setup.rules.summarize(
                (), previous=previous, instructions=opened.request.instructions, max_tokens=budget
            )
        except ConfigurationError:
            break  # not even the frame fits
        message = summary_for(
            record,
            profile=setup.profile_for(opened.format),
            role=setup.summary_role,
            style=setup.summary_style,
            offload_ref=offload_ref,
        )
        excess = count(message) - allowed
        if excess <= 0:
            run.ledger.record(record, message, (), previous, budget)
            return (*kept[:index], message, *kept[index + 1 :])
        budget = min(budget, setup.rules.measure(record)) - excess
    return kept


_SQUEEZE_MARGIN = 8
"""Tokens a squeezed summary gives up beyond the overshoot: the rebuilt message's framing
(role, separators) is counted apart from the rendered text the rules fit."""


def _rewrite(run: Run, budget: int, offload_ref: str | None) -> tuple[Message, SummaryRecord]:
    """The rule summary of everything this compaction's last run of passes summarized, within
    ``budget``, as a message, keeping the newest record's id. Raises ``ConfigurationError``
    when not even its frame fits."""
    setup, ledger = run.setup, run.ledger
    last, record = ledger.last, ledger.head
    assert last is not None
    assert record is not None
    larger = setup.rules.summarize(
        last.sources,
        previous=last.base,
        instructions=run.opened.request.instructions,
        max_tokens=budget,
    ).model_copy(update={"id": record.id, "created_at": record.created_at})
    message = summary_for(
        larger,
        profile=setup.profile_for(run.opened.format),
        role=setup.summary_role,
        style=setup.summary_style,
        offload_ref=offload_ref,
    )
    return message, larger
