"""The parts of the stores benchmark that run in this process: the stores side by side
(part 1), PostgreSQL's session lock (part 2) and the fast path with each store (part 3).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import statistics
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg

from benchmarks._harness import timed
from benchmarks._upstream import MODEL
from benchmarks.stores.corpus import (
    FAST_WINDOW,
    POOL_RECORDS,
    SAMPLE_SESSIONS,
    Corpus,
    Kept,
    Plan,
    Timing,
    words,
)
from synopsis import Compactor, RuleBasedSummarizer
from synopsis.stores import (
    Compaction,
    PostgresStore,
    SessionState,
    SQLiteStore,
    StoredMessage,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from synopsis import CompactionResult, SummaryRecord


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
