"""Long into small: a history many times the window still keeps at least half of the file paths
and request first lines of what it summarized, each written out whole so that it is found as
it was written; no count stands in for the token budget."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest

import synopsis
from synopsis.summarizers import RuleBasedSummarizer, render
from synopsis.summarizers.scanning import paths_in
from tests.summarizers.helpers import TRANSCRIPTS, exchange, say, user

if TYPE_CHECKING:
    from synopsis.messages import Message

FILE = re.compile(r"[^/]\.[A-Za-z]{1,5}$")
SPACE = re.compile(r"\s+")


def squash(text: str) -> str:
    return SPACE.sub(" ", text).strip()


def files_in(text: str) -> set[str]:
    return {p.rstrip(".,;:") for p in paths_in(text) if FILE.search(p.rstrip(".,;:"))}


def long_session(files: int) -> tuple[list[Message], list[str]]:
    """An agent reading ``files`` files in directories of every depth, and the paths."""
    history = [user("Port the storage layer to the new driver; keep the public API.")]
    paths = []
    for i in range(files):
        path = "src/" + "/".join(f"pkg{i % 7}" for _ in range(1 + i % 4)) + f"/module_{i}.py"
        paths.append(path)
        history += exchange(f"r{i}", "read_file", {"path": path}, f"def f{i}():\n    pass\n")
        if i % 10 == 0:
            history.append(user(f"Now the batch starting at module_{i}, please."))
    history.append(say("Next, I will run the whole test suite."))
    return history, paths


@pytest.mark.parametrize("budget", [800, 1500, 2500])
def test_paths_go_one_at_a_time_the_longest_first_and_stay_whole(budget: int) -> None:
    history, paths = long_session(300)
    summarizer = RuleBasedSummarizer(max_summary_tokens=budget)
    record = summarizer.summarize(history)
    assert record.truncated
    assert summarizer.measure(record) <= budget
    listed = "\n".join(record.sections.files_and_code)
    kept = [p for p in paths if re.search(rf"(?:^|[ ;]){re.escape(p)}(?:;|$)", listed, re.M)]
    dropped = [p for p in paths if p not in kept]
    assert kept
    assert dropped
    # Whole or not at all, and the longest first: the most paths stay.
    assert max(map(len, kept)) <= min(map(len, dropped))
    assert "{" not in listed
    assert all(p in render(record) for p in kept)
    # Every request is still there, by its first line at least.
    assert len(record.sections.user_messages) == 1 + 30


def test_a_history_many_times_the_window_keeps_half_its_paths_and_requests() -> None:
    # The bundled Codex session (about 100k tokens) compacted into an 8k window, its system
    # prompt (10k tokens, over the window) shortened so that it can fit at all.
    items: list[dict[str, Any]] = [
        json.loads(line)
        for line in next(p for p in TRANSCRIPTS if p.stem.startswith("codex"))
        .read_text()
        .splitlines()
        if line.strip()
    ]
    items = [
        dict(i, content="You are a coding agent.") if i["role"] == "system" else i for i in items
    ]
    while items[-1].get("tool_calls"):
        items.pop()
    result = synopsis.compact(
        items, model="gpt-4o", context_window=8_000, force=True, format="openai"
    )
    after = [json.dumps(i, sort_keys=True) for i in result.messages]
    removed = [i for i in items if json.dumps(i, sort_keys=True) not in after]
    assert len(removed) > len(items) // 2

    def text_of(item: dict[str, Any]) -> str:
        calls = [c["function"]["arguments"] for c in item.get("tool_calls") or ()]
        return "\n".join([str(item.get("content") or ""), *calls])

    kept = squash("\n".join(text_of(i) for i in result.messages))
    paths = set().union(*(files_in(text_of(i)) for i in removed))
    firsts = {
        squash(next(line for line in text_of(i).splitlines() if line.strip()))[:80]
        for i in removed
        if i["role"] == "user" and text_of(i).strip() and not text_of(i).startswith("#")
    }
    needles = paths | firsts
    found = {n for n in needles if squash(n) in kept}
    assert len(paths) > 100
    assert firsts <= found
    assert 2 * len(found) >= len(needles), sorted(needles - found)[:20]
