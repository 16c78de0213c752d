"""A replay drawn and written up: the context-tokens plot (matplotlib, the ``report`` extra) and
one self-contained HTML page with the plot inlined."""

from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING

from synopsis.cli_common import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from synopsis.replay import ReplayReport

__all__ = ["plot", "plot_bytes", "plot_kind", "write_html"]

_KINDS = {".png": "png", ".svg": "svg"}


def plot_kind(path: Path) -> str:
    """``png`` or ``svg`` by the suffix of ``path``; a usage error for any other."""
    kind = _KINDS.get(path.suffix.lower())
    if kind is None:
        raise UsageError(f"the plot must be a .png or .svg file, got {path.name!r}")
    return kind


def plot_bytes(report: ReplayReport, kind: str) -> bytes:
    """The plot as ``png`` or ``svg`` bytes: context tokens per turn before and after
    compaction, the window and trigger lines, and each compaction marked."""
    try:
        import matplotlib  # noqa: PLC0415 - an optional extra

        matplotlib.use("Agg")
        from matplotlib.figure import Figure  # noqa: PLC0415
    except ImportError:
        raise UsageError('plotting needs matplotlib: pip install "synopsis[report]"') from None
    figure = Figure(figsize=(10, 5))
    axes = figure.add_subplot()
    turns = [t.index for t in report.turns]
    axes.plot(turns, [t.tokens_before for t in report.turns], label="before compaction")
    axes.plot(turns, [t.tokens_after for t in report.turns], label="after compaction")
    axes.axhline(report.window, color="red", linestyle="--", label=f"window {report.window:,}")
    if report.trigger_tokens is not None:
        axes.axhline(
            report.trigger_tokens,
            color="orange",
            linestyle=":",
            label=f"trigger {report.trigger_tokens:,}",
        )
    done = report.compactions
    if done:
        axes.scatter(
            [t.index for t in done],
            [t.tokens_after for t in done],
            marker="v",
            color="green",
            zorder=3,
            label=f"compaction ({len(done)})",
        )
    axes.set_xlabel("turn (input message)")
    axes.set_ylabel("context tokens")
    axes.set_title(f"synopsis replay: {report.model or 'default model'}")
    axes.legend(loc="upper left")
    buffer = io.BytesIO()
    figure.savefig(buffer, format=kind)
    return buffer.getvalue()


def plot(report: ReplayReport, path: Path) -> None:
    """The plot written to ``path`` (``.png`` or ``.svg``)."""
    path.write_bytes(plot_bytes(report, plot_kind(path)))


def _figure(report: ReplayReport, kind: str) -> str:
    data = plot_bytes(report, kind)
    if kind == "svg":
        text = data.decode("utf-8")
        return text[text.find("<svg") :]
    encoded = base64.b64encode(data).decode("ascii")
    return f'<img alt="context tokens per turn" src="data:image/png;base64,{encoded}">'


_STYLE = (
    "body{font-family:sans-serif;max-width:70em;margin:auto}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}"
    "pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em}"
)


_TOTALS = (
    "model",
    "window",
    "reserve",
    "trigger_tokens",
    "items",
    "compactions",
    "summarizer_calls",
    "tokens_with",
    "tokens_without",
    "unreachable",
)


def write_html(report: ReplayReport, path: Path, *, title: str, image: str = "svg") -> None:
    """One self-contained HTML page: the plot inlined, the totals, every compaction with its
    summary."""
    e = html.escape
    data = report.to_json()
    totals = "".join(
        f"<tr><th>{e(key.replace('_', ' '))}</th><td>{e(str(data[key]))}</td></tr>"
        for key in _TOTALS
    )
    sections = [
        f"<h3>Turn {t.index}: {t.tokens_before:,} → {t.tokens_after:,} tokens, "
        f"{t.messages_before} → {t.messages_after} messages</h3>"
        f"<p>{e(t.code)}: {e(t.reason)}</p>"
        + (f"<pre>{e(t.summary)}</pre>" if t.summary is not None else "")
        for t in report.compactions
    ]
    page = (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>"
        f"{_figure(report, image)}<h2>Totals</h2><table>{totals}</table>"
        f"<h2>Compactions</h2>{''.join(sections) or '<p>none</p>'}</body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
