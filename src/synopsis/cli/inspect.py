"""``synopsis inspect``: a history's tokens by role and tool, its largest messages, its problems."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from synopsis.cli.common import (
    FORMAT_CHOICES,
    HISTORY_FILE,
    PROVIDER_CHOICES,
    add_model_options,
    load_file,
    positive_int,
    warnings_to_stderr,
)
from synopsis.formats import PROFILE_OF_FORMAT, decode
from synopsis.messages import Message, ToolCallPart, ToolResultPart
from synopsis.models import context_window
from synopsis.pairing import pair_tool_calls
from synopsis.tokens import counter_for_model
from synopsis.validation import Problem, check, get_profile
from synopsis.validation.rules import list_index, separate_system

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from synopsis.cli.common import Parser

__all__ = ["LargeMessage", "Report", "RoleRow", "ToolRow", "inspect_history", "register"]

_PREVIEW = 80


@dataclass(frozen=True, slots=True)
class RoleRow:
    name: str
    count: int
    tokens: int
    share: float


@dataclass(slots=True)
class ToolRow:
    name: str
    calls: int = 0
    call_tokens: int = 0
    result_tokens: int = 0


@dataclass(frozen=True, slots=True)
class LargeMessage:
    index: int | None
    """The position in the caller's list; ``None`` for a separate top-level system prompt."""
    role: str
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class Report:
    path: str
    format: str
    provider: str
    model: str | None
    counter: str
    message_count: int
    total_tokens: int
    window: int | None
    by_role: tuple[RoleRow, ...]
    by_tool: tuple[ToolRow, ...]
    largest: tuple[LargeMessage, ...]
    problems: tuple[Problem, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["window_share"] = self.total_tokens / self.window if self.window else None
        out["problems"] = [
            {
                "index": p.index,
                "part": p.part,
                "rule": p.rule,
                "message": p.message,
                "conservative": p.conservative,
            }
            for p in self.problems
        ]
        return out


def _preview(message: Message) -> str:
    text = " ".join(message.text.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def inspect_history(
    messages: Sequence[Message],
    *,
    path: str = "<history>",
    fmt: str = "synopsis",
    model: str | None = None,
    window: int | None = None,
    provider: str = "openai",
) -> Report:
    """What ``messages`` hold, as a value (printing is the command's business).

    Message indices are positions in the caller's own list: a top-level system prompt passed
    apart from it (Anthropic's ``system``, Gemini's ``systemInstruction``) is counted and
    validated, but has no index there, so it is reported with ``index=None``."""
    counter = counter_for_model(model)
    per_message = [counter.count_message(m) for m in messages]
    total = counter.count_messages(messages)
    if window is None and model is not None:
        window = context_window(model)

    roles: dict[str, list[int]] = {}
    for m, n in zip(messages, per_message, strict=True):
        tally = roles.setdefault(m.role.value, [0, 0])
        tally[0] += 1
        tally[1] += n
    body = sum(per_message) or 1
    by_role = tuple(
        RoleRow(name, c, t, t / body)
        for name, (c, t) in sorted(roles.items(), key=lambda kv: -kv[1][1])
    )

    tools: dict[str, ToolRow] = {}
    pairing = pair_tool_calls(messages)
    for mi, m in enumerate(messages):
        for pi, part in enumerate(m.parts):
            if isinstance(part, ToolCallPart):
                row = tools.setdefault(part.name, ToolRow(part.name))
                row.calls += 1
                row.call_tokens += counter.count_text(part.name + part.arguments_text)
            elif isinstance(part, ToolResultPart):
                call = pairing.call_of.get((mi, pi))
                name = (
                    pairing.call_part(messages, call).name
                    if call is not None
                    else part.name or "(unpaired)"
                )
                row = tools.setdefault(name, ToolRow(name))
                row.result_tokens += counter.count_text(part.text)
    by_tool = tuple(sorted(tools.values(), key=lambda r: -(r.call_tokens + r.result_tokens)))

    # ``fmt`` is where ``messages`` were decoded from; the caller knows the indices of that.
    offset = separate_system(messages, fmt)
    order = sorted(range(len(messages)), key=lambda i: -per_message[i])
    largest = tuple(
        LargeMessage(
            list_index(i, offset),
            messages[i].role.value,
            per_message[i],
            _preview(messages[i]),
        )
        for i in order[:20]
    )
    problems = tuple(check(messages, get_profile(provider), offset=offset))
    return Report(
        path=path,
        format=fmt,
        provider=provider,
        model=model,
        counter=getattr(counter, "description", type(counter).__name__),
        message_count=len(messages),
        total_tokens=total,
        window=window,
        by_role=by_role,
        by_tool=by_tool,
        largest=largest,
        problems=problems,
    )


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
    provider = args.provider or PROFILE_OF_FORMAT[decoded.format]
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


def register(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add ``inspect`` to the subcommands ``sub``."""
    cmd = sub.add_parser(
        "inspect", help="count tokens, find the largest messages, validate a history file"
    )
    cmd.add_argument("file", help=HISTORY_FILE)
    add_model_options(cmd)
    cmd.add_argument("--format", choices=FORMAT_CHOICES, help="skip detection")
    cmd.add_argument(
        "--provider",
        choices=PROVIDER_CHOICES,
        help="validate for this provider profile (default: the file's own format)",
    )
    cmd.add_argument("--top", type=positive_int, default=5, help="largest messages shown")
    cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    cmd.set_defaults(run=_cmd_inspect)
