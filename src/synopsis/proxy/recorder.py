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
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from synopsis.proxy import prefixes
from synopsis.proxy.bodies import ROUTES
from synopsis.proxy.logs import LOGGER
from synopsis.proxy.tally import Tally
from synopsis.stores.requests import RECORDS_MAX, RECORDS_RETENTION_DAYS, RequestRecord

if TYPE_CHECKING:
    from synopsis.proxy.logs import Line
    from synopsis.proxy.metrics import Metrics
    from synopsis.stores._base import StoreBase

__all__ = ["Recorder", "noted"]

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
    if tally.compared is not None and line.ms_upstream > 0:
        recorder.add(_Pending(record, *tally.compared()))
    else:
        recorder.add(record)
