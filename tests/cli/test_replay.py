from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest

import synopsis
from synopsis.cli.replay import ReplayReport, _align, _parts, replay
from synopsis.cli.replay_requests import Uncompacted
from synopsis.cli.report import write_html
from synopsis.compaction import Compactor
from synopsis.formats import FormatName, decode, encode
from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.pricing import OPENAI
from tests.cli.helpers import TRANSCRIPTS, lines

if TYPE_CHECKING:
    from pathlib import Path


def load(name: str) -> list[Any]:
    return lines(TRANSCRIPTS / name)


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
        if turn.summary is not None:
            assert turn.messages_after < turn.messages_before
            assert turn.summary.startswith("<")
        else:  # the cheap reductions alone made it fit: nothing summarized, something reduced
            assert turn.messages_after == turn.messages_before
            assert turn.messages_summarized == 0
            assert any(m.reduced for m in turn.kept)


def test_the_first_compaction_does_not_claim_a_cooldown_gave_way(codex: ReplayReport) -> None:
    # No compaction ran before the first, so no cooldown was running to give way.
    first = codex.compactions[0]
    assert first.code == "emergency"
    assert first.reason.endswith("the next request would not fit")


def test_each_compaction_names_what_it_summarized_and_kept(codex: ReplayReport) -> None:
    items = load("codex-compaction-config-change.jsonl")
    covered = 0
    for turn in codex.compactions:
        assert len(turn.summarized) + turn.messages_kept == turn.messages_before
        assert [m.position for m in turn.summarized] == sorted(m.position for m in turn.summarized)
        assert [m.position for m in turn.kept] == sorted(m.position for m in turn.kept)
        assert all(m.position < turn.messages_before for m in turn.summarized)
        assert all(m.position < turn.messages_after for m in turn.kept)
        assert sum(m.summary for m in turn.summarized) <= 1
        # The summary says how many messages it stands for: this compaction's, or with a
        # chain's running total, every compaction's so far. The replay found them on its own.
        covered += turn.messages_summarized
        if turn.summary is not None:
            found = re.search(r'messages="(\d+)"', turn.summary)
            assert found is not None
            assert int(found.group(1)) in {turn.messages_summarized, covered}
        # The first compaction replaces the caller's items themselves.
        if turn is codex.compactions[0]:
            assert all(m.item in items for m in turn.summarized)
            assert turn.summarized[0].item == items[turn.summarized[0].position]
        # Every original offloaded is in the store: the summarized and the reduced kept ones.
        assert turn.session_id == "replay"
        assert turn.recallable == len(turn.offloaded) == len(turn.positions)
        reduced = [m for m in turn.kept if m.reduced]
        assert turn.messages_summarized + len(reduced) == len(turn.offloaded)
        stored = [m.stored for m in (*turn.summarized, *reduced) if not m.summary]
        assert sorted(p for p in stored if p is not None) == list(turn.positions)
    uncompacted = next(t for t in codex.turns if not t.compacted)
    assert (uncompacted.summarized, uncompacted.kept, uncompacted.recallable) == ((), (), None)


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
    assert data["tokens_saved"] == codex.tokens_without - codex.tokens_with
    assert data["saved_share"] == round(codex.tokens_saved / codex.tokens_without, 4)
    for turn, out in zip(codex.turns, data["turns"], strict=True):
        assert "summarized" not in out
        assert "kept" not in out
        assert out["messages_summarized"] == turn.messages_summarized
        assert out["messages_kept"] == turn.messages_kept
        assert out["offloaded"] == list(turn.offloaded)
        assert out["positions"] == list(turn.positions)
        assert out["recallable"] == turn.recallable
        assert out["cached_tokens"] == turn.cached_tokens
        assert out["cost"] == turn.cost
    assert data["bursts"] == len(codex.bursts)
    assert data["burst_turns"] == [t.index for t in codex.bursts]
    assert data["landed"] == [round(t.tokens_after / 32000, 4) for t in codex.compactions]
    assert data["targets"] == [t.target for t in codex.compactions]
    assert data["breakers"] == []
    assert data["prices"] == {"name": "openai", "input": 1.25, "cached": 0.125, "write_premium": 0}
    assert data["cost_with"] == round(sum(t.cost for t in codex.turns), 6)
    assert data["cost_without"] == round(sum(t.cost_without for t in codex.turns), 6)
    assert data["cached_tokens"] == sum(t.cached_tokens for t in codex.turns)
    assert data["cache_hits"] == sum(1 for t in codex.turns if t.cached_tokens)


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
    assert report.unreachable == f"turn {len(report.turns)}: {report.window_error}"
    assert len(report.turns) < report.items
    assert report.to_json()["completed"] is False


def test_kept_messages_too_large_stop_the_replay_without_blaming_the_window() -> None:
    # The arguments are not JSON, so nothing can cut them: the newest turn cannot fit, but
    # the turns before it could, and a larger system prompt is not the cause.
    function = {"name": "read_file", "arguments": "x" * 40000}
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": function}],
    }
    report = replay([*load("aider-census.jsonl"), call], context_window=4000)
    assert report.unreachable is not None
    assert report.unreachable.startswith("turn 20: ")
    assert "the messages that must be kept" in report.unreachable
    assert report.window_error is None
    assert len(report.turns) == 20


def _gemini(item: dict[str, Any]) -> dict[str, Any]:
    role = "model" if item["role"] == "assistant" else "user"
    return {"role": role, "parts": [{"text": item["content"]}]}


AIDER_ITEMS = load("aider-census.jsonl")
GEMINI_ITEMS = [_gemini(i) for i in AIDER_ITEMS]
INSTRUCTION = {"parts": [{"text": "be brief"}]}


@pytest.mark.parametrize(
    ("body", "items", "options"),
    [
        ({"messages": AIDER_ITEMS}, AIDER_ITEMS, {}),
        (
            {"system": "be brief", "messages": AIDER_ITEMS},
            AIDER_ITEMS,
            {"fmt": "anthropic", "system": "be brief"},
        ),
        (
            {"systemInstruction": INSTRUCTION, "contents": GEMINI_ITEMS},
            GEMINI_ITEMS,
            {"fmt": "gemini", "system": INSTRUCTION},
        ),
        (
            {"system_instruction": INSTRUCTION, "contents": GEMINI_ITEMS},
            GEMINI_ITEMS,
            {"fmt": "gemini", "system": INSTRUCTION},
        ),
        ({"input": AIDER_ITEMS}, AIDER_ITEMS, {"fmt": "responses"}),
        ({"input": "hello"}, [{"role": "user", "content": "hello"}], {"fmt": "responses"}),
    ],
    ids=["openai", "anthropic", "gemini", "gemini-snake-case", "responses", "responses-text"],
)
def test_a_request_body_replays_as_its_items_and_system(
    body: dict[str, Any], items: list[Any], options: dict[str, Any]
) -> None:
    from_body = replay(body, context_window=1500)
    assert from_body.to_json() == replay(items, context_window=1500, **options).to_json()
    assert from_body.items == len(items)


def test_a_separate_system_prompt_and_format() -> None:
    items = [
        {"role": "user", "content": "hello " * 50},
        {"role": "assistant", "content": [{"type": "text", "text": "hi " * 50}]},
    ]
    report = replay(items, fmt="anthropic", system="be brief", model="claude-sonnet-4")
    assert [t.compacted for t in report.turns] == [False, False]
    assert report.turns[0].tokens_without == report.turns[0].tokens_before
    assert report.saved_share == 0.0


def test_a_system_prompt_given_apart_is_kept_without_an_item() -> None:
    items = load("aider-census.jsonl")
    report = replay(
        items, fmt="anthropic", system="be brief", model="claude-sonnet-4", context_window=1500
    )
    assert report.compactions
    for turn in report.compactions:
        system = turn.kept[0]
        assert (system.position, system.role, system.item) == (0, "system", None)
        assert system.parts == (("text", "be brief"),)
    # Positions count the system prompt, which the caller's items do not hold.
    first = report.compactions[0]
    assert [m.item for m in first.summarized] == [items[m.position - 1] for m in first.summarized]


def test_without_a_store_nothing_is_offloaded() -> None:
    report = replay(
        load("aider-census.jsonl"),
        model="gpt-4o",
        context_window=1500,
        store=None,
        session_id=None,
    )
    assert report.compactions
    for turn in report.compactions:
        assert turn.offloaded == ()
        assert turn.positions == ()
        assert turn.recallable == 0
        assert turn.messages_summarized > 0
        assert all(m.stored is None for m in turn.summarized)


def test_html_with_a_png(tmp_path: Path) -> None:
    report = replay(load("aider-census.jsonl"), model="gpt-4o", context_window=1500)
    page = tmp_path / "r.html"
    write_html(report, page, title="<census>", image="png")
    text = page.read_text()
    assert "data:image/png;base64," in text
    assert "&lt;census&gt;" in text
    assert "&lt;summary" in text or "&lt;" in text.split("<h2>Compactions</h2>")[1]


def test_parts_show_calls_by_name_and_results_by_text() -> None:
    call = ToolCallPart("c1", "shell", {"cmd": "ls"})
    shown = _parts(
        Message(
            Role.ASSISTANT,
            (
                ReasoningPart("thinking it over"),
                ReasoningPart(encrypted="xyz"),
                TextPart("let me look"),
                call,
                MediaPart("image", url="https://example.com/a.png"),
                OpaquePart("server_tool_use", {"type": "server_tool_use"}, "searched"),
            ),
        ),
        {},
    )
    assert shown == (
        ("reasoning", "thinking it over"),
        ("reasoning", "[opaque to the reader]"),
        ("text", "let me look"),
        ("tool call shell", call.arguments_text),
        ("image", MediaPart("image", url="https://example.com/a.png").placeholder),
        ("server_tool_use", "searched"),
    )
    results = Message(
        Role.TOOL,
        (
            ToolResultPart("c1", "a.txt"),
            ToolResultPart("c2", "boom", is_error=True, name="run"),
            ToolResultPart("c3", "?"),
        ),
    )
    assert _parts(results, {"c1": "shell"}) == (
        ("tool result of shell", "a.txt"),
        ("tool result of run (error)", "boom"),
        ("tool result of c3", "?"),
    )


def _user(text: str) -> Message:
    return Message(Role.USER, (TextPart(text),))


def test_align_pairs_reduced_messages_around_the_summary() -> None:
    """The protected head before the summary and the tail after it may come back reduced: each
    is paired with its original by its place in the run the compaction rewrote."""
    system, first, old = (
        Message(Role.SYSTEM, (TextPart("sys"),)),
        _user("task"),
        _user('<synopsis-summary depth="0">old</synopsis-summary>'),
    )
    a, b, c, d = (_user(x) for x in "abcd")
    new = _user('<synopsis-summary depth="1">new</synopsis-summary>')
    before = [system, first, old, a, b, c, d]
    after = [system, _user("task, trimmed"), new, _user("c, reduced"), d]
    replaced, kept = _align(before, after)
    assert replaced == [2, 3, 4]
    assert kept == {0: 0, 1: 1, 3: 5, 4: 6}
    # A run rewritten with no summary in it: its messages are paired in order.
    replaced, kept = _align([system, a, b], [system, _user("a, reduced"), b])
    assert (replaced, kept) == ([], {0: 0, 1: 1, 2: 2})


def test_equal_messages_are_each_told_their_own_store_position() -> None:
    items: list[Any] = [{"role": "user", "content": "Write the census report."}]
    for i in range(12):
        text = f"Part {i}: " + "the census counts people by county and age. " * 20
        items += [{"role": "assistant", "content": text}, {"role": "user", "content": "continue"}]
    report = replay(items, model="gpt-4o", context_window=1200)
    assert report.compactions
    for turn in report.compactions:
        again = [m for m in turn.summarized if m.parts == (("text", "continue"),)]
        assert len(again) > 1
        stored = [m.stored for m in turn.summarized if not m.summary]
        assert None not in stored
        numbered = [p for p in stored if p is not None]
        assert numbered == sorted(numbered)
        # The originals of kept messages made small to fit the tail are stored too.
        reduced = [m.stored for m in turn.kept if m.stored is not None]
        assert sorted([*numbered, *reduced]) == list(turn.positions)


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses", "gemini"])
def test_the_tokens_without_synopsis_are_each_prefix_counted_afresh(fmt: FormatName) -> None:
    items = load("openhands-ponylang-ponyc-4593.jsonl")[:40]
    wire = encode(decode(items, "openai").messages, fmt)
    setup = Compactor(model="gpt-4o", environ={}).setup
    running = Uncompacted(setup, wire.messages, fmt, wire.system, OPENAI)
    for n in range(1, len(wire.messages) + 1):
        prefix = decode(list(wire.messages[:n]), fmt, system=wire.system).messages
        assert running.send(n)[0] == setup.counter.count_messages(prefix), n
