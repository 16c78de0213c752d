"""A budget no compaction can reach keeps saying so, and the summarizer's breaker is only for
the summarizer's own failures."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from synopsis import BudgetUnreachableError, Compactor
from synopsis.errors import TransportError
from synopsis.events import CompactionFailed, CompactionSkipped, Event, SummarizerFellBack
from synopsis.stores import MemoryStore
from synopsis.testing import ScriptedSummarizer, conversation
from tests.compaction.helpers import TRANSCRIPTS, load_items

CODEX = next(p for p in TRANSCRIPTS if p.stem == "codex-compaction-config-change")


def test_a_replay_over_the_window_raises_on_every_request_and_never_asks_the_summarizer() -> None:
    # The Codex session's two system messages take 10,264 tokens of the 6,400 an 8,000-token
    # window leaves after the answer's reserve: no request after the first can fit, however
    # long the session runs. A breaker that opened on these would return them over the window.
    summarizer = ScriptedSummarizer()
    compactor = Compactor(
        model="gpt-4o",
        context_window=8000,
        store="memory",
        session_id="codex",
        summarizer=summarizer,
        environ={},
    )
    items = load_items(CODEX)
    history: list[Any] = []
    errors: list[BudgetUnreachableError] = []
    returned = 0
    for item in items:
        history.append(item)
        try:
            result = compactor.compact(history)
        except BudgetUnreachableError as error:
            errors.append(error)
            continue
        returned += 1
        assert result.tokens_after <= 6_400
        history = list(result.messages)
    assert (returned, len(errors)) == (1, len(items) - 1)
    for raised in errors:
        assert "the system prompt alone takes 10,264 tokens" in str(raised)
        assert "over the 6,400 the window of 8,000 leaves" in str(raised)
        assert (raised.protected, raised.limit, raised.window) == (10_264, 6_400, 8_000)
    assert summarizer.calls == []  # found before anything is summarized, on every call
    store = compactor.setup.store
    assert isinstance(store, MemoryStore)
    state = store.session("codex")
    assert state is not None
    assert state.governor["consecutive_failures"] == 0
    assert store.recall("codex") == []


def test_a_caller_may_be_told_rather_than_raised_to() -> None:
    items = load_items(CODEX)[:6]
    got: list[Event] = []
    compactor = Compactor(
        model="gpt-4o",
        context_window=8000,
        on_unreachable="return",
        listeners=[got.append],
        environ={},
    )
    result = compactor.compact(items)
    assert result.code == "budget-unreachable"
    assert not result.compacted
    assert result.messages == items
    assert result.tokens_after == result.tokens_before > 6_400
    assert "the system prompt alone takes 10,264 tokens" in result.reason
    failed = [e for e in got if isinstance(e, CompactionFailed)]
    assert [(e.stage, e.error_type) for e in failed] == [("budget", "BudgetUnreachableError")]
    assert failed[0].error == result.reason
    # The async twin tells the same.
    again = asyncio.run(compactor.acompact(items))
    assert (again.code, again.reason) == (result.code, result.reason)


def test_the_breaker_opens_on_summarizer_failures_says_which_and_the_rules_carry_an_emergency() -> (
    None
):
    summarizer = ScriptedSummarizer(*[TransportError("connection refused")] * 3)
    got: list[Event] = []
    compactor = Compactor(
        model="gpt-4o",
        context_window=8000,
        session_id="s",
        summarizer=summarizer,
        # The trigger (6,400) under the limit (7,000): between them the breaker holds.
        reserve_output_tokens=1000,
        listeners=[got.append],
        environ={},
    )
    history: list[Any] = []
    emergencies = []
    for item in conversation(turns=80, result_chars=1500):
        history.append(item)
        result = compactor.compact(history)
        history = list(result.messages)
        assert result.tokens_after <= compactor.setup.limit
        if result.compacted and len(summarizer.calls) == 3 and result.code == "emergency":
            emergencies.append(result)
    fell = [e for e in got if isinstance(e, SummarizerFellBack)]
    assert len(fell) == 3
    assert len(summarizer.calls) == 3  # never asked again once the breaker opened
    held = [e for e in got if isinstance(e, CompactionSkipped) and e.reason == "breaker-open"]
    assert held
    assert "failed 3 times in a row (last: scripted: TransportError" in held[0].detail
    # Over the window the history is compacted all the same, by the rules.
    assert emergencies
    for result in emergencies:
        assert "the summarizer's breaker is open" in result.reason
        assert result.record is not None
        assert result.record.model == compactor.setup.rules.model


def test_an_unreachable_budget_is_not_counted_by_the_breaker() -> None:
    compactor = Compactor(
        model="gpt-4o",
        context_window=4000,
        session_id="big",
        breaker_failures=1,
        environ={},
    )
    data = [{"role": "system", "content": "rule " * 3500}, {"role": "user", "content": "hi"}]
    for _ in range(5):
        with pytest.raises(BudgetUnreachableError):
            compactor.compact(data)
    store = compactor.setup.store
    assert isinstance(store, MemoryStore)
    state = store.session("big")
    assert state is not None
    assert state.governor["consecutive_failures"] == 0
