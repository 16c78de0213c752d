"""How long the operator's page (``synopsis.ui``) takes to render over a large store: 1,000
sessions holding 100,000 stored messages and 20,000 request records (target: every page
under 200 ms).

The store is built as the proxy and the compactions would leave it: each session's messages
are the bundled transcripts' (``examples/transcripts``, cycled and decoded by synopsis), saved
by compactions of ``batch`` messages each with a summary record of the rules summarizer's and
the session state a compaction saves; the request records are a mix of models and formats,
growing histories, the compacted requests, errors and summarizer fallbacks, spread over the
last 30 days. The sessions are not all alike: the largest holds ``largest_messages`` messages
and ``largest_requests`` records (its chart draws as many as the page ever does), the others
share the rest evenly. The store is a SQLite file and, beside it, a PostgreSQL database on a
server started here (``synopsis.testing.postgres.EmbeddedPostgres``, durability off).

Each page is served by the page's own app (``create_ui``) on uvicorn at 127.0.0.1, in a
thread of this process, and fetched by an httpx2 client over a real socket: the time is a
whole request, from sending it to the last byte of the answer. The pages take turns, a round
at a time, after a few untimed rounds.

Run: ``python -m benchmarks.bench_ui`` (part of ``make bench``, about two minutes); it writes
``benchmarks/results/ui.md``. ``--quick`` runs a small store and writes nothing unless
``--out`` names a file; ``--no-postgres`` leaves PostgreSQL out.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2

from benchmarks._harness import (
    listed,
    load_average,
    machine,
    ms,
    now,
    quantile,
    table,
    versions,
    write,
)
from benchmarks._upstream import Served
from benchmarks.stores.corpus import Corpus, corpus, words
from benchmarks.stores.parts import record_pool
from synopsis.compaction.projection import Projection
from synopsis.planning.governor import GovernorState
from synopsis.stores import (
    Compaction,
    PostgresStore,
    SessionState,
    SQLiteStore,
    StoredMessage,
)
from synopsis.stores.requests import FELL_BACK, RequestRecord
from synopsis.summarizers.render import render_compact

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from synopsis.stores._base import StoreBase
    from synopsis.summarizers.records import SummaryRecord

RESULTS = Path(__file__).resolve().parent / "results" / "ui.md"
TARGET_MS = 200.0
CORPUS = 5_000
"""Decoded transcript messages that the stored ones cycle through."""
MODELS = (
    ("gpt-4o", "/v1/chat/completions", "openai"),
    ("gpt-4o-mini", "/v1/responses", "openai-responses"),
    ("claude-sonnet-4-5", "/v1/messages", "anthropic"),
)
"""Each session's model, route and format, in turn."""
ERROR_EVERY = 97
"""One request record in this many ended with an error."""
FALLBACK_EVERY = 5
"""One compacted request in this many had its summarizer fall back."""


@dataclass(frozen=True)
class Plan:
    """The store and the rounds; :data:`FULL` is ``make bench``'s."""

    sessions: int
    messages: int
    requests: int
    largest_messages: int
    largest_requests: int
    rounds: int
    """Timed requests of each page per store."""
    batch: int = 25
    """Messages per compaction."""
    warmup: int = 3


FULL = Plan(
    sessions=1_000,
    messages=100_000,
    requests=20_000,
    largest_messages=1_000,
    largest_requests=2_000,
    rounds=40,
)
QUICK = Plan(
    sessions=20, messages=2_000, requests=400, largest_messages=200, largest_requests=100, rounds=5
)


# -- the store ------------------------------------------------------------------------------


def shares(total: int, count: int, largest: int) -> list[int]:
    """``count`` sizes adding up to ``total``: the first ``largest``, the others the rest
    shared as evenly as whole numbers allow."""
    if count == 1:
        return [total]
    each, extra = divmod(total - largest, count - 1)
    return [largest, *(each + (1 if k < extra else 0) for k in range(count - 1))]


@dataclass
class Built:
    """What is saved into each store, and what the pages are asked for."""

    compactions: list[Compaction]
    records: list[RequestRecord]
    largest: str
    query: str
    """A word of the largest session's text (its commonest of five letters or more)."""
    seconds: float = 0.0


def _record(
    session: str, at: datetime, model: int, i: int, figures: tuple[int, int, int, int]
) -> RequestRecord:
    before, after, previous_before, previous_after = figures
    name, route, format = MODELS[model]
    compacted = after < previous_after
    error = i % ERROR_EVERY == ERROR_EVERY - 1
    events = (f"{FELL_BACK}: timeout → rules",) if compacted and i % FALLBACK_EVERY == 0 else ()
    return RequestRecord(
        at=at,
        session_id=session,
        model=name,
        route=route,
        format=format,
        status=502 if error else 200,
        messages_in=8 + 3 * i,
        tokens_before=before,
        tokens_after=after,
        compacted=compacted,
        code="ok" if compacted else None,
        shared_messages=None if i == 0 or compacted else 6 + 3 * i,
        summarizer_calls=1 if compacted else 0,
        summarizer_seconds=0.8 if compacted else 0.0,
        ms_total=(2400.0 if compacted else 900.0) + (i % 7) * 50,
        error="upstream_status" if error else None,
        events=events,
        shared_tokens=None if i == 0 or compacted else previous_after,
        client_shared_tokens=None if i == 0 else previous_before,
    )


def session_records(
    session: str, count: int, compactions: int, last: datetime, model: int
) -> list[RequestRecord]:
    """A session's requests, two minutes apart up to ``last``: its history grows by about
    900 tokens a request, and ``compactions`` of them, spread over its second three
    quarters, summarize 70% of what was sent upstream."""
    start = count // 4
    marks = {start + (n * (count - start)) // max(compactions, 1) for n in range(compactions)}
    out: list[RequestRecord] = []
    dropped = previous_before = previous_after = 0
    for i in range(count):
        before = 3_000 + 900 * i
        if i in marks:
            dropped += (before - dropped) * 7 // 10
        after = before - dropped
        at = last - timedelta(minutes=2 * (count - 1 - i))
        figures = (before, after, previous_before, previous_after if i else after)
        out.append(_record(session, at, model, i, figures))
        previous_before, previous_after = before, after
    return out


def session_compaction(
    c: Corpus,
    session: str,
    size: int,
    first: int,
    pool: Sequence[SummaryRecord],
    batch: int,
    last: datetime,
) -> Compaction:
    """A session's ``size`` messages (the corpus's from ``first`` on, cycled), saved as
    compactions of ``batch`` messages, each with a record from ``pool`` under a fresh id,
    chained, and the state the last one leaves (its governor's figures, and the projection
    of the caller's messages that its summary stands for)."""
    records: list[SummaryRecord] = []
    messages = []
    count = -(-size // batch)
    for n, low in enumerate(range(0, size, batch)):
        at = last - timedelta(minutes=count - n)
        parent = records[-1].id if records else None
        update = {"id": uuid.uuid4().hex, "depth": n, "parent_id": parent, "created_at": at}
        record = pool[(first + n) % len(pool)].model_copy(update=update)
        records.append(record)
        for position in range(low, min(low + batch, size)):
            k = (first + position) % (len(c.messages) - 1) + 1  # past the system prompt
            messages.append(
                StoredMessage.of(
                    session,
                    c.messages[k],
                    position=position,
                    format="openai",
                    data=json.dumps(c.items[k], ensure_ascii=False),
                    compaction_id=record.id,
                    created_at=at,
                )
            )
    head = records[-1]
    summarized = sum(len(m.text) // 4 for m in messages)
    governor = GovernorState(
        compactions=len(records),
        length_after_last=batch,
        tokens_after_last=summarized // 4,
        requests=size,
        seen=size,
    )
    projection = Projection(1, size, uuid.uuid4().hex * 2, "user", render_compact(head))
    state = SessionState(
        session,
        governor=governor.to_json(),
        summary_id=head.id,
        compactions=len(records),
        tokens_summarized=summarized,
        offset=size,
        last_summary=head.narrative,
        projection=projection.to_json(),
    )
    return Compaction(session, records, messages, state)


def build(plan: Plan, moment: datetime) -> Built:
    """Every session's compaction and request records; the newest activity at ``moment``,
    the oldest 30 days before it (the largest session is the newest)."""
    started = time.perf_counter()
    c = corpus(CORPUS)
    pool = record_pool(c, plan.batch)
    sizes = shares(plan.messages, plan.sessions, plan.largest_messages)
    counts = shares(plan.requests, plan.sessions, plan.largest_requests)
    compactions: list[Compaction] = []
    records: list[RequestRecord] = []
    first = 0
    for k, (size, count) in enumerate(zip(sizes, counts, strict=True)):
        session = f"session-{k:04d}"
        last = moment - timedelta(days=30) * k / plan.sessions
        compaction = session_compaction(c, session, size, first, pool, plan.batch, last)
        compactions.append(compaction)
        records += session_records(session, count, len(compaction.records), last, k % 3)
        first += size
    largest = compactions[0]
    held: dict[str, int] = {}
    for message in largest.messages:
        for word in set(words(message.text)):
            held[word] = held.get(word, 0) + 1
    query = max((w for w in held if w.isalpha() and len(w) >= 5), key=lambda w: (held[w], w))
    return Built(compactions, records, largest.session_id, query, time.perf_counter() - started)


def fill(store: StoreBase, built: Built, batch: int = 500) -> float:
    """Seconds to save every compaction and request record into ``store``."""
    started = time.perf_counter()
    for compaction in built.compactions:
        store.save(compaction)
    for low in range(0, len(built.records), batch):
        store.save_requests(built.records[low : low + batch])
    return time.perf_counter() - started


def vacuumed(url: str) -> None:
    """``VACUUM ANALYZE`` the database: what autovacuum does soon after a load. Before it, a
    count over an index still reads the table (no page is known to be all visible yet) and
    the planner plans for an empty one."""
    import psycopg  # noqa: PLC0415 - the postgres extra, needed only here

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


# -- the pages ------------------------------------------------------------------------------


def pages(built: Built) -> list[tuple[str, str, str]]:
    """(name, path, a text the page must hold) of each page timed."""
    largest = built.largest
    return [
        ("overview, 24 hours", "/?range=24h", "sent upstream"),
        ("overview, 30 days", "/?range=30d", "sent upstream"),
        ("sessions, by last seen", "/sessions", "session-"),
        ("sessions, by tokens saved", "/sessions?sort=saved", "session-"),
        ("sessions, searched", f"/sessions?q={MODELS[1][0]}", MODELS[1][0]),
        ("the largest session", f"/session?id={largest}", largest),
        ("search in it", f"/session/search?id={largest}&q={built.query}", built.query),
        ("its export (Markdown)", f"/session/export.md?id={largest}", largest),
    ]


@dataclass
class PageTiming:
    name: str
    path: str
    holds: str
    samples: list[float] = field(default_factory=list)
    """Seconds per request."""
    cpu: list[float] = field(default_factory=list)
    """CPU seconds this process spent per request (the server thread's and the client's):
    what the machine's other work does not stretch, as it stretches the time."""
    size: int = 0
    """Bytes of the page."""

    def ms(self, q: float) -> float:
        return quantile(self.samples, q) * 1e3

    def cpu_ms(self, q: float) -> float:
        return quantile(self.cpu, q) * 1e3


@dataclass
class StoreRun:
    name: str
    fill_seconds: float
    pages: list[PageTiming]


def _fetch(client: httpx2.Client, url: str) -> tuple[float, float, httpx2.Response]:
    """Seconds and CPU seconds of this process to get ``url``, and the answer."""
    gc.disable()
    try:
        cpu, started = time.process_time(), time.perf_counter()
        response = client.get(url)
        return time.perf_counter() - started, time.process_time() - cpu, response
    finally:
        gc.enable()


def time_pages(store: StoreBase, built: Built, plan: Plan, name: str, filled: float) -> StoreRun:
    """Each page of :func:`pages` over ``store``, ``plan.rounds`` times after the warm-up."""
    from synopsis.ui.app import create_ui  # noqa: PLC0415 - the ui extra, needed only here

    timings = [PageTiming(*page) for page in pages(built)]
    with Served(create_ui(store, refresh=0)) as served, httpx2.Client(timeout=120.0) as client:
        for n in range(plan.warmup + plan.rounds):
            for i in range(len(timings)):
                timing = timings[(n + i) % len(timings)]
                took, cpu, response = _fetch(client, served.url + timing.path)
                if response.status_code != 200 or timing.holds not in response.text:
                    raise RuntimeError(f"{timing.path}: {response.status_code}")
                if n >= plan.warmup:
                    timing.samples.append(took)
                    timing.cpu.append(cpu)
                    timing.size = len(response.content)
    return StoreRun(name, filled, timings)


@dataclass
class Results:
    plan: Plan
    build_seconds: float
    runs: list[StoreRun]
    started: str = field(default_factory=now)
    load: tuple[float, float] = (0.0, 0.0)
    seconds: float = 0.0

    def over(self, q: float = 0.5) -> list[tuple[str, str, float]]:
        """(store, page, milliseconds) of every page over the target at the quantile ``q``."""
        return [
            (r.name, t.name, t.ms(q)) for r in self.runs for t in r.pages if t.ms(q) >= TARGET_MS
        ]


def run(plan: Plan, folder: Path, postgres: Callable[[], str] | None = None) -> Results:
    """The store built once, then filled into SQLite (a file in ``folder``) and, given a way
    to make a database, PostgreSQL; each store's pages timed."""
    load = load_average()
    started = time.perf_counter()
    built = build(plan, datetime.now(UTC))
    runs = []
    stores: list[tuple[str, Callable[[], StoreBase], Callable[[], None]]] = [
        ("SQLite", lambda: SQLiteStore(folder / "ui.db"), lambda: None)
    ]
    if postgres is not None:
        url = postgres()
        stores.append(("PostgreSQL", lambda: PostgresStore(url), lambda: vacuumed(url)))
    for name, make, settle in stores:
        with make() as store:
            filled = fill(store, built)
            settle()
            runs.append(time_pages(store, built, plan, name, filled))
    results = Results(plan, built.seconds, runs)
    results.load = (load, load_average())
    results.seconds = time.perf_counter() - started
    return results


# -- the report -----------------------------------------------------------------------------


def _rows(results: Results) -> list[list[str]]:
    first = results.runs[0]
    rows = []
    for i, timing in enumerate(first.pages):
        row = [timing.name, f"`{timing.path}`", f"{timing.size / 1e3:.0f} kB"]
        worst = 0.0
        for r in results.runs:
            t = r.pages[i]
            row += [ms(t.ms(0.5)), ms(t.ms(0.95)), ms(t.cpu_ms(0.5))]
            worst = max(worst, t.ms(0.5))
        rows.append([*row, "yes" if worst < TARGET_MS else "**no**"])
    return rows


def _columns(results: Results) -> list[str]:
    names = [f"{r.name} {q}" for r in results.runs for q in ("p50", "p95", "CPU p50")]
    return ["page", "path", "size", *names, f"p50 < {TARGET_MS:.0f} ms"]


def markdown(results: Results) -> str:
    p = results.plan
    stores = " and ".join(f"{r.name} (filled in {r.fill_seconds:.1f} s)" for r in results.runs)
    out = [
        "# The operator's page over a large store",
        "",
        f"Measured {results.started} on {machine()} with Python "
        f"{sys.version.split()[0]} ({listed(versions('starlette', 'jinja2', 'uvicorn', 'httpx2'))}"
        f"), by `python -m benchmarks.bench_ui` (part of `make bench`) in "
        f"{results.seconds:.0f} s, the machine's load average {results.load[0]:.1f} at the "
        f"start and {results.load[1]:.1f} at the end.",
        "",
        f"The store: {p.sessions:,} sessions holding {p.messages:,} stored messages (the "
        "bundled transcripts' text, cycled), saved by compactions of "
        f"{p.batch} messages each with a summary record and the session state, and "
        f"{p.requests:,} request records (three models and formats, errors, fallbacks, "
        f"spread over 30 days); the largest session holds {p.largest_messages:,} messages "
        f"and {p.largest_requests:,} records, the others share the rest. Built in "
        f"{results.build_seconds:.1f} s, saved into {stores}. The PostgreSQL database, "
        "on a server started here (durability off), is vacuumed and analyzed after the load, "
        "as autovacuum soon would.",
        "",
        "Each page is served by `create_ui` on uvicorn at 127.0.0.1, in a thread of the "
        "benchmark's process, and fetched by an httpx2 client: milliseconds from sending the "
        "request to the answer's last byte, and the CPU time this process spent on it (the "
        "server thread's work and the client's; with PostgreSQL, the database server's own "
        "work is not in it), which the machine's other work does not stretch as it stretches "
        f"the time. The pages take turns, {p.rounds} timed rounds after {p.warmup} untimed.",
        "",
        *table(_columns(results), _rows(results), left=2),
        "",
        "The largest session's page lays out its whole chart and every compaction with the "
        "first page of its originals, hence its size. The sessions list counts each "
        "session's originals with `message_counts()`, from an index: `stats()`, which it "
        "read before, sizes every stored message and took 158 ms of the list's 183 ms over "
        "this store in SQLite.",
        "",
    ]
    for q, label in ((0.5, "p50"), (0.95, "p95")):
        over = results.over(q)
        listed_over = "; ".join(f"{page} with {store} ({ms(v)} ms)" for store, page, v in over)
        out.append(
            f"Over {TARGET_MS:.0f} ms at {label}: {listed_over}."
            if over
            else f"Every page is under {TARGET_MS:.0f} ms at {label} with every store."
        )
    return "\n".join(out) + "\n"


def main(
    plan: Plan = FULL, results_path: Path | None = RESULTS, *, postgres: bool = True
) -> Results:
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-ui-")))
        make = None
        if postgres:
            from synopsis.testing.postgres import EmbeddedPostgres  # noqa: PLC0415 - dev extra

            make = stack.enter_context(EmbeddedPostgres()).create_database
        results = run(plan, folder, make)
    print("\n".join(table(_columns(results), _rows(results), left=2)))
    write(results_path, markdown(results))
    return results


def cli(argv: Sequence[str] | None = None) -> Results:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_ui", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="a small store, few rounds")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--rounds", type=int, help="timed requests of each page per store")
    parser.add_argument("--out", type=Path, help="where to write the results (Markdown)")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.rounds is not None:
        plan = dataclasses.replace(plan, rounds=args.rounds)
    custom = args.quick or args.rounds is not None or args.no_postgres
    out = args.out if args.out or custom else RESULTS
    return main(plan, out, postgres=not args.no_postgres)


if __name__ == "__main__":
    cli()
