"""A summarizer that answers from a script and records every call, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from synopsis.summarizers import Covers, RuleBasedSummarizer, SummaryRecord

if TYPE_CHECKING:
    from synopsis.messages import Message

__all__ = ["ScriptedSummarizer", "SummarizeCall", "SummaryAnswer"]


@dataclass(frozen=True, slots=True)
class SummarizeCall:
    """One call a :class:`ScriptedSummarizer` got: its arguments, and whether it came through
    ``asummarize``."""

    messages: tuple[Message, ...]
    previous: SummaryRecord | None
    instructions: str | None
    max_tokens: int | None
    asynchronous: bool = False


SummaryAnswer: TypeAlias = (
    SummaryRecord
    | str
    | BaseException
    | Callable[[SummarizeCall], "SummaryRecord | str | BaseException"]
)
"""One scripted answer: a record, given as it is; a text (the narrative of a record that covers
the call's messages and continues ``previous``'s chain); an exception (raised; an exception
class works too); or a function of the call giving one of those."""


class ScriptedSummarizer:
    """A :class:`~synopsis.summarizers.Summarizer` and
    :class:`~synopsis.summarizers.AsyncSummarizer` that answers with ``answers``, in order,
    recording each call in ``calls``.

    Once the answers are used up, ``default`` answers every further call; without it, the
    rule-based summarizer does (offline and quick), so ``ScriptedSummarizer()`` is a working
    summarizer that records what it was asked::

        summarizer = ScriptedSummarizer("The user asked for a haiku; one was written.")
        result = compact(history, model="gpt-4o", summarizer=summarizer, force=True)
        (call,) = summarizer.calls
        assert call.messages[0].text == "Write me a haiku"

    A raised answer reaches the compactor as a failed summarizer: it falls back to the rules
    and says so with a :class:`~synopsis.events.SummarizerFellBack` event.
    """

    model = "scripted"
    """The model a record made from a text answer names (the compactor's events name it too)."""

    def __init__(self, *answers: SummaryAnswer, default: SummaryAnswer | None = None) -> None:
        self.answers: list[SummaryAnswer] = list(answers)
        """The answers still to give, in order; append to it to script more."""
        self.default = default
        self.calls: list[SummarizeCall] = []
        """Every call received, in order."""
        self._rules = RuleBasedSummarizer()

    def __repr__(self) -> str:
        return f"ScriptedSummarizer({len(self.answers)} answers left, {len(self.calls)} calls)"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        call = SummarizeCall(tuple(messages), previous, instructions, max_tokens)
        return self._answer(call)

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        """The same as :meth:`summarize`, after yielding to the event loop once."""
        await asyncio.sleep(0)
        call = SummarizeCall(tuple(messages), previous, instructions, max_tokens, True)
        return self._answer(call)

    def _answer(self, call: SummarizeCall) -> SummaryRecord:
        self.calls.append(call)
        if self.answers:
            answer = self.answers.pop(0)
        elif self.default is not None:
            answer = self.default
        else:
            return self._rules.summarize(
                call.messages,
                previous=call.previous,
                instructions=call.instructions,
                max_tokens=call.max_tokens,
            )
        if callable(answer):
            answer = answer(call)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, str):
            return _record(answer, call, self.model)
        return answer


def _record(narrative: str, call: SummarizeCall, model: str) -> SummaryRecord:
    """A record of ``narrative`` that covers the call's messages, next in ``previous``'s chain."""
    covers = Covers.of(call.messages)
    previous = call.previous
    return SummaryRecord(
        narrative=narrative,
        covers=covers,
        depth=previous.depth + 1 if previous else 0,
        parent_id=previous.id if previous else None,
        covered_total=previous.messages_covered + len(covers) if previous else None,
        model=model,
    )
