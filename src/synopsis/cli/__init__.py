"""The ``synopsis`` command.

Every failure a user can cause (a missing file, a file that is not JSON, a history in no known
format, a bad option) ends in one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from synopsis import __version__
from synopsis.cli import replay_command, store
from synopsis.cli.common import Parser, UsageError, load_file, positive_int, warnings_to_stderr
from synopsis.cli.inspect import Report, inspect_history
from synopsis.errors import ConfigurationError, ConversationError
from synopsis.formats import FORMATS, decode

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

__all__ = ["main"]

_PROVIDER_OF_FORMAT = {
    "openai": "openai",
    "responses": "responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "synopsis": "openai",
}


def _print_report(report: Report, top: int) -> None:
    console = Console()
    console.print(
        f"[bold]{report.path}[/]: {report.format} history, {report.message_count} messages, "
        f"{report.total_tokens:,} tokens ({report.counter})"
    )
    if report.window:
        share = report.total_tokens / report.window
        style = "red" if share >= 1 else "yellow" if share >= 0.8 else "green"
        console.print(
            f"window: {report.window:,} tokens for {report.model or 'the given window'}; "
            f"this history fills [{style}]{share:.1%}[/]"
        )
    roles = Table(title="Tokens by role")
    for col in ("role", "messages", "tokens", "share"):
        roles.add_column(col, justify="left" if col == "role" else "right")
    for row in report.by_role:
        roles.add_row(row.name, str(row.count), f"{row.tokens:,}", f"{row.share:.1%}")
    console.print(roles)
    if report.by_tool:
        tools = Table(title="Tokens by tool")
        for col in ("tool", "calls", "call tokens", "result tokens"):
            tools.add_column(col, justify="left" if col == "tool" else "right")
        for t in report.by_tool:
            tools.add_row(t.name, str(t.calls), f"{t.call_tokens:,}", f"{t.result_tokens:,}")
        console.print(tools)
    largest = Table(title=f"Largest {min(top, len(report.largest))} messages")
    for col in ("#", "role", "tokens", "preview"):
        largest.add_column(col, justify="right" if col in ("#", "tokens") else "left")
    for m in report.largest[:top]:
        where = "system" if m.index is None else str(m.index)  # a system prompt kept apart
        largest.add_row(where, m.role, f"{m.tokens:,}", m.preview)
    console.print(largest)
    if report.problems:
        console.print(f"[red]{len(report.problems)} problem(s) for {report.provider}:[/]")
        for p in report.problems:
            console.print(f"  {p}", markup=False, highlight=False)
    else:
        console.print(f"[green]valid for {report.provider}[/]")


def _cmd_inspect(args: argparse.Namespace) -> int:
    data = load_file(Path(args.file))
    decoded = decode(data, args.format)
    provider = args.provider or _PROVIDER_OF_FORMAT[decoded.format]
    with warnings_to_stderr():  # an unknown model's assumed window, say
        report = inspect_history(
            decoded.messages,
            path=str(args.file),
            fmt=decoded.format,
            model=args.model,
            window=args.window,
            provider=provider,
        )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print_report(report, args.top)
    return 0


DESCRIPTION = (
    "Keep an LLM agent's conversation inside its model's context window: inspect, compact or "
    "replay a history file; recall, search or export what a session's store kept."
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="synopsis", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"synopsis {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    inspect = sub.add_parser(
        "inspect", help="count tokens, find the largest messages, validate a history file"
    )
    inspect.add_argument("file", help="a JSON or JSONL history in any supported format")
    inspect.add_argument("--model", help="model id, for its tokenizer and context window")
    inspect.add_argument("--window", type=positive_int, help="context window in tokens")
    inspect.add_argument(
        "--format", choices=[f for f in FORMATS if f != "synopsis"], help="skip detection"
    )
    inspect.add_argument(
        "--provider",
        choices=["openai", "openai-strict", "responses", "anthropic", "gemini"],
        help="validate for this provider profile (default: the file's own format)",
    )
    inspect.add_argument("--top", type=positive_int, default=5, help="largest messages shown")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.set_defaults(run=_cmd_inspect)
    store.register(sub)
    replay_command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # A history can hold lone surrogates (valid JSON escapes, not valid UTF-8); print them
    # escaped rather than die halfway through a report.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        code: int = args.run(args)
        return code
    except UsageError as exc:
        print(f"synopsis: error: {exc}", file=sys.stderr)
    except (ConversationError, ConfigurationError) as exc:
        print(f"synopsis: error: {exc}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
