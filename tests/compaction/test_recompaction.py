"""Compacting a history that already holds a summary of synopsis's own."""

from __future__ import annotations

from typing import Any

import pytest

import synopsis
from tests.compaction.helpers import TRANSCRIPTS, load_items


@pytest.mark.parametrize(
    "target_ratio",
    [
        pytest.param(None, id="default-target"),
        0.2,  # a target below the first compaction's trigger (a quarter of the window)
    ],
)
def test_a_large_earlier_summary_is_summarized_again_not_digested_as_tool_output(
    target_ratio: float | None,
) -> None:
    items = load_items(next(p for p in TRANSCRIPTS if "ponyc-4588" in p.name))
    size = synopsis.count_tokens(items)
    options: dict[str, Any] = {
        "context_window": size,
        "keep": synopsis.Keep.tokens(size // 16),
        "force": True,
    }
    if target_ratio is not None:
        options["target_ratio"] = target_ratio
    first = synopsis.compact(items, trigger=synopsis.Trigger.tokens(size // 4), **options)
    summaries = [m for m in first.messages if str(m.get("content")).startswith("<synopsis-summary")]
    assert len(summaries) == 1
    # a trigger low enough that the summary alone is over the oversized-message threshold
    low = synopsis.Trigger.tokens(synopsis.count_tokens(summaries) // 2 + 1)
    # A tail that leaves more than the summary before it: ``keep`` is kept verbatim, and a
    # summary alone is never summarized again on its own.
    options["keep"] = synopsis.Keep.tokens(size // 64)
    second = synopsis.compact([*first.messages, *items[-3:]], trigger=low, **options)
    assert second.compacted
    texts = [str(m.get("content")) for m in second.messages]
    assert sum(t.startswith("<synopsis-summary") for t in texts) == 1
    # Summarized into the new summary (quoted when the budget holds it: a call without a
    # store has no record of it to update), never digested as tool output.
    (summary,) = (t for t in texts if t.startswith("<synopsis-summary"))
    opening, header = str(summaries[0]["content"]).splitlines()[:2]
    assert header.startswith("Summary of the earlier conversation")
    assert header not in summary or f"An earlier summary opened this part:\n{opening}" in summary
    assert not any(t.startswith("Summary of tool output") and header in t for t in texts)
    assert synopsis.validate(second.messages, provider="openai") == []
