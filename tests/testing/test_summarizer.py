"""ScriptedSummarizer: answers in order, then the default or the rules; every call recorded."""

from __future__ import annotations

import asyncio

import pytest

from synopsis import Compactor, decode
from synopsis.errors import SummarizerError
from synopsis.events import SummarizerFellBack
from synopsis.summarizers import (
    AsyncSummarizer,
    Covers,
    RuleBasedSummarizer,
    Summarizer,
    SummaryRecord,
)
from synopsis.testing import ScriptedSummarizer, SummarizeCall, conversation

MESSAGES = decode(conversation(turns=2)).messages


def test_it_is_a_summarizer_in_both_forms() -> None:
    summarizer = ScriptedSummarizer()
    assert isinstance(summarizer, Summarizer)
    assert isinstance(summarizer, AsyncSummarizer)


def test_a_text_answer_is_a_record_that_covers_the_messages() -> None:
    summarizer = ScriptedSummarizer("The user asked about two parsers.")
    record = summarizer.summarize(MESSAGES)
    assert record.narrative == "The user asked about two parsers."
    assert record.covers == Covers.of(MESSAGES)
    assert (record.depth, record.parent_id, record.messages_covered) == (0, None, len(MESSAGES))
    assert record.model == "scripted"


def test_a_text_answer_continues_the_previous_chain() -> None:
    previous = ScriptedSummarizer("first").summarize(MESSAGES[:3])
    record = ScriptedSummarizer("second").summarize(MESSAGES[3:], previous=previous)
    assert (record.depth, record.parent_id) == (1, previous.id)
    assert record.messages_covered == len(MESSAGES)
    assert record.covers == Covers.of(MESSAGES[3:])


def test_answers_are_played_in_order_then_the_rules_answer() -> None:
    given = SummaryRecord(narrative="as given", model="mine")
    summarizer = ScriptedSummarizer(given, "a text")
    assert summarizer.summarize(MESSAGES) is given
    assert summarizer.summarize(MESSAGES).narrative == "a text"
    unscripted = summarizer.summarize(MESSAGES, max_tokens=400)
    assert unscripted.model == "rules"
    assert unscripted.narrative == RuleBasedSummarizer().summarize(MESSAGES).narrative
    assert summarizer.answers == []
    assert len(summarizer.calls) == 3


def test_the_default_answers_every_call_after_the_script() -> None:
    summarizer = ScriptedSummarizer("first", default="again")
    narratives = [summarizer.summarize(MESSAGES).narrative for _ in range(3)]
    assert narratives == ["first", "again", "again"]


def test_a_function_answer_reads_the_call() -> None:
    def answer(call: SummarizeCall) -> str:
        return f"{len(call.messages)} messages, told {call.instructions!r}"

    summarizer = ScriptedSummarizer(default=answer)
    record = summarizer.summarize(MESSAGES, instructions="keep the paths")
    assert record.narrative == f"{len(MESSAGES)} messages, told 'keep the paths'"


@pytest.mark.parametrize("failure", [SummarizerError("the model is down"), SummarizerError])
def test_an_exception_answer_is_raised(failure: BaseException | type[BaseException]) -> None:
    summarizer = ScriptedSummarizer(failure)
    with pytest.raises(SummarizerError):
        summarizer.summarize(MESSAGES)
    assert len(summarizer.calls) == 1


def test_calls_record_the_arguments_and_the_form() -> None:
    summarizer = ScriptedSummarizer("one", "two")
    previous = summarizer.summarize(MESSAGES, instructions="keep paths", max_tokens=300)
    asyncio.run(summarizer.asummarize(MESSAGES[:2], previous=previous))
    assert summarizer.calls == [
        SummarizeCall(MESSAGES, None, "keep paths", 300, asynchronous=False),
        SummarizeCall(MESSAGES[:2], previous, None, None, asynchronous=True),
    ]
    assert repr(summarizer) == "ScriptedSummarizer(0 answers left, 2 calls)"


def test_a_compactor_that_gets_an_exception_falls_back_and_says_so() -> None:
    summarizer = ScriptedSummarizer(SummarizerError("the model is down"))
    events: list[object] = []
    compactor = Compactor(model="gpt-4o", summarizer=summarizer, environ={})
    result = compactor.compact(conversation(turns=6), force=True, listeners=[events.append])
    assert result.compacted
    assert result.record is not None
    assert result.record.model == "rules"
    (fell_back,) = [e for e in events if isinstance(e, SummarizerFellBack)]
    assert fell_back.model == "scripted"
    assert "the model is down" in fell_back.reason


def test_an_async_compactor_calls_asummarize() -> None:
    summarizer = ScriptedSummarizer("The user asked about three parsers.")
    compactor = Compactor(model="gpt-4o", summarizer=summarizer, environ={})
    result = asyncio.run(compactor.acompact(conversation(turns=3), force=True))
    assert result.record is not None
    assert result.record.narrative == "The user asked about three parsers."
    (call,) = summarizer.calls
    assert call.asynchronous
