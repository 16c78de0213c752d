from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import synopsis
from synopsis.replay import ReplayReport, replay
from synopsis.report import write_html

ROOT = Path(__file__).parent.parent / "examples" / "transcripts"


def load(name: str) -> list[Any]:
    return [json.loads(line) for line in (ROOT / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def codex() -> ReplayReport:
    calls: list[tuple[int, int]] = []
    report = replay(
        load("codex-compaction-config-change.jsonl"),
        model="gpt-4o",
        context_window=32000,
        max_per_turn=100,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(i + 1, report.items) for i in range(report.items)]
    return report


def test_codex_compacts_and_saves_tokens(codex: ReplayReport) -> None:
    assert codex.completed
    assert len(codex.turns) == codex.items == 174
    assert codex.compactions
    assert codex.summarizer_calls == len([t for t in codex.compactions if t.summary])
    assert codex.tokens_with < codex.tokens_without
    assert (codex.window, codex.reserve, codex.trigger_tokens) == (32000, 6400, 25600)
    for turn in codex.turns:
        assert turn.tokens_after <= codex.window
        assert turn.tokens_after <= turn.tokens_before <= turn.tokens_without
    for turn in codex.compactions:
        assert turn.tokens_after <= codex.window - codex.reserve
        assert turn.messages_after < turn.messages_before
        assert turn.summary is not None
        assert turn.summary.startswith("<")


def test_without_counts_the_raw_prefix(codex: ReplayReport) -> None:
    items = load("codex-compaction-config-change.jsonl")
    for i in (0, 50, 173):
        assert codex.turns[i].tokens_without == synopsis.count_tokens(items[: i + 1], "gpt-4o")


def test_json_round_trip(codex: ReplayReport) -> None:
    data = json.loads(json.dumps(codex.to_json()))
    assert data["compactions"] == len(codex.compactions)
    assert data["tokens_with"] == sum(t["tokens_after"] for t in data["turns"])
    assert data["tokens_without"] == codex.tokens_without
    assert data["completed"] is True
    assert data["unreachable"] is None
    assert len(data["turns"]) == 174


def test_one_long_turn_still_fits_past_the_per_turn_cap() -> None:
    """One user turn runs the whole codex session. The governor's cap of five compactions per
    turn holds while there is room, and gives way once the answer would have none."""
    report = replay(
        load("codex-compaction-config-change.jsonl"), model="gpt-4o", context_window=32000
    )
    assert report.completed
    assert len(report.compactions) > 5
    assert any(turn.code == "emergency" for turn in report.compactions)
    for turn in report.turns:
        assert turn.tokens_after <= report.window - report.reserve


def test_a_short_history_at_a_small_window() -> None:
    report = replay(load("aider-census.jsonl"), model="gpt-4o", context_window=1500)
    assert report.completed
    assert len(report.compactions) >= 2
    assert report.tokens_with < report.tokens_without
    for turn in report.compactions:
        assert turn.tokens_after <= report.window - report.reserve


def test_an_unreachable_budget_stops_the_replay() -> None:
    report = replay(
        load("codex-compaction-config-change.jsonl"), model="gpt-4o", context_window=8000
    )
    assert not report.completed
    assert report.unreachable is not None
    assert "system prompt alone" in report.unreachable
    assert len(report.turns) < report.items
    assert report.to_json()["completed"] is False


def test_a_separate_system_prompt_and_format() -> None:
    items = [
        {"role": "user", "content": "hello " * 50},
        {"role": "assistant", "content": [{"type": "text", "text": "hi " * 50}]},
    ]
    report = replay(items, fmt="anthropic", system="be brief", model="claude-sonnet-4")
    assert [t.compacted for t in report.turns] == [False, False]
    assert report.turns[0].tokens_without == report.turns[0].tokens_before


def test_html_with_a_png(tmp_path: Path) -> None:
    report = replay(load("aider-census.jsonl"), model="gpt-4o", context_window=1500)
    page = tmp_path / "r.html"
    write_html(report, page, title="<census>", image="png")
    text = page.read_text()
    assert "data:image/png;base64," in text
    assert "&lt;census&gt;" in text
    assert "&lt;summary" in text or "&lt;" in text.split("<h2>Compactions</h2>")[1]
