"""What one compaction works with: the request, and :class:`Run`, what the plan has learnt
so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from synopsis.events import Event, emit
from synopsis.planning import measure_history

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
    from synopsis.summarizers import SummaryRecord, Usage

__all__ = ["LastSummary", "Request", "Run"]


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
class Run:
    """What one compaction has learnt so far."""

    setup: Setup
    request: Request
    format: FormatName
    messages: tuple[Message, ...]
    originals: Originals
    fixes: list[Any]
    session_id: str | None
    state: SessionState
    given: tuple[Message, ...] = ()
    """The messages as decoded, before any summary was taken out of a merged turn: what the
    caller sends, so what its size is measured on."""
    clean: bool = False
    """Whether the history broke no rule, so that ``given`` is what was decoded, unrepaired."""
    boundary: int | None = None
    """With a ``clean`` history: its last :func:`~synopsis.compaction.prefix.boundary`."""
    stored: list[StoredMessage] = field(default_factory=list)
    records: list[SummaryRecord] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    overhead: int = 0
    """Tokens outside the messages: a system prompt sent apart, tool definitions, framing."""
    room: Room | None = None
    """How this compaction shares out the window, once it has started."""
    last: LastSummary | None = None
    """The newest summary this compaction wrote, and what it was made from."""
    decoded: tuple[Message, ...] = ()
    """The caller's messages as decoded, in the positions a projection counts in."""
    kept_before: set[int] = field(default_factory=set)
    """The smaller copies a projection put back (by ``id``): their originals were offloaded
    by the compaction that made them, and are not offloaded again while kept."""
    gave_way: bool = False
    """Whether the passes summarized into the tail the keep policy asked for (only in an
    emergency, or with the automatic tail)."""
    final: tuple[Message, ...] | None = None
    """What a compaction that completed returns, as messages."""
    projected: bool = False
    """Whether the session's summary took the place of the part of the caller's history it
    stands for (see :mod:`synopsis.compaction.projection`)."""

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
