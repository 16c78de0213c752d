"""Properties: counts are additive over messages, the cache never changes a count, and the
ledger always agrees with a fresh count."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import given
from hypothesis import strategies as st

from synopsis.tokens import (
    ENCODINGS,
    HeuristicCounter,
    MessageCounter,
    TiktokenCounter,
    TokenLedger,
    get_encoding,
)
from synopsis.tokens.ledger import FULL_CHECK

from .helpers import histories, messages

if TYPE_CHECKING:
    from synopsis.messages import Message

# Load both vocabularies now, not inside the first example (Hypothesis times examples).
for _name in ENCODINGS:
    get_encoding(_name)

COUNTERS: list[MessageCounter] = [
    TiktokenCounter("o200k_base", "openai"),
    TiktokenCounter("cl100k_base", "anthropic", 1.18),
    TiktokenCounter("o200k_base", "gemini", 1.08),
    HeuristicCounter(3.7, "anthropic"),
]
counters = st.sampled_from(COUNTERS)


@given(counters, histories, histories)
def test_additive_over_messages(
    counter: MessageCounter, a: list[Message], b: list[Message]
) -> None:
    priming = counter.count_messages([])
    assert counter.count_messages(a + b) == (
        counter.count_messages(a) + counter.count_messages(b) - priming
    )
    assert counter.count_messages(a) == priming + sum(counter.count_message(m) for m in a)


@given(counters, histories)
def test_cached_and_uncached_agree(counter: MessageCounter, history: list[Message]) -> None:
    if isinstance(counter, TiktokenCounter):
        fresh: MessageCounter = TiktokenCounter(
            counter.encoding_name, counter.provider, counter.factor, cache_size=0
        )
    else:
        assert isinstance(counter, HeuristicCounter)
        fresh = HeuristicCounter(counter.chars_per_token, counter.provider, cache_size=0)
    first = counter.count_messages(history)
    assert first == counter.count_messages(history) == fresh.count_messages(history)
    assert [counter.count_message(m) for m in history] == [fresh.count_message(m) for m in history]


operation = st.one_of(
    st.tuples(st.just("append"), st.lists(messages, min_size=1, max_size=3)),
    st.tuples(st.just("replace"), st.integers(0, 200), messages),
    st.tuples(st.just("truncate"), st.integers(0, 200)),
    st.tuples(st.just("compact"), st.integers(0, 200), messages),
    st.tuples(st.just("fresh"), histories),
)


@given(counters, histories, st.lists(operation, max_size=12))
def test_ledger_agrees_with_a_fresh_count(
    counter: MessageCounter, start: list[Message], ops: list[tuple[object, ...]]
) -> None:
    """Each step builds a new list (as agent loops and compaction do) and syncs it. Histories
    here stay within the ledger's full-check length; longer ones are sampled (see
    test_ledger)."""
    ledger = TokenLedger(counter)
    history = list(start)
    assert ledger.sync(history) == counter.count_messages(history)
    for op in ops:
        kind = op[0]
        if kind == "append":
            history = history + list(op[1])  # type: ignore[call-overload]
        elif kind == "replace" and history:
            i = int(op[1]) % len(history)  # type: ignore[call-overload]
            history = [*history[:i], op[2], *history[i + 1 :]]  # type: ignore[list-item]
        elif kind == "truncate":
            history = history[: int(op[1]) % (len(history) + 1)]  # type: ignore[call-overload]
        elif kind == "compact" and history:
            keep = int(op[1]) % len(history)  # type: ignore[call-overload]
            history = [op[2], *history[len(history) - keep :]]  # type: ignore[list-item]
        elif kind == "fresh":
            history = list(op[1])  # type: ignore[call-overload]
        history = history[:FULL_CHECK]
        assert ledger.sync(history) == counter.count_messages(history)
        assert ledger.total == counter.count_messages(history)
