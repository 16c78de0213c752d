"""The end of a compaction: the rebuilt history made valid for the provider and brought
within the limit (one more pass, trimming, squeezing the summary), or the error that says
why it cannot be.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from synopsis.compaction.budgets import shorten, squeeze, summary_index
from synopsis.compaction.rebuild import finish
from synopsis.compaction.shrink import keep_reduced, thin, trim
from synopsis.compaction.summarizing import last_pass, offload_ref
from synopsis.errors import BudgetUnreachableError, ConversationError
from synopsis.messages import is_summary
from synopsis.validation import check_between_turns

if TYPE_CHECKING:
    from collections.abc import Generator

    from synopsis.compaction.effects import Effect, Outcome
    from synopsis.compaction.setup import Setup
    from synopsis.compaction.state import Run
    from synopsis.messages import Message
    from synopsis.planning import Measure
    from synopsis.summarizers import SummaryRecord
    from synopsis.validation import Fix

__all__ = ["fitted", "unreachable", "verify"]

_Rebuilt: TypeAlias = "tuple[tuple[Message, ...], tuple[Fix, ...]]"
"""What :func:`~.rebuild.finish` gives: the rebuilt history and the fixes it made."""


def unreachable(
    setup: Setup, tokens: int, *, protected: int | None = None, kept: int | None = None
) -> BudgetUnreachableError:
    """The error for a history of ``tokens`` that no compaction brings within the limit:
    what cannot be made smaller at all (``protected``: the system prompt, tool definitions
    and framing) is too large alone, or the messages that must be kept are (``kept``)."""
    if protected is not None:
        what = "the system prompt alone" if setup.protect.system else "the tool definitions"
        why = f"{what} takes {protected:,} tokens (tool definitions and framing included)"
    else:
        why = (
            "the messages that must be kept (system prompt, protected and newest turns) are "
            f"too large: {kept:,} tokens even at their smallest"
        )
    return BudgetUnreachableError(
        f"the history takes {tokens:,} tokens, over the {setup.limit:,} the window of "
        f"{setup.window:,} leaves after {setup.reserve:,} reserved for the answer, and "
        f"compaction cannot fix that: {why}",
        tokens=tokens,
        limit=setup.limit,
        window=setup.window,
        reserve=setup.reserve,
        protected=protected,
    )


def verify(
    run: Run,
    kept: tuple[Message, ...],
    limit: int,
    finished: _Rebuilt | None = None,
    previous: SummaryRecord | None = None,
) -> tuple[tuple[Message, ...], Measure]:
    """The rebuilt history and its size, once it is valid for the provider and fits
    ``limit`` (trimmed when it must be); otherwise the error that says why not.
    ``finished`` is :func:`finish` of ``kept``, when the caller has it already; ``previous``
    the session's summary, which may be written again shorter as the last resort."""
    setup, opened = run.setup, run.opened
    profile = setup.profile_for(opened.format)
    if profile.thinking_rules:
        kept = thin(opened, kept)
        finished = None
    if finished is None:
        finished = finish(kept, profile, role=setup.summary_role)
    final, fixes = finished
    if opened.measure(final).tokens > limit:
        kept = trim(opened, kept, limit)
        final, fixes = finish(kept, profile, role=setup.summary_role)
    over = opened.measure(final).tokens - limit
    index = summary_index(run.ledger, kept)
    if over > 0 and index is not None:
        kept = squeeze(run, kept, index, over, offload_ref=offload_ref(run))
        final, fixes = finish(kept, profile, role=setup.summary_role)
    elif over > 0 and previous is not None and (at := _summary_at(kept)) is not None:
        kept = shorten(run, kept, at, over, previous, offload_ref=offload_ref(run))
        final, fixes = finish(kept, profile, role=setup.summary_role)
    run.ledger.fix(fixes)
    keep_reduced(run, kept)
    after = opened.measure(final)
    if after.tokens > limit:
        # What is left even after trimming: the compaction's own output, at its smallest.
        raise unreachable(setup, after.tokens, kept=after.tokens)
    left = check_between_turns(final, profile)
    if left:
        raise ConversationError(
            f"the compacted history breaks {left[0].rule}: {left[0].message}",
            index=left[0].index,
            rule=left[0].rule,
        )
    return final, after


def _summary_at(messages: tuple[Message, ...]) -> int | None:
    """Where the (session's) summary stands in ``messages``, if one does."""
    return next((i for i, m in enumerate(messages) if is_summary(m)), None)


def fitted(
    run: Run, kept: tuple[Message, ...], limit: int, previous: SummaryRecord | None
) -> Generator[Effect, Outcome, tuple[tuple[Message, ...], _Rebuilt | None]]:
    """``kept``, given one last pass when even rebuilt it does not fit ``limit``, and its
    rebuild (:func:`finish`) while that is still the one to verify."""
    setup = run.setup
    finished = finish(kept, setup.profile_for(run.opened.format), role=setup.summary_role)
    if run.opened.measure(finished[0]).tokens <= limit:
        return kept, finished
    head = run.ledger.head or previous
    return (yield from last_pass(run, kept, head)), None
