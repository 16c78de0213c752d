"""A compaction that cannot get under its trigger is not run again on the same history every
few messages: the governor reports no progress until the history is under the trigger again,
or until the request no longer leaves room to answer (an emergency).

The case is a trigger on tokens (or messages) set below the reset ratio of the window: usage
is under that ratio from the start, so the reset ratio alone would re-arm the trigger at once
and every cooldown would buy another summary that saves nothing."""

from __future__ import annotations

from typing import Any

import synopsis

MODEL = "gpt-4o"
WINDOW = 12_000
# A system prompt of some 3,600 tokens: alone over a 3,000-token trigger.
RULES = " ".join(f"rule{i}: never edit generated file gen_{i}.py by hand." for i in range(260))
SYSTEM = {"role": "system", "content": "You are a coding agent. " + RULES}


def grow(compactor: synopsis.Compactor, messages: int) -> list[synopsis.CompactionResult]:
    """A session grown one message at a time, each call's result sent on with the next."""
    history: list[Any] = [SYSTEM]
    results = []
    for n in range(messages):
        role = "user" if n % 2 == 0 else "assistant"
        history.append({"role": role, "content": f"message {n}: " + "step details " * 40})
        result = compactor.compact(history, format="openai")
        results.append(result)
        history = list(result.messages)
    return results


def test_a_token_trigger_the_kept_messages_exceed_compacts_once_then_waits() -> None:
    compactor = synopsis.Compactor(
        model=MODEL,
        context_window=WINDOW,
        trigger=synopsis.Trigger.tokens(3_000),
        session_id="s",
        environ={},
    )
    limit = compactor.setup.window - compactor.setup.reserve
    results = grow(compactor, 110)
    compacted = [i for i, r in enumerate(results) if r.compacted]
    first = compacted[0]
    assert results[first].code == "triggered"
    assert results[first].tokens_after > 3_000  # no progress: still over the trigger
    later = results[first + 1 :]
    # While the request still leaves room to answer, nothing is compacted again, and each
    # call says why ...
    waiting = [r for r in later if r.tokens_before <= limit]
    assert len(waiting) > 50
    assert not any(r.compacted for r in waiting), [r.code for r in waiting]
    assert {r.code for r in waiting} == {"min-messages", "no-progress"}
    # ... and once the window is full, the emergency compacts all the same.
    assert any(r.code == "emergency" and r.compacted for r in later)
