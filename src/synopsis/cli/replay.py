"""Replaying a recorded history message by message, as a live agent would have sent it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from difflib import SequenceMatcher
from itertools import pairwise
from typing import TYPE_CHECKING, Any, cast

from synopsis.cli.replay_requests import Sent, Uncompacted
from synopsis.compaction import Compactor
from synopsis.errors import BudgetUnreachableError
from synopsis.events import CompactionCompleted, RefillBreakerOpened
from synopsis.formats import body_system, decode, wire_items
from synopsis.messages import (
    MediaPart,
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    content_hash,
    is_summary,
)
from synopsis.planning.clearing import CLEARED_MARKER
from synopsis.planning.reductions import SUMMARY_MARKER, TruncateArgs
from synopsis.pricing import OPENAI, Prices
from synopsis.summarizers import render

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from synopsis.compaction import CompactionResult, SystemPrompt
    from synopsis.compaction.setup import Setup
    from synopsis.events import Event
    from synopsis.formats import FormatName

__all__ = ["ReplayReport", "Shown", "Turn", "replay"]

SESSION = "replay"
BURST = 2
"""A compaction this many turns or fewer after the one before came in a burst: the room the
one before left was filled again almost at once."""


@dataclass(frozen=True, slots=True)
class Shown:
    """One message of a compaction as a person reads it: ``parts`` are ``(heading, text)``
    pairs, a tool call as its name and arguments, a tool result as its text.

    ``position`` is the message's place in the history before the compaction (a summarized
    message) or after it (a kept one); ``item`` the caller's wire item (``None`` for a system
    prompt given apart from the messages). ``stored`` is the store position its original
    can be recalled from, when this compaction offloaded it."""

    position: int
    role: str
    parts: tuple[tuple[str, str], ...]
    item: Any = None
    summary: bool = False
    """A summary an earlier compaction wrote, replaced by this one's."""
    reduced: bool = False
    """Kept in a reduced form (a result summarized, arguments cut, thinking dropped)."""
    stored: int | None = None
    before: tuple[tuple[str, str], ...] | None = None
    """A reduced message's parts as they were before this compaction."""

    @property
    def cleared(self) -> bool:
        """Whether a tool output in it is a clearing's placeholder."""
        return any(text.startswith(CLEARED_MARKER) for _, text in self.parts)

    @property
    def chars(self) -> int:
        return sum(len(text) for _, text in self.parts)


@dataclass(frozen=True, slots=True)
class Turn:
    """One call to the compactor: after the input's item ``index`` was appended.

    A turn that compacted has ``summarized`` (the messages it replaced, an earlier summary
    among them), ``kept`` (every message of the new history but the summary), and the store
    reference of the originals it offloaded: ``session_id``, their ``offloaded`` ids and
    store ``positions``, and how many of them the store gave back (``recallable``).

    Every turn is a request a provider's prefix cache prices (:mod:`synopsis.pricing`):
    ``cached_tokens`` of it repeat the start of the request before, and it costs ``cost``
    dollars of input (``cost_without`` for the transcript's request sent as it is). A
    compaction's event says where it aimed (``target``, a share of the window), what kept it
    from landing near that (``off_target``) or made it urgent (``emergency``); ``breaker`` is
    where compactions land from this turn on, when it opened the refill breaker."""

    index: int
    tokens_before: int
    tokens_after: int
    tokens_without: int
    messages_before: int
    messages_after: int
    compacted: bool
    code: str
    reason: str
    summary: str | None = None
    summarized: tuple[Shown, ...] = ()
    kept: tuple[Shown, ...] = ()
    session_id: str | None = None
    offloaded: tuple[str, ...] = ()
    positions: tuple[int, ...] = ()
    recallable: int | None = None
    cached_tokens: int = 0
    cost: float = 0.0
    cost_without: float = 0.0
    target: float | None = None
    off_target: str = ""
    emergency: str = ""
    breaker: float | None = None

    @property
    def messages_summarized(self) -> int:
        """Messages of the caller's history this compaction replaced (not earlier summaries)."""
        return sum(1 for m in self.summarized if not m.summary)

    @property
    def messages_kept(self) -> int:
        return len(self.kept)

    def to_json(self) -> dict[str, Any]:
        """The turn as a JSON-ready dict: the messages themselves are left out (a session's
        worth of tool output), their counts are in."""
        data: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in _MESSAGES
        }
        data["offloaded"] = list(self.offloaded)
        data["positions"] = list(self.positions)
        data["messages_summarized"] = self.messages_summarized
        data["messages_kept"] = self.messages_kept
        return data


_MESSAGES = frozenset({"summarized", "kept"})


@dataclass(slots=True)
class ReplayReport:
    """Every turn of a replay and the totals over the session."""

    model: str | None
    window: int
    reserve: int
    trigger_tokens: int | None
    items: int
    turns: list[Turn] = field(default_factory=list)
    unreachable: str | None = None
    """Why the replay stopped early: the history could not be made to fit."""
    window_error: BudgetUnreachableError | None = None
    """The error that stopped the replay when the system prompt alone took all the window
    leaves after the reserve: no turn could fit, so the turns before it prove nothing."""
    prices: Prices = OPENAI
    """What the turns' costs are priced at."""

    @property
    def compactions(self) -> list[Turn]:
        return [t for t in self.turns if t.compacted]

    @property
    def bursts(self) -> list[Turn]:
        """The compactions that came within :data:`BURST` requests of the one before."""
        done = self.compactions
        return [t for before, t in pairwise(done) if t.index - before.index <= BURST]

    def landed(self, turn: Turn) -> float:
        """The share of the window the history fills after ``turn``."""
        return turn.tokens_after / self.window

    @property
    def breakers(self) -> list[Turn]:
        """The turns that opened the refill breaker."""
        return [t for t in self.turns if t.breaker is not None]

    @property
    def cost_with(self) -> float:
        """Dollars of input over the session with synopsis, with a prefix cache."""
        return sum(t.cost for t in self.turns)

    @property
    def cost_without(self) -> float:
        """Dollars of input for the transcript sent as it is, with the same cache."""
        return sum(t.cost_without for t in self.turns)

    @property
    def cached_tokens(self) -> int:
        """Tokens the cache read over the session with synopsis."""
        return sum(t.cached_tokens for t in self.turns)

    @property
    def cache_hits(self) -> int:
        """Requests with synopsis that read part of themselves from the cache."""
        return sum(1 for t in self.turns if t.cached_tokens)

    @property
    def summarizer_calls(self) -> int:
        return sum(1 for t in self.turns if t.summary is not None)

    @property
    def tokens_with(self) -> int:
        """Tokens sent over the whole session with synopsis."""
        return sum(t.tokens_after for t in self.turns)

    @property
    def tokens_without(self) -> int:
        """Tokens the same session would have sent with nothing compacted."""
        return sum(t.tokens_without for t in self.turns)

    @property
    def tokens_saved(self) -> int:
        return self.tokens_without - self.tokens_with

    @property
    def saved_share(self) -> float:
        """The share of :attr:`tokens_without` that synopsis did not send (0 for no turns)."""
        return self.tokens_saved / self.tokens_without if self.tokens_without else 0.0

    @property
    def completed(self) -> bool:
        return self.unreachable is None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the totals, then every turn."""
        return {
            "model": self.model,
            "window": self.window,
            "reserve": self.reserve,
            "trigger_tokens": self.trigger_tokens,
            "items": self.items,
            "completed": self.completed,
            "unreachable": self.unreachable,
            "compactions": len(self.compactions),
            "summarizer_calls": self.summarizer_calls,
            "tokens_with": self.tokens_with,
            "tokens_without": self.tokens_without,
            "tokens_saved": self.tokens_saved,
            "saved_share": round(self.saved_share, 4),
            "bursts": len(self.bursts),
            "burst_turns": [t.index for t in self.bursts],
            "landed": [round(self.landed(t), 4) for t in self.compactions],
            "targets": [t.target for t in self.compactions],
            "breakers": [t.index for t in self.breakers],
            "prices": {
                "name": self.prices.name,
                "input": self.prices.input,
                "cached": self.prices.cached,
                "write_premium": self.prices.write_premium,
            },
            "cost_with": round(self.cost_with, 6),
            "cost_without": round(self.cost_without, 6),
            "cached_tokens": self.cached_tokens,
            "cache_hits": self.cache_hits,
            "turns": [t.to_json() for t in self.turns],
        }


def _parts(message: Message, names: dict[str, str]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            out.append(("text", part.text))
        elif isinstance(part, ToolCallPart):
            out.append((f"tool call {part.name}", part.arguments_text))
        elif isinstance(part, ToolResultPart):
            name = part.name or names.get(part.call_id, part.call_id)
            error = " (error)" if part.is_error else ""
            out.append((f"tool result of {name}{error}", part.text))
        elif isinstance(part, MediaPart):
            out.append((part.kind, part.placeholder))
        elif isinstance(part, ReasoningPart):
            out.append(("reasoning", part.text or "[opaque to the reader]"))
        else:
            out.append((part.kind, part.text))
    return tuple(out)


def _align(before: Sequence[Message], after: Sequence[Message]) -> tuple[list[int], dict[int, int]]:
    """Which messages of ``before`` the compaction replaced, and for the messages of ``after``
    that are not summaries, the one of ``before`` each keeps (where that can be told).

    Messages kept as they were match by content. A run the compaction rewrote holds its
    summary, with the kept messages it reduced around it as :meth:`SplitPlan.apply` lays them
    out: the protected head before the summary, the tail after it; each is one of the
    rewritten run's messages, counted from that end."""
    old = [content_hash(m) for m in before]
    new = [content_hash(m) for m in after]
    replaced: list[int] = []
    kept: dict[int, int] = {}
    # The tail after the last summary is the end of the history, message for message, some
    # made small: anchored there first, equal messages elsewhere (a repeated "continue")
    # cannot pair a kept one with one that was summarized.
    marks = [j for j, m in enumerate(after) if is_summary(m)]
    if marks:
        start = marks[-1] + 1
        lead = len(before) - (len(after) - start)
        if lead >= 0 and all(
            old[lead + k] == new[j] or _made_small(before[lead + k], after[j])
            for k, j in enumerate(range(start, len(after)))
        ):
            kept.update({j: lead + k for k, j in enumerate(range(start, len(after)))})
            old, new = old[:lead], new[:start]
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            kept.update({j1 + k: i1 + k for k in range(i2 - i1)})
            continue
        marks = [j for j in range(j1, j2) if is_summary(after[j])]
        first, last = (marks[0], marks[-1]) if marks else (j2, j2)
        head = range(j1, first)
        tail = range(last + 1, j2) if marks else range(0)
        olds = list(range(i1, i2))
        for j, i in zip(head, olds, strict=False):
            kept[j] = i
        for j, i in zip(reversed(tail), reversed(olds[len(head) :]), strict=False):
            kept[j] = i
        taken = set(kept.values())
        replaced += [i for i in olds if i not in taken]
    return replaced, kept


_TRUNCATED = TruncateArgs().marker


def _made_small(original: Message, message: Message) -> bool:
    """Whether ``message`` is ``original`` with a part made small (a digest, cut arguments)."""
    return (
        message.role is original.role
        and len(message.parts) == len(original.parts)
        and any(
            (isinstance(p, TextPart | ToolResultPart) and p.text.startswith(SUMMARY_MARKER))
            or (isinstance(p, ToolCallPart) and _TRUNCATED in p.arguments_text)
            for p in message.parts
        )
    )


def _detailed(
    turn: Turn,
    compactor: Compactor,
    result: CompactionResult,
    history: Sequence[Any],
    *,
    fmt: FormatName,
    system: object,
) -> Turn:
    """``turn`` with what its compaction summarized and kept, and where the originals it
    offloaded can be recalled."""
    before = decode(list(history), fmt, system=system).messages
    after_system = result.system if result.system is not None else system
    after = decode(list(result.messages), fmt, system=after_system).messages
    lead_before = len(before) - len(history) if fmt != "synopsis" else 0
    lead_after = len(after) - len(result.messages) if fmt != "synopsis" else 0
    names = {p.call_id: p.name for m in (*before, *after) for p in m.tool_calls}
    stored = (
        compactor.recall(result.session_id, ids=list(result.offloaded)) if result.offloaded else []
    )
    if stored:
        # An id from a call id names every copy of that result stored so far: this
        # compaction's rows are those it stored last.
        newest = max(stored, key=lambda m: m.position).compaction_id
        stored = [m for m in stored if m.compaction_id == newest]
    # By content, in timeline order: two equal messages (a repeated "continue") are stored
    # twice, and each is told its own place.
    where: dict[str, list[int]] = {}
    for saved in stored:
        where.setdefault(saved.sha256, []).append(saved.position)
    replaced, kept = _align(before, after)
    originals = [content_hash(m) for m in before]

    def place(index: int) -> int | None:
        positions = where.get(originals[index])
        return positions.pop(0) if positions else None

    def item(items: Sequence[Any], lead: int, index: int) -> Any:  # noqa: ANN401 - a wire item
        return items[index - lead] if index >= lead else None

    summarized = tuple(
        Shown(
            position=i,
            role=before[i].role.value,
            parts=_parts(before[i], names),
            item=item(history, lead_before, i),
            summary=is_summary(before[i]),
            stored=place(i),
        )
        for i in replaced
    )
    shown_kept = []
    for j, message in enumerate(after):
        if is_summary(message) and j not in kept:
            continue  # this compaction's own summary; an earlier one left as it was is kept
        source = kept.get(j)
        reduced = source is None or originals[source] != content_hash(message)
        shown_kept.append(
            Shown(
                position=j,
                role=message.role.value,
                parts=_parts(message, names),
                item=item(result.messages, lead_after, j),
                reduced=reduced,
                stored=place(source) if source is not None and reduced else None,
                before=_parts(before[source], names) if source is not None and reduced else None,
            )
        )
    found = {m.id for m in stored}
    return replace(
        turn,
        summarized=summarized,
        kept=tuple(shown_kept),
        session_id=result.session_id,
        offloaded=result.offloaded,
        positions=tuple(sorted({m.position for m in stored})),
        recallable=sum(1 for i in result.offloaded if i in found),
    )


def _system_alone(setup: Setup, history: list[Any], fmt: FormatName, system: object) -> bool:
    """Whether the system prompt alone takes all the window leaves after the reserve: the
    test the compactor makes before it gives up, so that no later turn can fit either."""
    messages = decode(history, fmt, system=system).messages
    prompt = sum(setup.counter.count_message(m) for m in messages if m.role is Role.SYSTEM)
    return prompt >= setup.limit


def _told(events: Sequence[Event]) -> dict[str, Any]:
    """What a turn's events say of its compaction and of the refill breaker: the fields of
    :class:`Turn` they fill. A share of the window is left unset where the event does not know
    the window."""
    told: dict[str, Any] = {}
    for event in events:
        if isinstance(event, CompactionCompleted):
            told.update(off_target=event.off_target, emergency=event.emergency)
            if event.window and event.target_tokens:
                told["target"] = event.target
        elif isinstance(event, RefillBreakerOpened):
            told["breaker"] = event.landing
    return told


def replay(
    items: object,
    *,
    fmt: FormatName | None = None,
    system: SystemPrompt = None,
    prices: Prices = OPENAI,
    progress: Callable[[int, int], None] | None = None,
    **compactor_options: Any,  # noqa: ANN401 - Compactor validates each option
) -> ReplayReport:
    """Play ``items`` (a list of messages, or a request body holding one) one by one through
    one :class:`~synopsis.Compactor` (built from ``compactor_options``; a memory store and one
    session by default, so the governor's memory carries from turn to turn).

    Each turn appends the next item to the history, compacts it, and carries the result on as
    the next history. The report says, turn by turn, how many tokens went out with synopsis
    and how many would have gone out without it, and what each request cost at ``prices``
    with a provider's prefix cache; each turn that compacted also says which messages it
    summarized, which it kept, and where the store keeps the originals it replaced, and what
    its events say of where it aimed. ``progress(done, total)`` is called after each turn. A
    history that cannot be made to fit ends the replay, recorded in the report."""
    compactor_options.setdefault("store", "memory")
    compactor_options.setdefault("session_id", SESSION)
    compactor = Compactor(**compactor_options)
    setup = compactor.setup
    # Decoding the whole input first refuses what compact would refuse, before any turn.
    fmt = decode(items, fmt, system=system).format
    wire = list(wire_items(items, fmt))
    prompt = body_system(items, fmt, system)  # a request body's own, else the one given
    report = ReplayReport(
        model=compactor.settings.model,
        window=setup.window,
        reserve=setup.reserve,
        trigger_tokens=setup.trigger.token_threshold(setup.window),
        items=len(wire),
        prices=prices,
    )
    history: list[Any] = []
    whole = Uncompacted(setup, wire, fmt, prompt, prices)
    sent = Sent(setup, fmt, prices, whole)
    for index, item in enumerate(wire):
        history.append(item)
        without, cost_without = whole.send(index + 1)
        try:
            # The prompt is JSON read from the file or handed back by compact: compact checks it.
            result = compactor.compact(history, system=cast("SystemPrompt", prompt), format=fmt)
        except BudgetUnreachableError as error:
            report.unreachable = f"turn {index}: {error}"
            if _system_alone(setup, history, fmt, prompt):
                report.window_error = error
            break
        record = result.record if result.compacted else None
        after = result.system if result.system is not None else prompt
        request = sent.send(index, result, after)
        turn = Turn(
            index=index,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            tokens_without=without,
            messages_before=len(history),
            messages_after=len(result.messages),
            compacted=result.compacted,
            code=result.code,
            reason=result.reason,
            summary=render(record) if record is not None else None,
            cached_tokens=request.shared,
            cost=request.cost,
            cost_without=cost_without.cost,
            **_told(result.events),
        )
        # Only a compaction pays for the detail: most turns skip, and they must stay cheap.
        if result.compacted:
            turn = _detailed(turn, compactor, result, history, fmt=fmt, system=prompt)
        report.turns.append(turn)
        history = list(result.messages)
        prompt = after
        if progress is not None:
            progress(index + 1, len(wire))
    return report
