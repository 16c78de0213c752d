"""The HTML report lets a person judge each summary against its originals: for every compaction,
what it summarized, the summary, what it kept, and where the originals can be recalled."""

from __future__ import annotations

import html
import itertools
import json
import re
import sys
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from synopsis.cli.common import UsageError
from synopsis.cli.figures import dollars
from synopsis.cli.replay import ReplayReport, Shown, Turn, replay
from synopsis.cli.report import (
    SHOWN_CHARS,
    figure,
    plot_bytes,
    plot_title,
    ranges,
    write_html,
)
from tests.cli.helpers import TRANSCRIPTS, lines

if TYPE_CHECKING:
    from pathlib import Path


def load(name: str) -> list[Any]:
    return lines(TRANSCRIPTS / name)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReplayReport, str]:
    """What ``make demo`` writes: the codex session at gpt-5 in a 32,000-token window."""
    report = replay(
        load("codex-compaction-config-change.jsonl"), model="gpt-5", context_window=32000
    )
    page = tmp_path_factory.mktemp("demo") / "replay.html"
    write_html(report, page, title="demo")
    return report, page.read_text(encoding="utf-8")


def section(page: str, index: int) -> dict[str, str]:
    """The parts of compaction ``index``'s section, by heading."""
    start = page.index(f'<section class="compaction" id="turn-{index}">')
    body = page[start : page.index("</section>", start)]
    parts = re.split(r"<h4>(Summarized|Summary|Kept|Recall)\b", body)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def intro(page: str, index: int) -> str:
    """What compaction ``index``'s section says before the messages it summarized."""
    start = page.index(f'<section class="compaction" id="turn-{index}">')
    return page[start : page.index("<h4>Summarized", start)]


def first_text(message: Shown) -> str:
    return next(text for _, text in message.parts if text.strip())


def test_a_section_per_compaction_and_the_totals(demo: tuple[ReplayReport, str]) -> None:
    report, page = demo
    done = report.compactions
    assert done
    assert page.count('<section class="compaction"') == len(done)
    assert f"<tr><th>compactions</th><td>{len(done)}</td></tr>" in page
    assert f"<tr><th>summarizer calls</th><td>{report.summarizer_calls}</td></tr>" in page
    assert f"<td>{report.tokens_with:,}</td>" in page
    assert f"<td>{report.tokens_without:,}</td>" in page
    assert f"({report.saved_share:.1%})" in page
    bursts = [b.index - a.index for a, b in itertools.pairwise(done) if b.index - a.index <= 2]
    assert f"<tr><th>within two requests of the one before</th><td>{len(bursts)}</td>" in page
    with_, without = dollars(report.cost_with, report.cost_without)
    assert f"<tr><th>input cost with a prefix cache, with synopsis</th><td>{with_}</td>" in page
    assert f"<tr><th>input cost with a prefix cache, without</th><td>{without}</td>" in page
    assert "<td>openai: $1.25/M input, $0.125/M cached</td>" in page
    hits = sum(1 for t in report.turns if t.cached_tokens)
    assert f"<td>{hits:,} of {len(report.turns):,} (" in page
    before = None
    for turn in done:
        share = f"{turn.tokens_after / report.window:.1%}"
        since = "-" if before is None else turn.index - before
        since = f"{since} !" if isinstance(since, int) and since <= 2 else str(since)
        before = turn.index
        target = "-" if turn.target is None else f"{turn.target:.1%}"
        row = (
            f'<a href="#turn-{turn.index}">{turn.index}</a></td><td class="n">{since}</td>'
            f'<td class="n">{turn.tokens_before:,} → {turn.tokens_after:,}</td>'
            f'<td class="n">{share}</td><td class="n">{target}</td>'
            f'<td class="n">{turn.messages_summarized}</td>'
            f'<td class="n">{turn.messages_kept}</td>'
            f'<td class="n">{turn.recallable} of {len(turn.offloaded)}</td>'
            f'<td class="n">{turn.cached_tokens:,}</td><td class="n">{dollars(turn.cost)[0]}</td>'
            f"<td>{html.escape(turn.reason)}</td>"
        )
        assert row in page


def test_the_summarized_messages_are_in_their_section(demo: tuple[ReplayReport, str]) -> None:
    report, page = demo
    request = "let's update the defailt context compart to 90 in env var"
    (turn,) = [t for t in report.compactions if any(first_text(m) == request for m in t.summarized)]
    assert html.escape(request) in section(page, turn.index)["Summarized"]
    for turn in report.compactions:
        parts = section(page, turn.index)
        assert f": {turn.messages_summarized} message(s)" in parts["Summarized"]
        for message in turn.summarized:
            assert html.escape(first_text(message)[:300]) in parts["Summarized"]
            if message.stored is not None:
                assert f"original at store position {message.stored}" in parts["Summarized"]


def test_the_summary_kept_messages_and_recall(demo: tuple[ReplayReport, str]) -> None:
    report, page = demo
    for turn in report.compactions:
        parts = section(page, turn.index)
        if turn.summary is not None:
            assert html.escape(turn.summary) in parts["Summary"]
        assert f": {turn.messages_kept} message(s)" in parts["Kept"]
        ends = turn.kept[:4] + turn.kept[-4:]
        for message in ends:
            assert html.escape(first_text(message)[:300]) in parts["Kept"]
        if turn.messages_kept > 9:
            assert f"… {turn.messages_kept - 8} more kept messages, not shown …" in parts["Kept"]
        n = len(turn.offloaded)
        assert n
        assert f"<b>{n} of {n} recallable</b>" in parts["Recall"]
        start, stop = turn.positions[0], turn.positions[-1] + 1
        assert f"--session replay --start {start} --stop {stop}</code>" in parts["Recall"]
        assert html.escape(json.dumps({"start": start, "stop": stop})) in parts["Recall"]
        assert all(i in parts["Recall"] for i in turn.offloaded)


def test_long_messages_are_cut_and_the_page_stays_small(demo: tuple[ReplayReport, str]) -> None:
    report, page = demo
    long = [(t, m) for t in report.compactions for m in t.summarized if m.chars > SHOWN_CHARS]
    assert long
    for turn, message in long:
        note = f"[… {message.chars - SHOWN_CHARS:,} more characters]"
        assert note in section(page, turn.index)["Summarized"]
    assert len(page) < 1_000_000


def test_the_page_is_self_contained(demo: tuple[ReplayReport, str]) -> None:
    _, page = demo
    assert "<svg" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<script" not in page.lower()
    assert "<link" not in page.lower()


def test_ranges() -> None:
    assert ranges([]) == ""
    assert ranges([3]) == "3"
    assert ranges([0, 1, 2, 4, 6, 7]) == "0-2, 4, 6-7"


def shown(position: int, *parts: tuple[str, str], **flags: Any) -> Shown:
    return Shown(position=position, role="user", parts=parts, **flags)


def turn(index: int, **fields: Any) -> Turn:
    base: dict[str, Any] = {
        "index": index,
        "tokens_before": 900,
        "tokens_after": 300,
        "tokens_without": 900,
        "messages_before": 6,
        "messages_after": 3,
        "compacted": True,
        "code": "triggered",
        "reason": "over <the> trigger",
        "session_id": "s&1",
    }
    return Turn(**(base | fields))


def test_edge_cases_of_a_compaction(tmp_path: Path) -> None:
    calls = [(f"tool call t{i}", "{}") for i in range(4)] + [("tool call t0", "{}")]
    report = ReplayReport(model=None, window=1000, reserve=100, trigger_tokens=None, items=3)
    report.turns = [
        turn(
            0,
            summary=None,
            kept=(
                *(shown(i, ("text", f"kept {i}")) for i in range(3)),
                shown(3, ("text", "cut short"), reduced=True, stored=4),
            ),
            offloaded=("a", "b", "c"),
            positions=(4, 6, 7),
            recallable=3,
        ),
        turn(
            1,
            summary="<synopsis-summary>new</synopsis-summary>",
            summarized=(
                shown(0, ("text", "<synopsis-summary>old</synopsis-summary>"), summary=True),
                shown(1, ("text", ""), *calls),
            ),
            kept=tuple(shown(i, ("text", f"kept {i}")) for i in range(12)),
            offloaded=("d",),
            recallable=0,
        ),
        turn(2, summarized=(shown(0, ("text", "x")),)),
    ]
    report.unreachable = "turn 3: <too big>"
    page_path = tmp_path / "edge.html"
    write_html(report, page_path, title="edge")
    page = page_path.read_text()
    assert "<tr><th>trigger</th><td>none</td></tr>" in page
    assert "<tr><th>stopped at</th><td>turn 3: &lt;too big&gt;</td></tr>" in page

    reduced = section(page, 0)
    assert "No summary was written: the history was only reduced." in reduced["Summary"]
    assert '<p class="note">none</p>' in reduced["Summarized"]
    assert "#3 · user · reduced · original at store position 4" in reduced["Kept"]
    assert "at store position(s) 4, 6-7: <b>3 of 3 recallable</b>" in reduced["Recall"]
    assert "--session s&amp;1 --ids a,b,c</code>" in reduced["Recall"]
    assert html.escape(json.dumps({"ids": ["a", "b", "c"]})) in reduced["Recall"]

    updated = section(page, 1)
    assert "1 message(s), and 1 earlier summary" in updated["Summarized"]
    assert "an earlier summary, which this one takes over" in updated["Summarized"]
    assert "&lt;synopsis-summary&gt;old" in updated["Summarized"]
    assert (
        "tool call t0 x2 · tool call t1 · tool call t2 · 1 more kinds of part"
        in (updated["Summarized"])
    )
    assert "&lt;synopsis-summary&gt;new" in updated["Summary"]
    assert "… 4 more kept messages, not shown …" in updated["Kept"]
    assert "kept 3" in updated["Kept"]
    assert "kept 4" not in updated["Kept"]
    assert "kept 8" in updated["Kept"]
    assert "position(s) unknown: <b>0 of 1 recallable</b>" in updated["Recall"]
    assert "--ids d</code>" in updated["Recall"]

    assert "Nothing was offloaded" in section(page, 2)["Recall"]
    assert "over &lt;the&gt; trigger" in page
    assert "<the>" not in page


def test_dollars_share_one_precision() -> None:
    assert dollars(0.5728, 1.7126) == ["$0.57", "$1.71"]
    assert dollars(0.05728, 0.17126) == ["$0.0573", "$0.1713"]
    assert dollars(1234.5) == ["$1,234.50"]
    assert dollars() == []


def test_what_the_events_said_is_shown(tmp_path: Path) -> None:
    report = ReplayReport(model=None, window=1000, reserve=100, trigger_tokens=800, items=30)
    report.turns = [
        turn(10, target=0.5, cached_tokens=120, cost=0.25),
        turn(11, emergency="one new message of 700 tokens, larger than the room left"),
        turn(13, off_target="a protected head of 600 tokens, larger than the room"),
        turn(20, breaker=0.4, target=0.4),
    ]
    assert [t.index for t in report.bursts] == [11, 13]
    page_path = tmp_path / "events.html"
    write_html(report, page_path, title="events")
    page = page_path.read_text()
    assert "<tr><th>within two requests of the one before</th><td>2</td></tr>" in page
    assert "landed at 30.0% to 30.0% of the window, aiming at 40.0% to 50.0%" in page
    first = intro(page, 10)
    assert "fills 30.0% of the window, where it aimed at 50.0%." in first
    assert "repeats 120 tokens of the one before" in first
    assert "its input costs $0.2500." in first
    said = {
        11: "turn 11, an emergency: one new message of 700 tokens, larger than the room left",
        13: "turn 13, off its target: a protected head of 600 tokens, larger than the room",
        20: "turn 20 opened the refill breaker: compactions land at 40% of the window from then on",
    }
    for index, line in said.items():
        assert f'<p class="note">{line}</p>' in intro(page, index)
        assert f"<tr><th>event</th><td>{line}</td></tr>" in page
    assert '<td class="n">1 !</td>' in page
    assert '<td class="n">2 !</td>' in page
    assert '<td class="n">7</td>' in page


def test_plot_without_compactions_or_token_trigger(tmp_path: Path) -> None:
    items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    report = replay(items, trigger="messages:100")
    assert report.trigger_tokens is None
    assert plot_bytes(report, "svg").lstrip().startswith(b"<?xml")
    page = tmp_path / "r.html"
    write_html(report, page, title="empty")
    assert "<p>none</p>" in page.read_text()


def test_plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    report = replay([{"role": "user", "content": "hi"}])
    with pytest.raises(UsageError, match=r'pip install "synopsis\[report\]"'):
        plot_bytes(report, "png")


def test_an_html_report_without_matplotlib_is_written_without_its_plot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # --html asks for no plot: the page is written, and says how to get the picture.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    report = replay([{"role": "user", "content": "hi"}])
    page = tmp_path / "r.html"
    write_html(report, page, title="no plot")
    text = page.read_text()
    assert "<h2>Totals</h2>" in text
    assert "<svg" not in text
    assert (
        'No plot of tokens per turn: plotting needs matplotlib: pip install "synopsis[report]"'
        in (html.unescape(text))
    )


def test_the_plot_names_the_transcript_and_the_tokens_saved(
    demo: tuple[ReplayReport, str],
) -> None:
    report, _ = demo
    drawn = figure(report, source="codex-compaction-config-change.jsonl")
    assert drawn.get_suptitle() == (
        f"codex-compaction-config-change.jsonl — gpt-5, 32,000-token window: "
        f"{report.saved_share:.1%} of tokens saved"
    )
    (axes,) = drawn.axes
    emergencies = sum(t.code == "emergency" for t in report.compactions)
    assert axes.get_title() == (
        f"{report.tokens_with:,} tokens sent instead of {report.tokens_without:,} over "
        f"{len(report.turns)} turns; {len(report.compactions)} compaction(s), "
        f"{emergencies} of them in an emergency"
    )


def test_the_plot_marks_emergencies_apart_and_keeps_its_legend_off_the_data(
    demo: tuple[ReplayReport, str],
) -> None:
    report, _ = demo
    drawn = figure(report)
    (axes,) = drawn.axes
    emergency = [t for t in report.compactions if t.code == "emergency"]
    regular = [t for t in report.compactions if t.code != "emergency"]
    assert emergency  # the demo session overflows its window more than once
    assert regular
    alarm, usual = f"emergency compaction ({len(emergency)})", f"compaction ({len(regular)})"
    marks = {c.get_label(): c for c in axes.collections}
    assert set(marks) == {alarm, usual}
    where = {label: np.asarray(mark.get_offsets()).tolist() for label, mark in marks.items()}
    assert where[alarm] == [[t.index, t.tokens_after] for t in emergency]
    assert where[usual] == [[t.index, t.tokens_after] for t in regular]
    assert not np.array_equal(marks[alarm].get_facecolor(), marks[usual].get_facecolor())
    # One legend, the figure's, naming both kinds of mark, and wholly below the axes.
    assert axes.get_legend() is None
    (legend,) = drawn.legends
    assert set(marks) <= {text.get_text() for text in legend.get_texts()}
    drawn.draw_without_rendering()
    assert legend.get_window_extent().y1 <= axes.get_window_extent().y0


def test_the_plot_of_a_replay_that_stopped_says_where() -> None:
    report = ReplayReport(
        model=None,
        window=1000,
        reserve=100,
        trigger_tokens=800,
        items=3,
        unreachable="turn 0: nothing fits",
    )
    assert plot_title(report) == (
        "synopsis replay — default model, 1,000-token window: 0.0% of tokens saved"
    )
    (axes,) = figure(report).axes
    assert axes.get_title().endswith("; turn 0: nothing fits")


def test_cleared_outputs_are_shown_beside_what_they_replaced(tmp_path: Path) -> None:
    items = load("codex-compaction-config-change.jsonl")
    report = replay(items, model="gpt-5", context_window=32000, strategy="clear")
    page = tmp_path / "cleared.html"
    write_html(report, page, title="cleared")
    text = page.read_text(encoding="utf-8")
    turn = next(t for t in report.compactions if any(m.cleared for m in t.kept))
    cleared = [m for m in turn.kept if m.cleared]
    kept = section(text, turn.index)["Kept"]
    # Every cleared message is on the page, in the middle of the kept ones too, with the
    # text it had before the compaction under it.
    assert kept.count(" · cleared · ") == len(cleared)
    assert kept.count('<div class="was">') >= len(cleared)
    for m in cleared:
        assert m.before is not None
        before = next(t for _, t in m.before if t.strip())
        assert not before.startswith("[synopsis: cleared")
        assert html.escape(before[:80]) in kept
    assert "more kept messages, not shown" in kept
