"""``synopsis replay``: a history replayed; its compactions and tokens saved, as text or JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

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

if TYPE_CHECKING:
    import argparse

    from synopsis.cli.common import Parser

__all__ = ["register"]


def _print(report: ReplayReport, path: str) -> None:
    console = Console()
    console.print(
        f"[bold]{path}[/]: {report.items} messages replayed with {report.model or 'the default'}"
        f" model; window {report.window:,}, trigger {report.trigger_tokens or 0:,}, "
        f"reserve {report.reserve:,} tokens",
        highlight=False,
    )
    table = Table(
        title=f"{len(report.compactions)} compaction(s)",
        caption="tokens: before → after · window: the share filled after · "
        "recallable: offloaded originals the store gives back",
    )
    # Short headers and whole figures, so that the reason keeps some room on a narrow terminal.
    for col in ("turn", "tokens", "window", "summarized", "kept", "recallable"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("reason")
    for t in report.compactions:
        table.add_row(
            str(t.index),
            f"{t.tokens_before:,} → {t.tokens_after:,}",
            f"{rendering.window_share(report, t):.1%}",
            str(t.messages_summarized),
            str(t.messages_kept),
            f"{t.recallable or 0} of {len(t.offloaded)}",
            t.reason,
        )
    console.print(table)
    console.print(
        f"{len(report.compactions)} compaction(s), {report.summarizer_calls} summarizer "
        f"call(s); tokens sent over the session: {report.tokens_with:,} with synopsis, "
        f"{report.tokens_without:,} without ({report.tokens_saved:,} saved, "
        f"{report.saved_share:.1%})",
        highlight=False,
    )
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
    }
    report = _run(data, {k: v for k, v in options.items() if v is not None})
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
    cmd.add_argument("--plot", type=Path, help="write a plot of tokens per turn (.png or .svg)")
    cmd.add_argument("--html", type=Path, help="write a self-contained HTML report")
    cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    cmd.set_defaults(run=_cmd_replay)
