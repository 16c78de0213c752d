"""One request on a compacting route: the history it carries, its session, and its
compaction (which fails open, or closed, as the proxy is told)."""

from __future__ import annotations

import operator
import time
from typing import TYPE_CHECKING, Any

import orjson

from synopsis.errors import BudgetUnreachableError, ConversationError
from synopsis.proxy.logs import Line
from synopsis.proxy.relay import ClientGone

if TYPE_CHECKING:
    from starlette.requests import Request

    from synopsis.compaction import CompactionResult
    from synopsis.proxy.app import ProxyState
    from synopsis.proxy.bodies import Route
    from synopsis.proxy.relay import Departure

__all__ = ["Exchange", "stable", "unchanged"]


def unchanged(result: CompactionResult, items: list[Any], system: object) -> bool:
    """Whether the compaction gave back the client's very history (nothing to re-encode)."""
    return (
        len(result.messages) == len(items)
        and all(map(operator.is_, result.messages, items))
        and result.system is system
    )


class Exchange:
    """One request on a compacting route, from its body to the upstream's response."""

    def __init__(self, state: ProxyState, route: Route, request: Request) -> None:
        self.state = state
        self.route = route
        self.request = request
        self.line = Line(request.method, request.url.path)
        self.started = time.perf_counter()
        self.result: CompactionResult | None = None
        self.items: list[Any] | None = None
        self.model = ""
        self.session = ""
        self.system: object = None
        self.tools: object = None
        self.headers: dict[str, str] = {}

    async def compact(
        self, departure: Departure, body: dict[str, Any], *, force: bool = False
    ) -> None:
        """Compact the body's history (``self.result``); a failure other than an unreadable
        history, or one no compaction can fit, leaves ``self.result`` None (fail open) or
        raises (fail closed)."""
        state, route = self.state, self.route
        items = self.items
        if items is None:
            return
        start = time.perf_counter()
        try:
            compactor = state.compactors.for_model(self.model)
            self.result = await departure.race(
                compactor.acompact(
                    items,
                    system=self.system,  # type: ignore[arg-type]
                    tools=self.tools,  # type: ignore[arg-type]
                    session_id=self.session,
                    format=route.format,
                    force=force,
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
            self.headers["x-synopsis-failed-open"] = kind
        finally:
            took = time.perf_counter() - start
            self.line.ms_compaction += took * 1000
            state.metrics.compaction_seconds.labels(route.path).observe(took)

    def payload(self, raw: bytes, body: dict[str, Any]) -> bytes:
        """The body to forward: the client's bytes when the history is unchanged."""
        result, items = self.result, self.items
        if result is None or items is None or unchanged(result, items, self.system):
            return raw
        return orjson.dumps(self.route.rebuilt(body, result))

    def note(self) -> None:
        result, line = self.result, self.line
        if result is None:
            return
        line.messages_out = len(result.messages)
        line.tokens_before, line.tokens_after = result.tokens_before, result.tokens_after
        line.compacted = line.compacted or result.compacted
        line.code = result.code
        self.headers["x-synopsis-compacted"] = str(line.compacted).lower()
        self.headers["x-synopsis-tokens"] = f"{result.tokens_before}/{result.tokens_after}"


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
