"""How the page writes numbers, times and model limits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from synopsis.planning.triggers import Trigger
from synopsis.pricing import ANTHROPIC, OPENAI
from synopsis.ui import format as fmt
from synopsis.ui.data import limits_for, price_of


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "—"),
        (0, "0"),
        (999, "999"),
        (12_345, "12.3k"),
        (4_560_000, "4.56M"),
        (-2500, "-2.5k"),
    ],
)
def test_tokens_are_short(value: int | None, shown: str) -> None:
    assert fmt.tokens(value) == shown


def test_the_other_filters() -> None:
    assert fmt.num(1234567) == "1,234,567"
    assert fmt.num(None) == "—"
    assert fmt.dollars(12.5) == "$12.50"
    assert fmt.dollars(0.00123) == "$0.0012"
    assert fmt.dollars(0) == "$0.00"
    assert fmt.dollars(None) == "—"
    assert fmt.pct(0.4215) == "42.1%"
    assert fmt.pct(None) == "—"
    assert fmt.secs(1.25) == "1.2 s"
    assert fmt.secs(None) == "—"
    assert fmt.when(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02 03:04:05 UTC"
    assert fmt.when(None) == "—"


def test_limits_follow_the_options_over_the_table() -> None:
    limits = limits_for(Trigger.fraction(0.5), windows={"mine": 10_000})
    assert limits("mine") == (10_000, 5_000)
    window, trigger = limits("gpt-4o")
    assert window is not None
    assert trigger == window // 2
    assert limits("no-such-model-anywhere") == (None, None)
    assert limits("") == (None, None)
    assert limits_for(Trigger.tokens(900), window=2000)("anything") == (2000, 900)


def test_each_format_is_priced_by_its_provider() -> None:
    assert price_of("anthropic") is ANTHROPIC
    assert price_of("openai") is OPENAI
    assert price_of("responses") is OPENAI
