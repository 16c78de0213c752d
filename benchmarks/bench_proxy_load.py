"""The proxy under load: whether one very large request keeps it from answering the others,
and how many requests per second one and two worker processes serve.

1. **A large request in flight.** ``synopsis serve`` (as a user runs it, with a body limit
   raised to take it) in front of the benchmarks' upstream: ``/healthz`` and small chat
   requests of another session (20 messages, one appended a request, as an agent loop sends
   them) are timed one after another, first alone, then while one request of about 50 MB
   (5,000 messages of about 10 kB) is being compacted; their p50 and p99 each way. The
   compaction's own work runs in a worker thread (``acompact(threaded=...)``), so the event
   loop answers around it; what it cannot free is the time the parse of the large body holds
   the interpreter.
2. **Where the fast path runs.** In this process, no network: a session's request that
   compacts nothing (its history grown by one message, as the proxy reads it from JSON),
   timed through ``acompact`` with its steps on the event loop (``threaded="compaction"``,
   what the proxy does below ``THREADED_ABOVE``) and in a worker thread (``"all"``), at a few
   history sizes: what moving it off the loop costs the request, against the time it holds
   the loop.
3. **Workers.** ``synopsis serve --workers N`` on one SQLite file, N = 1 and 2, driven for a
   few seconds by a client keeping a fixed number of requests in flight (each a session of 100
   messages or so, growing by one a request); requests per second each way. The machine's
   cores are shared by the client, the upstream, the workers and whatever else runs on it:
   the figure is this machine's, not a core's.

Run: ``python -m benchmarks.bench_proxy_load`` (about three minutes; part of ``make bench``);
it writes its section of ``benchmarks/results/proxy.md`` (``## Under load``), leaving the
rest of the file as ``bench_proxy`` wrote it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2
import orjson

from benchmarks._harness import (
    Child,
    listening_at,
    load_average,
    ms,
    now,
    quantile,
    synopsis_command,
)
from benchmarks._upstream import MODEL, PATH, answer_text
from benchmarks.bench_proxy import appended, request_body
from benchmarks.compare.inputs import build_history, load_transcripts
from synopsis.proxy.exchange import THREADED_ABOVE

if TYPE_CHECKING:
    from collections.abc import Iterator

    from benchmarks.compare.systems import Items

RESULTS = Path(__file__).resolve().parent / "results" / "proxy.md"
HEADING = "## Under load"
WINDOW = 200_000
"""The window the large request is compacted for (it holds millions of tokens)."""


@dataclass(frozen=True)
class Plan:
    large_messages: int
    large_bytes: int
    """The large request's body, about: its messages are padded to reach it."""
    samples: int
    """Requests of each kind timed with nothing else in flight."""
    small_messages: int
    worker_counts: tuple[int, ...]
    worker_seconds: float
    in_flight: int
    """Requests the throughput client keeps in flight at once."""
    worker_messages: int
    worker_warmup: float = 5.0
    """Seconds of requests sent before the timing starts: every worker has loaded its
    vocabularies and opened its sessions by then (``/healthz`` answers once one has)."""
    fast_sizes: tuple[int, ...] = (100, 1_000, 3_000, 10_000)
    fast_rounds: int = 40


FULL = Plan(
    large_messages=5_000,
    large_bytes=58_000_000,
    samples=200,
    small_messages=20,
    worker_counts=(1, 2),
    worker_seconds=15.0,
    in_flight=8,
    worker_messages=100,
)


# -- serving ----------------------------------------------------------------------------------


@contextlib.contextmanager
def serving(*flags: str) -> Iterator[str]:
    """``synopsis serve`` with ``flags`` on a free port, as a user runs it; its root once it
    answers ``/healthz``; interrupted as Ctrl-C does at the end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNOPSIS_")}
    err = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the block ends, below
    process = subprocess.Popen(
        [*synopsis_command(), "serve", "--port", "0", *flags],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    url = ""
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"synopsis serve {' '.join(flags)} exited")
            if not url:
                err.seek(0)
                url = listening_at(err.read().decode(errors="replace"))
            with contextlib.suppress(httpx2.TransportError):
                if url and httpx2.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("synopsis serve did not start in 60 s")
            time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        err.close()


# -- a large request in flight ----------------------------------------------------------------


def large_history(transcripts: dict[str, Items], messages: int, size: int) -> Items:
    """About ``messages`` messages of the transcripts whose text is repeated (line by line)
    until the whole is about ``size`` bytes, with a marker last."""
    history = build_history(transcripts, messages)
    each = size // max(len(history), 1)
    for item in history[1:]:
        text = item.get("content")
        if isinstance(text, str) and text:
            item["content"] = "\n".join([text] * max(1, each // (len(text) + 1)))
    history.append(appended("large", 0))
    return history


@dataclass
class InFlight:
    """Seconds per request of each kind (``healthz``, ``small``), alone and with the large
    request in flight; the large request's own seconds and body."""

    alone: dict[str, list[float]] = field(default_factory=lambda: {"healthz": [], "small": []})
    during: dict[str, list[float]] = field(default_factory=lambda: {"healthz": [], "small": []})
    large_seconds: float = 0.0
    large_bytes: int = 0
    large_status: int = 0
    large_compacted: bool = False


def _timed_pair(client: httpx2.Client, url: str, history: Items, n: int) -> dict[str, float]:
    """One ``/healthz`` and one small request (``history`` grown by one), each timed."""
    start = time.perf_counter()
    if client.get(url + "/healthz").status_code != 200:
        raise RuntimeError("/healthz did not answer 200")
    health = time.perf_counter() - start
    history.append(appended("small", n))
    body = request_body(history)
    start = time.perf_counter()
    answer = client.post(url + PATH, content=body, headers={"x-synopsis-session": "small"})
    small = time.perf_counter() - start
    if answer.status_code != 200 or "bench-mark-small" not in answer_text(answer.content):
        raise RuntimeError(f"small request: {answer.status_code} {answer.content[:200]!r}")
    history.append({"role": "assistant", "content": "ok"})
    return {"healthz": health, "small": small}


def in_flight(transcripts: dict[str, Items], upstream: str, plan: Plan) -> InFlight:
    out = InFlight()
    large = request_body(large_history(transcripts, plan.large_messages, plan.large_bytes))
    out.large_bytes = len(large)
    flags = [
        "--upstream-openai", upstream, "--model-window", f"{MODEL}={WINDOW}",
        "--max-body-size", str(2 * len(large)), "--timeout", "600",
    ]  # fmt: skip
    small = build_history(transcripts, plan.small_messages)
    with serving(*flags) as url, httpx2.Client(timeout=600) as client:
        for n in range(plan.samples + 5):
            taken = _timed_pair(client, url, small, n)
            if n >= 5:  # the first few warm the connection and the session
                for kind, seconds in taken.items():
                    out.alone[kind].append(seconds)
        done = threading.Event()

        def send_large() -> None:
            with httpx2.Client(timeout=600) as own:
                start = time.perf_counter()
                answer = own.post(url + PATH, content=large, headers={"x-synopsis-session": "L"})
                out.large_seconds = time.perf_counter() - start
                out.large_status = answer.status_code
                out.large_compacted = answer.headers.get("x-synopsis-compacted") == "true"
            done.set()

        sender = threading.Thread(target=send_large)
        sender.start()
        n = plan.samples + 5
        while not done.is_set():
            taken = _timed_pair(client, url, small, n)
            n += 1
            if not done.is_set():
                for kind, seconds in taken.items():
                    out.during[kind].append(seconds)
            time.sleep(0.005)
        sender.join()
    return out


# -- where the fast path runs ----------------------------------------------------------------


@dataclass(frozen=True)
class FastPath:
    messages: int
    body_bytes: int
    on_loop_ms: float
    in_thread_ms: float
    """Medians per request."""


async def _fast_path(transcripts: dict[str, Items], size: int, rounds: int) -> FastPath:
    from synopsis import Compactor  # noqa: PLC0415 - as the proxy holds it

    base = build_history(transcripts, size)
    medians = {}
    for mode in ("compaction", "all"):
        compactor = Compactor(model=MODEL, context_window=10**9, store="memory", environ={})
        history = orjson.loads(request_body(base))["messages"]
        taken = []
        for n in range(rounds + 5):
            # Read afresh from JSON each time, as the proxy reads each request.
            body = request_body([*history, appended("fast", n)])
            history = orjson.loads(body)["messages"]
            start = time.perf_counter()
            await compactor.acompact(history, session_id="fast", format="openai", threaded=mode)
            if n >= 5:  # the first reads the whole history; the next few warm up
                taken.append(time.perf_counter() - start)
        compactor.close()
        medians[mode] = statistics.median(taken) * 1e3
    return FastPath(size, len(request_body(base)), medians["compaction"], medians["all"])


def fast_paths(transcripts: dict[str, Items], plan: Plan) -> list[FastPath]:
    return [asyncio.run(_fast_path(transcripts, m, plan.fast_rounds)) for m in plan.fast_sizes]


# -- workers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Throughput:
    workers: int
    requests: int
    seconds: float
    errors: int

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds


async def _drive(url: str, transcripts: dict[str, Items], plan: Plan) -> Throughput:
    base = build_history(transcripts, plan.worker_messages)
    limits = httpx2.Limits(max_connections=1)
    done, errors = 0, 0
    begin = time.perf_counter() + plan.worker_warmup
    stop = begin + plan.worker_seconds

    async def loop(index: int) -> None:
        # A client of its own, as each agent has: its session stays on its connection, and
        # so on the worker that accepted it (whose fast path remembers it).
        async with httpx2.AsyncClient(timeout=60, limits=limits) as client:
            await session(client, index)

    async def session(client: httpx2.AsyncClient, index: int) -> None:
        nonlocal done, errors
        history = list(base)
        history[0] = dict(history[0], content=f"{history[0]['content']}\nClient {index}.")
        n = 0
        while time.perf_counter() < stop:
            history.append(appended(f"w{index}", n))
            answer = await client.post(
                url + PATH,
                content=request_body(history),
                headers={"x-synopsis-session": f"w{index}"},
            )
            timed = time.perf_counter() > begin
            if answer.status_code != 200:
                errors += 1
            elif timed:
                done += 1
            history.append({"role": "assistant", "content": "ok"})
            n += 1

    await asyncio.gather(*(loop(i) for i in range(plan.in_flight)))
    return Throughput(0, done, time.perf_counter() - begin, errors)


def throughput(
    transcripts: dict[str, Items], upstream: str, workers: int, plan: Plan
) -> Throughput:
    with tempfile.TemporaryDirectory() as folder:
        store = str(Path(folder) / "proxy.db")
        flags = ["--upstream-openai", upstream, "--store", store, "--workers", str(workers)]
        with serving(*flags) as url:
            found = asyncio.run(_drive(url, transcripts, plan))
    return Throughput(workers, found.requests, found.seconds, found.errors)


# -- the report -------------------------------------------------------------------------------


@dataclass
class Results:
    plan: Plan
    flight: InFlight
    workers: list[Throughput]
    fast: list[FastPath] = field(default_factory=list)
    seconds: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)
    when: str = field(default_factory=now)


def run(plan: Plan) -> Results:
    started = time.perf_counter()
    load = load_average()
    transcripts = load_transcripts()
    with Child("benchmarks._upstream", name="upstream") as upstream:
        flight = in_flight(transcripts, upstream, plan)
        workers = [throughput(transcripts, upstream, n, plan) for n in plan.worker_counts]
    results = Results(plan, flight, workers, fast_paths(transcripts, plan))
    results.seconds = time.perf_counter() - started
    results.load = (load, load_average())
    return results


def _q(samples: list[float], q: float) -> str:
    return ms(quantile(samples, q) * 1e3) if samples else "n/a"


def section(results: Results) -> str:
    """The ``## Under load`` section of ``proxy.md``."""
    f, plan = results.flight, results.plan
    out = [
        HEADING,
        "",
        f"Measured {results.when} by `python -m benchmarks.bench_proxy_load` (part of `make "
        f"bench`) in {results.seconds:.0f} s, the machine's load average "
        f"{results.load[0]:.1f} at the start and {results.load[1]:.1f} at the end, "
        f"{os.cpu_count()} CPUs shared by the client, the upstream, the proxy and whatever "
        "else ran on the machine. The proxy is `synopsis serve` as a user runs it.",
        "",
        "### A large request in flight",
        "",
        f"`/healthz` and a small request of another session ({plan.small_messages} messages "
        "and up, one appended a request), timed one after the other: alone, then while one "
        f"request of {f.large_bytes / 1e6:.1f} MB ({plan.large_messages:,} messages) is "
        f"compacted for a {WINDOW:,}-token window (`--max-body-size` raised to take it). The "
        f"large request was answered {f.large_status} after {f.large_seconds:.1f} s"
        f"{', compacted' if f.large_compacted else ''}.",
        "",
        "| request | n alone | p50 alone | p99 alone | n during | p50 during | p99 during "
        "| max during |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in ("healthz", "small"):
        alone, during = f.alone[kind], f.during[kind]
        out.append(
            f"| {'`/healthz`' if kind == 'healthz' else 'small chat request'} "
            f"| {len(alone)} | {_q(alone, 0.5)} | {_q(alone, 0.99)} "
            f"| {len(during)} | {_q(during, 0.5)} | {_q(during, 0.99)} "
            f"| {_q(during, 1.0)} |"
        )
    out += [
        "",
        "Milliseconds. The compaction's own work (decoding, counting, planning, the rules "
        "summarizer) runs in a worker thread and shares the interpreter with the event loop, "
        "which gets it back at least every switch interval (5 ms); the large body's JSON "
        "parse and serialization (orjson) hold the interpreter for their whole length, on "
        "the loop or off it, and account for the largest waits.",
        "",
        "### Where the fast path runs",
        "",
        "A session's request that compacts nothing, its history grown by one message and "
        "read afresh from JSON, through `acompact` in this process: its steps on the event "
        "loop, or in a worker thread (two hand-offs: the fast path reads the session in "
        f"between). Medians of {plan.fast_rounds}. The time on the loop is what the others "
        "wait; the difference is what the thread costs the request itself, mostly the "
        "scheduler's delay in waking a thread on a busy machine. The proxy keeps the fast "
        f"path on the loop for bodies up to {THREADED_ABOVE // (1 << 20)} MiB "
        "(`THREADED_ABOVE`): there the parse of the body, which holds the interpreter "
        "wherever it runs, takes as long as the fast path's own work or longer; above it, "
        "the fast path goes to a thread, so that a session whose request appends megabytes "
        "in one message (counted in the fast path) does not hold the loop for seconds.",
        "",
        "| history | body | on the loop (ms) | in a thread (ms) |",
        "|---:|---:|---:|---:|",
        *(
            f"| {p.messages:,} messages | {p.body_bytes / 1e6:.2f} MB | {ms(p.on_loop_ms)} "
            f"| {ms(p.in_thread_ms)} |"
            for p in results.fast
        ),
        "",
        "### Workers",
        "",
        f"`synopsis serve --workers N --store FILE.db`, timed for {plan.worker_seconds:g} s "
        f"(after {plan.worker_warmup:g} s untimed) by {plan.in_flight} clients at once, "
        "each an agent with a connection of its own and its own session of "
        f"{plan.worker_messages} messages and up, growing by one a request (nothing "
        "compacted: the sessions stay under the trigger). A session stays on its "
        "connection, so on the worker that accepted it, whose fast path remembers it.",
        "",
        "| workers | requests | seconds | req/s | errors |",
        "|---:|---:|---:|---:|---:|",
        *(
            f"| {t.workers} | {t.requests} | {t.seconds:.1f} | {t.per_second:.0f} | {t.errors} |"
            for t in results.workers
        ),
        "",
    ]
    return "\n".join(out)


def with_section(text: str, added: str) -> str:
    """``text`` (a report) with its ``## Under load`` section replaced by ``added``, or
    ``added`` appended when it has none."""
    head = text.partition("\n" + HEADING)[0].rstrip("\n")
    return f"{head}\n\n{added}" if head else added


def table(results: Results) -> list[str]:
    f = results.flight
    lines = [
        f"large request: {f.large_bytes / 1e6:.1f} MB, answered {f.large_status} in "
        f"{f.large_seconds:.1f} s"
    ]
    for kind in ("healthz", "small"):
        lines.append(
            f"{kind:>8}: alone p50 {_q(f.alone[kind], 0.5)} p99 {_q(f.alone[kind], 0.99)} ms; "
            f"during ({len(f.during[kind])}) p50 {_q(f.during[kind], 0.5)} p99 "
            f"{_q(f.during[kind], 0.99)} max {_q(f.during[kind], 1.0)} ms"
        )
    for p in results.fast:
        lines.append(
            f"fast path at {p.messages:,} messages ({p.body_bytes / 1e6:.2f} MB): on the loop "
            f"{p.on_loop_ms:.3f} ms, in a thread {p.in_thread_ms:.3f} ms"
        )
    for t in results.workers:
        lines.append(
            f"workers {t.workers}: {t.requests} requests in {t.seconds:.1f} s = "
            f"{t.per_second:.0f} req/s, {t.errors} errors"
        )
    lines.append(
        f"(median small request alone: {statistics.median(f.alone['small']) * 1e3:.2f} ms)"
    )
    return lines


def main(plan: Plan = FULL, results_path: Path | None = RESULTS) -> Results:
    results = run(plan)
    print("\n".join(table(results)))
    if results_path is not None:
        old = results_path.read_text(encoding="utf-8") if results_path.exists() else ""
        results_path.write_text(with_section(old, section(results)), encoding="utf-8")
        print(f"written: {results_path.name}")
    return results


if __name__ == "__main__":
    main()
