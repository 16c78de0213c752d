"""ScriptedCompletion: the LLM summarizer's completion, answering from a script."""

from __future__ import annotations

import asyncio
import json

import pytest

from synopsis import LLMSummarizer, decode
from synopsis.errors import TransportError
from synopsis.summarizers import CompletionRequest, CompletionResponse, Usage
from synopsis.testing import ScriptedCompletion, conversation

REQUEST = CompletionRequest(model="m", system="s", messages=[{"role": "user", "content": "hi"}])
SUMMARY = {
    "narrative": "Step 1: what does parse_1 in src/module_1.py do? read_file showed that parse_1 "
    "and parse_2 (src/module_2.py) split a line on commas."
}
"""An answer that names what the summarizer's quality guard looks for in a summary of
``conversation(turns=2)`` (its first request, paths, identifiers and tools): one that leaves
them out is asked for again."""


def test_each_kind_of_answer() -> None:
    response = CompletionResponse("as given", usage=Usage(total_tokens=5), model="big")
    completion = ScriptedCompletion(
        response, "a text", SUMMARY, lambda request: f"asked {request.model}"
    )
    assert completion(REQUEST) is response
    assert completion(REQUEST) == CompletionResponse("a text")
    assert json.loads(completion(REQUEST).text) == SUMMARY
    assert completion(REQUEST).text == "asked m"
    assert completion.requests == [REQUEST] * 4


@pytest.mark.parametrize(
    "failure",
    [TransportError("503"), TimeoutError, lambda request: ConnectionError(request.model)],
)
def test_an_exception_answer_is_raised(failure: object) -> None:
    completion = ScriptedCompletion(failure)  # type: ignore[arg-type]
    with pytest.raises((TransportError, TimeoutError, ConnectionError)):
        completion(REQUEST)
    assert completion.requests == [REQUEST]


def test_past_the_script_the_default_answers_or_a_transport_error_is_raised() -> None:
    assert ScriptedCompletion(default="again")(REQUEST).text == "again"
    completion = ScriptedCompletion("once")
    completion(REQUEST)
    with pytest.raises(TransportError, match="no scripted answer left") as raised:
        completion(REQUEST)
    assert raised.value.retryable is False
    assert repr(completion) == "ScriptedCompletion(0 answers left, 2 requests received)"


def test_acall_plays_the_same_script() -> None:
    completion = ScriptedCompletion("first", "second")
    assert asyncio.run(completion.acall(REQUEST)).text == "first"
    assert completion(REQUEST).text == "second"
    assert len(completion.requests) == 2


def test_an_llm_summarizer_retries_a_scripted_transport_error() -> None:
    slept: list[float] = []
    completion = ScriptedCompletion(TransportError("503"), SUMMARY)
    summarizer = LLMSummarizer(completion, models=["gpt-4o-mini"], sleep=slept.append)
    record = summarizer.summarize(decode(conversation(turns=2)).messages)
    assert record.narrative == SUMMARY["narrative"]
    assert record.model == "gpt-4o-mini"
    assert len(slept) == 1
    assert [r.model for r in completion.requests] == ["gpt-4o-mini"] * 2
    assert "parse_2" in completion.requests[0].messages[-1]["content"]


def test_an_llm_summarizer_awaits_acall() -> None:
    completion = ScriptedCompletion(SUMMARY)
    summarizer = LLMSummarizer(completion.acall, models=["gpt-4o-mini"])
    messages = decode(conversation(turns=2)).messages
    record = asyncio.run(summarizer.asummarize(messages))
    assert record.narrative == SUMMARY["narrative"]


def test_an_llm_summarizer_out_of_answers_falls_back_to_the_rules() -> None:
    completion = ScriptedCompletion()
    summarizer = LLMSummarizer(
        completion, models=["gpt-4o-mini", "gpt-4o"], sleep=lambda seconds: None
    )
    record = summarizer.summarize(decode(conversation(turns=2)).messages)
    assert record.model == "rules"
    assert [r.model for r in completion.requests] == ["gpt-4o-mini", "gpt-4o"]
