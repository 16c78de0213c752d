"""The contract every summarizer meets. Each case is a summarizer and the budget it promises:
the rule-based one in several configurations, and the LLM one (in-process and over the real
openai SDK and HTTP) answered by the echo model, whole, chunked, trimmed and cache-aligned."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from synopsis.messages import content_hash, message_id
from synopsis.summarizers import (
    AsyncSummarizer,
    LLMSummarizer,
    RuleBasedSummarizer,
    Summarizer,
    ToolExchange,
    ToolFacts,
    render,
)
from tests.fakes.echo_model import echo_completion
from tests.summarizers.helpers import coding_session, exchange, rendered_tokens, say, user

if TYPE_CHECKING:
    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord


@dataclass(frozen=True)
class Case:
    summarizer: Any  # both protocols at once; checked by the first test
    budget: int
    counting_model: str | None = None
    model: str = "rules"  # the record's model: an LLM case must not pass by falling back


def _deploy(exchange: ToolExchange) -> ToolFacts:
    return ToolFacts(exchange.name, "success", (f"Env: {exchange.arguments.get('env')}",))


CASES = {
    "rules-default": Case(RuleBasedSummarizer(), 500),
    "rules-tight-claude": Case(
        RuleBasedSummarizer(
            max_summary_tokens=160, user_message_chars=120, model_for_counting="claude-sonnet-4-5"
        ),
        160,
        "claude-sonnet-4-5",
    ),
    "rules-remaining-window": Case(RuleBasedSummarizer(remaining_window=3_000), 300),
    "rules-custom-extractor": Case(
        RuleBasedSummarizer(extractors={"Deploy": _deploy}, max_summary_tokens=2_000), 2_000
    ),
    "llm-echo": Case(
        LLMSummarizer(echo_completion, models=["gpt-4o"], max_summary_tokens=500),
        500,
        model="gpt-4o",
    ),
    "llm-echo-chunked": Case(
        LLMSummarizer(
            echo_completion, models=["gpt-4o"], max_summary_tokens=400, max_input_tokens=1_500
        ),
        400,
        model="gpt-4o",
    ),
    "llm-echo-trimmed": Case(
        LLMSummarizer(
            echo_completion,
            models=["gpt-4o"],
            max_summary_tokens=400,
            max_input_tokens=1_500,
            oversize="trim",
        ),
        400,
        model="gpt-4o",
    ),
    "llm-echo-cache-aligned": Case(
        LLMSummarizer(
            echo_completion, models=["gpt-4o"], max_summary_tokens=500, cache_aligned=True
        ),
        500,
        model="gpt-4o",
    ),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request: pytest.FixtureRequest) -> Case:
    return CASES[request.param]


def without_identity(record: SummaryRecord) -> dict[str, Any]:
    return record.model_dump(exclude={"id", "created_at"})


def fits(case: Case, record: SummaryRecord, max_tokens: int | None = None) -> bool:
    limit = min(case.budget, max_tokens) if max_tokens else case.budget
    return rendered_tokens(record, case.counting_model) <= limit


def test_satisfies_both_protocols(case: Case) -> None:
    assert isinstance(case.summarizer, Summarizer)
    assert isinstance(case.summarizer, AsyncSummarizer)


def test_same_input_same_record(case: Case) -> None:
    history = coding_session()
    first = case.summarizer.summarize(history)
    second = case.summarizer.summarize(list(history))
    assert without_identity(first) == without_identity(second)


def test_async_gives_the_same_record(case: Case) -> None:
    history = coding_session()
    sync = case.summarizer.summarize(history, max_tokens=400)
    result = asyncio.run(case.summarizer.asummarize(history, max_tokens=400))
    assert without_identity(result) == without_identity(sync)


def test_covers_every_input_message_with_its_hash(case: Case) -> None:
    history = coding_session()
    record = case.summarizer.summarize(history)
    assert record.model == case.model
    assert [(c.id, c.sha256) for c in record.covers] == [
        (message_id(m, i), content_hash(m)) for i, m in enumerate(history)
    ]


@pytest.mark.parametrize("max_tokens", [None, 1_000, 200, 120])
def test_never_exceeds_the_budget(case: Case, max_tokens: int | None) -> None:
    history = coding_session() * 8  # long enough that every case must cut
    record = case.summarizer.summarize(history, max_tokens=max_tokens)
    assert record.model == case.model
    assert fits(case, record, max_tokens)
    assert record.tokens_out <= (min(case.budget, max_tokens) if max_tokens else case.budget)


def test_an_empty_history_gives_an_empty_record(case: Case) -> None:
    record = case.summarizer.summarize([])
    assert record.covers == ()
    assert record.depth == 0
    assert render(record).startswith("<synopsis-summary")
    assert fits(case, record)


def test_a_previous_summary_is_carried_forward(case: Case) -> None:
    history = coding_session()
    first = case.summarizer.summarize(history[:8])
    second = case.summarizer.summarize(history[8:], previous=first)
    assert second.depth == first.depth + 1
    assert second.parent_id == first.id
    assert second.id != first.id
    assert second.sections.primary_request == first.sections.primary_request
    assert "FlexibleTokenizer" in render(second)
    assert fits(case, second)
    third = case.summarizer.summarize([user("and the changelog")], previous=second)
    assert (third.depth, third.parent_id) == (2, second.id)


def segment(topic: str, n: int) -> list[Message]:
    out: list[Message] = [user(f"Step {n} on {topic}: keep going.")]
    for i in range(3):
        out += exchange(f"{topic}{n}{i}", "bash", {"command": f"make part{n}{i}"}, "ok\nexit 0")
    out.append(say(f"Part {n} is done."))
    return out


def test_drift_an_early_technical_term_survives_two_rounds(case: Case) -> None:
    """Drift: a term from the first segment is still there after two more rounds of
    summarization that each carry the previous summary forward."""
    first = [
        user("Port the TokenBucketLimiter from limiter.go to Python; keep its burst semantics."),
        say("I'll read limiter.go first."),
        *exchange("g1", "read_file", {"path": "limiter.go"}, "type TokenBucketLimiter struct {}"),
    ]
    record = case.summarizer.summarize(first)
    for n in (2, 3):
        record = case.summarizer.summarize(segment("ratelimit", n), previous=record)
    assert record.depth == 2
    assert "TokenBucketLimiter" in render(record)
    assert "TokenBucketLimiter" in render(record, style="snapshot")
    assert fits(case, record)
