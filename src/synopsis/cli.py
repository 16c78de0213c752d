"""The ``synopsis`` command.

Every failure a user can cause (a missing file, a file that is not JSON, a history in no known
format, a bad option) ends in one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from rich.console import Console
from rich.table import Table

from synopsis.errors import ConfigurationError, ConversationError
from synopsis.formats import FORMATS, decode
from synopsis.inspection import Report, inspect_history

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]

_PROVIDER_OF_FORMAT = {
    "openai": "openai",
    "responses": "responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "synopsis": "openai",
}


class UsageError(Exception):
    """A mistake in how the command was called or what it was given; exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def load_file(path: Path) -> object:
    """A history from a JSON file (a list, or a request body) or a JSONL file (one message or
    item per line)."""
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a history file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        raise UsageError(f"{path} is empty")
    try:
        return _parse_json(text, str(path))
    except json.JSONDecodeError as whole:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise UsageError(
                f"{path} is not JSON or JSONL ({whole.msg}, line {whole.lineno})"
            ) from None
        items = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(_parse_json(line, f"{path}:{number}"))
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}:{number} is not JSON ({exc.msg})") from None
        return items


def _parse_json(text: str, where: str) -> object:
    """json.loads, with the two ways valid-looking JSON still fails turned into usage errors:
    nesting deeper than the interpreter's stack, and integers past Python's digit limit."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise UsageError(f"{where} is nested too deeply to be a history") from None
    except ValueError as exc:
        raise UsageError(f"{where} holds a value synopsis cannot read ({exc})") from None


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
        largest.add_row(str(m.index), m.role, f"{m.tokens:,}", m.preview)
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="synopsis", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    inspect = sub.add_parser(
        "inspect", help="count tokens, find the largest messages, validate a history file"
    )
    inspect.add_argument("file", help="a JSON or JSONL history in any supported format")
    inspect.add_argument("--model", help="model id, for its tokenizer and context window")
    inspect.add_argument("--window", type=_positive_int, help="context window in tokens")
    inspect.add_argument(
        "--format", choices=[f for f in FORMATS if f != "synopsis"], help="skip detection"
    )
    inspect.add_argument(
        "--provider",
        choices=["openai", "openai-strict", "responses", "anthropic", "gemini"],
        help="validate for this provider profile (default: the file's own format)",
    )
    inspect.add_argument("--top", type=_positive_int, default=5, help="largest messages shown")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.set_defaults(run=_cmd_inspect)
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
