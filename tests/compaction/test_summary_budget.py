"""The budget a compaction gives its summary: its share of the room the target leaves, and
never more than the messages it replaces (a summary as long as them saves nothing).

Seen from outside, through ``compact``: a summarizer that records the ``max_tokens`` it is
asked for, over a real agent session (OpenHands on ponyc, 101 messages, 22k tokens)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import synopsis

if TYPE_CHECKING:
    from collections.abc import Sequence

MODEL = "gpt-4o"
TRANSCRIPTS = Path(__file__).resolve().parents[2] / "examples" / "transcripts"
PONYC = [
    json.loads(line)
    for line in (TRANSCRIPTS / "openhands-ponylang-ponyc-4588.jsonl").read_text().splitlines()
    if line
]
COUNTER = synopsis.counter_for_model(MODEL)


class Budgets(synopsis.RuleBasedSummarizer):
    """The rule summarizer at its default ceiling, keeping each call's budget and the tokens
    of the messages it was given."""

    def __init__(self) -> None:
        super().__init__(max_summary_tokens=8_000, model_for_counting=MODEL)
        self.calls: list[tuple[int | None, int]] = []

    def summarize(
        self, messages: Sequence[synopsis.Message], *, max_tokens: int | None = None, **kw: Any
    ) -> synopsis.SummaryRecord:
        given = sum(COUNTER.count_message(m) for m in messages)
        self.calls.append((max_tokens, given))
        return super().summarize(messages, max_tokens=max_tokens, **kw)


def forced(summarizer: Budgets, **options: Any) -> synopsis.CompactionResult:
    compactor = synopsis.Compactor(model=MODEL, summarizer=summarizer, environ={}, **options)
    result = compactor.compact(PONYC, format="openai", force=True)
    assert result.compacted
    assert result.tokens_after < result.tokens_before
    return result


def head_tokens(result: synopsis.CompactionResult) -> int:
    """Tokens of the messages kept ahead of the summary (the system prompt and the task)."""
    index = next(
        i
        for i, m in enumerate(result.messages)
        if str(m.get("content")).startswith("<synopsis-summary")
    )
    return synopsis.count_tokens(result.messages[:index], MODEL)


@pytest.mark.parametrize(("window", "share"), [(16_000, 0.5), (32_000, 0.5), (32_000, 0.3)])
def test_the_summary_is_given_its_share_of_the_room_the_target_leaves(
    window: int, share: float
) -> None:
    summarizer = Budgets()
    result = forced(summarizer, context_window=window, summary_ratio=share)
    head = head_tokens(result)
    # The defaults aim at 0.5 / 0.7 of what the head leaves under the reset ratio (70% of
    # the window), on top of the head: that is the room, and the summary takes its share.
    room = (0.5 / 0.7) * (0.7 * window - head)
    (budget, _), *_ = summarizer.calls
    assert budget is not None
    assert abs(budget - share * room) <= 0.01 * window, (budget, share * room)


def test_a_summary_is_never_asked_for_more_than_the_messages_it_replaces() -> None:
    # The last 95 messages kept: the cut holds four messages, 985 tokens, far less than the
    # summary's share of a 32k window (some 7,000 tokens).
    summarizer = Budgets()
    forced(summarizer, context_window=32_000, keep=synopsis.Keep.messages(95))
    (budget, given), *_ = summarizer.calls
    assert given < 2_000
    assert budget == given


def test_a_cut_smaller_than_the_floor_still_gets_the_floor() -> None:
    # The floor (256 tokens) is the least a summary can say anything in; a cut of fewer
    # tokens gets it all the same.
    summarizer = Budgets()
    compactor = synopsis.Compactor(
        model=MODEL,
        context_window=32_000,
        keep=synopsis.Keep.messages(28),
        summarizer=summarizer,
        environ={},
    )
    history = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test in app.py."},
        {"role": "assistant", "content": "Looking."},
        {"role": "user", "content": "Also keep the public API unchanged."},
        {"role": "assistant", "content": "Understood."},
        *PONYC[2:30],
    ]
    compactor.compact(history, format="openai", force=True)
    (budget, given), *_ = summarizer.calls
    assert given < 256
    assert budget == 256
