"""What a compaction did, told to the caller: typed events, listeners, logging and tracing.

Every event is a frozen dataclass with the session it concerns (the one field that may be given
by position) and when it happened (UTC, now by default); the rest are keywords.
:func:`emit` logs an event on the ``synopsis.events`` logger (one line; ``extra`` carries the
event itself for structured handlers) and hands it to each listener in order. A listener is
the caller's code: one that raises is logged and skipped, so it can neither stop the others
nor break the compaction it is watching.

A summarizer deep inside a compaction reports a fall-back with :func:`notify`, without being
handed the listeners: the pipeline wraps its work in :func:`listening`, which puts them in a
context variable (copied into ``asyncio`` tasks and ``asyncio.to_thread`` calls, so async
drivers see them too).

:func:`span` opens an OpenTelemetry span when ``opentelemetry-api`` is installed (the ``otel``
extra) and does nothing otherwise.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from synopsis.errors import brief

if TYPE_CHECKING:
    # Only for annotations: the summarizers package imports this module to report fall-backs.
    from synopsis.summarizers.records import Usage

__all__ = [
    "ChainInvalidated",
    "CompactionCompleted",
    "CompactionFailed",
    "CompactionSkipped",
    "CompactionStarted",
    "Event",
    "HistoryRepaired",
    "Listener",
    "RefillBreakerOpened",
    "SpanHandle",
    "SummarizerFellBack",
    "SummaryFilledIn",
    "current_listeners",
    "emit",
    "listening",
    "notify",
    "span",
]

logger = logging.getLogger("synopsis.events")


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class _Base:
    """``session_id`` may come first by position; every other field is given by keyword."""

    kind: ClassVar[str] = "event"
    level: ClassVar[int] = logging.INFO

    session_id: str | None = None
    _: KW_ONLY
    at: datetime = field(default_factory=_now)

    @property
    def message(self) -> str:
        """One human sentence, prefixed by the session when there is one."""
        where = f"session {self.session_id}: " if self.session_id is not None else ""
        return where + self._sentence()

    def _sentence(self) -> str:  # pragma: no cover - every event overrides it
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the event's ``kind``, then its fields (time as ISO 8601)."""
        out: dict[str, Any] = {"event": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, datetime):
                value = value.isoformat()
            elif hasattr(value, "model_dump"):
                value = value.model_dump(mode="json")
            out[f.name] = value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionStarted(_Base):
    """The governor said yes; ``reason`` is its decision code (``"triggered"``, ...)."""

    kind: ClassVar[str] = "compaction_started"

    messages: int
    tokens: int
    reason: str

    def _sentence(self) -> str:
        return f"compacting {self.messages} messages ({self.tokens:,} tokens): {self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSkipped(_Base):
    """No compaction: ``reason`` is the governor's code, ``detail`` its explanation."""

    kind: ClassVar[str] = "compaction_skipped"

    reason: str
    detail: str
    messages: int
    tokens: int

    def _sentence(self) -> str:
        return (
            f"compaction skipped ({self.reason}) at {self.messages} messages, "
            f"{self.tokens:,} tokens: {self.detail}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionCompleted(_Base):
    """A compaction went through. ``desired_split`` is the boundary the keep policy asked
    for and ``used_split`` the safe one taken; ``duration`` is in seconds. ``tail_gave_way``
    says that, in an emergency, messages of the tail ``keep`` asked for were summarized too.

    ``window`` is the context window it worked in and ``target_tokens`` where it aimed to
    land (see :mod:`synopsis.planning.room`). ``off_target`` is empty when it landed within
    ten points of the window of that aim, else what prevented it (a protected head, or a
    single kept unit, larger than the room). ``emergency`` is empty unless the history left
    no room for the answer, and then says what filled it (one new message larger than the
    room the last compaction left, say). ``window_assumed`` is empty unless the model table
    does not know the model and no window was given: then it names the window synopsis
    assumed and how to give the real one. ``cleared`` counts the old tool outputs the
    clearing tier replaced by a placeholder, and ``tokens_cleared`` what that saved."""

    kind: ClassVar[str] = "compaction_completed"

    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    summarized: int
    kept: int
    desired_split: int
    used_split: int
    summary_chars: int
    usage: Usage
    record_id: str
    duration: float
    tail_gave_way: bool = False
    window: int = 0
    target_tokens: int = 0
    off_target: str = ""
    emergency: str = ""
    window_assumed: str = ""
    cleared: int = 0
    tokens_cleared: int = 0

    @property
    def landed(self) -> float:
        """The share of the window the history takes after the compaction (0 when the
        window is not known)."""
        return self.tokens_after / self.window if self.window else 0.0

    @property
    def target(self) -> float:
        """The share of the window the compaction aimed at (0 when not known)."""
        return self.target_tokens / self.window if self.window else 0.0

    def _sentence(self) -> str:
        split = (
            ""
            if self.used_split == self.desired_split
            else f", split at {self.used_split} instead of {self.desired_split}"
        )
        if self.cleared:
            split += f"; {self.cleared} old tool output(s) cleared, {self.tokens_cleared:,} tokens"
        if self.tail_gave_way:
            split += "; in the emergency the kept tail gave way"
        if self.emergency:
            split += f"; an emergency: {self.emergency}"
        if self.off_target:
            split += f"; off its target: {self.off_target}"
        return (
            f"compacted {self.messages_before} -> {self.messages_after} messages, "
            f"{self.tokens_before:,} -> {self.tokens_after:,} tokens "
            f"({self.summarized} summarized, {self.kept} kept{split}) "
            f"in {self.duration:.2f}s"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionFailed(_Base):
    """A compaction gave up at ``stage``; the caller kept the history it had."""

    kind: ClassVar[str] = "compaction_failed"
    level: ClassVar[int] = logging.WARNING

    stage: str
    error: str
    error_type: str

    def _sentence(self) -> str:
        return f"compaction failed at {self.stage}: {self.error_type}: {self.error}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SummarizerFellBack(_Base):
    """A summarizer model failed and ``fallback`` (a model or ``"rules"``) took over."""

    kind: ClassVar[str] = "summarizer_fell_back"
    level: ClassVar[int] = logging.WARNING

    model: str
    reason: str
    """Why, cut to a few hundred characters (a server's error body can be far longer)."""
    fallback: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", brief(self.reason))

    def _sentence(self) -> str:
        return f"summarizer model {self.model} failed ({self.reason}); fell back to {self.fallback}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainInvalidated(_Base):
    """The history a client sent again differs inside the part the session's summary stands
    for (a message edited, dropped or inserted): that summary no longer describes it, so the
    session's chain is given up and the history compacted afresh. The originals offloaded
    so far stay in the store; ``reason`` says what differed."""

    kind: ClassVar[str] = "chain_invalidated"

    reason: str

    def _sentence(self) -> str:
        return f"the summary chain no longer matches the history: {self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryRepaired(_Base):
    """The history broke a provider's rules and was repaired before anything else: ``fixes``
    says what changed, one sentence each, by position in the caller's own list (the same
    changes as the result's ``fixes``)."""

    kind: ClassVar[str] = "history_repaired"

    fixes: tuple[str, ...]

    def _sentence(self) -> str:
        count = len(self.fixes)
        listed = "; ".join(self.fixes[:3]) + ("; …" if count > 3 else "")
        return f"the history was repaired ({count} fix{'es' if count != 1 else ''}): {listed}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RefillBreakerOpened(_Base):
    """Compactions kept coming back within a few requests of each other (``compactions`` in a
    row, each within ``requests`` of the last), so the session now lands lower:
    ``landing`` is the target ratio its compactions aim at from now on (lower still where
    the session's pace asks for more room)."""

    kind: ClassVar[str] = "refill_breaker_opened"
    level: ClassVar[int] = logging.WARNING

    compactions: int
    requests: int
    landing: float

    def _sentence(self) -> str:
        return (
            f"{self.compactions} compactions in a row, each within {self.requests} requests "
            f"of the last: compactions of this session now aim no higher than "
            f"{self.landing:.0%} of the window"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryFilledIn(_Base):
    """A model's summary left out facts the rule summary keeps (the first request, a
    constraint, a request, a path, an identifier), and they were added to it, verbatim, in a
    section of their own; the model's summary was used. ``added`` lists them, each as
    ``"<kind>: <text>"``; ``left_out`` those the summary's budget could not hold even so."""

    kind: ClassVar[str] = "summary_filled_in"

    model: str
    added: tuple[str, ...]
    left_out: tuple[str, ...] = ()

    def _sentence(self) -> str:
        counts = Counter(item.partition(":")[0] for item in self.added)
        listed = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in counts.items())
        out = f"; {len(self.left_out)} more did not fit its budget" if self.left_out else ""
        return f"the summary by {self.model} left out facts; added verbatim: {listed}{out}"


Event: TypeAlias = (
    CompactionStarted
    | CompactionSkipped
    | CompactionCompleted
    | CompactionFailed
    | SummarizerFellBack
    | ChainInvalidated
    | HistoryRepaired
    | RefillBreakerOpened
    | SummaryFilledIn
)
Listener: TypeAlias = Callable[[Event], object]
"""Any callable taking an event; what it returns is ignored."""

current_listeners: ContextVar[tuple[Listener, ...]] = ContextVar("synopsis_listeners", default=())
"""The listeners :func:`notify` reaches; set by :func:`listening`."""


@dataclass(frozen=True, slots=True)
class _Scope:
    session_id: str | None


_scope: ContextVar[_Scope | None] = ContextVar("synopsis_listening", default=None)


def emit(event: Event, listeners: Sequence[Listener]) -> None:
    """Log ``event``, then give it to each listener in order; a listener that raises is logged
    with its traceback and the rest still run."""
    logger.log(event.level, "%s", event.message, extra={"synopsis_event": event})
    for listener in listeners:
        try:
            listener(event)
        except Exception:
            logger.exception("event listener %r failed on %s", listener, event.kind)


@contextmanager
def listening(listeners: Sequence[Listener], session_id: str | None = None) -> Iterator[None]:
    """Within the block, :func:`notify` emits to ``listeners`` and fills in ``session_id``."""
    listeners_token = current_listeners.set(tuple(listeners))
    scope_token = _scope.set(_Scope(session_id))
    try:
        yield
    finally:
        _scope.reset(scope_token)
        current_listeners.reset(listeners_token)


def notify(event: Event) -> None:
    """Emit ``event`` to the current listeners (see :func:`listening`), with the current
    session when the event names none. Outside any listening block, and with no listeners
    set, nothing happens: a summarizer used on its own reports through its return value."""
    scope = _scope.get()
    listeners = current_listeners.get()
    if scope is None and not listeners:
        return
    if event.session_id is None and scope is not None and scope.session_id is not None:
        event = replace(event, session_id=scope.session_id)
    emit(event, listeners)


_Attribute = str | bool | int | float


def _attribute(value: object) -> _Attribute | tuple[_Attribute, ...] | None:
    """``value`` as an OpenTelemetry attribute (primitives or sequences of them): None is
    dropped, anything else becomes its text."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return tuple(v if isinstance(v, str | bool | int | float) else str(v) for v in value)
    return str(value)


def _attributes(attributes: dict[str, object]) -> dict[str, Any]:
    out = {k: _attribute(v) for k, v in attributes.items()}
    return {k: v for k, v in out.items() if v is not None}


class SpanHandle:
    """What :func:`span` yields: :meth:`set` adds attributes to the span, if there is one."""

    __slots__ = ("_span",)

    def __init__(self, otel_span: object = None) -> None:
        self._span: Any = otel_span

    @property
    def recording(self) -> bool:
        """Whether an OpenTelemetry span stands behind this handle."""
        return self._span is not None

    def set(self, **attributes: object) -> None:
        if self._span is not None:
            self._span.set_attributes(_attributes(attributes))


@contextmanager
def span(name: str, **attributes: object) -> Iterator[SpanHandle]:
    """An OpenTelemetry span named ``name`` from the ``synopsis`` tracer when
    ``opentelemetry-api`` is importable, else nothing. ``None`` attributes are left out and
    values OpenTelemetry cannot hold become text. An exception in the block is recorded on the
    span and raised on."""
    try:
        # Imported here: OpenTelemetry is an optional extra, never a hard dependency.
        from opentelemetry import trace  # noqa: PLC0415
    except ImportError:
        yield SpanHandle()
        return
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # No provider is set yet: the span would record nothing, and making it took 9 µs of a
        # call that compacts nothing.
        yield SpanHandle()
        return
    tracer = trace.get_tracer("synopsis")
    with tracer.start_as_current_span(name, attributes=_attributes(attributes)) as otel_span:
        yield SpanHandle(otel_span)
