"""The prefix-cache model of a session's input cost."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConfigurationError
from synopsis.pricing import (
    ANTHROPIC,
    OPENAI,
    PRESETS,
    PrefixCache,
    Prices,
    RequestCost,
    SessionCost,
    session_cost,
    shared_prefix,
)

PRICES = Prices(name="test", input=2.0, cached=0.5, write_premium=1.0)
REQUEST = st.lists(st.sampled_from("abcde"), max_size=12)
SIZES = st.fixed_dictionaries({key: st.integers(0, 5_000) for key in "abcde"})
"""Tokens of each message: equal keys are equal messages, of equal size."""


def test_presets_are_the_documented_list_prices() -> None:
    assert PRESETS == {"openai": OPENAI, "anthropic": ANTHROPIC}
    # OpenAI: a cache read a tenth of the input price, nothing more to write.
    assert (OPENAI.input, OPENAI.cached, OPENAI.write) == (1.25, 0.125, 1.25)
    # Anthropic's five-minute cache: reads a tenth, writes 1.25 times the input price.
    assert (ANTHROPIC.input, ANTHROPIC.cached, ANTHROPIC.write) == (3.0, 0.30, 3.75)
    assert ANTHROPIC.write == pytest.approx(1.25 * ANTHROPIC.input)


def test_prices_are_per_million_tokens() -> None:
    assert PRICES.write == 3.0
    assert PRICES.cost(read=1_000_000, written=0) == 0.5
    assert PRICES.cost(read=0, written=2_000_000) == 6.0
    assert PRICES.uncached(500_000) == 1.0


def test_prices_say_where_they_come_from() -> None:
    assert OPENAI.describe() == "openai: $1.25/M input, $0.125/M cached"
    assert ANTHROPIC.describe() == "anthropic: $3/M input, $0.3/M cached, +$0.75/M to write"


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, True, "1"])
@pytest.mark.parametrize("label", ["input", "cached", "write_premium"])
def test_a_price_is_a_finite_number_not_below_zero(label: str, bad: object) -> None:
    values: dict[str, object] = {"input": 1.0, "cached": 0.1, "write_premium": 0.0, label: bad}
    with pytest.raises(ConfigurationError, match=f"the {label} price must be"):
        Prices(**values)  # type: ignore[arg-type]


def test_shared_prefix_counts_leading_equal_keys() -> None:
    assert shared_prefix([], ["a"]) == 0
    assert shared_prefix(["a", "b"], ["a", "b", "c"]) == 2
    assert shared_prefix(["a", "b", "c"], ["a", "x", "c"]) == 1
    assert shared_prefix(["a", "b", "c"], ["a", "b"]) == 2
    assert shared_prefix(["x"], ["a"]) == 0


def test_a_session_reads_what_each_request_shares_with_the_one_before() -> None:
    system, first, second, summary = ("system", 100), ("u1", 50), ("a1", 30), ("summary", 20)
    session = session_cost(
        [
            [system, first],
            [system, first, second],
            # A compaction: the summary replaces the first exchange; the system prompt is
            # still the prefix.
            [system, summary, second],
        ],
        PRICES,
    )
    assert [r.shared for r in session.requests] == [0, 150, 100]
    assert [r.written for r in session.requests] == [150, 30, 50]
    assert [r.hit for r in session.requests] == [False, True, True]
    assert session.tokens == 150 + 180 + 150
    assert session.shared == 250
    assert session.hits == 2
    expected = (250 * PRICES.cached + 230 * PRICES.write) / 1e6
    assert session.cost == pytest.approx(expected)
    assert session.uncached == pytest.approx(480 * PRICES.input / 1e6)


def test_an_empty_session_costs_nothing() -> None:
    session = session_cost([], OPENAI)
    assert (session.tokens, session.shared, session.cost, session.hits) == (0, 0, 0, 0)
    assert session == SessionCost(OPENAI)


def test_framing_beyond_the_messages_is_written() -> None:
    cache = PrefixCache(PRICES)
    cache.send(["a"], [10], total=13)
    request = cache.append(["b"], [5], total=18)
    assert (request.tokens, request.shared, request.written) == (18, 10, 8)


def test_the_cache_never_reads_more_than_the_request_holds() -> None:
    # A calibrated counter can count a whole request below the sum of its messages.
    cache = PrefixCache(PRICES)
    cache.send(["a", "b"], [10, 10])
    request = cache.send(["a", "b", "c"], [10, 10, 10], total=15)
    assert (request.tokens, request.shared, request.written) == (15, 15, 0)


def _naive(requests: list[list[tuple[str, int]]], prices: Prices) -> list[RequestCost]:
    out: list[RequestCost] = []
    previous: list[tuple[str, int]] = []
    for request in requests:
        same = 0
        while same < min(len(previous), len(request)) and previous[same][0] == request[same][0]:
            same += 1
        shared = sum(t for _, t in previous[:same])
        size = sum(t for _, t in request)
        out.append(RequestCost(size, shared, prices.cost(read=shared, written=size - shared)))
        previous = request
    return out


@given(st.lists(REQUEST, max_size=8), SIZES)
def test_each_request_is_priced_by_its_prefix_shared_with_the_last(
    keys: list[list[str]], sizes: dict[str, int]
) -> None:
    requests = [[(k, sizes[k]) for k in request] for request in keys]
    session = session_cost(requests, PRICES)
    assert list(session.requests) == _naive(requests, PRICES)
    # A cache read costs less than a write, so the session lies between all read and none.
    assert PRICES.cost(read=session.tokens, written=0) <= session.cost + 1e-9
    assert session.cost <= PRICES.cost(read=0, written=session.tokens) + 1e-9


@given(REQUEST, st.lists(REQUEST, max_size=6), SIZES)
def test_appending_prices_as_sending_the_grown_request(
    first: list[str], additions: list[list[str]], sizes: dict[str, int]
) -> None:
    appended, sent = PrefixCache(PRICES), PrefixCache(PRICES)
    request = list(first)
    appended.send(first, [sizes[k] for k in first])
    sent.send(first, [sizes[k] for k in first])
    for more in additions:
        request += more
        appended.append(more, [sizes[k] for k in more])
        sent.send(request, [sizes[k] for k in request])
    assert appended.session == sent.session
