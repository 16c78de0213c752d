"""One request on a compacting route: the history it carries, its session, and its
compaction (which fails open, or closed, as the proxy is told).

An :class:`Exchange` is made in one place, :func:`opened`, from the body as read; afterwards
only its ``result`` and its log ``line`` change, and the headers the client gets are read from
those."""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from synopsis.errors import BudgetUnreachableError, ConversationError
from synopsis.formats import decode
from synopsis.proxy.encoding import dumps, exact, inexact
from synopsis.proxy.errors import json_error
from synopsis.proxy.prefixes import Seen
from synopsis.proxy.relay import ClientGone
from synopsis.proxy.sessions import session_key

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from synopsis.compaction import CompactionResult
    from synopsis.compaction.compactor import Threaded
    from synopsis.proxy.bodies import Route
    from synopsis.proxy.logs import Line
    from synopsis.proxy.prefixes import Count
    from synopsis.proxy.relay import Departure
    from synopsis.proxy.state import ProxyState

__all__ = ["THREADED_ABOVE", "Exchange", "opened", "stable", "unchanged"]

THREADED_ABOVE = 4 * 1024 * 1024
"""Bodies larger than this (in bytes) take even the fast path in a worker thread. Below it
the fast path holds the loop for a few milliseconds at most, less than the body's parse
does, and a thread would add about as much to the request's own time on a busy machine
(``benchmarks/results/proxy.md``, "Where the fast path runs"); above it a single appended
message of megabytes, counted in the fast path, would hold the loop for seconds."""


def unchanged(result: CompactionResult, items: list[Any], system: object) -> bool:
    """Whether the compaction gave back the client's very history (nothing to re-encode)."""
    return (
        len(result.messages) == len(items)
        and all(map(operator.is_, result.messages, items))
        and result.system is system
    )


@dataclass(eq=False)
class Exchange:
    """One request on a compacting route, from its body to the upstream's response."""

    state: ProxyState
    route: Route
    request: Request
    line: Line
    started: float
    raw: bytes
    body: dict[str, Any]
    model: str
    items: list[Any] | None
    """The history, or None when the body holds none the proxy shortens."""
    session: str = ""
    system: object = None
    tools: object = None
    result: CompactionResult | None = None

    async def compact(self, departure: Departure, *, force: bool = False) -> None:
        """Compact the body's history (``self.result``); a failure other than an unreadable
        history, or one no compaction can fit, leaves ``self.result`` None (fail open) or
        raises (fail closed)."""
        state, route = self.state, self.route
        items = self.items
        if items is None:
            return
        start = time.perf_counter()
        try:
            compactor = state.compactors.for_model(self.model, self.upstream)
            self.result = await departure.race(
                compactor.acompact(
                    items,
                    system=self.system,  # type: ignore[arg-type]
                    tools=self.tools,  # type: ignore[arg-type]
                    session_id=self.session,
                    format=route.format,
                    force=force,
                    threaded=self.threaded,
                )
            )
        except (ClientGone, ConversationError, BudgetUnreachableError):
            raise
        except Exception as error:
            kind = type(error).__name__
            state.metrics.errors.labels("compaction_failed").inc()
            self.line.failed_open = kind
            self.line.error = str(error)[:300]
            if not state.fail_open:
                raise
            self.result = None
        finally:
            took = time.perf_counter() - start
            self.line.ms_compaction += took * 1000
            state.metrics.compaction_seconds.labels(route.path).observe(took)

    @property
    def upstream(self) -> str:
        """The upstream this request goes to (a window learnt is learnt for it)."""
        return self.state.upstreams[self.route.api]

    @property
    def threaded(self) -> Threaded:
        """Where the compaction's own work runs: never on the event loop when it compacts, and
        off it for the fast path too when the body is over :data:`THREADED_ABOVE`."""
        return "all" if len(self.raw) > THREADED_ABOVE else "compaction"

    def payload(self) -> bytes:
        """The body to forward: the client's bytes when the history is unchanged; else the
        compacted body, every other field as the client sent it (integers beyond 64 bits
        too). One too deeply nested for Python to write goes on as the client sent it, as a
        compaction that failed open."""
        result, items = self.result, self.items
        if result is None or items is None or unchanged(result, items, self.system):
            return self.raw
        try:
            body = self.route.rebuilt(self.body, result)
            return dumps(self._exact(body, items) if inexact(self.raw) else body)
        except RecursionError as error:
            self.state.metrics.errors.labels("compaction_failed").inc()
            self.line.failed_open = type(error).__name__
            self.line.error = "the compacted body is nested too deeply to write: sent unchanged"
            self.result = None
            return self.raw

    def _exact(self, body: dict[str, Any], items: list[Any]) -> dict[str, Any]:
        """``body`` with what it took from the client read again with every integer exact:
        the other fields, the history's items kept as they came, and Anthropic's system
        prompt when the compaction kept it (each known by identity)."""
        client = exact(self.raw)
        key = self.route.items_key
        twins = {id(item): twin for item, twin in zip(items, client[key], strict=True)}
        out = {name: client.get(name, value) for name, value in body.items()}
        out[key] = [twins.get(id(m), m) for m in body[key]]
        if self.route.format == "anthropic" and "system" in body:
            twins[id(self.system)] = client["system"]
            out["system"] = twins.get(id(body["system"]), body["system"])
        return out

    def note(self) -> None:
        """The result, on the log line."""
        result, line = self.result, self.line
        if result is None:
            return
        line.messages_out = len(result.messages)
        line.tokens_before, line.tokens_after = result.tokens_before, result.tokens_after
        line.compacted = line.compacted or result.compacted
        line.code = result.code

    def headers(self) -> dict[str, str]:
        """The proxy's own response headers (``x-synopsis-*``), read from the session, the
        result and the log line."""
        line, result = self.line, self.result
        out: dict[str, str] = {}
        if self.items is not None:
            out["x-synopsis-session"] = self.session
        if line.failed_open is not None:
            out["x-synopsis-failed-open"] = line.failed_open
        if result is not None:
            out["x-synopsis-compacted"] = str(line.compacted).lower()
            out["x-synopsis-tokens"] = f"{result.tokens_before}/{result.tokens_after}"
        if line.window is not None:
            out["x-synopsis-window"] = str(line.window)
        if line.retried:
            out["x-synopsis-retried"] = "overflow"
        return out


def opened(
    state: ProxyState, route: Route, request: Request, raw: bytes, *, line: Line, started: float
) -> Exchange | Response:
    """The exchange a request's body opens, or the 400 a body the proxy cannot read gets."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        state.metrics.errors.labels("bad_request").inc()
        return json_error(route.api, 400, f"the request body is not JSON: {error}")
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        state.metrics.errors.labels("bad_request").inc()
        return json_error(route.api, 400, "the request body must be a JSON object naming a model")
    model: str = body["model"]
    line.model = model
    line.stream = body.get("stream") is True
    items = route.history(body)
    session, system, tools = "", None, None
    if items is not None:
        system, tools = route.system(body), body.get("tools")
        try:
            session = session_key(request.headers, items, system, tools)
            system, tools = stable(state, session, system, tools)
        except RecursionError:
            state.metrics.errors.labels("bad_request").inc()
            why = "the request body is nested too deeply for synopsis to read"
            return json_error(route.api, 400, why)
        line.session = session
        line.messages_in = len(items)
    return Exchange(
        state, route, request, line, started, raw, body, model, items, session, system, tools
    )


def stable(state: ProxyState, session: str, system: object, tools: object) -> tuple[object, object]:
    """``system`` and ``tools``, or the equal objects the session's last request had."""
    last = state.stable.pop(session, None)
    if last is not None:
        system = last[0] if last[0] == system else system
        tools = last[1] if last[1] == tools else tools
    state.stable[session] = (system, tools)
    # A proxy that runs for months sees sessions without end, each with prompts and tools
    # of tens of kilobytes: only those the fast path can still use are kept.
    while len(state.stable) > state.remembered_sessions:
        del state.stable[next(iter(state.stable))]
    return system, tools


def compared(exchange: Exchange) -> tuple[Seen, Seen, Count]:
    """What ``exchange`` sent upstream and what its client gave (its history read), and how
    to count their items, for the prefix its request shared with the session's previous one
    (:mod:`.prefixes`)."""
    result, items = exchange.result, exchange.items
    assert items is not None  # only an exchange with a history is compared
    client = Seen(
        exchange.system, exchange.tools, items, None if result is None else result.tokens_before
    )
    count = counting(exchange)
    if result is None:  # sent as the client gave it (a compaction that failed open)
        return client, client, count
    if unchanged(result, items, exchange.system):  # the usual request: the very items sent
        return Seen(exchange.system, exchange.tools, items, result.tokens_after), client, count
    sent = Seen(result.system, exchange.tools, result.messages, result.tokens_after)
    return sent, client, count


def counting(exchange: Exchange) -> Count:
    """Counts items as the compaction of ``exchange`` counts a history: decoded in the
    route's format, with the system prompt and the tools, by the model's counter."""

    def count(items: list[Any], system: object, tools: object) -> int | None:
        compactor = exchange.state.compactors.for_model(exchange.model, exchange.upstream)
        listed = tools if isinstance(tools, list) else None
        try:
            messages = decode(items, exchange.route.format, system=system).messages
            return int(compactor.setup.counter.count_messages(messages, tools=listed))
        except Exception:  # a history the compaction read cannot fail here; if it does, unknown
            return None

    return count
