"""A replay drawn and written up: the tokens plot and a self-contained HTML page."""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import replace
from typing import TYPE_CHECKING

from synopsis.cli.common import UsageError
from synopsis.cli.figures import (
    dollars,
    events_lines,
    landings,
    recallable,
    share,
    since_text,
    spacing,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from matplotlib.figure import Figure

    from synopsis.cli.replay import ReplayReport, Shown, Turn

__all__ = [
    "SHOWN_CHARS",
    "figure",
    "plot",
    "plot_bytes",
    "plot_kind",
    "plot_title",
    "ranges",
    "window_share",
    "write_html",
]

_KINDS = {".png": "png", ".svg": "svg"}


def plot_kind(path: Path) -> str:
    """``png`` or ``svg`` by the suffix of ``path``; a usage error for any other."""
    kind = _KINDS.get(path.suffix.lower())
    if kind is None:
        raise UsageError(f"the plot must be a .png or .svg file, got {path.name!r}")
    return kind


def _matplotlib() -> None:
    """Make sure matplotlib (the ``report`` extra) is there, drawing off screen."""
    try:
        import matplotlib  # noqa: PLC0415 - an optional extra
    except ImportError:
        raise UsageError('plotting needs matplotlib: pip install "synopsis[report]"') from None
    matplotlib.use("Agg")


def plot_title(report: ReplayReport, source: str | None = None) -> str:
    """What the plot says first: the transcript, the model and window, and the tokens saved."""
    model = report.model or "default model"
    return (
        f"{source or 'synopsis replay'} — {model}, {report.window:,}-token window: "
        f"{report.saved_share:.1%} of tokens saved"
    )


def _subtitle(report: ReplayReport, emergencies: int) -> str:
    done = len(report.compactions)
    said = (
        f"{report.tokens_with:,} tokens sent instead of {report.tokens_without:,} over "
        f"{len(report.turns):,} turns; {done} compaction(s), {emergencies} of them in an emergency"
    )
    return f"{said}; {report.unreachable}" if report.unreachable is not None else said


def figure(report: ReplayReport, *, source: str | None = None) -> Figure:
    """The plot as a matplotlib figure: context tokens per turn before and after compaction,
    the window and trigger lines, each compaction marked where it landed (an emergency apart
    from the rest), and the legend below the axes, clear of the data. ``source`` names the
    transcript in the title."""
    _matplotlib()
    from matplotlib.figure import Figure  # noqa: PLC0415
    from matplotlib.ticker import StrMethodFormatter  # noqa: PLC0415

    drawn = Figure(figsize=(10, 6), layout="constrained")
    axes = drawn.add_subplot()
    turns = [t.index for t in report.turns]
    axes.plot(
        turns,
        [t.tokens_before for t in report.turns],
        color="0.6",
        linewidth=1,
        label="context before compaction",
    )
    axes.plot(
        turns,
        [t.tokens_after for t in report.turns],
        color="tab:blue",
        linewidth=1.6,
        label="context sent (after compaction)",
    )
    axes.axhline(report.window, color="red", linestyle="--", label=f"window {report.window:,}")
    if report.trigger_tokens is not None:
        axes.axhline(
            report.trigger_tokens,
            color="orange",
            linestyle=":",
            label=f"trigger {report.trigger_tokens:,}",
        )
    emergency = [t for t in report.compactions if t.code == "emergency"]
    regular = [t for t in report.compactions if t.code != "emergency"]
    if regular:
        axes.scatter(
            [t.index for t in regular],
            [t.tokens_after for t in regular],
            marker="v",
            s=48,
            color="green",
            zorder=3,
            label=f"compaction ({len(regular)})",
        )
    if emergency:
        axes.scatter(
            [t.index for t in emergency],
            [t.tokens_after for t in emergency],
            marker="X",
            s=80,
            color="crimson",
            edgecolors="black",
            linewidths=0.6,
            zorder=4,
            label=f"emergency compaction ({len(emergency)})",
        )
    axes.set_xlabel("turn (input message)")
    axes.set_ylabel("context tokens")
    axes.set_ylim(bottom=0)
    axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes.set_title(_subtitle(report, len(emergency)), fontsize="medium")
    drawn.suptitle(plot_title(report, source), fontweight="bold")
    # Below the axes, so that no line or mark of the early turns hides behind it.
    drawn.legend(loc="outside lower center", ncols=3, frameon=False)
    return drawn


def plot_bytes(report: ReplayReport, kind: str, *, source: str | None = None) -> bytes:
    """:func:`figure` as ``png`` or ``svg`` bytes."""
    buffer = io.BytesIO()
    figure(report, source=source).savefig(buffer, format=kind)
    return buffer.getvalue()


def plot(report: ReplayReport, path: Path, *, source: str | None = None) -> None:
    """The plot written to ``path`` (``.png`` or ``.svg``)."""
    path.write_bytes(plot_bytes(report, plot_kind(path), source=source))


def _figure(report: ReplayReport, kind: str, source: str | None) -> str:
    try:
        data = plot_bytes(report, kind, source=source)
    except UsageError as missing:
        # No plot was asked for: the page is whole without its picture, and says how to get it.
        return f'<p class="note">No plot of tokens per turn: {html.escape(str(missing))}.</p>'

    if kind == "svg":
        text = data.decode("utf-8")
        return text[text.find("<svg") :]
    encoded = base64.b64encode(data).decode("ascii")
    return f'<img alt="context tokens per turn" src="data:image/png;base64,{encoded}">'


_STYLE = (
    "body{font-family:sans-serif;max-width:70em;margin:auto;padding:0 1em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}"
    "td.n{text-align:right}"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:.5em;margin:.2em 0}"
    "details{margin:.2em 0;border-left:3px solid #ddd;padding-left:.5em}"
    "details>summary{cursor:pointer}.part{color:#555;font-size:.9em;margin:.3em 0 0}"
    ".note{color:#777}.was{border-left:3px solid #ccc;padding-left:1em}"
    ".compaction{border-top:2px solid #999;margin-top:2em}"
)

SHOWN_CHARS = 2000
"""Of each message, at most this many characters go on the page: a session's tool results
would otherwise make it many megabytes, and the store holds every original whole."""
_KEPT_EDGE = 4
"""With many kept messages, the first and last this many are shown, the rest counted."""
_PREVIEW = 90
_HEADINGS = 3
_NONE = '<p class="note">none</p>'


def window_share(report: ReplayReport, turn: Turn) -> float:
    """The share of the window the history fills after ``turn``'s compaction."""
    return turn.tokens_after / report.window


def ranges(positions: Sequence[int]) -> str:
    """Sorted positions as runs: ``0-4, 7, 9-10``."""
    runs: list[list[int]] = []
    for p in positions:
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _totals(report: ReplayReport) -> list[tuple[str, str]]:
    rows = [
        ("model", report.model or "default"),
        ("window", f"{report.window:,} tokens"),
        ("reserve for the answer", f"{report.reserve:,} tokens"),
        (
            "trigger",
            f"{report.trigger_tokens:,} tokens" if report.trigger_tokens is not None else "none",
        ),
        ("items replayed", f"{len(report.turns):,} of {report.items:,}"),
        ("compactions", f"{len(report.compactions)}"),
        ("within two requests of the one before", f"{len(report.bursts)}"),
        ("summarizer calls", f"{report.summarizer_calls}"),
        ("tokens sent with synopsis", f"{report.tokens_with:,}"),
        ("tokens sent without", f"{report.tokens_without:,}"),
        ("saved", f"{report.tokens_saved:,} tokens ({report.saved_share:.1%})"),
    ]
    if report.compactions:
        rows += [("landed", landings(report)), ("recallable", recallable(report))]
    with_, without = dollars(report.cost_with, report.cost_without)
    rows += [
        ("prices per million input tokens", report.prices.describe()),
        ("input cost with a prefix cache, with synopsis", with_),
        ("input cost with a prefix cache, without", without),
        (
            "requests that read a cached prefix",
            f"{report.cache_hits:,} of {len(report.turns):,} ({report.cached_tokens:,} tokens)",
        ),
    ]
    rows += [("event", line) for line in events_lines(report)]
    if report.unreachable is not None:
        rows.append(("stopped at", report.unreachable))
    return rows


def _text(parts: Sequence[tuple[str, str]]) -> str:
    """The parts as HTML, at most :data:`SHOWN_CHARS` characters of their text in all."""
    e = html.escape
    left = SHOWN_CHARS
    out: list[str] = []
    for heading, text in parts:
        shown = text[:left]
        left -= len(shown)
        if heading != "text":
            out.append(f'<p class="part">{e(heading)}</p>')
        if shown:
            out.append(f"<pre>{e(shown)}</pre>")
    cut = sum(len(text) for _, text in parts) - (SHOWN_CHARS - left)
    if cut:
        out.append(f'<p class="note">[… {cut:,} more characters]</p>')
    return "".join(out)


def _headings(m: Shown) -> list[str]:
    """What the message holds besides text, each kind once: ``tool call shell x3``."""
    counts: dict[str, int] = {}
    for heading, _ in m.parts:
        if heading != "text":
            counts[heading] = counts.get(heading, 0) + 1
    named = [h if n == 1 else f"{h} x{n}" for h, n in counts.items()]
    more = len(named) - _HEADINGS
    return [*named[:_HEADINGS], f"{more} more kinds of part"] if more > 0 else named


def _message(m: Shown) -> str:
    e = html.escape
    texts = (t for _, t in m.parts if t.strip())
    preview = " ".join(next(texts, "").split())
    if len(preview) > _PREVIEW:
        preview = preview[: _PREVIEW - 1] + "…"
    notes = [f"#{m.position}", m.role, *_headings(m)]
    if m.summary:
        notes.append("an earlier summary, which this one takes over")
    if m.reduced:
        notes.append("cleared" if m.cleared else "reduced")
    if m.stored is not None:
        notes.append(f"original at store position {m.stored}")
    notes.append(f"{m.chars:,} chars")
    was = (
        f'<div class="was"><p class="note">before this compaction:</p>{_text(m.before)}</div>'
        if m.before is not None
        else ""
    )
    return (
        f"<details><summary>{e(' · '.join(notes))}: <i>{e(preview)}</i></summary>"
        f"{_text(m.parts)}{was}</details>"
    )


def _kept(messages: Sequence[Shown]) -> str:
    """The first and last kept messages, and every one a clearing left a placeholder in
    (beside what it replaced); a note for each run of the others."""
    out: list[str] = []
    hidden = 0
    last = len(messages) - _KEPT_EDGE
    for k, m in enumerate(messages):
        if k < _KEPT_EDGE or k >= last or m.cleared or len(messages) <= 2 * _KEPT_EDGE + 1:
            if hidden:
                out.append(f'<p class="note">… {hidden} more kept messages, not shown …</p>')
                hidden = 0
            out.append(_message(m))
        else:
            hidden += 1
    return "".join(out)


def _recall(t: Turn) -> str:
    e = html.escape
    if not t.offloaded:
        return (
            '<p class="note">Nothing was offloaded: this compaction kept no originals '
            "in a store.</p>"
        )
    session = t.session_id or ""
    n = len(t.offloaded)
    p = t.positions
    if p and p[-1] - p[0] + 1 == len(p):
        how = f"--start {p[0]} --stop {p[-1] + 1}"
        call: dict[str, object] = {"start": p[0], "stop": p[-1] + 1}
    else:
        how = "--ids " + ",".join(t.offloaded)
        call = {"ids": list(t.offloaded)}
    ids = "\n".join(t.offloaded)
    return (
        f"<p>{n} original(s) offloaded to session <code>{e(session)}</code> at store "
        f"position(s) {e(ranges(p) or 'unknown')}: <b>{t.recallable} of {n} recallable</b> "
        "from the replay's store.</p>"
        f"<p>Fetch them back with <code>synopsis recall --store PATH --session {e(session)} "
        f"{e(how)}</code>, or have the model call the <code>recall_history</code> tool with "
        f"<code>{e(json.dumps(call))}</code>. The replay kept its store in memory, and it "
        "ended with the replay; a compactor given a store on disk (<code>synopsis compact "
        "--store PATH</code>, or <code>store=</code> a path in code) keeps such references "
        "for good.</p>"
        f"<details><summary>the {n} id(s)</summary><pre>{e(ids)}</pre></details>"
    )


def _section(report: ReplayReport, t: Turn) -> str:
    e = html.escape
    summarized = "".join(_message(m) for m in t.summarized) or _NONE
    earlier = len(t.summarized) - t.messages_summarized
    also = (
        f", and {earlier} earlier {'summary' if earlier == 1 else 'summaries'}" if earlier else ""
    )
    aim = "" if t.target is None else f", where it aimed at {t.target:.1%}"
    told = "".join(
        f'<p class="note">{e(line)}</p>' for line in events_lines(replace(report, turns=[t]))
    )
    summary = (
        f"<pre>{e(t.summary)}</pre>"
        if t.summary is not None
        else '<p class="note">No summary was written: the history was only reduced.</p>'
    )
    return (
        f'<section class="compaction" id="turn-{t.index}">'
        f"<h3>Turn {t.index} ({e(t.code)}): {t.tokens_before:,} → {t.tokens_after:,} tokens, "
        f"{t.messages_before} → {t.messages_after} messages</h3>"
        f"<p>{e(t.reason)}. The history after it fills {window_share(report, t):.1%} of the "
        f"window{aim}. {e(_cache(t))}</p>{told}"
        f"<h4>Summarized: {t.messages_summarized} message(s){also}</h4>"
        '<p class="note">Numbered by their place in the history before this compaction.</p>'
        f"{summarized}<h4>Summary</h4>{summary}"
        f"<h4>Kept: {t.messages_kept} message(s)</h4>"
        '<p class="note">Numbered by their place in the history sent after it; the numbers '
        "missing are the summary's.</p>"
        f"{_kept(t.kept)}<h4>Recall</h4>{_recall(t)}</section>"
    )


def _cache(t: Turn) -> str:
    """What the request after the compaction read from a prefix cache, and its cost."""
    return (
        f"Its request repeats {t.cached_tokens:,} tokens of the one before, which a prefix "
        f"cache reads; its input costs {dollars(t.cost)[0]}."
    )


def _table(report: ReplayReport) -> str:
    head = (
        "<tr><th>turn</th><th>requests since the one before</th><th>tokens before → after</th>"
        "<th>window after</th><th>target</th><th>summarized</th><th>kept</th>"
        "<th>recallable</th><th>cached prefix</th><th>input cost</th><th>reason</th></tr>"
    )
    rows = "".join(
        f'<tr><td class="n"><a href="#turn-{t.index}">{t.index}</a></td>'
        f'<td class="n">{since_text(since)}</td>'
        f'<td class="n">{t.tokens_before:,} → {t.tokens_after:,}</td>'
        f'<td class="n">{window_share(report, t):.1%}</td><td class="n">{share(t.target)}</td>'
        f'<td class="n">{t.messages_summarized}</td><td class="n">{t.messages_kept}</td>'
        f'<td class="n">{t.recallable} of {len(t.offloaded)}</td>'
        f'<td class="n">{t.cached_tokens:,}</td><td class="n">{dollars(t.cost)[0]}</td>'
        f"<td>{html.escape(t.reason)}</td></tr>"
        for t, since in spacing(report)
    )
    return f"<table>{head}{rows}</table>"


def write_html(
    report: ReplayReport,
    path: Path,
    *,
    title: str,
    image: str = "svg",
    source: str | None = None,
) -> None:
    """One self-contained HTML page: the plot inlined, the totals, a table of the compactions,
    then each compaction with the messages it summarized, its summary, the messages it kept
    and where the originals can be recalled. Every text from the session is escaped."""
    e = html.escape
    totals = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _totals(report))
    done = report.compactions
    compactions = (
        _table(report) + "".join(_section(report, t) for t in done) if done else "<p>none</p>"
    )
    page = (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>"
        f"{_figure(report, image, source)}<h2>Totals</h2><table>{totals}</table>"
        f"<h2>Compactions</h2>{compactions}</body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
