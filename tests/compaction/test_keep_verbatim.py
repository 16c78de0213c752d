"""``keep`` means kept verbatim: outside an emergency nothing in the tail the caller sized is
summarized or digested; in an emergency the tail may give way, and the event says so."""

from __future__ import annotations

import json
from typing import Any

import synopsis
from synopsis.planning.reductions import SUMMARY_MARKER


def history(pairs: int, words: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Write the report."},
    ]
    for i in range(pairs):
        items += [
            {"role": "assistant", "content": f"part {i}: " + "detail " * words},
            {"role": "user", "content": f"Go on with part {i + 1}."},
        ]
    return items


def completed(result: synopsis.CompactionResult) -> synopsis.CompactionCompleted:
    (done,) = (e for e in result.events if isinstance(e, synopsis.CompactionCompleted))
    return done


def test_outside_an_emergency_the_tail_keep_asks_for_is_sent_as_it_was() -> None:
    items = history(40, 300)
    c = synopsis.Compactor(
        context_window=100_000,
        trigger=synopsis.Trigger.tokens(10_000),
        keep=20,
        min_messages=2,
        summarizer="rules",
    )
    result = c.compact(items)
    assert result.compacted
    assert result.code == "triggered"
    assert json.dumps(result.messages[-20:]) == json.dumps(items[-20:])
    assert not any(SUMMARY_MARKER in str(m["content"]) for m in result.messages)
    done = completed(result)
    assert not done.tail_gave_way
    assert "gave way" not in done.message


def test_in_an_emergency_the_tail_gives_way_and_the_event_says_so() -> None:
    items = history(30, 300)
    c = synopsis.Compactor(context_window=8_000, keep=40, min_messages=2, summarizer="rules")
    result = c.compact(items)
    assert result.code == "emergency"
    assert result.tokens_after <= 8_000 - 1_600
    done = completed(result)
    assert done.tail_gave_way
    assert "in the emergency the kept tail gave way" in done.message


def test_a_digest_that_would_not_save_anything_is_not_made() -> None:
    # Each answer is above half the trigger, so it is "oversized", yet too short for its
    # digest (the frame of a summary) to be any smaller.
    items = history(3, 60)
    c = synopsis.Compactor(
        context_window=100_000,
        trigger=synopsis.Trigger.tokens(100),
        min_messages=2,
        summarizer="rules",
    )
    result = c.compact(items)
    assert result.tokens_after <= result.tokens_before
    assert not any(SUMMARY_MARKER in str(m["content"]) for m in result.messages)
