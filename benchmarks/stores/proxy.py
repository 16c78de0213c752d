"""The proxy in front of the upstream, with one and two replicas (part 4), and one
conversation sent to both replicas at once (part 5).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
import uuid
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx2
import orjson

from benchmarks._upstream import CHECK_HEADER, MODEL, PATH, answer_text
from benchmarks.stores.corpus import Corpus, Kept, Plan, Timing
from benchmarks.stores.replicas import (
    Sampler,
    Statements,
    cpu_seconds,
    log_statements,
    read_log,
    replicas,
    tree_cpu_seconds,
    wait_disconnected,
    wal_position,
)
from synopsis.stores import (
    PostgresStore,
    SessionStats,
    SQLiteStore,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from benchmarks.compare.systems import Items


_CRC = re.compile(r"crc=([0-9a-f]{8})")
WARM = "warm-"
"""The warm-up's sessions begin so (they are left out of what the load saved)."""


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
