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
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from synopsis.compaction.budgets import (
    keep_for,
    refill,
    room_for,
    summary_budget_for,
    turn_start_tail,
)
from synopsis.compaction.effects import (
    Effect,
    Outcome,
    SaveCompaction,
    SaveSession,
)
from synopsis.compaction.fitting import fitted, unreachable, verify
from synopsis.compaction.opening import open_run, previous_record, problems
from synopsis.compaction.projection import recorded
from synopsis.compaction.result import CompactionResult
from synopsis.compaction.shrink import reduce_cheaply
from synopsis.compaction.state import Request, Run
from synopsis.compaction.summarizing import drive, offload_ref
from synopsis.errors import (
    StoreError,
)
from synopsis.events import (
    CompactionCompleted,
    CompactionFailed,
    CompactionSkipped,
    CompactionStarted,
    SummarizerFellBack,
    emit,
)
from synopsis.formats import body_system, encode, wire_items
from synopsis.messages import (
    Message,
    Role,
    is_summary,
)
from synopsis.planning import (
    GovernorState,
    check_savings,
    decide,
    iter_passes,
    record_compaction,
    record_failure,
    turn_key,
)
from synopsis.stores import LAST_SUMMARY_CHARS, Compaction, SessionState
from synopsis.summarizers import Usage, render
from synopsis.validation.rules import separate_system

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence

    from synopsis.compaction.prefix import Prefix
    from synopsis.compaction.setup import Setup
    from synopsis.planning import Code, Decision, Measure, PassResult

__all__ = [
    "DEFAULT_SESSION",
    "Observer",
    "Request",
    "compaction",
    "govern",
    "output_items",
    "problems",
    "skip_event",
]

_GIVES_WAY = frozenset({"under-trigger", "cooldown", "min-messages", "per-turn-cap"})
"""Reasons not to compact that give way when the history no longer leaves room to answer."""
DEFAULT_SESSION = "default"
"""The session a store keeps offloaded messages under when the caller names none."""


_IN_LIST: frozenset[str] = frozenset({"openai", "responses"})
"""Formats whose system prompt sits in the list, unless the caller gives it apart."""


def output_items(run: Run, messages: Sequence[Message]) -> tuple[list[Any], object]:
    """The caller's items for ``messages`` (its own where a message is kept as decoded) and
    the system prompt to send apart."""
    if messages is run.messages and not run.fixes and not run.projected:
        items = wire_items(run.request.data, run.format)
        return list(items), body_system(run.request.data, run.format, run.request.system)
    apart: object = None
    if run.format in _IN_LIST and separate_system(messages, run.format):
        # A system prompt the caller gave apart from an OpenAI list goes back apart, as given.
        apart = body_system(run.request.data, run.format, run.request.system)
        messages = messages[1:]
    if run.format == "openai":
        # The caller's own item for each message kept exactly as it was decoded, so that the
        # output is byte for byte what a client sending its whole history again gets too.
        given = wire_items(run.request.data, run.format)
        lead = len(run.decoded) - len(given)
        out: list[Any] = []
        for message in messages:
            index = run.originals.index(message)
            if index is not None and index >= lead and run.decoded[index] is message:
                out.append(given[index - lead])
            else:
                out.extend(encode([message], run.format).messages)
        return out, apart
    wire = encode(messages, run.format)
    return list(wire.messages), wire.system if apart is None else apart


def _result(
    run: Run,
    messages: tuple[Message, ...],
    *,
    compacted: bool,
    code: Code,
    reason: str,
    before: Measure,
    after: Measure,
) -> CompactionResult:
    items, system = output_items(run, messages)
    return CompactionResult(
        messages=items,
        compacted=compacted,
        code=code,
        reason=reason,
        record=run.records[-1] if run.records else None,
        tokens_before=before.tokens,
        tokens_after=after.tokens,
        events=tuple(run.events),
        system=system,
        format=run.format,
        fixes=tuple(run.fixes),
        offloaded=tuple(m.id for m in run.stored),
        session_id=run.session_id,
    )


def skip_event(session_id: str | None, decision: Decision) -> CompactionSkipped:
    """The event that tells why ``decision`` compacts nothing."""
    m = decision.measure
    return CompactionSkipped(
        session_id=session_id,
        reason=decision.code,
        detail=decision.reason,
        messages=m.messages,
        tokens=m.tokens,
    )


def _skip(run: Run, decision: Decision) -> CompactionResult:
    m = decision.measure
    run.emit(skip_event(run.session_id, decision))
    return _result(
        run,
        run.messages,
        compacted=False,
        code=decision.code,
        reason=decision.reason,
        before=m,
        after=m,
    )


def _nothing(decision: Decision) -> Decision:
    return replace(
        decision,
        compact=False,
        code="nothing-to-compact",
        reason="nothing before the kept tail can be summarized",
    )


def _skip_saving(run: Run, decision: Decision) -> Generator[Effect, Outcome, CompactionResult]:
    """A compaction given up after it started: the governor's state is still kept."""
    yield from _save(run, decision.state)
    return _skip(run, decision)


def _save(run: Run, governor: GovernorState) -> Generator[Effect, Outcome, None]:
    if not (run.setup.has_store and run.session_id is not None):
        return
    state = replace(run.state, governor=governor.to_json(), updated_at=datetime.now(UTC))
    outcome = yield SaveSession(state)
    if isinstance(outcome, BaseException):
        raise StoreError(f"could not save session {run.session_id!r}: {outcome}") from outcome
    run.state = state


def govern(
    setup: Setup, before: Measure, governor: GovernorState, turn: str | None, *, force: bool
) -> Decision:
    """The governor's decision on a history of ``before``, with the emergency it cannot
    refuse: a request that leaves no room for the answer."""
    decision = decide(
        before,
        state=governor,
        config=setup.governor,
        trigger=setup.trigger,
        turn=turn,
        force=force,
    )
    limit = setup.limit
    if not decision.compact and before.tokens > limit and decision.code in _GIVES_WAY:
        # The trigger is a share of the whole window, but the request must leave room for
        # the answer: past that, it is an emergency whatever the trigger says.
        decision = replace(
            decision,
            compact=True,
            code="emergency",
            reason=f"{before.tokens:,} tokens leave less than the {setup.reserve:,} reserved "
            f"for the answer in a window of {setup.window:,}",
        )
    return decision


Observer: TypeAlias = "Callable[[Run, Measure], None]"
"""Told the run and its size when a call ends in a skip of a history as the caller gave it,
and the run when a compaction completed (its ``final`` set)."""


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
        run = yield from open_run(setup, request, prefix)
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
        GovernorState.from_json(run.state.governor) if run.state.governor else GovernorState()
    )
    before = run.measure(run.given)
    decision = govern(setup, before, governor, turn_key(run.messages), force=request.force)
    if not decision.compact:
        yield from _save(run, decision.state)
        if observe is not None:
            observe(run, before)
        return _skip(run, decision)
    run.emit(
        CompactionStarted(
            session_id=run.session_id,
            messages=before.messages,
            tokens=before.tokens,
            reason=decision.code,
        )
    )
    try:
        result = yield from _compact(run, decision, before, started)
    except Exception as error:
        run.emit(
            CompactionFailed(
                session_id=run.session_id,
                stage=getattr(error, "stage", "compact"),
                error=str(error),
                error_type=type(error).__name__,
            )
        )
        if not isinstance(error, StoreError):
            # A store that failed has the old state still; anything else is a failed attempt
            # the breaker counts (a history that cannot fit would fail the same way again).
            yield from _save(run, record_failure(decision.state))
        raise
    if observe is not None and run.final is not None:
        observe(run, before)
    return result


def _compacted_state(
    run: Run, decision: Decision, after: Measure, final: Sequence[Message]
) -> SessionState:
    """The session as this compaction leaves it: the governor's memory, the chain's head, the
    counters, and the part of the caller's history the new summary stands for."""
    setup = run.setup
    governor, _ = record_compaction(
        decision.state, after, config=setup.governor, trigger=setup.trigger
    )
    if any(isinstance(e, SummarizerFellBack) for e in run.events):
        # The compaction stands, but the summarizer failed: the breaker counts it, so that a
        # summarizer that keeps failing (or hanging) stops being asked.
        governor = replace(governor, consecutive_failures=decision.state.consecutive_failures + 1)
    record = run.records[-1] if run.records else None
    summary_text = render(record) if record is not None else ""
    # Only a session in a store is sent again and remembers where its summary stands.
    kept = run.clean and setup.has_store and run.session_id is not None
    projection = recorded(final, run.decoded, run.originals, run.format) if kept else None
    return replace(
        run.state,
        projection=projection.to_json() if projection is not None else {},
        governor=governor.to_json(),
        summary_id=record.id if record is not None else run.state.summary_id,
        compactions=run.state.compactions + 1,
        tokens_summarized=run.state.tokens_summarized + sum(r.tokens_in for r in run.records),
        last_summary=summary_text[:LAST_SUMMARY_CHARS] or run.state.last_summary,
        offset=run.state.offset + len(run.stored),
        updated_at=datetime.now(UTC),
    )


def _compact(
    run: Run, decision: Decision, before: Measure, started: float
) -> Generator[Effect, Outcome, CompactionResult]:
    setup = run.setup
    limit = setup.limit
    system = sum(setup.counter.count_message(m) for m in run.messages if m.role is Role.SYSTEM)
    if system >= limit:
        # No summary can help: fail before paying for one.
        raise unreachable(setup, before.tokens, limit, system)
    current = reduce_cheaply(run, run.messages, before, emergency=decision.code == "emergency")
    previous = yield from previous_record(run)
    run.overhead = before.tokens - sum(setup.counter.count_message(m) for m in run.given)
    run.room = room_for(run, current)
    steps = iter_passes(
        current,
        count=setup.counter.count_message,
        overhead=run.overhead,
        keep=keep_for(run, decision, before),
        trigger=setup.trigger,
        window=setup.window,
        config=setup.governor,
        protect=setup.protect,
        turn_start_tail=turn_start_tail(run),
        # A tail the caller sized is kept verbatim but in an emergency.
        shrink_tail=decision.code == "emergency" or setup.keep.kind == "auto",
    )
    step = next(steps, None)
    first, cut = step if step is not None else (None, [])
    if (
        first is not None
        and decision.code == "forced"
        and not any(i < first.desired for i in first.summarize)
    ):
        first = None  # a manual compaction summarizes only what lies before the kept tail
    passes: PassResult | None = None
    if first is None:
        steps.close()
        if current == run.messages:
            return (yield from _skip_saving(run, _nothing(decision)))
        # the reductions alone made it smaller
    else:
        checked = check_savings(
            decision,
            tokens_summarized=first.tokens_summarized,
            summary_tokens=summary_budget_for(run, first),
            config=setup.governor,
        )
        if not checked.compact and before.tokens > limit:
            checked = decision  # little is better than nothing once the answer has no room
        if not checked.compact and current == run.messages:
            steps.close()
            return (yield from _skip_saving(run, checked))
        if checked.compact:
            passes = yield from drive(run, steps, first, cut, previous)
        else:
            steps.close()  # too little to summarize, but the reductions are worth keeping
    kept, finished = yield from fitted(
        run, passes.messages if passes is not None else current, limit, previous
    )
    final, after = refill(
        run,
        *verify(run, kept, limit, finished),
        min(limit, before.tokens - 1),
        offload_ref=offload_ref(run),
        valid=lambda history: not problems(history, setup.profile_for(run.format)),
    )
    if decision.code == "forced" and after.tokens >= before.tokens:
        # Nothing is saved, so nothing may be reported as offloaded or summarized either.
        run.stored.clear()
        run.records.clear()
        return (yield from _skip_saving(run, _nothing(decision)))
    state = _compacted_state(run, decision, after, final)
    record = run.records[-1] if run.records else None
    summary_text = render(record) if record is not None else ""
    if setup.has_store and run.session_id is not None:
        outcome = yield SaveCompaction(
            Compaction(run.session_id, tuple(run.records), tuple(run.stored), state)
        )
        if isinstance(outcome, BaseException):
            raise StoreError(
                f"the compaction was not saved, so it is not applied: {outcome}"
            ) from outcome
    run.state = state
    run.final = final
    usage = Usage(**{k: sum(getattr(u, k) for u in run.usage) for k in Usage.model_fields})
    summaries = sum(1 for m in final if is_summary(m))
    run.emit(
        CompactionCompleted(
            session_id=run.session_id,
            messages_before=before.messages,
            messages_after=after.messages,
            tokens_before=before.tokens,
            tokens_after=after.tokens,
            summarized=sum(len(r.covers) for r in run.records),
            kept=after.messages - summaries,
            desired_split=first.desired if first is not None else 0,
            used_split=first.boundary if first is not None else 0,
            summary_chars=len(summary_text),
            usage=usage,
            record_id=record.id if record is not None else "",
            duration=time.perf_counter() - started,
            tail_gave_way=run.gave_way and setup.keep.kind != "auto",
        )
    )
    return _result(
        run,
        final,
        compacted=True,
        code=decision.code,
        reason=decision.reason,
        before=before,
        after=after,
    )
