"""``synopsis store stats``, ``forget`` and ``prune``: what a store keeps, and letting it go.

Each works on a store that exists (a SQLite file or a ``postgresql://`` URL, as ``recall``
reads) and never creates one. Forgetting is the only way a stored original goes: the store
keeps them append-only otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from synopsis.cli.common import Parser, UsageError, positive_int
from synopsis.cli.store import STORE_HELP, reading, shown, unknown
from synopsis.stores.requests import RECORDS_MAX, RECORDS_RETENTION_DAYS

if TYPE_CHECKING:
    from synopsis.stores import SessionStats

__all__ = ["human_size", "register"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_size(count: int) -> str:
    """A size in bytes as a person reads it: ``512 B``, ``1.5 KiB``, ``3.2 GiB``."""
    size, unit = float(count), 0
    while size >= 1024 and unit < len(_UNITS) - 1:
        size /= 1024
        unit += 1
    return f"{count} B" if unit == 0 else f"{size:.1f} {_UNITS[unit]}"


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _held(stats: SessionStats) -> str:
    """What a session keeps, in words."""
    return (
        f"{_plural(stats.messages, 'message')}, {_plural(stats.summaries, 'summary record')}, "
        f"{human_size(stats.bytes)}"
    )


def _row(stats: SessionStats) -> dict[str, object]:
    return {
        "session": stats.session_id,
        "messages": stats.messages,
        "summaries": stats.summaries,
        "bytes": stats.bytes,
        "updated_at": None if stats.updated_at is None else stats.updated_at.isoformat(),
    }


def positive_days(text: str) -> float:
    """A positive number of days; fractions allowed (``0.5`` is twelve hours)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of days, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of days, got {text}")
    return value


def _cmd_stats(args: argparse.Namespace) -> int:
    with reading(args.store) as store:
        rows = store.stats()
        where = shown(store, args.store)
    total = {
        "sessions": len(rows),
        "messages": sum(r.messages for r in rows),
        "summaries": sum(r.summaries for r in rows),
        "bytes": sum(r.bytes for r in rows),
    }
    if args.json:
        report = {"store": where, "sessions": [_row(r) for r in rows], "total": total}
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"{where} holds no sessions")
        return 0
    table = Table()
    table.add_column("session")
    for name in ("messages", "summaries", "size"):
        table.add_column(name, justify="right")
    table.add_column("last updated")
    for r in rows:
        # Text, not a string: a session id is shown as it is, never read as markup.
        table.add_row(
            Text(r.session_id),
            f"{r.messages:,}",
            f"{r.summaries:,}",
            human_size(r.bytes),
            _when(r.updated_at),
        )
    console = Console()
    # The store's name whole on a line of its own: a table's title would wrap to its width.
    console.print(Text(where), soft_wrap=True)
    console.print(table)
    console.print(
        f"{_plural(total['sessions'], 'session')}: {_plural(total['messages'], 'message')}, "
        f"{_plural(total['summaries'], 'summary record')}, {human_size(total['bytes'])}",
        markup=False,
        highlight=False,
    )
    return 0


def _cmd_forget(args: argparse.Namespace) -> int:
    with reading(args.store) as store:
        where = shown(store, args.store)
        rows = store.stats()
        held = next((r for r in rows if r.session_id == args.session), None)
        if held is None:
            raise unknown(args.session, where, [r.session_id for r in rows])
        # What it held is what was just read: another process forgetting it in between
        # leaves the same outcome, the session gone.
        store.forget(args.session)
    if args.json:
        print(json.dumps({"store": where, "forgotten": _row(held)}, indent=2, ensure_ascii=False))
    else:
        print(f"forgot session {args.session!r} from {where}: {_held(held)}")
    return 0


def _cmd_prune(args: argparse.Namespace) -> int:
    days: float = args.older_than
    try:
        moment = datetime.now(UTC) - timedelta(days=days)
    except OverflowError:
        raise UsageError(f"--older-than {days:g} days reaches back before the year 1") from None
    with reading(args.store) as store:
        where = shown(store, args.store)
        forgotten = store.prune(moment)
        retention, most = args.records_retention, args.records_max
        removed = store.prune_requests(timedelta(days=retention), keep=most)
    if args.json:
        report = {
            "store": where,
            "older_than_days": days,
            "cutoff": moment.isoformat(),
            "forgotten": forgotten,
            "records_retention_days": retention,
            "records_max": most,
            "records_removed": removed,
        }
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    if not forgotten:
        print(f"no session in {where} was last updated more than {days:g} day(s) ago")
    for session in forgotten:
        print(f"forgot session {session!r}")
    if forgotten:
        print(
            f"{_plural(len(forgotten), 'session')} forgotten from {where}, each last updated "
            f"before {_when(moment)}"
        )
    if removed:
        print(
            f"{_plural(removed, 'request record')} removed: older than {retention:g} day(s), "
            f"or beyond the newest {most:,}"
        )
    return 0


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, help=STORE_HELP)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def register(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add ``store`` and its ``stats``, ``forget`` and ``prune`` to the subcommands."""
    group = sub.add_parser(
        "store", help="what a store keeps per session; forget a session, or the old ones"
    )
    actions = group.add_subparsers(dest="action", required=True, parser_class=Parser)

    stats = actions.add_parser(
        "stats", help="each session's messages, summaries, size and last update, and the total"
    )
    _options(stats)
    stats.set_defaults(run=_cmd_stats)

    forget = actions.add_parser(
        "forget", help="delete everything a store keeps for one session, for good"
    )
    forget.add_argument("session", help="the session id")
    _options(forget)
    forget.set_defaults(run=_cmd_forget)

    prune = actions.add_parser(
        "prune", help="forget every session last updated more than DAYS days ago"
    )
    prune.add_argument(
        "--older-than",
        required=True,
        type=positive_days,
        metavar="DAYS",
        help="a positive number of days; fractions allowed (0.5 is twelve hours)",
    )
    prune.add_argument(
        "--records-retention",
        type=positive_days,
        default=RECORDS_RETENTION_DAYS,
        metavar="DAYS",
        help="remove the proxy's request records older than this (%(default)g days)",
    )
    prune.add_argument(
        "--records-max",
        type=positive_int,
        default=RECORDS_MAX,
        metavar="N",
        help="keep the newest N request records at most (%(default)s)",
    )
    _options(prune)
    prune.set_defaults(run=_cmd_prune)
