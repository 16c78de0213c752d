"""What one request did inside, noted as it happens for its record: the summarizer's calls,
the error it ended with, the compaction's events (:class:`Tally`, reached through a context
variable that worker threads inherit). Written by the recorder (:mod:`.recorder`)."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
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
from synopsis.stores.requests import EVENT_CHARS, EVENTS_MAX, FELL_BACK

if TYPE_CHECKING:
    from collections.abc import Callable

    from synopsis.events import Event
    from synopsis.proxy.logs import Line
    from synopsis.proxy.prefixes import Count, Seen

__all__ = ["Tally", "counting", "failed", "heard", "tallied"]


@dataclass(slots=True)
class Tally:
    """What one request's record holds beyond its log line: the summarizer's calls and
    seconds, the last error kind counted, the compaction's event lines, and what to compare
    with the session's previous request (:func:`synopsis.proxy.exchange.compared`), once
    the answer has gone."""

    calls: int = 0
    seconds: float = 0.0
    error: str | None = None
    events: list[str] = field(default_factory=list)
    compared: Callable[[], tuple[Seen, Seen, Count]] | None = None


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


def counting(line: Line, compared: Callable[[], tuple[Seen, Seen, Count]] | None) -> None:
    """Gather what a request's record holds, from here on, in this request's context, on
    its ``line``."""
    line.tally = tally = Tally(compared=compared)
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
