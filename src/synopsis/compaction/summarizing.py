"""One summary pass of a compaction: ask the summarizer for the cut (falling back to the
rules when it fails), offload the originals it stands for, and write the summary message.

:func:`drive` runs the passes the planner proposes; :func:`last_pass` is the one more pass
when they left too much. A cut the session's summary chain already covers, as when a caller
sends its uncompacted history again, reuses that summary instead of paying for a second one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.compaction.budgets import summary_budget_for
from synopsis.compaction.effects import Effect, Outcome, Summarize
from synopsis.compaction.opening import chain
from synopsis.compaction.rebuild import summary_for
from synopsis.errors import SummarizerError
from synopsis.events import SummarizerFellBack
from synopsis.messages import Message, content_hash, is_summary
from synopsis.planning import Keep, plan_split
from synopsis.summarizers import SummaryRecord
from synopsis.summarizers.coverage import covers_of

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

    from synopsis.compaction.state import Run
    from synopsis.planning import PassResult, PassStep, SplitPlan

__all__ = ["drive", "last_pass", "offload_ref", "summarize_step"]


def offload_ref(run: Run) -> str | None:
    """Where the messages a summary stands for can be fetched: the session's whole offloaded
    history so far (what this call added is at its end)."""
    opened, ledger = run.opened, run.ledger
    last = ledger.position
    if opened.session_id is None or not opened.setup.keeps_originals or last == 0:
        return None
    first = ledger.stored[0].position if ledger.stored else 0
    return (
        f'session "{opened.session_id}", offloaded messages 0 to {last - 1}, this part from '
        f"{first} (recall_history with start and stop, or a query)"
    )


def _chain_hashes(run: Run) -> Generator[Effect, Outcome, list[str]]:
    """The content hashes of every message the session's summary chain covers, in order
    (what this compaction summarized last)."""
    stored = yield from chain(run.opened)
    records = (*stored, *run.ledger.records)
    return [h for record in records for h in covers_of(record.covers).hashes]


def _covered(cut: Sequence[Message], chain: Sequence[str]) -> int:
    """How many leading messages of ``cut`` the summary chain already covers (by content),
    when it covers them all: a caller that sends its uncompacted history again (a retry, a
    stateless proxy) gets the summary it already has, not a second one of the same prefix."""
    # A chain longer than the cut compares unequal with the cut's hashes: nothing covered.
    hashes = [content_hash(m) for m in cut[: len(chain)]]
    return len(chain) if chain and hashes == list(chain) else 0


def summarize_step(
    run: Run, plan: SplitPlan, cut: Sequence[Message], previous: SummaryRecord | None
) -> Generator[Effect, Outcome, tuple[Message, SummaryRecord | None]]:
    opened, ledger = run.opened, run.ledger
    setup = opened.setup
    profile = setup.profile_for(opened.format)
    earlier = [m for m in cut if is_summary(m)]
    if len(earlier) == len(cut) == 1:
        # A pass whose cut is the last pass's summary alone would only summarize a summary.
        return cut[0], previous
    if previous is not None and earlier:
        source = tuple(m for m in cut if not is_summary(m))
    else:
        covered = _covered(cut, (yield from _chain_hashes(run))) if previous is not None else 0
        source, previous = (tuple(cut[covered:]), previous) if covered else (tuple(cut), None)
    if previous is not None and not source:
        # Nothing new: the summary the chain ends with stands for the cut as it is.
        message = (
            earlier[-1]
            if earlier
            else summary_for(
                previous,
                profile=profile,
                role=setup.summary_role,
                style=setup.summary_style,
                offload_ref=offload_ref(run),
            )
        )
        return message, previous
    budget = summary_budget_for(run, plan)
    instructions = opened.request.instructions
    outcome: Outcome
    if run.rules_only:
        # The summarizer's breaker is open: the offline rules, which cannot fail that way.
        outcome = setup.rules.summarize(
            source, previous=previous, instructions=instructions, max_tokens=budget
        )
    else:
        outcome = yield Summarize(source, previous, instructions, budget)
    if isinstance(outcome, SummarizerError) and getattr(
        setup.summarizer, "abort_on_failure", False
    ):
        # The summarizer was told not to fall back (abort_on_failure): neither do we.
        raise outcome
    if not isinstance(outcome, SummaryRecord):
        reason = (
            repr(outcome)
            if isinstance(outcome, BaseException)
            else (f"returned {type(outcome).__name__}, not a SummaryRecord")
        )
        opened.emit(
            SummarizerFellBack(
                session_id=opened.session_id,
                model=setup.summarizer_name,
                reason=reason,
                fallback="rules",
            )
        )
        outcome = setup.rules.summarize(
            source, previous=previous, instructions=instructions, max_tokens=budget
        )
    record: SummaryRecord = outcome
    if setup.keeps_originals:
        ledger.offload(
            opened.originals.stored(
                source,
                session_id=opened.session_id or "",
                offset=ledger.position,
                compaction_id=record.id,
                at=record.created_at,
            )
        )
    # The reference names where the originals lie, this record's among them.
    message = summary_for(
        record,
        profile=profile,
        role=setup.summary_role,
        style=setup.summary_style,
        offload_ref=offload_ref(run),
    )
    ledger.record(record, message, source, previous, budget)
    return message, record


def drive(
    run: Run,
    steps: Generator[PassStep, Sequence[Message], PassResult],
    plan: SplitPlan,
    cut: list[Message],
    previous: SummaryRecord | None,
) -> Generator[Effect, Outcome, PassResult]:
    """Summarize each pass's cut until the pass loop is done."""
    while True:
        message, previous = yield from summarize_step(run, plan, cut, previous)
        try:
            plan, cut = steps.send([message])
        except StopIteration as stop:
            result: PassResult = stop.value
            if result.shrunk:
                run.ledger.give_way()
            return result


def last_pass(
    run: Run, messages: tuple[Message, ...], previous: SummaryRecord | None
) -> Generator[Effect, Outcome, tuple[Message, ...]]:
    """One more pass when the passes left too much: the split that keeps the fewest messages
    (down to ``min_tail_messages``) at any safe boundary, not only at the start of a turn,
    since a long tool loop after the last user message is one turn."""
    setup = run.setup
    counts = [setup.counter.count_message(m) for m in messages]
    plan = plan_split(
        messages,
        counts,
        keep=Keep.messages(setup.governor.min_tail_messages),
        threshold=1,
        window=setup.window,
        protect=setup.protect,
        min_tail=setup.governor.min_tail_messages,
    )
    if plan is None or not any(not is_summary(messages[i]) for i in plan.summarize):
        return messages
    cut = [messages[i] for i in plan.summarize]
    message, _ = yield from summarize_step(run, plan, cut, previous)
    run.ledger.give_way()
    return plan.apply(messages, [message])
