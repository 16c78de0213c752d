"""What one compaction works with, in three parts that change in three ways:

- :class:`Request`, the call as the caller made it;
- :class:`Opened`, what opening the request decided (the format, the messages, the caller's
  items behind them, the session as read, the projection): frozen once the opening is done;
- :class:`Ledger`, what the passes add (originals to offload, summary records, the usage,
  fixes of the rebuild, the newest summary, whether the tail gave way), only through its
  named methods;

and :class:`Run`, the three together with the room the compaction shares out, which the
passes are handed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from synopsis.events import Event, emit
from synopsis.planning import measure_history
from synopsis.summarizers import Usage

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from synopsis.compaction.offload import Originals
    from synopsis.compaction.setup import Setup
    from synopsis.events import Listener
    from synopsis.formats import FormatName
    from synopsis.messages import Message
    from synopsis.planning import Measure
    from synopsis.planning.room import Room
    from synopsis.stores import SessionState, StoredMessage
    from synopsis.summarizers import SummaryRecord
    from synopsis.validation import Fix

__all__ = ["Ended", "LastSummary", "Ledger", "Opened", "Request", "Run"]


@dataclass(frozen=True, slots=True)
class Request:
    data: object
    format: FormatName | None = None
    system: object = None
    session_id: str | None = None
    force: bool = False
    instructions: str | None = None
    tools: Sequence[Mapping[str, Any]] | None = None
    listeners: Sequence[Listener] = ()
    collected: list[Event] = field(default_factory=list)
    """Every event of the call, in order: the pipeline's own and those a summarizer reports
    (the driver listens for them into this list)."""


@dataclass(frozen=True, slots=True)
class Opened:
    """What opening a request decided; nothing changes it afterwards."""

    setup: Setup
    request: Request
    format: FormatName
    messages: tuple[Message, ...]
    """The messages to work on: decoded, repaired, a merged summary taken out, the session's
    summary in place of the part it stands for."""
    given: tuple[Message, ...]
    """What the caller sends, as its size is measured: ``messages`` but for a summary taken
    out of a merged turn."""
    decoded: tuple[Message, ...]
    """The caller's messages as decoded, in the positions a projection counts in."""
    originals: Originals
    session_id: str | None
    session: SessionState
    """The session as read (its chain given up when the caller's history no longer matches
    it)."""
    fixes: tuple[Fix, ...] = ()
    """The repairs the caller's history needed."""
    clean: bool = False
    """Whether the history broke no rule, so that ``given`` is what was decoded, unrepaired."""
    boundary: int | None = None
    """With a ``clean`` history: its last :func:`~synopsis.compaction.prefix.boundary`."""
    projected: bool = False
    """Whether the session's summary took the place of the part of the caller's history it
    stands for (see :mod:`synopsis.compaction.projection`)."""
    kept_before: frozenset[int] = frozenset()
    """The smaller copies a projection put back (by ``id``): their originals were offloaded
    by the compaction that made them, and are not offloaded again while kept."""

    @property
    def events(self) -> list[Event]:
        return self.request.collected

    def emit(self, event: Event) -> None:
        self.events.append(event)
        emit(event, self.request.listeners)

    def measure(self, messages: Sequence[Message]) -> Measure:
        return measure_history(
            messages, counter=self.setup.counter, window=self.setup.window, tools=self.request.tools
        )


@dataclass(frozen=True, slots=True)
class LastSummary:
    """The newest summary message a compaction wrote, what it summarized and its budget.
    ``sources`` and ``base`` are the same for every pass this compaction made in a row (each
    updating the last one's record), and ``made`` how many records those passes wrote: a
    rule summary written again covers them all at once, from what the session had before."""

    message: Message
    source: tuple[Message, ...]
    previous: SummaryRecord | None
    budget: int
    sources: tuple[Message, ...] = ()
    base: SummaryRecord | None = None
    made: int = 1


@dataclass(slots=True)
class Ledger:
    """What the passes of one compaction add, each through a method named for it."""

    offset: int
    """Where the session's offloaded history ended when the compaction started."""
    stored: list[StoredMessage] = field(default_factory=list)
    records: list[SummaryRecord] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    last: LastSummary | None = None
    """The newest summary this compaction wrote, and what it was made from."""
    gave_way: bool = False
    """Whether the passes summarized into the tail the keep policy asked for (only in an
    emergency, or with the automatic tail)."""
    notes: list[Event] = field(default_factory=list)
    """Events told once the compaction completed (after its own event)."""

    @property
    def head(self) -> SummaryRecord | None:
        """The newest record this compaction wrote."""
        return self.records[-1] if self.records else None

    @property
    def position(self) -> int:
        """The store position the next offloaded original takes."""
        return self.offset + len(self.stored)

    def offload(self, stored: Sequence[StoredMessage]) -> None:
        """Originals to save with the compaction."""
        self.stored += stored

    def record(
        self,
        record: SummaryRecord,
        message: Message,
        source: tuple[Message, ...],
        previous: SummaryRecord | None,
        budget: int,
    ) -> None:
        """A pass's record and the message standing for it; a pass that updates this
        compaction's own last record continues its run of passes (see :class:`LastSummary`)."""
        self.usage.append(record.usage)
        self.records.append(record)
        last = self.last
        if last is not None and len(self.records) >= 2 and previous is self.records[-2]:
            self.last = LastSummary(
                message,
                source,
                previous,
                budget,
                (*last.sources, *source),
                last.base,
                last.made + 1,
            )
        else:
            self.last = LastSummary(message, source, previous, budget, source, previous)

    def rewrite(self, record: SummaryRecord, message: Message, budget: int) -> None:
        """``record`` in place of the records the last run of passes wrote (a rule summary
        written again over all they summarized): the originals they offloaded belong to it."""
        last = self.last
        assert last is not None
        gone = {r.id for r in self.records[-last.made :]}
        self.stored = [
            replace(s, compaction_id=record.id) if s.compaction_id in gone else s
            for s in self.stored
        ]
        self.records[-last.made :] = [record]
        self.last = replace(
            last, message=message, budget=budget, source=last.sources, previous=last.base, made=1
        )

    def fix(self, fixes: Sequence[Fix]) -> None:
        """Repairs the rebuild made."""
        self.fixes += fixes

    def note(self, event: Event) -> None:
        """An event to tell once the compaction completed."""
        self.notes.append(event)

    def give_way(self) -> None:
        """The passes summarized into the tail the keep policy asked for."""
        self.gave_way = True

    def discard(self) -> None:
        """Nothing of this compaction is saved: nothing may be reported as offloaded or
        summarized either."""
        self.stored.clear()
        self.records.clear()

    def total_usage(self) -> Usage:
        return Usage.total(self.usage)


@dataclass(frozen=True, slots=True)
class Run:
    """A compaction under way: what was opened, what the passes add, and how it shares out
    the window (``overhead``: the tokens outside the messages, a system prompt sent apart,
    tool definitions, framing; ``room``: see :mod:`synopsis.planning.room`)."""

    opened: Opened
    ledger: Ledger
    overhead: int
    room: Room
    landing: float = 0.5
    """The target ratio this compaction aims at (the session's, once the refill breaker
    lowered it)."""
    rules_only: bool = False
    """The summarizer's breaker is open: the rules summarize (see
    :attr:`synopsis.planning.Decision.rules_only`)."""
    paced: bool = False
    """Whether the history grew from the last compaction's output (it holds that summary),
    so that what came since tells how fast the session fills the room."""

    @property
    def setup(self) -> Setup:
        return self.opened.setup


@dataclass(frozen=True, slots=True)
class Ended:
    """How a call that did not raise left things: the session as saved, and the history a
    compaction returns (``None`` for a skip)."""

    opened: Opened
    session: SessionState
    final: tuple[Message, ...] | None = None
    raised: bool = False
    """The call ended in an unreachable budget: nothing to remember but what it decoded."""
