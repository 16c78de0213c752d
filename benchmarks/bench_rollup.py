"""How long a store's request rollups take: 100,000 request records over 1,000 sessions in a
SQLite file (and in memory), each rollup run a few times, the best and median reported.

Run: ``python -m benchmarks.bench_rollup`` (about half a minute). Target: under 100 ms for
``request_rollup("session")`` and ``request_rollup("day")`` on SQLite.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from synopsis.stores import MemoryStore, SQLiteStore
from synopsis.stores.requests import RequestRecord

if TYPE_CHECKING:
    from synopsis.stores._base import StoreBase

RECORDS = 100_000
SESSIONS = 1_000
RUNS = 5
START = datetime(2026, 1, 1, tzinfo=UTC)


def records(count: int = RECORDS, sessions: int = SESSIONS) -> list[RequestRecord]:
    """``count`` records over ``sessions`` sessions and 30 days, oldest first."""
    rng = random.Random(7)
    step = timedelta(days=30) / count
    out = []
    for i in range(count):
        before = rng.randrange(1_000, 150_000)
        compacted = rng.random() < 0.05
        out.append(
            RequestRecord(
                at=START + i * step,
                session_id=f"session-{rng.randrange(sessions):04d}",
                model=rng.choice(("gpt-4o", "claude-sonnet-4-5", "gpt-5")),
                route="/v1/chat/completions",
                format="openai",
                status=200,
                messages_in=rng.randrange(1, 400),
                tokens_before=before,
                tokens_after=before // 3 if compacted else before,
                compacted=compacted,
                summarizer_calls=int(compacted),
                summarizer_seconds=rng.random() if compacted else 0.0,
                error="upstream_timeout" if rng.random() < 0.01 else None,
                events=("summarizer_fell_back: timeout → rules",) if rng.random() < 0.01 else (),
                shared_messages=rng.randrange(0, 400),
                shared_tokens=before // 2,
                client_shared_tokens=before // 2,
            )
        )
    return out


def timed(store: StoreBase, by: str) -> tuple[float, float, int]:
    """Best and median milliseconds of ``RUNS`` rollups ``by``, and the groups."""
    took, groups = [], 0
    for _ in range(RUNS):
        start = time.perf_counter()
        groups = len(store.request_rollup(by))  # type: ignore[arg-type]
        took.append((time.perf_counter() - start) * 1000)
    return min(took), statistics.median(took), groups


def main() -> None:
    given = records()
    with tempfile.TemporaryDirectory() as folder:
        stores: list[tuple[str, StoreBase]] = [
            ("sqlite", SQLiteStore(Path(folder) / "rollup.db")),
            ("memory", MemoryStore()),
        ]
        print(f"{RECORDS:,} request records over {SESSIONS:,} sessions")
        print("| store | by | groups | best ms | median ms |")
        print("|---|---|---|---|---|")
        for name, store in stores:
            for start in range(0, len(given), 5_000):
                store.save_requests(given[start : start + 5_000])
            for by in ("session", "model", "hour", "day", "error"):
                best, median, groups = timed(store, by)
                print(f"| {name} | {by} | {groups} | {best:.1f} | {median:.1f} |")
            store.close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
