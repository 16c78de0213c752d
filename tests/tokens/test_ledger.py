"""TokenLedger: appends cost only the new messages; any other change recounts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from synopsis.errors import ConfigurationError
from synopsis.tokens import TiktokenCounter, TokenLedger
from synopsis.tokens.ledger import FULL_CHECK, SAMPLES

from .helpers import text_message

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from synopsis.messages import Message

TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


class Spy:
    """A TokenCounter that records which messages it was asked about."""

    def __init__(self) -> None:
        self.inner = TiktokenCounter()
        self.seen: list[Message] = []

    def count_text(self, text: str) -> int:
        return self.inner.count_text(text)

    def count_message(self, message: Message) -> int:
        self.seen.append(message)
        return self.inner.count_message(message)

    def count_messages(
        self, messages: Sequence[Message], *, tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int:
        return self.inner.count_messages(messages, tools=tools)


def _history(n: int, tag: str = "m") -> list[Message]:
    return [text_message(f"{tag} {i}") for i in range(n)]


def test_append_counts_only_new_messages() -> None:
    spy = Spy()
    ledger = TokenLedger(spy)
    history = _history(5)
    assert ledger.sync(history) == spy.inner.count_messages(history)
    assert len(spy.seen) == 5
    spy.seen.clear()
    history.append(text_message("new"))
    assert ledger.sync(history) == spy.inner.count_messages(history)
    assert spy.seen == [history[-1]]
    spy.seen.clear()
    assert ledger.sync(history) == spy.inner.count_messages(history)
    assert spy.seen == []
    assert ledger.recounts == 0
    assert len(ledger) == 6
    assert ledger.total == spy.inner.count_messages(history)


def test_truncation_subtracts() -> None:
    spy = Spy()
    ledger = TokenLedger(spy)
    history = _history(5)
    ledger.sync(history)
    spy.seen.clear()
    assert ledger.sync(history[:3]) == spy.inner.count_messages(history[:3])
    assert spy.seen == []
    assert ledger.recounts == 0


def test_replacement_recounts() -> None:
    spy = Spy()
    ledger = TokenLedger(spy)
    history = _history(5)
    ledger.sync(history)
    edited = list(history)
    edited[2] = text_message("edited")
    assert ledger.sync(edited) == spy.inner.count_messages(edited)
    assert ledger.recounts == 1
    compacted = [text_message("summary"), *history[3:]]
    assert ledger.sync(compacted) == spy.inner.count_messages(compacted)
    assert ledger.recounts == 2
    shorter_edit = [text_message("x"), *history[1:2]]
    assert ledger.sync(shorter_edit) == spy.inner.count_messages(shorter_edit)
    assert ledger.recounts == 3


def test_empty_histories_and_tools() -> None:
    counter = TiktokenCounter()
    ledger = TokenLedger(counter, tools=[TOOL])
    base = counter.count_messages([], tools=[TOOL])
    assert ledger.total == base
    assert ledger.sync([]) == base
    history = _history(3)
    assert ledger.sync(history) == counter.count_messages(history, tools=[TOOL])
    assert ledger.sync([]) == base
    assert len(ledger) == 0
    assert repr(ledger).startswith("TokenLedger(TiktokenCounter")


def test_reset() -> None:
    counter = TiktokenCounter()
    ledger = TokenLedger(counter)
    history = _history(3)
    ledger.sync(history)
    ledger.reset()
    assert ledger.total == 3
    assert ledger.sync(history) == counter.count_messages(history)


def test_long_history_boundaries_are_checked_every_time() -> None:
    counter = TiktokenCounter()
    ledger = TokenLedger(counter)
    history = _history(FULL_CHECK * 4)
    ledger.sync(history)
    first = [text_message("new first"), *history[1:], text_message("tail")]
    assert ledger.sync(first) == counter.count_messages(first)
    assert ledger.recounts == 1
    last = [*first[:-1], text_message("new last"), text_message("tail 2")]
    assert ledger.sync(last) == counter.count_messages(last)
    assert ledger.recounts == 2


def test_long_history_inner_edit_is_found_within_a_sweep() -> None:
    counter = TiktokenCounter()
    ledger = TokenLedger(counter)
    history = _history(FULL_CHECK * 4)
    ledger.sync(history)
    history[77] = text_message("edited in place")  # behind the ledger's back
    truth = counter.count_messages(history)
    step = len(history) // SAMPLES
    results = [ledger.sync(history) for _ in range(step)]
    assert results[-1] == truth
    assert ledger.recounts == 1


def test_needs_a_counter() -> None:
    with pytest.raises(ConfigurationError):
        TokenLedger("gpt-4o")  # type: ignore[arg-type]


def test_calibrate_against_reported_usage() -> None:
    counter = TiktokenCounter()
    ledger = TokenLedger(counter)
    history = _history(4)
    estimate = ledger.sync(history)
    ledger.calibrate(estimate + 40)
    assert ledger.total == estimate + 40
    history.append(text_message("next turn"))
    assert ledger.sync(history) == estimate + 40 + counter.count_message(history[-1])
    ledger.calibrate(1000, prefix_length=2)
    assert ledger.total == 1000 + counter.count_message(history[2]) + counter.count_message(
        history[3]
    ) + counter.count_message(history[4])
    assert ledger.sync(history[:3]) == 1000 + counter.count_message(history[2])
    assert ledger.sync(history[:1]) == counter.count_messages(history[:1])  # into the prefix
    ledger.calibrate(50)
    edited = [text_message("other"), *history[1:]]
    assert ledger.sync(edited) == counter.count_messages(edited)  # a recount drops it


@pytest.mark.parametrize(
    ("reported", "prefix_length"),
    [(-1, None), (True, None), (1.5, None), (10, -1), (10, 4), (10, True), (10, 1.0)],
)
def test_calibrate_rejects(reported: object, prefix_length: object) -> None:
    ledger = TokenLedger(TiktokenCounter())
    ledger.sync(_history(3))
    with pytest.raises(ConfigurationError):
        ledger.calibrate(reported, prefix_length=prefix_length)  # type: ignore[arg-type]
