"""What the HTTP proxy (``synopsis.proxy``) costs a client when it compacts nothing: the latency
it adds, the delay it adds to a stream's first byte, 50 streaming sessions at once, and the
memory an idle session keeps.

Every figure is taken against the same upstream called directly, in the same run. The
upstream is a bare ASGI app on uvicorn in a process of its own: it reads the whole body, finds
the marker the request's last message carries and answers a small chat completion naming it
(for ``"stream": true``, that answer as server-sent events), without parsing the body, so that
its own cost is small and the same on every path. The proxy runs as ``synopsis serve`` runs
it: ``create_app`` on uvicorn at 127.0.0.1, in a process of its own, with a window far above
any history here, so that nothing is compacted. Beside it, a bare relay on the same stack
(uvicorn in, httpx2 out, bytes passed through, nothing parsed) shows the floor that any proxy
written this way pays for the extra hop. The client is httpx2 (the HTTP stack of the OpenAI
and Anthropic SDKs) without an SDK on top, so that only the wire is timed. Histories are the
bundled transcripts in OpenAI chat format, and each request resends its session with one
message appended, as an agent loop does; the paths take turns with the same bytes, so that a
change in the machine's load falls on all of them alike.

1. Latency added to a non-streamed request, p50 and p99, at 100 and 10,000 messages (target:
   under 2 ms at p50 at 100 messages; at 10,000 messages at most twice the time orjson takes
   to parse the body and serialize it again, measured here too, with json's beside it).
2. Time added to a stream's first byte at 100 messages, p50 (target: under 5 ms).
3. 50 streaming sessions at once through the proxy (each its own ``x-synopsis-session`` and
   history; the upstream paces its events so that all are open together), a few rounds
   each: no error, and every answer names its own session and carries its own request's
   marker and the CRC-32 of the very bytes its client sent.
4. Memory an idle session keeps: tracemalloc growth of the process serving the proxy (this
   part serves it in the benchmark's own process) after N sessions of M messages are sent
   once each.
5. What recording each request's figures costs: the proxy with request records on and off,
   with the memory store and with a SQLite file, side by side (:mod:`benchmarks._recording`).

Run: ``python -m benchmarks.bench_proxy`` (about three minutes); it writes
``benchmarks/results/proxy.md``. ``--recording [messages [requests]]`` runs part 5 alone and
prints it.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import gc
import importlib.metadata
import importlib.util
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
import tracemalloc
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
import orjson

from benchmarks import _recording, _upstream
from benchmarks._harness import Child, load_average, ms, now, quantile, timed
from benchmarks._upstream import (
    CHECK_HEADER,
    MODEL,
    PACE_HEADER,
    PATH,
    Served,
    answer_text,
    lifespan,
    read_body,
    streamed_text,
    upstream,
)
from benchmarks.compare.inputs import build_history, load_transcripts
from synopsis.testing.server import chat_completion

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

    from starlette.types import Message, Receive, Scope, Send

    from benchmarks.compare.systems import Items

WINDOW = 1_000_000_000
"""Far above the largest history here (a few million tokens): the proxy never compacts."""
PATHS = ("direct", "relay", "proxy")
RESULTS = Path(__file__).resolve().parent / "results" / "proxy.md"
REMEMBERED = 256
"""The proxy's default ``remembered_sessions``: how many idle sessions it keeps at most."""

ADDED_P50_TARGET_MS = 2.0
YARDSTICK_TARGET = 2.0
FIRST_BYTE_TARGET_MS = 5.0
OWN_WORK_TARGET_MS = ADDED_P50_TARGET_MS
"""The end-to-end budget, held against synopsis's own work alone: what is left of the added
latency is the extra hop that any proxy pays, whatever it does."""
PROFILED = (100, 300)
"""(messages, requests) that ``--profile`` runs by default."""


@dataclass(frozen=True)
class Plan:
    """How much of each part to run; :data:`FULL` is ``make bench``'s."""

    latency: tuple[tuple[int, int], ...]
    """(messages, timed rounds) of non-streamed requests, smallest first."""
    first_byte: tuple[int, int]
    """(messages, timed rounds) of streamed requests."""
    sessions: int
    session_messages: int
    session_rounds: int
    pace: float
    memory: tuple[tuple[int, int], ...]
    """(messages per session, sessions) for the memory an idle session keeps."""
    breakdown: tuple[tuple[int, int], ...]
    """(messages, timed rounds) of the proxy's own work, in process."""
    yardstick_repeats: int = 7
    warmup: int = 5
    recording: tuple[int, int] = (100, 2_000)
    """(messages, timed rounds) of the proxies with request records on and off."""


FULL = Plan(
    latency=((100, 2_000), (10_000, 200)),
    first_byte=(100, 1_500),
    sessions=50,
    session_messages=100,
    session_rounds=3,
    pace=0.05,
    memory=((100, 50), (1_000, 20)),
    breakdown=((100, 300), (10_000, 20)),
)


# -- the servers ------------------------------------------------------------------------------


_DROPPED = frozenset({b"host", b"content-length", b"transfer-encoding", b"date", b"server"})


def relay_app(upstream_url: str) -> Any:
    """The floor under any proxy on this stack: the same server (uvicorn) and upstream client
    (httpx2) relaying the bytes both ways, with no framework, no parsing and no compaction."""
    clients: list[httpx2.AsyncClient] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if not clients:
            clients.append(httpx2.AsyncClient(base_url=upstream_url, timeout=120.0))
        client = clients[0]
        headers = [(k, v) for k, v in scope["headers"] if k not in _DROPPED]
        body = await read_body(receive)
        request = client.build_request("POST", scope["path"], content=body, headers=headers)
        answer = await client.send(request, stream=True)
        head = [(k, v) for k, v in answer.headers.raw if k.lower() not in _DROPPED]
        await send({"type": "http.response.start", "status": answer.status_code, "headers": head})
        async for chunk in answer.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await answer.aclose()
        await send({"type": "http.response.body", "body": b""})

    return app


def proxy_app(upstream_url: str, kind: str = "proxy", folder: str = "") -> Any:
    """The proxy as ``synopsis serve`` makes it, with a window that never compacts. ``kind``
    (one of ``_recording.KINDS``, else ``proxy``) says whether it records each request and
    whether its store is a SQLite file in ``folder`` (else the default, memory)."""
    from synopsis.proxy import create_app  # noqa: PLC0415 - the extra, needed only here

    sqlite = kind.endswith("-sqlite")
    return create_app(
        upstream_openai=upstream_url,
        upstream_anthropic=upstream_url,
        windows={MODEL: WINDOW},
        remembered_sessions=REMEMBERED,
        environ={},
        record_requests=kind.startswith(("proxy", "recorded")),
        store=str(Path(folder) / f"{kind}.db") if sqlite else "memory",
    )


def serve(kind: str, upstream_url: str = "", folder: str = "") -> None:
    """A child process's life: serve ``kind``, print its root, stop when stdin closes."""
    apps: dict[str, Callable[[], Any]] = {
        "upstream": lambda: upstream,
        "relay": lambda: relay_app(upstream_url),
    }
    app = apps.get(kind, lambda: proxy_app(upstream_url, kind, folder))
    with Served(app()) as served:
        print(served.url, flush=True)
        sys.stdin.read()


def server(kind: str, upstream_url: str = "", folder: str = "") -> Child:
    """``with server("proxy", upstream_url) as url:``: that server in a process of its own
    (this module run with ``--serve``)."""
    return Child("benchmarks.bench_proxy", "--serve", kind, upstream_url, folder, name=kind)


def stack() -> str:
    """The server stack uvicorn picks here (``auto``: uvloop and httptools when installed)."""
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    versions = {n: importlib.metadata.version(n) for n in ("uvicorn", "starlette", "httpx2")}
    named = ", ".join(f"{n} {v}" for n, v in versions.items())
    return f"{named}; {loop} event loop, {http} HTTP parser"


# -- latency --------------------------------------------------------------------------------


def request_body(messages: Items, *, stream: bool = False) -> bytes:
    """The request's bytes, ``model`` and ``stream`` first (the upstream looks there)."""
    head: dict[str, Any] = {"model": MODEL}
    if stream:
        head["stream"] = True
    return orjson.dumps({**head, "messages": messages, "max_tokens": 64})


def appended(tag: str, n: int) -> dict[str, Any]:
    """The ``n``th message an agent loop appends, carrying the marker of ``tag`` and ``n``."""
    return {"role": "user", "content": f"Next step ({n}): carry on. bench-mark-{tag}-{n}"}


@dataclass
class Latency:
    """Seconds per request of each path (``PATHS``) for one history size: ``samples`` once
    the proxy knows the session, ``first`` for the request that opens a session (the proxy
    counts the whole history then)."""

    messages: int
    sizes: list[int] = field(default_factory=list)
    """The bytes of each timed request's body."""
    samples: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PATHS})
    first: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PATHS})

    def at(self, path: str, q: float) -> float:
        return quantile(self.samples[path], q)

    def added(self, q: float, *, over: str = "direct", path: str = "proxy") -> float:
        """``path`` minus ``over`` at the quantile ``q``."""
        return self.at(path, q) - self.at(over, q)

    def first_added(self, q: float) -> float | None:
        """What the proxy adds to a session's first request, at the quantile ``q``."""
        if not self.first["proxy"]:
            return None
        return quantile(self.first["proxy"], q) - quantile(self.first["direct"], q)

    @property
    def count(self) -> int:
        return min(len(taken) for taken in self.samples.values())

    @property
    def body_bytes(self) -> int:
        return round(statistics.median(self.sizes)) if self.sizes else 0


def _checked(response: httpx2.Response, text: str) -> None:
    """A 200, uncompacted, whose answer (``text``) names a marker the client sent."""
    if response.status_code != 200 or "bench-mark-" not in text:
        raise RuntimeError(f"unexpected answer {response.status_code}: {text[:300]!r}")
    if response.headers.get("x-synopsis-compacted") == "true":
        raise RuntimeError("the proxy compacted a history its window holds")


def whole(client: httpx2.Client, url: str, body: bytes, headers: dict[str, str]) -> float:
    """Seconds to send ``body`` and read the whole answer."""
    gc.disable()
    try:
        start = time.perf_counter()
        response = client.post(url, content=body, headers=headers)
        took = time.perf_counter() - start
    finally:
        gc.enable()
    _checked(response, answer_text(response.content))
    return took


def first_byte(client: httpx2.Client, url: str, body: bytes, headers: dict[str, str]) -> float:
    """Seconds from sending ``body`` to the streamed answer's first byte (the rest is then
    read, untimed)."""
    gc.disable()
    try:
        start = time.perf_counter()
        with client.stream("POST", url, content=body, headers=headers) as response:
            chunks = response.iter_raw()
            first = next(chunks)
            took = time.perf_counter() - start
            data = first + b"".join(chunks)
    finally:
        gc.enable()
    _checked(response, answer_text(data))
    return took


def latency(
    transcripts: dict[str, Items],
    urls: dict[str, str],
    size: int,
    rounds: int,
    warmup: int,
    *,
    stream: bool = False,
    paths: Sequence[str] = PATHS,
) -> Latency:
    """``rounds`` timed requests of sessions that each grow by one message a request, sent on
    every path in turn (each round starting with another path). A session takes at most a
    tenth of ``size`` messages before a fresh one of ``size`` opens, so the history stays
    that size; a session's first request and the run's first ``warmup`` are not among the
    samples (the first go to ``first``)."""
    base = build_history(transcripts, size)
    span = max(1, size // 10) + 1
    timer = first_byte if stream else whole
    out = Latency(size, samples={p: [] for p in paths}, first={p: [] for p in paths})
    clients = {path: httpx2.Client(timeout=120.0) for path in paths}
    history: Items = []
    headers: dict[str, str] = {}
    n = 0
    try:
        while out.count < rounds:
            opens = n % span == 0
            if opens:
                session = f"latency-{size}-{'stream' if stream else 'whole'}-{n // span}"
                headers = {"content-type": "application/json", "x-synopsis-session": session}
                history = list(base)
            history.append(appended("latency", n))
            body = request_body(history, stream=stream)
            for i in range(len(paths)):
                path = paths[(n + i) % len(paths)]
                took = timer(clients[path], urls[path] + PATH, body, headers)
                if n >= warmup:
                    (out.first if opens else out.samples)[path].append(took)
            if n >= warmup and not opens:
                out.sizes.append(len(body))
            n += 1
    finally:
        for client in clients.values():
            client.close()
    return out


@dataclass
class Yardstick:
    messages: int
    body_bytes: int
    orjson_ms: float
    json_ms: float


def yardstick(transcripts: dict[str, Items], size: int, repeats: int) -> Yardstick:
    """Median milliseconds to parse the body of a ``size``-message request and serialize it
    again, with orjson and with json."""
    body = request_body([*build_history(transcripts, size), appended("yardstick", 0)])
    text = body.decode()

    def median_ms(call: Callable[[], object]) -> float:
        return statistics.median(timed(call)[0] for _ in range(repeats)) * 1e3

    return Yardstick(
        size,
        len(body),
        median_ms(lambda: orjson.dumps(orjson.loads(body))),
        median_ms(lambda: json.dumps(json.loads(text))),
    )


# -- where the time goes ----------------------------------------------------------------------


@dataclass
class Breakdown:
    """Median milliseconds per request of the proxy's own work at one history size, in this
    process, with no network: the whole app (``app``, its upstream answering in memory), and
    apart, the two parts that grow with the history (parsing the body, and the compaction
    that keeps it unchanged); the rest is the framework's and the proxy's glue."""

    messages: int
    app_ms: float
    parse_ms: float
    compaction_ms: float

    @property
    def rest_ms(self) -> float:
        return self.app_ms - self.parse_ms - self.compaction_ms


def breakdown(transcripts: dict[str, Items], size: int, rounds: int, warmup: int) -> Breakdown:
    """The proxy's app driven through ASGI, one growing session, with a transport that
    answers at once; the body's parse and a compaction on the same settings timed apart."""
    return asyncio.run(_breakdown(transcripts, size, rounds, warmup))


@contextlib.asynccontextmanager
async def _in_process() -> AsyncIterator[Any]:
    """The proxy's app as ``proxy_app`` makes it, started through its ASGI lifespan, with an
    upstream that answers in memory at once: only the proxy's own work is left to time."""
    from synopsis.proxy import create_app  # noqa: PLC0415 - the extra, needed only here

    answer = orjson.dumps(chat_completion("bench-mark-breakdown", model=MODEL))

    async def answered(request: httpx2.Request) -> httpx2.Response:
        await request.aread()

        async def body() -> AsyncIterator[bytes]:
            yield answer

        return httpx2.Response(200, content=body(), headers={"content-type": "application/json"})

    app = create_app(
        upstream_openai="http://upstream.invalid",
        upstream_anthropic="http://upstream.invalid",
        windows={MODEL: WINDOW},
        remembered_sessions=REMEMBERED,
        environ={},
        transport=httpx2.MockTransport(answered),
    )
    into: asyncio.Queue[Message] = asyncio.Queue()
    out: asyncio.Queue[Message] = asyncio.Queue()
    life = asyncio.ensure_future(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, into.get, out.put)
    )
    await into.put({"type": "lifespan.startup"})
    await out.get()
    try:
        yield app
    finally:
        await into.put({"type": "lifespan.shutdown"})
        await out.get()
        await life


async def _breakdown(
    transcripts: dict[str, Items], size: int, rounds: int, warmup: int
) -> Breakdown:
    from synopsis import Compactor  # noqa: PLC0415 - beside the proxy's import

    compactor = Compactor(model=MODEL, context_window=WINDOW, store="memory", environ={})
    history = build_history(transcripts, size)
    whole, parse, compaction = [], [], []
    async with _in_process() as app:
        for n in range(warmup + rounds):
            history.append(appended("breakdown", n))
            body = request_body(history)
            took = await _one(app, body)
            gc.disable()  # as for the app's own timing
            try:
                start = time.perf_counter()
                items = orjson.loads(body)["messages"]
                parsed = time.perf_counter() - start
                start = time.perf_counter()
                await compactor.acompact(items, session_id="breakdown", format="openai")
                compacted = time.perf_counter() - start
            finally:
                gc.enable()
            if n >= warmup:
                whole.append(took)
                parse.append(parsed)
                compaction.append(compacted)
    compactor.close()
    return Breakdown(
        size,
        statistics.median(whole) * 1e3,
        statistics.median(parse) * 1e3,
        statistics.median(compaction) * 1e3,
    )


async def _one(app: Any, body: bytes) -> float:
    """Seconds for ``app`` to answer one request of ``body``, as uvicorn would pass it."""
    ended = asyncio.Event()
    sent: list[Message] = []
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Message:
        if pending:
            return pending.pop()
        await ended.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            ended.set()

    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-synopsis-session", b"breakdown"),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},  # what uvicorn says
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8787),
    }
    gc.disable()
    try:
        start = time.perf_counter()
        await app(scope, receive, send)
        took = time.perf_counter() - start
    finally:
        gc.enable()
    if sent[0].get("status") != 200:
        raise RuntimeError(f"the proxy answered {sent}")
    return took


# -- a profile of the proxy's own work -------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    """One function's share of the profiled requests, per request."""

    name: str
    """``file:line(function)``, the file from its package on; a built-in by its own name."""
    calls: float
    """As cProfile counts them: a coroutine once each time it resumes."""
    own_ms: float
    """Time in the function itself (cProfile's tottime)."""
    total_ms: float
    """Time in it and what it called (cumtime)."""


@dataclass
class Profile:
    """cProfile's account of ``requests`` requests of ``messages`` messages through the app in
    process (as :func:`breakdown` drives it), costliest first by own time. The profiler slows
    every Python call, so the times are above those of :class:`Breakdown`; the order is what
    it is for."""

    messages: int
    requests: int
    profiled_ms: float
    """Wall time per request under the profiler."""
    costs: list[Cost]

    def by_file(self) -> list[tuple[str, float]]:
        """(file, own milliseconds per request), costliest first."""
        files: dict[str, float] = {}
        for cost in self.costs:
            file = cost.name.split(":", 1)[0] if ":" in cost.name else "(built-in)"
            files[file] = files.get(file, 0.0) + cost.own_ms
        return sorted(files.items(), key=lambda kv: -kv[1])


def profile(transcripts: dict[str, Items], size: int, rounds: int, warmup: int) -> Profile:
    """The app at ``size`` messages under cProfile, the warm-up's requests left out."""
    return asyncio.run(_profiled(transcripts, size, rounds, warmup))


async def _profiled(transcripts: dict[str, Items], size: int, rounds: int, warmup: int) -> Profile:
    history = build_history(transcripts, size)
    profiler = cProfile.Profile()
    took = 0.0
    async with _in_process() as app:
        for n in range(warmup + rounds):
            history.append(appended("profile", n))
            body = request_body(history)  # the client's work: not profiled
            if n < warmup:
                await _one(app, body)
                continue
            profiler.enable()
            try:
                took += await _one(app, body)
            finally:
                profiler.disable()
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    costs = [
        Cost(
            f"{_short(file)}:{line}({function})" if line else function,
            calls / rounds,
            own / rounds * 1e3,
            total / rounds * 1e3,
        )
        for (file, line, function), (_, calls, own, total, _) in stats.items()
    ]
    costs.sort(key=lambda c: -c.own_ms)
    return Profile(size, rounds, took / rounds * 1e3, costs)


def profile_lines(found: Profile, top: int = 10) -> list[str]:
    """The profile as lines of text: the ``top`` functions by own time, then by file."""
    head = f"{'own ms':>8} {'total ms':>9} {'calls':>7}  function (per request)"
    lines = [
        f"cProfile of the proxy's app in process at {found.messages:,} messages, "
        f"{found.requests} requests: {found.profiled_ms:.2f} ms per request under the profiler",
        head,
        "-" * len(head),
    ]
    for c in found.costs[:top]:
        lines.append(f"{c.own_ms:>8.3f} {c.total_ms:>9.3f} {c.calls:>7.1f}  {c.name}")
    head = f"{'own ms':>8}  file (per request)"
    lines += [head, "-" * len(head)]
    lines += [f"{ms:>8.3f}  {file}" for file, ms in found.by_file()[:top]]
    return lines


# -- concurrent sessions --------------------------------------------------------------------


@dataclass
class Concurrency:
    sessions: int
    rounds: int
    streams: int = 0
    peak_open: int = 0
    errors: list[str] = field(default_factory=list)
    mixups: list[str] = field(default_factory=list)
    seconds: float = 0.0


def mixup(session: str, mark: str, body: bytes, headers: httpx2.Headers, text: str) -> str | None:
    """What is wrong with an answer for ``session``, whose last message carried ``mark`` and
    whose request was ``body``; None when it is that session's own."""
    named = headers.get("x-synopsis-session")
    if named != session:
        return f"{session}: answered as session {named!r}"
    if headers.get("x-synopsis-compacted") != "false":
        return f"{session}: compacted={headers.get('x-synopsis-compacted')!r}"
    expected = f"{mark} crc={zlib.crc32(body):08x}"
    if text != expected:
        return f"{session}: got {text!r}, expected {expected!r}"
    return None


async def _session(
    client: httpx2.AsyncClient,
    url: str,
    index: int,
    history: Items,
    plan: Plan,
    report: Concurrency,
    open_now: list[int],
) -> None:
    session = f"bench-session-{index}"
    tag = f"s{index}"
    headers = {
        "content-type": "application/json",
        "x-synopsis-session": session,
        CHECK_HEADER: "1",
        PACE_HEADER: str(plan.pace),
    }
    for n in range(plan.session_rounds):
        history.append(appended(tag, n))
        body = request_body(history, stream=True)
        try:
            async with client.stream("POST", url + PATH, content=body, headers=headers) as answer:
                open_now[0] += 1
                report.peak_open = max(report.peak_open, open_now[0])
                try:
                    data = b"".join([chunk async for chunk in answer.aiter_raw()])
                finally:
                    open_now[0] -= 1
        except httpx2.HTTPError as error:
            report.errors.append(f"{session}: {type(error).__name__}: {error}")
            return
        report.streams += 1
        if answer.status_code != 200:
            report.errors.append(f"{session}: status {answer.status_code}: {data[:200]!r}")
            return
        text = streamed_text(data)
        wrong = mixup(session, f"bench-mark-{tag}-{n}", body, answer.headers, text)
        if wrong is not None:
            report.mixups.append(wrong)
        history.append({"role": "assistant", "content": text})  # as the client keeps it


async def _concurrent(transcripts: dict[str, Items], proxy: str, plan: Plan) -> Concurrency:
    report = Concurrency(plan.sessions, plan.session_rounds)
    histories = []
    for i in range(plan.sessions):
        # each its own: its own system prompt, and one message more than the one before
        history = build_history(transcripts, plan.session_messages + i)
        history[0] = dict(history[0], content=f"{history[0]['content']}\nSession {i}.")
        histories.append(history)
    limits = httpx2.Limits(max_connections=plan.sessions, max_keepalive_connections=plan.sessions)
    open_now = [0]
    start = time.perf_counter()
    async with httpx2.AsyncClient(limits=limits, timeout=120.0) as client:
        await asyncio.gather(
            *(
                _session(client, proxy, i, histories[i], plan, report, open_now)
                for i in range(plan.sessions)
            )
        )
    report.seconds = time.perf_counter() - start
    return report


def concurrent(transcripts: dict[str, Items], proxy: str, plan: Plan) -> Concurrency:
    return asyncio.run(_concurrent(transcripts, proxy, plan))


# -- memory ---------------------------------------------------------------------------------


@dataclass
class Memory:
    messages: int
    sessions: int
    body_bytes: int
    per_session: float
    """Bytes the proxy keeps per idle session (tracemalloc)."""
    by_file: list[tuple[str, float]]
    """The largest holders: (source file, bytes per session)."""


def memory(transcripts: dict[str, Items], upstream_url: str, size: int, sessions: int) -> Memory:
    """tracemalloc growth of this process, serving the proxy, after ``sessions`` sessions of
    ``size`` messages are each sent once (after a warm-up session, untraced)."""
    history = build_history(transcripts, size)
    bodies = []
    for i in range(sessions + 1):
        own = [dict(history[0], content=f"{history[0]['content']}\nSession {i}."), *history[1:]]
        bodies.append(request_body([*own, appended(f"m{i}", 0)]))
    with Served(proxy_app(upstream_url)) as served, httpx2.Client(timeout=120.0) as client:

        def send(i: int) -> None:
            headers = {"content-type": "application/json", "x-synopsis-session": f"mem-{i}"}
            answer = client.post(served.url + PATH, content=bodies[i], headers=headers)
            _checked(answer, answer_text(answer.content))

        send(sessions)  # the compactor, the metrics' labels, the connections
        tracemalloc.start(1)
        try:
            gc.collect()
            before = tracemalloc.take_snapshot()
            for i in range(sessions):
                send(i)
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    # what this module, the client's helpers and tracemalloc allocate is not the proxy's
    ours = [
        tracemalloc.Filter(False, path)
        for path in (__file__, _upstream.__file__, tracemalloc.__file__)
    ]
    diff = after.filter_traces(ours).compare_to(before.filter_traces(ours), "filename")
    grown = sum(d.size_diff for d in diff)
    top = sorted(diff, key=lambda d: -d.size_diff)[:3]
    by_file = [(_short(d.traceback[0].filename), d.size_diff / sessions) for d in top]
    return Memory(size, sessions, len(bodies[0]), grown / sessions, by_file)


def _short(filename: str) -> str:
    """A source file's name from its package on (no path of this machine)."""
    parts = Path(filename).parts
    for anchor, skip in (("synopsis", 0), ("site-packages", 1)):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor) + skip
            return "/".join(parts[i:])
    return parts[-1] if parts else filename


# -- the run --------------------------------------------------------------------------------


@dataclass
class Results:
    plan: Plan
    latencies: list[Latency]
    yardstick: Yardstick
    first_byte: Latency
    concurrency: Concurrency
    memories: list[Memory]
    breakdowns: list[Breakdown]
    recording: _recording.Recording
    seconds: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)
    """The machine's one-minute load average when the run began and when it ended: the
    figures are only as quiet as the machine was."""
    stack: str = field(default_factory=stack)
    machine: str = field(default_factory=lambda: f"{platform.platform()} {os.cpu_count()}")

    def targets(self) -> list[tuple[str, str, bool]]:
        """(what, measured, met) for each target."""
        small, large = self.latencies[0], self.latencies[-1]
        stick = self.yardstick.orjson_ms
        ratio = large.added(0.5) * 1e3 / stick
        fb = self.first_byte.added(0.5) * 1e3
        c = self.concurrency
        return [
            (
                f"added latency p50 at {small.messages:,} messages < {ADDED_P50_TARGET_MS:g} ms",
                f"{small.added(0.5) * 1e3:.2f} ms",
                small.added(0.5) * 1e3 < ADDED_P50_TARGET_MS,
            ),
            *self._own_work(small),
            (
                f"added latency p50 at {large.messages:,} messages ≤ {YARDSTICK_TARGET:g}× "
                "orjson parse + serialize of the body",
                f"{large.added(0.5) * 1e3:.1f} ms = {ratio:.2f}× {stick:.1f} ms",
                ratio <= YARDSTICK_TARGET,
            ),
            (
                f"added time to first streamed byte p50 at {self.first_byte.messages:,} "
                f"messages < {FIRST_BYTE_TARGET_MS:g} ms",
                f"{fb:.2f} ms",
                fb < FIRST_BYTE_TARGET_MS,
            ),
            (
                f"{c.sessions} streaming sessions held at once, no error, no mix-up",
                f"{c.streams} streams, at most {c.peak_open} open at once, {len(c.errors)} "
                f"errors, {len(c.mixups)} mix-ups",
                c.peak_open == c.sessions
                and c.streams == c.sessions * c.rounds
                and not c.errors
                and not c.mixups,
            ),
        ]

    def _own_work(self, small: Latency) -> list[tuple[str, str, bool]]:
        """The proxy's own work in process at the smallest size, beside what it adds end to
        end there and what the bare relay adds (none when that size had no breakdown)."""
        own = next((b for b in self.breakdowns if b.messages == small.messages), None)
        if own is None:
            return []
        added, relay = small.added(0.5) * 1e3, small.added(0.5, path="relay") * 1e3
        return [
            (
                f"proxy's own work per request at {small.messages:,} messages (in process, "
                f"no network) p50 < {OWN_WORK_TARGET_MS:g} ms",
                f"{own.app_ms:.2f} ms (of the {added:.2f} ms added end to end; the bare "
                f"relay's hop adds {relay:.2f} ms)",
                own.app_ms < OWN_WORK_TARGET_MS,
            )
        ]


def recording_cost(transcripts: dict[str, Items], direct: str, plan: Plan) -> _recording.Recording:
    """The proxies of ``_recording.KINDS`` (records on and off, memory and SQLite) timed side
    by side, then the records each SQLite file holds once they have stopped."""
    from synopsis.stores import SQLiteStore  # noqa: PLC0415 - read after the run only

    size, rounds = plan.recording
    with tempfile.TemporaryDirectory(prefix="bench-records-") as folder:
        children = [server(kind, direct, folder) for kind in _recording.KINDS]
        with contextlib.ExitStack() as stack:
            for child in children:
                stack.push(child.__exit__)
            urls = {"direct": direct}
            urls |= {
                kind: child.__enter__()
                for kind, child in zip(_recording.KINDS, children, strict=True)
            }
            timed_paths = latency(
                transcripts, urls, size, rounds, plan.warmup, paths=_recording.PATHS
            )
        written = {}
        for kind in _recording.KINDS:
            path = Path(folder) / f"{kind}.db"
            if path.exists():
                with SQLiteStore(path) as store:
                    written[kind] = sum(r.requests for r in store.request_rollup("model"))
    return _recording.Recording(timed_paths, written)


def run(plan: Plan) -> Results:
    started = time.perf_counter()
    load = load_average()
    transcripts = load_transcripts()
    with server("upstream") as direct:
        children = [server("relay", direct), server("proxy", direct)]  # both start at once
        with contextlib.ExitStack() as stack:
            for child in children:
                stack.push(child.__exit__)
            relay, proxy = (child.__enter__() for child in children)
            urls = {"direct": direct, "relay": relay, "proxy": proxy}
            latencies = [
                latency(transcripts, urls, size, rounds, plan.warmup)
                for size, rounds in plan.latency
            ]
            size, rounds = plan.first_byte
            first = latency(transcripts, urls, size, rounds, plan.warmup, stream=True)
            crowd = concurrent(transcripts, proxy, plan)
        recording = recording_cost(transcripts, direct, plan)
        stick = yardstick(transcripts, plan.latency[-1][0], plan.yardstick_repeats)
        memories = [memory(transcripts, direct, m, n) for m, n in plan.memory]
    parts = [breakdown(transcripts, m, n, plan.warmup) for m, n in plan.breakdown]
    results = Results(plan, latencies, stick, first, crowd, memories, parts, recording)
    results.seconds = time.perf_counter() - started
    results.load = (load, load_average())
    return results


def _ms(seconds: float) -> str:
    return ms(seconds * 1e3)


def _latency_rows(results: Results) -> list[tuple[str, Latency]]:
    rows = [(f"{r.messages:,} messages", r) for r in results.latencies]
    fb = results.first_byte
    return [*rows, (f"{fb.messages:,} messages, first byte", fb)]


def _where(results: Results) -> list[list[str]]:
    """Per size timed both ways: [messages, added, relay, app, parse, compaction, rest,
    other] (milliseconds at p50, as text)."""
    rows = []
    by_size = {r.messages: r for r in results.latencies}
    for part in results.breakdowns:
        found = by_size.get(part.messages)
        if found is None:
            continue
        added, relay = found.added(0.5), found.added(0.5, path="relay")
        other = added - relay - part.app_ms / 1e3
        rows.append(
            [
                f"{part.messages:,} messages",
                _ms(added),
                _ms(relay),
                _ms(part.app_ms / 1e3),
                _ms(part.parse_ms / 1e3),
                _ms(part.compaction_ms / 1e3),
                _ms(part.rest_ms / 1e3),
                _ms(other),
            ]
        )
    return rows


def _first_requests(results: Results) -> list[str]:
    """What the proxy adds to a session's first request (it counts the whole history then),
    for the sizes where sessions were opened while timing."""
    out = []
    for r in results.latencies:
        p50 = r.first_added(0.5)
        if p50 is not None:
            out.append(
                f"A session's first request at {r.messages:,} messages (the proxy counts the "
                f"whole history once): {_ms(p50)} ms added at p50, over "
                f"{len(r.first['proxy'])} sessions."
            )
    return out


def table(results: Results) -> list[str]:
    """The figures as lines of text (what ``main`` prints)."""
    head = (
        f"{'request':>26} {'body MB':>8} {'n':>5} {'direct p50':>11} {'proxy p50':>10} "
        f"{'added p50':>10} {'(relay)':>8} {'direct p99':>11} {'proxy p99':>10} "
        f"{'added p99':>10} {'(relay)':>8}"
    )
    lines = [f"server stack: {results.stack}", head, "-" * len(head)]
    for name, r in _latency_rows(results):
        lines.append(
            f"{name:>26} {r.body_bytes / 1e6:>8.2f} {r.count:>5} "
            f"{_ms(r.at('direct', 0.5)):>11} {_ms(r.at('proxy', 0.5)):>10} "
            f"{_ms(r.added(0.5)):>10} {_ms(r.added(0.5, path='relay')):>8} "
            f"{_ms(r.at('direct', 0.99)):>11} {_ms(r.at('proxy', 0.99)):>10} "
            f"{_ms(r.added(0.99)):>10} {_ms(r.added(0.99, path='relay')):>8}"
        )
    lines.append(
        "(milliseconds; added: proxy minus direct at the same quantile; (relay): what a bare "
        "byte relay on the same stack adds)"
    )
    lines += _first_requests(results)
    y, large = results.yardstick, results.latencies[-1]
    added = large.added(0.5) * 1e3
    lines.append(
        f"yardstick at {y.messages:,} messages: orjson loads + dumps {y.orjson_ms:.1f} ms, "
        f"json {y.json_ms:.1f} ms; added p50 / orjson x{added / y.orjson_ms:.2f}, "
        f"/ json x{added / y.json_ms:.2f}"
    )
    c = results.concurrency
    lines.append(
        f"concurrent: {c.sessions} sessions x {c.rounds} streamed rounds: {c.streams} streams "
        f"in {c.seconds:.1f} s, at most {c.peak_open} open at once, {len(c.errors)} errors, "
        f"{len(c.mixups)} mix-ups"
    )
    lines += [f"  {text}" for text in (c.errors + c.mixups)[:5]]
    lines += _recording.lines(results.recording)
    head = (
        f"{'msgs/session':>13} {'sessions':>9} {'body MB':>8} {'kept MB/session':>16} "
        f"{'x body':>7} {f'x {REMEMBERED} sessions':>16}"
    )
    lines += [head, "-" * len(head)]
    for m in results.memories:
        lines.append(
            f"{m.messages:>13,} {m.sessions:>9} {m.body_bytes / 1e6:>8.2f} "
            f"{m.per_session / 1e6:>16.2f} {m.per_session / m.body_bytes:>7.2f} "
            f"{m.per_session * REMEMBERED / 1e9:>13.2f} GB"
        )
        holders = ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in m.by_file)
        lines.append(f"  largest holders per session: {holders}")
    head = (
        f"{'where the time goes':>20} {'added p50':>10} {'relay':>8} {'app':>8} {'parse':>8} "
        f"{'compact':>8} {'rest':>8} {'other':>8}"
    )
    lines += [head, "-" * len(head)]
    for row in _where(results):
        lines.append(f"{row[0]:>20} " + " ".join(f"{cell:>8}" for cell in row[1:]))
    lines.append(
        "(milliseconds at p50: relay, what the bare relay adds; app, the proxy's own work in "
        "process with no network: parse, the body's JSON; compact, the compaction that keeps "
        "the history; rest, the framework and the glue; other: added - relay - app)"
    )
    for what, measured, met in results.targets():
        lines.append(f"{'meets' if met else 'MISSES'}: {what} ({measured})")
    lines.append(
        f"total benchmark time: {results.seconds:.1f} s (load average {results.load[0]:.1f} "
        f"at the start, {results.load[1]:.1f} at the end, {os.cpu_count()} CPUs)"
    )
    return lines


def markdown(results: Results) -> str:
    """``benchmarks/results/proxy.md``."""
    when = now()
    plan = results.plan
    out = [
        "# The proxy's own cost",
        "",
        f"Measured {when} on `{results.machine}` (platform, CPUs) with Python "
        f"{platform.python_version()}, by `python -m benchmarks.bench_proxy` (part of "
        f"`make bench`) in {results.seconds:.0f} s, the machine's load average "
        f"{results.load[0]:.1f} at the start and {results.load[1]:.1f} at the end. Server "
        f"stack: {results.stack}.",
        "",
        "Every figure is against the same upstream called directly, in the same run: a bare "
        "ASGI app on uvicorn, in a process of its own, that answers a small chat completion "
        "(or its events, for `stream: true`) without parsing the body. The proxy is "
        "`create_app` on uvicorn at 127.0.0.1, in a process of its own, with a window no "
        "history here reaches, so nothing is compacted. The relay column is a bare relay on "
        "the same stack (uvicorn in, httpx2 out, bytes passed through): the floor any proxy "
        "built this way pays for the extra hop. The client is httpx2, with no SDK on top; "
        "each request resends its session with one message appended, and the three paths "
        "take turns with the same bytes. Histories: the bundled transcripts, OpenAI chat "
        "format.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ]
    for what, measured, met in results.targets():
        out.append(f"| {what} | {measured} | {'yes' if met else '**no**'} |")
    out += [
        "",
        "The first row is what a client sees: the proxy's whole added latency, the extra "
        "hop included. The second holds synopsis's own work per request to the same budget: "
        "the app driven in this process through ASGI, its upstream answering in memory, so "
        "no socket, no second server and no scheduling among processes (see where the time "
        "goes, below). What lies between the two is the hop, which the bare relay pays as "
        "well, and the machine.",
        "",
        "## Latency (milliseconds)",
        "",
        "Added: proxy minus direct at the same quantile; relay: what the bare relay adds. "
        f"n timed requests per path, after {plan.warmup} untimed.",
        "",
        "| request | body | n | direct p50 | proxy p50 | added p50 | relay p50 "
        "| direct p99 | proxy p99 | added p99 | relay p99 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in _latency_rows(results):
        out.append(
            f"| {name} | {r.body_bytes / 1e6:.2f} MB | {r.count} "
            f"| {_ms(r.at('direct', 0.5))} | {_ms(r.at('proxy', 0.5))} "
            f"| **{_ms(r.added(0.5))}** | {_ms(r.added(0.5, path='relay'))} "
            f"| {_ms(r.at('direct', 0.99))} | {_ms(r.at('proxy', 0.99))} "
            f"| **{_ms(r.added(0.99))}** | {_ms(r.added(0.99, path='relay'))} |"
        )
    y, large = results.yardstick, results.latencies[-1]
    added = large.added(0.5) * 1e3
    c = results.concurrency
    out += ["", *_first_requests(results)]
    out += [
        "",
        f"Yardstick at {y.messages:,} messages ({y.body_bytes / 1e6:.1f} MB): parsing the "
        f"body and serializing it again takes {y.orjson_ms:.1f} ms with orjson and "
        f"{y.json_ms:.1f} ms with json (medians of {plan.yardstick_repeats}); the proxy adds "
        f"{added:.1f} ms at p50, {added / y.orjson_ms:.2f}× the orjson figure "
        f"({added / y.json_ms:.2f}× json's).",
        "",
        "## Where the time goes",
        "",
        "Milliseconds at p50. Relay: what the bare relay adds (the hop itself). App: the "
        "proxy's own work per request, measured in process with no network (the app driven "
        "through ASGI, its upstream answering in memory); of it, parsing the body's JSON "
        "and the compaction that leaves the history as it is (a `Compactor` on the same "
        "settings, timed apart), and the rest: Starlette, building the upstream request, "
        "headers, metrics. Other: added - relay - app, the scheduling of three processes "
        "on a shared machine among it (the parts are medians taken apart, so it may come "
        "out below zero).",
        "",
        "| history | added | relay | app | parse | compaction | rest | other |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *("| " + " | ".join(row) + " |" for row in _where(results)),
        "",
        *_recording.section(results.recording, plan.warmup),
        "",
        "## Concurrent streaming sessions",
        "",
        f"{c.sessions} sessions, each with its own `x-synopsis-session` and history "
        f"({plan.session_messages} messages and up), {c.rounds} rounds each, all at once; "
        f"the upstream sends each stream's events {plan.pace * 1e3:.0f} ms apart so that they "
        "are open together. Each answer must name its own session, be uncompacted, and "
        "carry its own request's marker and the CRC-32 of the bytes its client sent, as the "
        "upstream received them.",
        "",
        f"{c.streams} streams in {c.seconds:.1f} s, at most {c.peak_open} open at once; "
        f"{len(c.errors)} errors, {len(c.mixups)} mix-ups.",
        "",
        "## Memory per idle session",
        "",
        "tracemalloc growth of the process serving the proxy (this part serves it in the "
        "benchmark's own process) after N sessions were each sent once, divided by N; the "
        "benchmark's own allocations are left out. The proxy keeps up to "
        f"{REMEMBERED} sessions (`remembered_sessions`, its default). An allocation is "
        "charged to the line that made it: `synopsis/proxy/app.py` is where the proxy "
        "parses the body, so its share is the decoded history kept for the session.",
        "",
        "| messages per session | sessions | request body | kept per session | × body "
        f"| × {REMEMBERED} sessions | largest holders, per session |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for m in results.memories:
        holders = ", ".join(f"`{name}` {size / 1e6:.2f} MB" for name, size in m.by_file)
        out.append(
            f"| {m.messages:,} | {m.sessions} | {m.body_bytes / 1e6:.2f} MB "
            f"| {m.per_session / 1e6:.2f} MB | {m.per_session / m.body_bytes:.2f} "
            f"| {m.per_session * REMEMBERED / 1e9:.2f} GB | {holders} |"
        )
    return "\n".join(out) + "\n"


def main(plan: Plan = FULL, results_path: Path | None = RESULTS) -> Results:
    results = run(plan)
    print("\n".join(table(results)))
    if results_path is not None:
        # What bench_proxy_load wrote at the end of the file stays, until it runs again.
        old = results_path.read_text(encoding="utf-8") if results_path.exists() else ""
        _, heading, rest = old.partition("\n## Under load")
        results_path.write_text(markdown(results) + heading + rest, encoding="utf-8")
        print(f"written: {results_path.name}")
    return results


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(*sys.argv[2:5])
    elif sys.argv[1:2] == ["--recording"]:
        # python -m benchmarks.bench_proxy --recording [messages [requests]]: printed only
        given = [int(a) for a in sys.argv[2:4]]
        size, rounds = (*given, *FULL.recording[len(given) :])
        with server("upstream") as direct:
            found = recording_cost(
                load_transcripts(), direct, replace(FULL, recording=(size, rounds))
            )
        print("\n".join(_recording.lines(found)))
    elif sys.argv[1:2] == ["--profile"]:
        # python -m benchmarks.bench_proxy --profile [messages [requests]]: printed only
        given = [int(a) for a in sys.argv[2:4]]
        size, rounds = (*given, *PROFILED[len(given) :])
        print("\n".join(profile_lines(profile(load_transcripts(), size, rounds, FULL.warmup))))
    else:
        main()
