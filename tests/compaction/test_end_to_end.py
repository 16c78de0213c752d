"""Every bundled transcript played as a live agent would (one message at a time, compacting
whenever the governor says so) at windows of 4k, 8k and 32k tokens, in the OpenAI and the
Anthropic shapes: each history sent is valid for its provider and fits, every offloaded
message comes back from the store as the caller gave it, and nothing is summarized below the
trigger."""

from __future__ import annotations

import copy
import json
import re
from typing import TYPE_CHECKING, Any

import pytest

from synopsis.compaction import Compactor
from synopsis.errors import BudgetUnreachableError
from synopsis.stores import MemoryStore
from synopsis.testing import ScriptedSummarizer
from synopsis.validation import validate
from tests.compaction.helpers import TRANSCRIPTS, in_format, load_items

if TYPE_CHECKING:
    from pathlib import Path

WINDOWS = (4_000, 8_000, 32_000)
MARKERS = re.compile(r"Summary of tool output:|\(argument truncated\)|\[synopsis: identical")
SUMMARIZING = {"triggered", "emergency", "forced", "refresh"}


def replay(path: Path, window: int, fmt: str) -> dict[str, Any]:
    items, system = in_format(load_items(path), fmt)
    summarizer = ScriptedSummarizer()
    store = MemoryStore()
    compactor = Compactor(
        model="gpt-4o",
        context_window=window,
        summarizer=summarizer,
        store=store,
        session_id="replay",
    )
    limit = compactor.setup.window - compactor.setup.reserve
    threshold = compactor.setup.trigger.token_threshold(window)
    history: list[Any] = []
    for item in items:
        history.append(item)
        calls = len(summarizer.calls)
        sent = copy.deepcopy(history)
        try:
            result = compactor.compact(history, system=system, format=fmt)  # type: ignore[arg-type]
        except BudgetUnreachableError as error:
            # Only a system prompt larger than the window can make a history unreachable.
            reason = str(error)
            assert "the system prompt alone takes" in reason
            assert history == sent
            return {
                "stored": store.recall("replay"),
                "items": items[: len(history)],
                "final": history,
                "unreachable": True,
            }
        if len(summarizer.calls) > calls:
            assert result.code in SUMMARIZING
            assert result.tokens_before >= (threshold or 0) or result.code != "triggered"
        if result.compacted:
            assert result.tokens_after <= limit
        else:
            assert len(summarizer.calls) == calls, "a summarizer call without a compaction"
            assert result.messages == history
        assert validate(result.messages, fmt, system=result.system) == []
        history = list(result.messages)
        system = result.system
    return {
        "stored": store.recall("replay"),
        "items": items,
        "final": history,
        "unreachable": False,
    }


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_a_live_replay_stays_valid_fits_and_loses_nothing(path: Path, window: int, fmt: str):
    outcome = replay(path, window, fmt)
    items, final, stored = outcome["items"], outcome["final"], outcome["stored"]
    recalled = [json.loads(m.data) for m in stored]
    # Nothing is lost: every item the agent sent that is not in the history it ends with
    # (summarized, trimmed or reduced away) comes back from the store exactly as it was sent.
    for item in items:
        assert item in final or item in recalled
    # What else the store holds is what synopsis sent in an earlier call: a part it had made
    # small, whose original is stored too.
    for data in recalled:
        assert data in items or MARKERS.search(json.dumps(data, ensure_ascii=False))
    assert [m.position for m in stored] == list(range(len(stored)))
    # Of the bundled transcripts, only Codex's (10k tokens of system prompt) cannot fit 4k or
    # 8k; everything else plays to its end.
    assert outcome["unreachable"] == (path.stem.startswith("codex") and window < 32_000)


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini"])
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_one_compaction_in_every_format_is_valid_and_fits(path: Path, fmt: str):
    items, system = in_format(load_items(path), fmt)
    store = MemoryStore()
    compactor = Compactor(model="gpt-4o", context_window=32_000, store=store, session_id="s")
    result = compactor.compact(items, system=system, format=fmt, force=True)  # type: ignore[arg-type]
    assert result.compacted
    assert result.format == fmt
    problems = validate(result.messages, fmt, system=result.system)
    # A transcript that ends with the model's answer still does (Gemini's G5 asks for the
    # next user turn, which the agent appends before sending).
    assert [p for p in problems if p.rule != "gemini.G5"] == []
    assert result.tokens_after <= compactor.setup.window - compactor.setup.reserve
    assert result.tokens_after < result.tokens_before
    recalled = [json.loads(m.data) for m in store.recall("s")]
    assert len(recalled) == len(result.offloaded) > 0
    for data in recalled:
        assert data in items or MARKERS.search(json.dumps(data, ensure_ascii=False))
    kinds = [type(e).__name__ for e in result.events]
    assert kinds[0] == "CompactionStarted"
    assert kinds[-1] == "CompactionCompleted"
