"""Compacting a history that already holds a summary of synopsis's own."""

from __future__ import annotations

from typing import Any

import synopsis
from tests.compaction.helpers import TRANSCRIPTS, load_items


def test_a_large_earlier_summary_is_summarized_again_not_digested_as_tool_output() -> None:
    items = load_items(next(p for p in TRANSCRIPTS if "ponyc-4588" in p.name))
    size = synopsis.count_tokens(items)
    options: dict[str, Any] = {
        "context_window": size,
        "keep": synopsis.Keep.tokens(size // 16),
        "force": True,
    }
    first = synopsis.compact(items, trigger=synopsis.Trigger.tokens(size // 4), **options)
    summaries = [m for m in first.messages if str(m.get("content")).startswith("<synopsis-summary")]
    assert len(summaries) == 1
    # a trigger low enough that the summary alone is over the oversized-message threshold
    low = synopsis.Trigger.tokens(synopsis.count_tokens(summaries) // 2 + 1)
    second = synopsis.compact([*first.messages, *items[-3:]], trigger=low, **options)
    assert second.compacted
    texts = [str(m.get("content")) for m in second.messages]
    assert sum(t.startswith("<synopsis-summary") for t in texts) == 1
    assert not any("An earlier summary opened this part" in t for t in texts)
    assert synopsis.validate(second.messages, provider="openai") == []
