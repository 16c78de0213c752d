"""What each proxied request did, written to the store off the request's path.

A request's figures are queued in memory when its log line is written (:func:`noted`); a
background task writes what is queued in batches. The queue is bounded: when it is full the
oldest record is dropped and counted (``synopsis_proxy_records_dropped``), so a slow or
failing store costs records, never a request's time or its answer. What is queued when the
proxy stops is written before the store closes. The same task keeps the records within their
retention (an age and a count), now and then, so a proxy that runs for months keeps a
bounded table even if no one runs ``synopsis store prune``.

What a record holds beyond the log line is gathered on the request's :class:`Tally`, which a
context variable makes the current request's (:func:`counting`): the summarizer's calls
(:func:`tallied`), the error kinds counted (:func:`failed`, from the errors counter), and what
happened inside its compaction (:func:`heard`, a listener of every compactor's). The
compaction's worker threads, and a relayed stream's task, run in copies of the request's
context, which hold the same tally.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from synopsis.events import (
    ChainInvalidated,
    CompactionCompleted,
    CompactionFailed,
    HistoryRepaired,
    RefillBreakerOpened,
    SummarizerFellBack,
    SummaryFilledIn,
)
from synopsis.proxy import prefixes
from synopsis.proxy.bodies import ROUTES
from synopsis.proxy.logs import LOGGER
from synopsis.stores.requests import (
    EVENT_CHARS,
    EVENTS_MAX,
    FELL_BACK,
    RECORDS_MAX,
    RECORDS_RETENTION_DAYS,
    RequestRecord,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from synopsis.events import Event
    from synopsis.proxy.exchange import Exchange
    from synopsis.proxy.logs import Line
    from synopsis.proxy.metrics import Metrics
    from synopsis.stores._base import StoreBase

__all__ = ["Recorder", "Tally", "counting", "failed", "heard", "noted", "tallied"]

QUEUE_SIZE = 10_000
"""Records waiting to be written at most; beyond, the oldest is dropped."""
BATCH = 500
"""Records written in one transaction at most."""
PAUSE = 0.5
"""Seconds the writer waits after the first record of a batch for others to join it: one
transaction for many requests, not one each."""
TRIM_EVERY = 3600.0
"""Seconds between two trims of the stored records to their retention."""

_FORMATS = {route.path: route.format for route in ROUTES}


@dataclass(slots=True)
class Tally:
    """What one request's record holds beyond its log line: the summarizer's calls and
    seconds, the last error kind counted, the compaction's event lines, and the exchange
    (for the prefix it shared with the session's previous request)."""

    calls: int = 0
    seconds: float = 0.0
    error: str | None = None
    events: list[str] = field(default_factory=list)
    exchange: Exchange | None = None


_TALLY: ContextVar[Tally | None] = ContextVar("synopsis_proxy_tally", default=None)


def tallied(observe: Callable[[str, float, bool], None]) -> Callable[[str, float, bool], None]:
    """``observe``, counting each summarizer call on the request it was made for too (the
    compaction's worker threads run in a copy of the request's context)."""

    def both(name: str, seconds: float, ok: bool) -> None:
        observe(name, seconds, ok)
        tally = _TALLY.get()
        if tally is not None:
            tally.calls += 1
            tally.seconds += seconds

    return both


def counting(exchange: Exchange) -> None:
    """Gather what the exchange's record holds, from here on, in this request's context, on
    its line."""
    exchange.line.tally = tally = Tally(exchange=exchange)
    _TALLY.set(tally)


def failed(kind: str) -> None:
    """An error of ``kind`` was counted: the current request (if any) ended with it, unless
    a later one is counted."""
    tally = _TALLY.get()
    if tally is not None:
        tally.error = kind


def heard(event: Event) -> None:
    """A compactor's listener: what the event says about the current request's compaction,
    as a line of its record."""
    tally = _TALLY.get()
    if tally is None:
        return
    for line in _lines(event):
        if len(tally.events) < EVENTS_MAX:
            tally.events.append(line[:EVENT_CHARS])


def _lines(event: Event) -> list[str]:
    """The record's lines for ``event`` (none for the start or skip of a compaction)."""
    if isinstance(event, SummarizerFellBack):
        return [f"{FELL_BACK}: {event.reason} → {event.fallback}"]
    if isinstance(event, HistoryRepaired):
        return [f"history_repaired: {'; '.join(event.fixes)}"]
    if isinstance(event, ChainInvalidated):
        return [f"chain_invalidated: {event.reason}"]
    if isinstance(event, RefillBreakerOpened):
        return ["refill_breaker_opened"]
    if isinstance(event, SummaryFilledIn):
        return [f"summary_filled_in: {len(event.added)} items"]
    if isinstance(event, CompactionFailed):
        return [f"compaction_failed: {event.stage}: {event.error}"]
    if isinstance(event, CompactionCompleted):
        lines = [f"emergency: {event.emergency}"] if event.emergency else []
        if event.cleared:
            lines.append(f"cleared: {event.cleared} outputs, {event.tokens_cleared} tokens")
        return lines
    return []


PENDING = 64
"""Queued records whose shared prefix is still to be compared, at most: beyond, the oldest
is compared as the next record is queued (the writer is behind, and each holds its
request's histories until then)."""


@dataclass(slots=True)
class _Pending:
    """A record whose prefix shared with its session's previous request is compared once the
    answer has gone: the comparison walks the whole history (milliseconds for ten thousand
    messages), which the request's own time need not include."""

    record: RequestRecord
    sent: prefixes.Seen
    client: prefixes.Seen
    count: prefixes.Count


class Recorder:
    """The queue and the task that writes it to ``store`` (see the module docstring)."""

    def __init__(
        self,
        store: StoreBase,
        metrics: Metrics,
        *,
        retention_days: float = RECORDS_RETENTION_DAYS,
        keep: int = RECORDS_MAX,
        queue_size: int = QUEUE_SIZE,
        pause: float = PAUSE,
        trim_every: float = TRIM_EVERY,
        remembered_sessions: int = 256,
    ) -> None:
        self.store = store
        self.prefixes = prefixes.Prefixes(remembered_sessions)
        self.metrics = metrics
        self.retention = timedelta(days=retention_days)
        self.keep = keep
        self.queue: deque[RequestRecord | _Pending] = deque()
        self._pending = 0
        self.queue_size = queue_size
        self.pause = pause
        self.trim_every = trim_every
        self._trimmed = -float("inf")
        self._written = 0
        self._wake: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def add(self, record: RequestRecord | _Pending) -> None:
        """Queue a record; never waits, never fails."""
        if len(self.queue) >= self.queue_size:
            self._pending -= isinstance(self.queue.popleft(), _Pending)
            self.metrics.records_dropped.inc()
        self.queue.append(record)
        if isinstance(record, _Pending):
            self._pending += 1
            if self._pending > PENDING:
                self._settle(self._pending - PENDING)
        if self._wake is not None:
            self._wake.set()

    def _settle(self, count: int) -> None:
        """Compare the oldest ``count`` pending records' prefixes, in the order their
        requests came (each session's comparison is with the request before)."""
        index = 0
        while count:
            item = self.queue[index]
            if isinstance(item, _Pending):
                self.queue[index] = self._complete(item)
                count -= 1
            index += 1

    def _complete(self, item: RequestRecord | _Pending) -> RequestRecord:
        if not isinstance(item, _Pending):
            return item
        self._pending -= 1
        record = item.record
        shared = self.prefixes.share(record.session_id, item.sent, item.client, item.count)
        return replace(
            record,
            shared_messages=shared.messages,
            shared_tokens=shared.tokens,
            client_shared_tokens=shared.client_tokens,
        )

    def start(self) -> None:
        self._wake, self._stop = asyncio.Event(), asyncio.Event()
        self._task = asyncio.create_task(self._run(self._wake, self._stop))

    async def stop(self) -> None:
        """Write what is queued and end the task."""
        if self._task is None or self._wake is None or self._stop is None:
            return
        self._stop.set()
        self._wake.set()
        await self._task
        self._task = None

    async def _run(self, wake: asyncio.Event, stop: asyncio.Event) -> None:
        while True:
            await wake.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.pause)
            wake.clear()
            await self.flush()
            if stop.is_set():
                return

    async def flush(self) -> None:
        """Write every queued record, in batches; a batch the store refuses is dropped and
        counted (the store's error is logged)."""
        while self.queue:
            batch = [
                self._complete(self.queue.popleft()) for _ in range(min(BATCH, len(self.queue)))
            ]
            try:
                await self.store.asave_requests(batch)
            except Exception as error:
                self.metrics.errors.labels("record_failed").inc()
                self.metrics.records_dropped.inc(len(batch))
                LOGGER.warning("%d request record(s) not written: %s", len(batch), error)
            else:
                self._written += len(batch)
        await self._trim()

    async def _trim(self) -> None:
        """Keep the stored records within their retention, once in ``trim_every`` seconds, or
        sooner when a tenth of ``keep`` was written since."""
        now = time.monotonic()
        if now - self._trimmed < self.trim_every and self._written < self.keep // 10:
            return
        self._trimmed, self._written = now, 0
        try:
            await asyncio.to_thread(self.store.prune_requests, self.retention, keep=self.keep)
        except Exception as error:
            self.metrics.errors.labels("record_failed").inc()
            LOGGER.warning("request records not trimmed: %s", error)


def noted(recorder: Recorder | None, line: Line) -> None:
    """Queue the record of a request whose log line is being written: one on a compacting
    route that carried a history (a session). One sent upstream is compared with the
    session's previous one (:mod:`.prefixes`)."""
    if recorder is None or not line.session or line.model is None:
        return
    tally = line.tally or Tally()
    record = RequestRecord(
        at=datetime.now(UTC),
        session_id=line.session,
        model=line.model,
        route=line.path,
        format=_FORMATS.get(line.path, ""),
        status=line.status,
        messages_in=line.messages_in,
        tokens_before=line.tokens_before,
        tokens_after=line.tokens_after,
        compacted=line.compacted,
        code=line.code,
        summarizer_calls=tally.calls,
        summarizer_seconds=tally.seconds,
        ms_total=line.ms_total,
        error=tally.error,
        events=tuple(tally.events),
    )
    exchange = tally.exchange
    if exchange is not None and line.ms_upstream > 0:
        sent, client = prefixes.seen(exchange)
        recorder.add(_Pending(record, sent, client, prefixes.counting(exchange)))
    else:
        recorder.add(record)
