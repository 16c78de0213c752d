"""``python -m benchmarks.stores``: the whole benchmark, its table printed and its report
written."""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks import stores
from benchmarks.stores.corpus import FULL, QUICK, RESULTS, Plan
from benchmarks.stores.report import markdown, table
from benchmarks.stores.run import Results, run

if TYPE_CHECKING:
    from collections.abc import Sequence


def main(plan: Plan = FULL, results_path: Path | None = RESULTS) -> Results:
    from synopsis.testing.postgres import EmbeddedPostgres  # noqa: PLC0415 - the dev extra

    def progress(what: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {what}", flush=True)

    with EmbeddedPostgres() as server, tempfile.TemporaryDirectory(prefix="bench-") as folder:
        assert server.folder is not None
        assert server.process is not None
        results = run(
            plan,
            server.create_database,
            Path(folder),
            statement_log=server.folder / "server.log",
            postgres_pid=server.process.pid,
            progress=progress,
        )
    print("\n".join(table(results)))
    if results_path is not None:
        results_path.write_text(markdown(results), encoding="utf-8")
        print(f"written: {results_path.name}")
    return results


def cli(argv: Sequence[str] | None = None) -> Results:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.stores", description=stores.__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="every part at a small size")
    parser.add_argument("--sessions", type=int, help="stored sessions")
    parser.add_argument("--per-session", type=int, help="messages per stored session")
    parser.add_argument("--proxy-sessions", type=int, help="conversations sent to the proxy")
    parser.add_argument("--proxy-rounds", type=int, help="requests per conversation")
    parser.add_argument("--out", type=Path, help="where to write the results (Markdown)")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    sizes = {
        "sessions": args.sessions,
        "per_session": args.per_session,
        "proxy_sessions": args.proxy_sessions,
        "proxy_rounds": args.proxy_rounds,
    }
    plan = dataclasses.replace(plan, **{k: v for k, v in sizes.items() if v is not None})
    custom = args.quick or any(v is not None for v in sizes.values())
    return main(plan, args.out if args.out or custom else RESULTS)


if __name__ == "__main__":
    cli()
