"""One compaction as a plan: normalise, decide, reduce, summarize in passes, rebuild, verify,
record. No I/O here: the summarizer and the store are effects (:mod:`.effects`) that the
drivers in :mod:`.drivers` carry out, blocking or awaiting, so both run the same steps.

The steps live beside it: :mod:`.opening` (normalise, read the session), :mod:`.shrink`
(the cheap reductions), :mod:`.summarizing` (one summary pass), :mod:`.fitting` (valid and
within the limit), :mod:`.rebuild` (the history for the provider).

The input is never changed, and nothing is saved unless the whole compaction succeeded: the
store write is the last step, one transaction, and a history whose originals were not saved is
never returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeAlias

from synopsis.compaction.budgets import (
    keep_for,
    refill,
    refill_cap,
    room_for,
    summary_budget_for,
)
from synopsis.compaction.clearing import clear_tier, uncleared
from synopsis.compaction.effects import (
    Effect,
    Outcome,
    SaveCompaction,
    SaveSession,
)
from synopsis.compaction.fitting import fitted, unreachable, verify
from synopsis.compaction.landing import FILL_SLACK, land
from synopsis.compaction.opening import open_run, previous_record
from synopsis.compaction.output import output_items
from synopsis.compaction.projection import recorded
from synopsis.compaction.result import CompactionResult, skip_event
from synopsis.compaction.shrink import reduce_cheaply
from synopsis.compaction.state import Ended, Ledger, Opened, Request, Run
from synopsis.compaction.summarizing import drive, offload_ref
from synopsis.compaction.telling import emergency_cause, off_target
from synopsis.errors import BudgetUnreachableError, StoreError
from synopsis.events import (
    CompactionCompleted,
    CompactionFailed,
    CompactionStarted,
    RefillBreakerOpened,
    SummarizerFellBack,
    emit,
)
from synopsis.messages import Message, Role, is_summary
from synopsis.planning import (
    GovernorState,
    Keep,
    check_savings,
    iter_passes,
    record_compaction,
    record_failure,
    refill_breaker,
    turn_key,
)
from synopsis.stores import LAST_SUMMARY_CHARS, Compaction, SessionState
from synopsis.summarizers import RuleBasedSummarizer, render
from synopsis.validation import check_between_turns

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence

    from synopsis.compaction.prefix import Prefix
    from synopsis.compaction.setup import Setup
    from synopsis.messages import Message
    from synopsis.planning import Decision, Measure, PassResult, SplitPlan
    from synopsis.summarizers import SummaryRecord

__all__ = ["DEFAULT_SESSION", "Observer", "Request", "compaction"]

DEFAULT_SESSION = "default"
"""The session a store keeps offloaded messages under when the caller names none."""


def _result(
    opened: Opened,
    messages: tuple[Message, ...],
    *,
    compacted: bool,
    decision: Decision,
    after: Measure,
    ledger: Ledger | None = None,
) -> CompactionResult:
    items, system = output_items(opened, messages, fixed=ledger is not None and bool(ledger.fixes))
    return CompactionResult(
        messages=items,
        compacted=compacted,
        code=decision.code,
        reason=decision.reason,
        record=ledger.head if ledger is not None else None,
        tokens_before=decision.measure.tokens,
        tokens_after=after.tokens,
        events=tuple(opened.events),
        system=system,
        format=opened.format,
        fixes=(*opened.fixes, *(ledger.fixes if ledger is not None else ())),
        offloaded=tuple(m.id for m in ledger.stored) if ledger is not None else (),
        session_id=opened.session_id,
    )


def _skip(opened: Opened, decision: Decision) -> CompactionResult:
    opened.emit(skip_event(opened.session_id, decision))
    return _result(
        opened, opened.messages, compacted=False, decision=decision, after=decision.measure
    )


_STAGES: dict[type[Exception], str] = {BudgetUnreachableError: "budget"}
"""The stage a failure of this kind is reported at, when it names none itself."""


def _unreached(
    opened: Opened, decision: Decision, error: BudgetUnreachableError
) -> CompactionResult:
    """The history as the caller gave it, with the reason it is over the window (for a
    caller that asked to be told rather than raised to: ``on_unreachable="return"``)."""
    told = replace(decision, code="budget-unreachable", reason=str(error))
    return _result(opened, opened.messages, compacted=False, decision=told, after=told.measure)


def _nothing(decision: Decision, *, held: str | None = None) -> Decision:
    """A compaction that finds nothing to summarize; ``held`` describes the tail the caller
    asked to keep verbatim when that tail holds everything that could be (outside an
    emergency it is kept whole)."""
    reason = (
        f"the tail kept as asked ({held}) holds every message that could be summarized, and "
        "outside an emergency it is kept verbatim"
        if held is not None
        else "nothing before the kept tail can be summarized"
    )
    return replace(decision, compact=False, code="nothing-to-compact", reason=reason)


def _skip_saving(
    opened: Opened, decision: Decision
) -> Generator[Effect, Outcome, tuple[CompactionResult, Ended]]:
    """A compaction given up after it started: the governor's state is still kept."""
    session = yield from _save(opened, decision.state)
    return _skip(opened, decision), Ended(opened, session)


def _save(opened: Opened, governor: GovernorState) -> Generator[Effect, Outcome, SessionState]:
    """The session with the governor's new state, saved (as it was when there is no store)."""
    if not (opened.setup.has_store and opened.session_id is not None):
        return opened.session
    state = replace(opened.session, governor=governor.to_json(), updated_at=datetime.now(UTC))
    outcome = yield SaveSession(state)
    if isinstance(outcome, BaseException):
        raise StoreError(f"could not save session {opened.session_id!r}: {outcome}") from outcome
    return state


Observer: TypeAlias = "Callable[[Ended, Measure], None]"
"""Told how a call ended that skipped a history as the caller gave it, or that completed a
compaction (``Ended.final`` set), and the history's size as given."""


def compaction(
    setup: Setup,
    request: Request,
    *,
    observe: Observer | None = None,
    prefix: Prefix | None = None,
) -> Generator[Effect, Outcome, CompactionResult]:
    """The plan of one ``compact`` call; see the module docstring. ``observe`` hears of a
    call that skips before anything started (the :class:`~.compactor.Compactor` remembers
    such a call, see :mod:`.incremental`); what ``prefix`` holds is not decoded again."""
    started = time.perf_counter()
    try:
        opened = yield from open_run(setup, request, prefix)
    except Exception as error:
        # Nothing started, but the listeners still hear why nothing will.
        event = CompactionFailed(
            session_id=request.session_id or setup.default_session,
            stage="open",
            error=str(error),
            error_type=type(error).__name__,
        )
        request.collected.append(event)
        emit(event, request.listeners)
        raise
    governor = (
        GovernorState.from_json(opened.session.governor)
        if opened.session.governor
        else GovernorState()
    )
    before = opened.measure(opened.given)
    decision = setup.decide(before, governor, turn_key(opened.messages), force=request.force)
    if not decision.compact:
        session = yield from _save(opened, decision.state)
        if observe is not None:
            observe(Ended(opened, session), before)
        return _skip(opened, decision)
    opened.emit(
        CompactionStarted(
            session_id=opened.session_id,
            messages=before.messages,
            tokens=before.tokens,
            reason=decision.code,
        )
    )
    try:
        result, ended = yield from _compact(opened, decision, before, started)
    except Exception as error:
        opened.emit(
            CompactionFailed(
                session_id=opened.session_id,
                stage=getattr(error, "stage", _STAGES.get(type(error), "compact")),
                error=str(error),
                error_type=type(error).__name__,
            )
        )
        if isinstance(error, BudgetUnreachableError):
            # Not the summarizer's failure, and no wait mends it: the breaker does not count
            # it, and every call over the window says so again (cheaply: it is found before
            # anything is summarized when what cannot shrink is too large).
            session = yield from _save(opened, decision.state)
            if observe is not None:
                # What this call decoded still serves the next one (it decodes only what is
                # appended); no skip is remembered from a call that did not return.
                observe(Ended(opened, session, raised=True), before)
            if setup.on_unreachable == "return":
                return _unreached(opened, decision, error)
        elif not isinstance(error, StoreError):
            # A store that failed has the old state still; anything else is a failed attempt
            # the breaker counts.
            failure = f"{type(error).__name__}: {error}"
            yield from _save(opened, record_failure(decision.state, failure))
        raise
    if observe is not None and ended.final is not None:
        observe(ended, before)
    return result


def _compacted_state(
    run: Run, decision: Decision, after: Measure, final: Sequence[Message]
) -> SessionState:
    """The session as this compaction leaves it: the governor's memory, the chain's head, the
    counters, and the part of the caller's history the new summary stands for."""
    opened, ledger, setup = run.opened, run.ledger, run.setup
    session = opened.session
    governor, _ = record_compaction(
        decision.state,
        after,
        config=setup.governor,
        trigger=setup.trigger,
        rules_only=decision.rules_only,
        paced=run.paced,
    )
    fell = [e for e in opened.events if isinstance(e, SummarizerFellBack)]
    if fell:
        # The compaction stands, but the summarizer failed: the breaker counts it, so that a
        # summarizer that keeps failing (or hanging) stops being asked.
        governor = record_failure(
            replace(governor, consecutive_failures=decision.state.consecutive_failures),
            f"{fell[-1].model}: {fell[-1].reason}",
        )
    governor, lowered = refill_breaker(governor, setup.governor, run.landing)
    if lowered is not None:
        run.ledger.note(
            RefillBreakerOpened(
                session_id=opened.session_id,
                compactions=setup.governor.refill_compactions,
                requests=setup.governor.refill_requests,
                landing=lowered,
            )
        )
    record = ledger.head
    summary_text = render(record) if record is not None else ""
    # Only a session in a store is sent again and remembers where its summary stands.
    kept = opened.clean and setup.has_store and opened.session_id is not None
    projection = recorded(final, opened.decoded, opened.originals, opened.format) if kept else None
    return replace(
        session,
        projection=projection.to_json() if projection is not None else {},
        governor=governor.to_json(),
        summary_id=record.id if record is not None else session.summary_id,
        compactions=session.compactions + 1,
        tokens_summarized=session.tokens_summarized + sum(r.tokens_in for r in ledger.records),
        last_summary=summary_text[:LAST_SUMMARY_CHARS] or session.last_summary,
        offset=ledger.position,
        updated_at=datetime.now(UTC),
    )


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One go at the passes: the run it wrote to, the history with its tail fitted, the first
    pass's plan and what the passes made (``None`` when nothing was summarized), or the
    decision to give up (``skip``)."""

    run: Run
    messages: tuple[Message, ...]
    first: SplitPlan | None = None
    passes: PassResult | None = None
    skip: Decision | None = None
    held: bool = False
    """Whether the caller's tail was kept whole, as asked."""


def _attempt(
    run: Run,
    current: tuple[Message, ...],
    keep: Keep,
    decision: Decision,
    previous: SummaryRecord | None,
) -> Generator[Effect, Outcome, _Attempt]:
    """The tail fitted to its room (:mod:`.landing`), then the passes the planner proposes,
    each summarized, unless the first frees too little to be worth it."""
    opened, setup = run.opened, run.setup
    emergency = decision.code == "emergency"
    reduced = current
    tail = land(run, current, keep, emergency=emergency, forced=decision.code == "forced")
    current = tail.messages
    steps = iter_passes(
        current,
        count=setup.counter.count_message,
        overhead=run.overhead,
        keep=tail.keep,
        trigger=setup.trigger,
        window=setup.window,
        config=setup.governor,
        protect=setup.protect,
        turn_start_tail=tail.turn_start,
        shrink_tail=emergency or setup.keep.kind == "auto",
        hold=tail.hold,
        counts=tail.counts,
        structure=tail.structure,
    )
    step = next(steps, None)
    first, cut = step if step is not None else (None, [])
    if (
        first is not None
        and decision.code == "forced"
        and not any(i < first.desired for i in first.summarize)
    ):
        first = None  # a manual compaction summarizes only what lies before the kept tail
    if first is None:
        steps.close()
        if current == opened.messages:
            held = setup.keep.describe() if tail.hold else None
            return _Attempt(run, current, skip=_nothing(decision, held=held))
        return _Attempt(run, current, held=tail.hold)  # the reductions alone made it smaller
    checked = check_savings(
        decision,
        tokens_summarized=first.tokens_summarized,
        summary_tokens=summary_budget_for(run, first),
        config=setup.governor,
    )
    if not checked.compact and decision.measure.tokens > setup.limit:
        checked = decision  # little is better than nothing once the answer has no room
    if not checked.compact:
        # Too little to summarize: what was made small to land the tail is not wanted
        # either, but the cheap reductions may be worth keeping.
        steps.close()
        if reduced == opened.messages:
            return _Attempt(run, reduced, skip=checked)
        return _Attempt(run, reduced, first, held=tail.hold)
    if setup.keep.kind != "auto" and first.boundary > first.desired:
        run.ledger.give_way()  # an emergency's cut into the tail the caller asked for
    passes = yield from drive(run, steps, first, cut, previous)
    return _Attempt(run, current, first, passes, held=tail.hold)


def _shortfall(attempt: _Attempt) -> int:
    """How far under its target one pass of the rules landed, when the summary said all it
    had (not cut to fit) and the automatic tail could have kept more: 0 otherwise, or when it
    is within the landing's tolerance."""
    run, passes = attempt.run, attempt.passes
    setup = run.setup
    if (
        passes is None
        or passes.passes != 1
        or setup.keep.kind != "auto"
        or not (run.rules_only or isinstance(setup.summarizer, RuleBasedSummarizer))
        or any(r.truncated or r.model != setup.rules.model for r in run.ledger.records)
    ):
        return 0
    gap = run.room.target - passes.measure.tokens
    return gap if gap > FILL_SLACK * setup.window else 0


def _summarized(attempt: _Attempt) -> bool:
    """Whether the attempt's first pass summarized anything but an earlier summary."""
    first = attempt.first
    return first is not None and any(not is_summary(attempt.messages[i]) for i in first.summarize)


def _compact(
    opened: Opened, decision: Decision, before: Measure, started: float
) -> Generator[Effect, Outcome, tuple[CompactionResult, Ended]]:
    setup = opened.setup
    limit = setup.limit
    counter = setup.counter
    overhead = before.tokens - sum(counter.count_message(m) for m in opened.given)
    system = (
        sum(counter.count_message(m) for m in opened.messages if m.role is Role.SYSTEM)
        if setup.protect.system
        else 0
    )
    if overhead + system >= limit:
        # No summary can help: fail before paying for one.
        raise unreachable(setup, before.tokens, protected=overhead + system)
    current = reduce_cheaply(
        opened, opened.messages, before, emergency=decision.code == "emergency"
    )
    previous = yield from previous_record(opened)
    landing = decision.state.landing or setup.target_ratio
    # Only a history that holds the last compaction's summary grew from its output: the pace
    # of a client that sends its whole history again cannot be told from its requests.
    paced = any(is_summary(m) for m in opened.messages)
    room = room_for(
        opened,
        overhead,
        current,
        landing,
        refill_cap(setup, decision, before, paced=paced),
    )
    run = Run(
        opened,
        Ledger(opened.session.offset),
        overhead,
        room,
        landing=landing,
        rules_only=decision.rules_only,
        paced=paced,
    )
    keep = keep_for(setup, room, decision, before)
    cleared = clear_tier(run, current) if "clear" in setup.strategy else None
    taken = (
        cleared
        if cleared is not None and (cleared.reached or "summarize" not in setup.strategy)
        else None
    )
    if taken is not None:
        # Clearing answers the pressure alone, or is all the caller asked for.
        attempt = _Attempt(run, taken.messages)
        if not taken.changed and taken.tokens <= limit:
            return (yield from _skip_saving(opened, uncleared(decision, taken, setup)))
    else:
        attempt = yield from _attempt(run, current, keep, decision, previous)
    if attempt.skip is not None:
        return (yield from _skip_saving(opened, attempt.skip))
    shortfall = _shortfall(attempt) if decision.code != "forced" else 0
    if shortfall:
        # The rule summary said all it had in less than its share: the tail takes the rest,
        # and the rules, which cost nothing to run again, summarize the shorter cut.
        again = yield from _attempt(
            replace(run, ledger=Ledger(opened.session.offset)),
            current,
            Keep.tokens(int(keep.value) + shortfall),
            decision,
            previous,
        )
        if again.skip is None and again.passes is not None and _summarized(again):
            attempt = again
    run, current, first, passes = attempt.run, attempt.messages, attempt.first, attempt.passes
    kept, finished = yield from fitted(
        run, passes.messages if passes is not None else current, limit, previous
    )
    profile = setup.profile_for(opened.format)
    final, after = refill(
        run,
        *verify(run, kept, limit, finished, previous),
        min(limit, before.tokens - 1),
        offload_ref=offload_ref(run),
        valid=lambda history: not check_between_turns(history, profile),
    )
    ledger = run.ledger
    if decision.code == "forced" and after.tokens >= before.tokens:
        ledger.discard()
        return (yield from _skip_saving(opened, _nothing(decision)))
    state = _compacted_state(run, decision, after, final)
    record = ledger.head
    summary_text = render(record) if record is not None else ""
    if setup.has_store and opened.session_id is not None:
        outcome = yield SaveCompaction(
            Compaction(opened.session_id, tuple(ledger.records), tuple(ledger.stored), state)
        )
        if isinstance(outcome, BaseException):
            raise StoreError(
                f"the compaction was not saved, so it is not applied: {outcome}"
            ) from outcome
    summaries = sum(1 for m in final if is_summary(m))
    opened.emit(
        CompactionCompleted(
            session_id=opened.session_id,
            messages_before=before.messages,
            messages_after=after.messages,
            tokens_before=before.tokens,
            tokens_after=after.tokens,
            summarized=sum(len(r.covers) for r in ledger.records),
            kept=after.messages - summaries,
            desired_split=first.desired if first is not None else 0,
            used_split=first.boundary if first is not None else 0,
            summary_chars=len(summary_text),
            usage=ledger.total_usage(),
            record_id=record.id if record is not None else "",
            duration=time.perf_counter() - started,
            tail_gave_way=ledger.gave_way and setup.keep.kind != "auto",
            window=setup.window,
            window_assumed=setup.window_assumed,
            target_tokens=run.room.target,
            off_target=off_target(run, after, current, first, held=attempt.held),
            emergency=emergency_cause(run, decision, before, paced=run.paced),
            cleared=len(taken.uses) if taken is not None else 0,
            tokens_cleared=sum(u.saved for u in taken.uses) if taken is not None else 0,
        )
    )
    for event in ledger.notes:
        opened.emit(event)
    result = _result(opened, final, compacted=True, decision=decision, after=after, ledger=ledger)
    return result, Ended(opened, state, final)
