"""``synopsis compact``, ``recall``, ``search``, ``export``: compacting a file, reading a store.

A store is a SQLite file or a ``postgresql://`` URL. Reading never creates one: a SQLite file
that is not there is an error, and a URL is opened as it is. What the store fails at is a
usage error (one line, exit code 2), and a URL is shown without its password.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from synopsis.cli.common import (
    FORMAT_CHOICES,
    HISTORY_FILE,
    PROVIDER_CHOICES,
    Parser,
    UsageError,
    add_compaction_options,
    known_window,
    load_file,
    positive_int,
    warnings_to_stderr,
)
from synopsis.compaction import Compactor
from synopsis.errors import BudgetUnreachableError, StoreError
from synopsis.events import CompactionCompleted
from synopsis.formats import FORMATS, PROFILE_OF_FORMAT, wire_items
from synopsis.formats.body import body_with
from synopsis.stores import (
    SNIPPET_MARK,
    PostgresStore,
    SQLiteStore,
    export_markdown,
    is_postgres_url,
)
from synopsis.summarizers import render
from synopsis.validation import validate

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from synopsis.compaction import CompactionResult
    from synopsis.formats import FormatName

__all__ = ["STORE_HELP", "known", "open_store_at", "reading", "register", "shown", "unknown"]

STORE_HELP = "a SQLite store file, or a postgresql:// URL"

_SUMMARIZERS = ("rules", "openai", "openai-responses", "anthropic")
_SESSIONS_SHOWN = 5
"""Sessions an error names when the one asked for is not in the store."""


def _whole(text: str) -> int:
    """A whole number of at least 0 (a position)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of at least 0, got {value}")
    return value


def _write(result: CompactionResult, out: Path, given: object, *, jsonl: bool) -> None:
    """The compacted history in the shape it was ``given``: a request body written back whole
    (every field as it came but the history and a changed system prompt); a list as JSON
    lines or a JSON list."""
    if isinstance(given, Mapping):
        body = body_with(given, result.format, result.messages, result.system)
        text = json.dumps(body, indent=2, ensure_ascii=False)
    elif jsonl:
        text = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in result.messages)
    else:
        text = json.dumps(result.messages, indent=2, ensure_ascii=False)
    try:
        out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc}") from None


def _compactor_options(args: argparse.Namespace) -> dict[str, Any]:
    given = {
        "model": args.model,
        "context_window": args.window,
        "keep": args.keep,
        "trigger": args.trigger,
        "strategy": args.strategy,
        "summarizer": args.summarizer,
        "summarizer_models": [args.summarizer_model] if args.summarizer_model else None,
        "base_url": args.base_url,
        "session_id": args.session,
        "provider": args.provider,
    }
    return {k: v for k, v in given.items() if v is not None}


def _report(
    args: argparse.Namespace, result: CompactionResult, provider: str, given: int
) -> dict[str, Any]:
    """``given`` is how many messages the file held: a repair may have changed the count."""
    done = next((e for e in result.events if isinstance(e, CompactionCompleted)), None)
    count = len(result.messages) + (result.system is not None)
    problems = validate(result.messages, provider, system=result.system)
    return {
        "file": args.file,
        "format": result.format,
        "compacted": result.compacted,
        "code": result.code,
        "reason": result.reason,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "messages_before": done.messages_before if done else given,
        "messages_after": done.messages_after if done else count,
        "summarized": done.summarized if done else 0,
        "kept": done.kept if done else count,
        "cleared": done.cleared if done else 0,
        "tokens_cleared": done.tokens_cleared if done else 0,
        "summary": render(result.record) if result.record is not None else None,
        "offloaded": list(result.offloaded),
        "session": result.session_id,
        "provider": provider,
        "problems": [asdict(p) for p in problems],
        "fixes": [asdict(f) for f in result.fixes],
        "out": args.out,
    }


def _print_compact(report: dict[str, Any]) -> None:
    console = Console()
    verb = "compacted" if report["compacted"] else "left as it was"
    # The reason is not wrapped in parentheses: it often ends in its own, the trigger's.
    console.print(
        f"[bold]{escape(report['file'])}[/]: {report['format']} history {verb}: "
        + escape(f"{report['reason']} [{report['code']}]"),
        highlight=False,
    )
    table = Table(title="Before and after")
    for col in ("", "before", "after"):
        table.add_column(col, justify="right" if col else "left")
    table.add_row("tokens", f"{report['tokens_before']:,}", f"{report['tokens_after']:,}")
    table.add_row("messages", str(report["messages_before"]), str(report["messages_after"]))
    console.print(table)
    cleared = (
        f"; {report['cleared']} old tool output(s) cleared, {report['tokens_cleared']:,} tokens"
        if report.get("cleared")
        else ""
    )
    console.print(f"{report['summarized']} message(s) summarized, {report['kept']} kept{cleared}")
    if report["fixes"]:
        # A repaired history is never reported as left as it was without saying so.
        console.print(f"[yellow]repaired first ({len(report['fixes'])} fix(es)):[/]")
        for f in report["fixes"]:
            where = "new message" if f["index"] is None else f"message {f['index']}"
            console.print(f"  {where}: {f['action']}: {f['detail']}", markup=False)
    if report["offloaded"]:
        console.print(
            f"{len(report['offloaded'])} original(s) saved to the store "
            f"(session {report['session']})"
        )
    if report["summary"] is not None:
        console.print("[bold]Summary[/]")
        console.print(report["summary"], markup=False, highlight=False)
    if report["problems"]:
        console.print(f"[red]{len(report['problems'])} problem(s) for {report['provider']}:[/]")
        for p in report["problems"]:
            console.print(f"  {p['index']}: {p['message']} [{p['rule']}]", markup=False)
    else:
        console.print(f"[green]valid for {report['provider']}[/]")
    if report["out"]:
        console.print(f"written to {report['out']}", highlight=False)


def _count(data: object, fmt: FormatName) -> int:
    """How many messages the caller's history held, a system prompt kept apart from the list
    (a request body's) included, as the compactor counts them."""
    apart = isinstance(data, dict) and any(
        data.get(key) for key in ("system", "systemInstruction", "system_instruction")
    )
    return len(wire_items(data, fmt)) + apart


def _cmd_compact(args: argparse.Namespace) -> int:
    known_window(args.model, args.window)
    path = Path(args.file)
    data = load_file(path)
    jsonl = isinstance(data, list) and path.read_text(encoding="utf-8").lstrip()[:1] != "["
    try:
        store = open_store_at(args.store) if args.store else None
        try:
            with warnings_to_stderr():
                compactor = Compactor(store=store, **_compactor_options(args))
                result = compactor.compact(data, format=args.format, force=args.force)
        finally:
            if store is not None:
                store.close()
    except (BudgetUnreachableError, StoreError) as exc:
        raise UsageError(str(exc)) from None
    if args.out:
        out = Path(args.out)
        _write(result, out, data, jsonl=out.suffix == ".jsonl" or (jsonl and out.suffix != ".json"))
    fmt = next(f for f in FORMATS if f == result.format)
    provider = compactor.settings.provider or PROFILE_OF_FORMAT[fmt]
    report = _report(args, result, provider, _count(data, fmt))
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print_compact(report)
    return 0


def open_store_at(where: str) -> SQLiteStore | PostgresStore:
    """The store ``where`` names: a ``postgresql://`` URL, else a SQLite file (created if
    missing: only ``compact`` calls this on a path that may not exist)."""
    try:
        return PostgresStore(where) if is_postgres_url(where) else SQLiteStore(where)
    except StoreError as exc:
        raise UsageError(str(exc)) from None


@contextmanager
def reading(where: str) -> Iterator[SQLiteStore | PostgresStore]:
    """The existing store ``where`` names, closed after the block; what it fails at, a usage
    error."""
    if not is_postgres_url(where) and not Path(where).is_file():
        raise UsageError(f"no such store: {where}")
    store = open_store_at(where)
    try:
        yield store
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    finally:
        store.close()


def shown(store: SQLiteStore | PostgresStore, where: str) -> str:
    """How messages name the store: a file as the user gave it, a URL without its password."""
    return store.url if isinstance(store, PostgresStore) else where


def unknown(session: str, where: str, sessions: Sequence[str]) -> UsageError:
    """The error for a session the store does not hold, naming a few that it does."""
    if not sessions:
        return UsageError(f"no session {session!r} in {where}: it holds no sessions")
    named = ", ".join(repr(s) for s in sessions[:_SESSIONS_SHOWN])
    more = f" and {len(sessions) - _SESSIONS_SHOWN} more" if len(sessions) > _SESSIONS_SHOWN else ""
    return UsageError(f"no session {session!r} in {where}; its sessions: {named}{more}")


def known(store: SQLiteStore | PostgresStore, session: str, where: str) -> None:
    """Refuse a session the store does not hold: reading it would print nothing, as if the
    session had nothing saved, when the name is most likely mistyped."""
    sessions = store.sessions()
    if session not in sessions:
        raise unknown(session, shown(store, where), sessions)


def _cmd_recall(args: argparse.Namespace) -> int:
    ids = [i for i in args.ids.split(",") if i] if args.ids is not None else None
    with reading(args.store) as store:
        found = store.recall(args.session, ids=ids, start=args.start, stop=args.stop)
        if not found:
            known(store, args.session, args.store)
    if args.json:
        rows = [
            {"position": m.position, "role": m.role, "id": m.id, "item": json.loads(m.data)}
            for m in found
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for m in found:
        print(f"#{m.position} {m.role} {m.id}")
        print(m.data)
    if not found:
        print(f"no stored messages for session {args.session}", file=sys.stderr)
    return 0


_MARKED = re.compile(re.escape(SNIPPET_MARK) + r"(.+?)" + re.escape(SNIPPET_MARK))


def _emphasis(snippet: str) -> str:
    """A snippet's matched words in bold on a terminal, and plain elsewhere: the ``**`` marks
    are for the JSON and Markdown a program reads, not for a person's screen."""
    bold = r"\033[1m\1\033[0m" if sys.stdout.isatty() else r"\1"
    return _MARKED.sub(bold, snippet)


def _cmd_search(args: argparse.Namespace) -> int:
    with reading(args.store) as store:
        hits = store.search(args.session, args.query, limit=args.limit)
        if not hits:
            known(store, args.session, args.store)
    if args.json:
        rows = [
            {
                "rank": rank,
                "score": h.score,
                "position": h.message.position,
                "id": h.message.id,
                "role": h.message.role,
                "snippet": h.snippet,
            }
            for rank, h in enumerate(hits, 1)
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for rank, h in enumerate(hits, 1):
        shown = _emphasis(h.snippet)
        print(f"{rank}. score {h.score:.3g} #{h.message.position} {h.message.role}: {shown}")
    if not hits:
        print(f"no match for {args.query!r}", file=sys.stderr)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    with reading(args.store) as store:
        known(store, args.session, args.store)
        text = export_markdown(store, args.session)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.out}: {exc}") from None
    else:
        sys.stdout.write(text)
    return 0


def _store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, help=STORE_HELP)
    parser.add_argument("--session", required=True, help="the session id")


def register(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add ``compact``, ``recall``, ``search`` and ``export`` to the subcommands."""
    compact = sub.add_parser(
        "compact", help="compact a history file, writing the result and a report"
    )
    compact.add_argument("file", help=HISTORY_FILE)
    add_compaction_options(compact)
    compact.add_argument("--summarizer", choices=_SUMMARIZERS, help="who writes the summary")
    compact.add_argument(
        "--summarizer-model", help="the model an LLM summarizer asks (default: --model)"
    )
    compact.add_argument("--base-url", help="the summarizer API's base URL")
    compact.add_argument("--out", help="write the compacted history here, in its own format")
    compact.add_argument("--format", choices=FORMAT_CHOICES, help="skip detection")
    compact.add_argument(
        "--provider",
        choices=PROVIDER_CHOICES,
        help="make and check the result valid for this provider (default: the file's format)",
    )
    compact.add_argument("--session", help="the conversation's id in the store")
    compact.add_argument(
        "--store",
        help="a SQLite file (created if missing) or a postgresql:// URL keeping the "
        "replaced messages",
    )
    compact.add_argument("--force", action="store_true", help="compact even under the trigger")
    compact.add_argument("--json", action="store_true", help="print the report as JSON")
    compact.set_defaults(run=_cmd_compact)

    recall = sub.add_parser("recall", help="print messages a compaction saved to a store")
    _store_options(recall)
    recall.add_argument("--ids", help="comma-separated message ids")
    recall.add_argument("--start", type=_whole, help="first position")
    recall.add_argument("--stop", type=_whole, help="position to stop before")
    recall.add_argument("--json", action="store_true", help="print the messages as JSON")
    recall.set_defaults(run=_cmd_recall)

    search = sub.add_parser("search", help="search the text of a store's saved messages")
    _store_options(search)
    search.add_argument("query", help="words to look for")
    search.add_argument("--limit", type=positive_int, default=10, help="most hits shown")
    search.add_argument("--json", action="store_true", help="print the hits as JSON")
    search.set_defaults(run=_cmd_search)

    export = sub.add_parser("export", help="a session's saved history as Markdown")
    _store_options(export)
    export.add_argument("--out", help="write the Markdown here instead of stdout")
    export.set_defaults(run=_cmd_export)
