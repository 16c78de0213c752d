"""The rule-based summarizer's options: budget, identity, validation of what it is given."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from synopsis.errors import ConfigurationError, ConversationError
from synopsis.summarizers import RuleBasedSummarizer, render
from synopsis.summarizers.rules.files import bare_line
from synopsis.tokens import counter_for_model
from tests.summarizers.helpers import coding_session, rendered_tokens, user

BIG = RuleBasedSummarizer(max_summary_tokens=50_000)


def test_token_counts_are_recorded() -> None:
    history = coding_session()
    record = BIG.summarize(history)
    counter = counter_for_model(None)
    assert record.tokens_in == sum(counter.count_message(m) for m in history)
    assert record.tokens_out == counter.count_text(render(record))
    assert record.usage.total_tokens == 0


def test_deterministic_ids_and_a_fixed_clock_give_equal_records() -> None:
    moment = datetime(2025, 6, 1, tzinfo=UTC)
    summarizer = RuleBasedSummarizer(deterministic_ids=True, clock=lambda: moment)
    a = summarizer.summarize(coding_session())
    b = summarizer.summarize(coding_session())
    assert a == b
    assert a.created_at == moment
    other = summarizer.summarize(coding_session()[:-1])
    assert other.id != a.id
    child = summarizer.summarize([user("x")], previous=a)
    assert child.id != summarizer.summarize([user("x")]).id
    assert RuleBasedSummarizer().summarize([]).id != RuleBasedSummarizer().summarize([]).id


def test_the_budget_is_the_smallest_limit() -> None:
    summarizer = RuleBasedSummarizer(max_summary_tokens=800, remaining_window=5_000)
    assert summarizer.budget() == 500
    assert summarizer.budget(max_tokens=200) == 200
    assert RuleBasedSummarizer().budget(max_tokens=900) == 500
    assert RuleBasedSummarizer(remaining_window=100_000).budget() == 500


def test_a_budget_below_the_frame_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="needs at least"):
        RuleBasedSummarizer().summarize(coding_session(), max_tokens=10)
    with pytest.raises(ConfigurationError, match="needs at least"):
        RuleBasedSummarizer(remaining_window=200).summarize([user("hi")])


def test_cutting_drops_old_tool_key_points_before_user_messages_and_errors() -> None:
    history = coding_session() * 3
    whole = BIG.summarize(history)
    budget = rendered_tokens(whole) // 2
    cut = RuleBasedSummarizer(max_summary_tokens=budget).summarize(history)
    assert cut.truncated
    assert "cut to fit its budget." in render(cut)
    assert rendered_tokens(cut) <= budget
    assert not any(p.startswith("[✓") for p in cut.key_points)
    # Every request survives, the first included (requests are the last thing cut), and so
    # do the failures and every path touched (their notes go early), which go before the
    # requests but after the tool log.
    assert cut.sections.user_messages == whole.sections.user_messages
    assert whole.sections.user_messages[0] == whole.sections.primary_request[0]
    assert cut.sections.errors_and_fixes == whole.sections.errors_and_fixes
    assert cut.sections.files_and_code == tuple(map(bare_line, whole.sections.files_and_code))
    assert cut.sections.files_and_code != whole.sections.files_and_code
    assert cut.sections.primary_request == whole.sections.primary_request
    assert cut.sections.problem_solving == ()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_summary_tokens", 0),
        ("max_summary_tokens", 1.5),
        ("max_summary_tokens", True),
        ("remaining_window", -1),
        ("user_message_chars", 0),
        ("extractors", {"bash": "not callable"}),
        ("extractors", {1: lambda ex: ex}),
    ],
)
def test_bad_options_are_configuration_errors(option: str, value: Any) -> None:
    with pytest.raises(ConfigurationError):
        RuleBasedSummarizer(**{option: value})


def test_a_bad_max_tokens_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="max_tokens"):
        RuleBasedSummarizer().summarize([], max_tokens=0)


@pytest.mark.parametrize("history", ["not a history", b"bytes", 42, [user("ok"), {"role": "user"}]])
def test_input_that_is_not_messages_is_rejected(history: Any) -> None:
    with pytest.raises(ConversationError):
        RuleBasedSummarizer().summarize(history)


def test_repr_names_the_limits() -> None:
    assert repr(RuleBasedSummarizer(remaining_window=9)) == (
        "RuleBasedSummarizer(max_summary_tokens=500, remaining_window=9, user_message_chars=2000)"
    )


def test_instructions_are_accepted_and_change_nothing() -> None:
    summarizer = RuleBasedSummarizer(
        deterministic_ids=True, clock=lambda: datetime(2025, 1, 1, tzinfo=UTC)
    )
    history = coding_session()
    assert summarizer.summarize(history, instructions="keep the SQL") == summarizer.summarize(
        history
    )
