"""``synopsis replay``: a history replayed; its compactions and tokens saved, as text or JSON."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from synopsis.cli import figures
from synopsis.cli import report as rendering
from synopsis.cli.common import (
    HISTORY_FILE,
    UsageError,
    add_compaction_options,
    known_window,
    load_file,
    warnings_to_stderr,
)
from synopsis.cli.replay import ReplayReport, replay
from synopsis.pricing import PRESETS, Prices

if TYPE_CHECKING:
    from synopsis.cli.common import Parser

__all__ = ["register"]


def _print(report: ReplayReport, path: str) -> None:
    """The report at the terminal's width, readable at 80 columns: a compaction's reason is in
    the HTML and the JSON, its decision code here."""
    console = Console()
    console.print(
        f"[bold]{path}[/]: {report.items} messages replayed with {report.model or 'the default'}"
        f" model; window {report.window:,}, trigger {report.trigger_tokens or 0:,}, "
        f"reserve {report.reserve:,} tokens",
        highlight=False,
    )
    table = Table(
        title=figures.compactions_title(report),
        caption="since: requests since the compaction before (! two or fewer) · landed, "
        "target: the share of the window after it and the one it aimed at · summ/kept: "
        "messages summarized and kept",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    for col in ("turn", "since", "tokens", "landed", "target", "summ/kept"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("code", no_wrap=True)
    for t, since in figures.spacing(report):
        table.add_row(
            str(t.index),
            figures.since_text(since),
            f"{t.tokens_before:,} → {t.tokens_after:,}",
            f"{report.landed(t):.1%}",
            figures.share(t.target),
            f"{t.messages_summarized}/{t.messages_kept}",
            t.code,
        )
    console.print(table)
    for line in figures.session_lines(report):
        console.print(line, highlight=False)
    if report.unreachable is not None:
        console.print(f"[red]stopped at {report.unreachable}[/]", highlight=False)


def _run(data: object, options: dict[str, Any]) -> ReplayReport:
    """The replay with a transient progress bar on stderr (it never mixes with ``--json``)."""
    columns = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    stderr = Console(stderr=True)
    # Off a terminal the bar would leave a blank line on stderr, where errors must be one line.
    hidden = not stderr.is_terminal
    with (
        warnings_to_stderr(),
        Progress(*columns, console=stderr, transient=True, disable=hidden) as bar,
    ):
        # The number of turns is known once the replay has read the history's shape.
        task = bar.add_task("replay", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return replay(data, progress=advance, **options)


def _dollars(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected dollars, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected dollars, 0 or more, got {text!r}")
    return value


def prices(args: argparse.Namespace) -> Prices:
    """The preset ``--prices`` names (by default Anthropic's for a Claude model, else
    OpenAI's), with each price given explicitly in its place."""
    name = args.prices or ("anthropic" if "claude" in (args.model or "").lower() else "openai")
    chosen = PRESETS[name]
    given = {
        field: value
        for field, value in (
            ("input", args.input_price),
            ("cached", args.cached_price),
            ("write_premium", args.write_premium),
        )
        if value is not None
    }
    return replace(chosen, **given, name=f"{name}, as given") if given else chosen


def _cmd_replay(args: argparse.Namespace) -> int:
    known_window(args.model, args.window)
    for out in (args.plot, args.html):
        if out is not None and out.parent != Path() and not out.parent.is_dir():
            raise UsageError(f"no such directory: {out.parent}")
    if args.plot is not None:
        rendering.plot_kind(args.plot)
    data = load_file(Path(args.file))
    options: dict[str, Any] = {
        "model": args.model,
        "context_window": args.window,
        "keep": args.keep,
        "trigger": args.trigger,
        "strategy": args.strategy,
    }
    options = {k: v for k, v in options.items() if v is not None}
    report = _run(data, {**options, "prices": prices(args)})
    if report.window_error is not None:
        # As compact says it: a report of the turns before would read as a result.
        raise UsageError(str(report.window_error))
    source = Path(args.file).name
    if args.plot is not None:
        rendering.plot(report, args.plot, source=source)
    if args.html is not None:
        title = f"synopsis replay of {args.file}"
        rendering.write_html(report, args.html, title=title, source=source)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print(report, args.file)
    return 0


def register(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add ``replay`` to the subcommands ``sub``."""
    cmd = sub.add_parser(
        "replay", help="replay a history through the compactor and report the tokens saved"
    )
    cmd.add_argument("file", help=HISTORY_FILE)
    add_compaction_options(cmd)
    cmd.add_argument(
        "--prices",
        choices=sorted(PRESETS),
        help="list prices to cost the requests at, with a prefix cache (default: anthropic "
        "for a Claude model, else openai)",
    )
    for flag, what in (
        ("--input-price", "dollars per million input tokens"),
        ("--cached-price", "dollars per million input tokens read from the cache"),
        (
            "--write-premium",
            "dollars per million tokens written to the cache, over the input price",
        ),
    ):
        cmd.add_argument(
            flag, type=_dollars, metavar="USD", help=f"{what}, in place of the preset's"
        )
    cmd.add_argument("--plot", type=Path, help="write a plot of tokens per turn (.png or .svg)")
    cmd.add_argument("--html", type=Path, help="write a self-contained HTML report")
    cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    cmd.set_defaults(run=_cmd_replay)
