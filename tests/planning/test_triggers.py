from __future__ import annotations

import pytest

from synopsis.errors import ConfigurationError
from synopsis.formats import decode
from synopsis.messages import Message, Role, TextPart
from synopsis.planning import Measure, Trigger, measure_history
from synopsis.tokens import counter_for_model


def m(tokens: int, messages: int = 10, window: int = 1000) -> Measure:
    return Measure(tokens, messages, window)


def test_each_kind_fires_at_its_line_and_not_below() -> None:
    assert Trigger.fraction(0.8).fires(m(800))
    assert not Trigger.fraction(0.8).fires(m(799))
    assert Trigger.tokens(500).fires(m(500))
    assert not Trigger.tokens(500).fires(m(499))
    assert Trigger.messages(10).fires(m(0, messages=10))
    assert not Trigger.messages(10).fires(m(0, messages=9))


def test_a_fraction_resolves_against_the_window_it_is_given() -> None:
    t = Trigger.fraction(0.5)
    assert t.fires(m(5_000, window=10_000))
    assert not t.fires(m(5_000, window=200_000))
    assert t.token_threshold(200_000) == 100_000


def test_or_fires_on_any_and_and_needs_all() -> None:
    either = Trigger.tokens(500) | Trigger.messages(10)
    both = Trigger.tokens(500) & Trigger.messages(10)
    assert either.fires(m(500, messages=1))
    assert either.fires(m(0, messages=10))
    assert not either.fires(m(499, messages=9))
    assert both.fires(m(500, messages=10))
    assert not both.fires(m(500, messages=9))
    assert not both.fires(m(499, messages=10))


def test_combinations_flatten_and_report_their_token_threshold() -> None:
    t = Trigger.fraction(0.8) | Trigger.tokens(300) | Trigger.messages(5)
    assert len(t.children) == 3
    assert t.token_threshold(1000) == 300
    assert (Trigger.fraction(0.8) & Trigger.tokens(300)).token_threshold(1000) == 800
    assert Trigger.messages(5).token_threshold(1000) is None
    assert (Trigger.messages(5) | Trigger.messages(9)).token_threshold(1000) is None
    assert str(t) == "(80% of the window or 300 tokens or 5 messages)"
    assert str(Trigger.tokens(1) & Trigger.messages(2)) == "(1 tokens and 2 messages)"


def test_combining_with_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Trigger.tokens(1) | 5  # type: ignore[operator]
    with pytest.raises(TypeError):
        Trigger.tokens(1) & "x"  # type: ignore[operator]


@pytest.mark.parametrize("share", [0, -0.1, 1.5, float("nan"), True, "0.5"])
def test_a_fraction_outside_the_window_is_refused_with_a_sentence(share) -> None:
    with pytest.raises(ConfigurationError, match="share of the window"):
        Trigger.fraction(share)


@pytest.mark.parametrize("value", [0, -3, 2.5, True, None])
def test_counts_must_be_positive_whole_numbers(value) -> None:
    with pytest.raises(ConfigurationError, match="positive whole number"):
        Trigger.tokens(value)
    with pytest.raises(ConfigurationError, match="positive whole number"):
        Trigger.messages(value)


@pytest.mark.parametrize(
    ("tokens", "messages", "window", "match"),
    [(-1, 0, 10, "tokens"), (0, -1, 10, "messages"), (0, 0, 0, "window"), (1.5, 0, 10, "tokens")],
)
def test_a_measure_is_checked(tokens, messages, window, match) -> None:
    with pytest.raises(ConfigurationError, match=match):
        Measure(tokens, messages, window)


def test_ratio_is_the_share_of_the_window() -> None:
    assert m(250).ratio == 0.25


def test_a_measure_counts_the_system_prompt_and_the_tools_and_anchors_on_usage() -> None:

    counter = counter_for_model("claude-sonnet-4-5")
    body = [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}]
    bare = decode(body, "anthropic").messages
    prompted = decode(body, "anthropic", system="You are a careful agent. " * 20).messages
    tools = [{"name": "bash", "description": "run a command", "input_schema": {"type": "object"}}]
    plain = measure_history(bare, counter=counter, window=1000)
    with_system = measure_history(prompted, counter=counter, window=1000)
    with_tools = measure_history(prompted, counter=counter, window=1000, tools=tools)
    assert plain.tokens < with_system.tokens < with_tools.tokens
    assert with_tools.tokens == counter.count_messages(prompted, tools=tools)
    anchored = measure_history(prompted, counter=counter, window=1000, reported=(500, 2))
    assert anchored.tokens == 500 + counter.count_message(prompted[2])
    assert anchored.messages == 3


@pytest.mark.parametrize(
    ("reported", "match"),
    [((-1, 0), "reported prompt tokens"), ((10, 1.5), "prefix length"), ((10, 9), "only 1")],
)
def test_a_bad_anchor_is_refused(reported, match) -> None:

    one = [Message(Role.USER, (TextPart("x"),))]
    with pytest.raises(ConfigurationError, match=match):
        measure_history(one, counter=counter_for_model(None), window=10, reported=reported)


def test_a_fraction_may_be_the_whole_window() -> None:
    assert Trigger.fraction(1).fires(m(1000))
    assert not Trigger.fraction(1).fires(m(999))


def test_a_refused_count_names_its_trigger() -> None:
    with pytest.raises(ConfigurationError) as tokens:
        Trigger.tokens(0)
    assert str(tokens.value) == "a token trigger must be a positive whole number, got 0"
    with pytest.raises(ConfigurationError) as messages:
        Trigger.messages(0)
    assert str(messages.value) == "a message trigger must be a positive whole number, got 0"


def test_and_needs_all_on_either_side_however_it_is_grouped() -> None:
    a, b, c = Trigger.tokens(100), Trigger.messages(5), Trigger.fraction(0.5)
    grouped = a & (b & c)
    assert grouped == Trigger("all", 0.0, (a, b, c))
    assert (a | (b | c)) == Trigger("any", 0.0, (a, b, c))
    assert grouped.fires(m(500, messages=5))
    assert not grouped.fires(m(499, messages=5))
    assert not grouped.fires(m(500, messages=4))


def test_a_window_of_nothing_is_refused_in_words() -> None:
    with pytest.raises(ConfigurationError) as refused:
        Measure(0, 0, 0)
    assert str(refused.value) == "window must be a positive number of tokens, got 0"


def test_an_anchor_may_cover_nothing_or_everything_and_says_which_number_is_wrong() -> None:
    one = [Message(Role.USER, (TextPart("x"),))]
    counter = counter_for_model(None)
    assert measure_history(one, counter=counter, window=10, reported=(0, 0)).tokens == (
        counter.count_message(one[0])
    )
    assert measure_history(one, counter=counter, window=10, reported=(7, 1)).tokens == 7
    for reported, said in (
        ((-1, 0), "reported prompt tokens must be a whole number >= 0, got -1"),
        ((1, -1), "prefix length must be a whole number >= 0, got -1"),
    ):
        with pytest.raises(ConfigurationError) as refused:
            measure_history(one, counter=counter, window=10, reported=reported)
        assert str(refused.value) == said
