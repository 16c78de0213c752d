"""Where to cut: keep policies, the protected head, and the four-phase safe-split search.

The search follows zrb's, on the boundaries :mod:`synopsis.planning.units` marks safe:

1. back from the desired boundary to a turn start (a message a person wrote), while the kept
   tail stays within 70% of the token threshold;
2. else forward from the desired boundary to any safe boundary (a smaller tail);
3. else back again to any safe boundary while the tail stays within 80% of the threshold;
4. else the best effort: the safe boundary that summarizes the fewest unfinished calls and
   keeps closest to the desired tail, allowing a tail below the minimum when nothing else is
   safe. A unit is never broken; when no boundary is safe at all there is no plan.

Everything is a pure function of the messages and their token counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from synopsis.errors import ConfigurationError
from synopsis.messages import Message, Role, content_hash, is_person_message, is_summary, message_id
from synopsis.planning.units import Structure, analyze

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

__all__ = ["Keep", "Protect", "SplitPlan", "plan_split"]

Phase = Literal["turn-start", "forward", "within-80", "best-effort"]

TURN_START_SHARE = 0.7
"""Phase 1 keeps a tail of at most this share of the token threshold (zrb)."""
LARGEST_SAFE_SHARE = 0.8
"""Phase 3 keeps a tail of at most this share of the token threshold (zrb)."""


@dataclass(frozen=True, slots=True)
class Keep:
    """How much recent history to keep verbatim: :meth:`messages`, :meth:`tokens`,
    :meth:`fraction` of the context window, or :meth:`auto`: what the compaction's target
    leaves after the protected head and the summary (see :mod:`synopsis.planning.room`)."""

    kind: Literal["messages", "tokens", "fraction", "auto"]
    value: float

    @classmethod
    def auto(cls) -> Keep:
        return cls("auto", 0)

    @classmethod
    def messages(cls, count: int) -> Keep:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigurationError(f"Keep.messages needs a whole number >= 0, got {count!r}")
        return cls("messages", count)

    @classmethod
    def tokens(cls, count: int) -> Keep:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigurationError(f"Keep.tokens needs a whole number >= 0, got {count!r}")
        return cls("tokens", count)

    @classmethod
    def fraction(cls, share: float) -> Keep:
        if (
            isinstance(share, bool)
            or not isinstance(share, int | float)
            or math.isnan(share)
            or not 0 <= share < 1
        ):
            raise ConfigurationError(
                f"Keep.fraction needs a share of the window from 0 up to (not including) 1, "
                f"got {share!r}"
            )
        return cls("fraction", float(share))

    def shrunk(self, factor: float) -> Keep:
        """The same policy keeping ``factor`` as much (for a further pass that must fit)."""
        if self.kind == "messages":
            return Keep("messages", math.floor(self.value * factor))
        if self.kind in ("tokens", "auto"):
            # An automatic tail has been resolved to tokens before any pass runs; should one
            # reach here unresolved, half of nothing is still nothing.
            return Keep("tokens", math.floor(self.value * factor))
        return Keep("fraction", self.value * factor)

    def desired_boundary(self, counts: Sequence[int], start: int, window: int) -> int:
        """The boundary this policy asks for, never before ``start``."""
        n = len(counts)
        if self.kind == "messages":
            return max(start, n - int(self.value))
        budget = self.value * window if self.kind == "fraction" else self.value
        kept = 0
        boundary = n
        while boundary > start and kept + counts[boundary - 1] <= budget:
            boundary -= 1
            kept += counts[boundary]
        return boundary

    def describe(self) -> str:
        if self.kind == "messages":
            return f"the last {int(self.value)} messages"
        if self.kind == "tokens":
            return f"the last {int(self.value):,} tokens"
        if self.kind == "auto":
            return "the tail the target leaves room for"
        return f"the last {self.value:.0%} of the window"


@dataclass(frozen=True, slots=True)
class Protect:
    """Messages never summarized. System and developer messages (the prompt and any
    instruction given later) and, by default, the first message a person wrote; ``pinned``
    messages, named by the caller's own id, by :func:`synopsis.messages.content_hash` (which
    survives compaction) or by a derived :func:`synopsis.messages.message_id` (which holds the
    position, so it names a message only until the history shifts), or picked by ``pin``;
    optionally every user turn, newest first, up to ``user_turns_tokens``. Always: a
    provider's own compaction (an opaque ``compaction`` item or block) and every message
    before it, which that compaction already stands for. An orphaned result is never
    protected: it may not be kept."""

    system: bool = True
    first_user: bool = True
    pinned: Collection[str] = ()
    pin: Callable[[Message], bool] | None = None
    user_turns_tokens: int | None = None

    def __post_init__(self) -> None:
        bound = self.user_turns_tokens
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, int) or bound < 0
        ):
            raise ConfigurationError(
                f"user_turns_tokens must be a whole number >= 0 or None, got {bound!r}"
            )


@dataclass(frozen=True, slots=True)
class SplitPlan:
    """What to keep and what to summarize.

    ``head`` are indices kept verbatim before the summary (protected messages, whole units);
    ``summarize`` the indices the summary replaces; ``messages[boundary:]`` is the kept tail.
    ``desired`` is the boundary the keep policy asked for and ``reason`` says why ``boundary``
    differs (or that it does not).
    """

    boundary: int
    desired: int
    phase: Phase
    reason: str
    head: tuple[int, ...]
    summarize: tuple[int, ...]
    tokens_head: int
    tokens_summarized: int
    tokens_tail: int
    length: int
    unfinished_summarized: tuple[int, ...] = field(default=())

    @property
    def tail_messages(self) -> int:
        return self.length - self.boundary

    def apply(self, messages: Sequence[Message], summary: Sequence[Message]) -> tuple[Message, ...]:
        """The protected head, then ``summary`` (the message(s) standing for what was cut),
        then the kept tail. Roles are not merged here: rebuilding for a provider that needs
        strict alternation is the caller's step."""
        if len(messages) != self.length:
            raise ConfigurationError(
                f"this plan is for {self.length} messages, not {len(messages)}"
            )
        return (
            *(messages[i] for i in self.head),
            *summary,
            *messages[self.boundary :],
        )


def _protected(messages: Sequence[Message], protect: Protect, structure: Structure) -> set[int]:
    chosen: set[int] = set()
    pinned = set(protect.pinned)
    first_user_seen = False
    for i, m in enumerate(messages):
        # A summary synopsis wrote is user-voice but no one's request: it is summarized again.
        person = is_person_message(m) and not is_summary(m)
        if (protect.system and m.role in (Role.SYSTEM, Role.DEVELOPER)) or (
            protect.first_user and not first_user_seen and person
        ):
            chosen.add(i)
        if person:
            first_user_seen = True
        if (pinned and (message_id(m, i) in pinned or content_hash(m) in pinned)) or (
            protect.pin is not None and protect.pin(m)
        ):
            chosen.add(i)
    # A provider's compaction stands for all before it, as a summary of ours does, and must
    # be sent back exactly where it was: it and everything before it are kept as they are,
    # so nothing is summarized twice and nothing moves after it (the summary goes after it).
    if structure.compacted is not None:
        chosen.update(range(structure.compacted + 1))
    # A protected message that holds its unit together (a call, a result, reasoning or what it
    # produced) keeps the whole unit, so nothing loses its partner; any other can leave its
    # unit, which stays whole on one side of the cut. A unit holding an orphaned result cannot
    # be kept whole (orphans are never kept), so a pin on it is dropped: repair the input.
    orphans = set(structure.orphans)
    chosen -= orphans
    for i in list(chosen):
        if i not in structure.tied:
            continue
        unit = structure.unit(i)
        if orphans.intersection(unit):
            chosen.discard(i)
        else:
            chosen.update(unit)
    return chosen


def _user_turns(
    counts: Sequence[int],
    summarize: list[int],
    bound: int,
    structure: Structure,
    summaries: set[int] | None = None,
) -> set[int]:
    """The newest user turns of ``summarize`` whose tokens add up to at most ``bound``."""
    kept: set[int] = set()
    cut = set(summarize)
    for i in sorted(structure.turn_starts & cut, reverse=True):
        if summaries and i in summaries:
            continue
        if counts[i] > bound or len(kept) + 1 >= len(summarize):
            break  # over the bound, or nothing would be left to summarize
        bound -= counts[i]
        kept.add(i)
    return kept


def plan_split(
    messages: Sequence[Message],
    counts: Sequence[int],
    *,
    keep: Keep,
    threshold: int,
    window: int,
    protect: Protect | None = None,
    min_tail: int = 2,
    structure: Structure | None = None,
    turn_start_tail: int | None = None,
    hold: bool = False,
) -> SplitPlan | None:
    """The plan for ``messages`` (with per-message token ``counts``), or ``None`` when nothing
    can be summarized without breaking a unit or keeping an orphaned result.
    ``turn_start_tail`` bounds the tail phase 1 may keep to reach a turn start (default: 70%
    of ``threshold``, zrb's), for a caller whose tail has a budget of its own. With ``hold``
    the cut is never later than the boundary ``keep`` asks for: every message of the tail it
    names is kept (``None`` when no safe boundary lies at or before it)."""
    if len(counts) != len(messages):
        raise ConfigurationError(
            f"counts has {len(counts)} entries for {len(messages)} messages; give one each"
        )
    if isinstance(min_tail, bool) or not isinstance(min_tail, int) or min_tail < 0:
        raise ConfigurationError(f"min_tail must be a whole number >= 0, got {min_tail!r}")
    structure = structure or analyze(messages)
    protect = protect or Protect()
    n = len(messages)
    protected = _protected(messages, protect, structure)

    # The summary can only start after the leading run of protected messages.
    start = 0
    while start < n and start in protected:
        start += 1
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + counts[i]
    desired = max(keep.desired_boundary(counts, start, window), start)
    search = _Search(
        structure,
        suffix,
        threshold,
        start,
        min_tail,
        desired,
        TURN_START_SHARE * threshold if turn_start_tail is None else turn_start_tail,
        hold,
    )
    chosen = search.run()
    if chosen is None:
        return None
    boundary, phase = chosen
    summarize = [i for i in range(start, boundary) if i not in protected]
    if protect.user_turns_tokens:
        summaries = {i for i in summarize if is_summary(messages[i])}
        turns = _user_turns(counts, summarize, protect.user_turns_tokens, structure, summaries)
        protected |= turns
        summarize = [i for i in summarize if i not in turns]
    head = tuple(sorted(i for i in protected if i < boundary))
    summarized = set(summarize)
    unfinished = tuple(d for d in structure.dangling if d in summarized)
    return SplitPlan(
        boundary=boundary,
        desired=desired,
        phase=phase,
        reason=_reason(boundary, desired, phase, keep, structure),
        head=head,
        summarize=tuple(summarize),
        tokens_head=sum(counts[i] for i in head),
        tokens_summarized=sum(counts[i] for i in summarize),
        tokens_tail=suffix[boundary],
        length=n,
        unfinished_summarized=unfinished,
    )


@dataclass(frozen=True, slots=True)
class _Search:
    structure: Structure
    suffix: list[int]
    threshold: int
    start: int
    min_tail: int
    desired: int
    turn_start_tail: float
    hold: bool = False

    def run(self) -> tuple[int, Phase] | None:
        s = self.structure
        lo = max(self.start + 1, s.min_boundary)
        hi = min(s.length - self.min_tail, s.max_boundary)
        desired = self.desired
        if lo <= hi:
            for b in range(min(desired, hi), lo - 1, -1):
                if self.suffix[b] > self.turn_start_tail:
                    break
                if b in s.turn_starts and s.is_safe(b):
                    return b, "turn-start"
            for b in range(max(desired, lo), hi + 1):
                if self.hold and b > desired:
                    break  # a later cut would summarize the tail that is held
                if s.is_safe(b):
                    return b, "forward"
            for b in range(min(desired, hi + 1) - 1, lo - 1, -1):
                if self.suffix[b] > LARGEST_SAFE_SHARE * self.threshold:
                    break
                if s.is_safe(b):
                    return b, "within-80"
        return self.best_effort()

    def best_effort(self) -> tuple[int, Phase] | None:
        """The safe boundary that summarizes the fewest unfinished calls, then keeps at least
        the minimum tail, then sits closest to the desired one."""
        s = self.structure
        best: tuple[tuple[int, int, int], int] | None = None
        broken = 0
        dangling = set(s.dangling)
        last = min(s.max_boundary, self.desired) if self.hold else s.max_boundary
        for b in range(self.start + 1, last + 1):
            if b - 1 in dangling:
                broken += 1
            if not s.is_safe(b):
                continue
            score = (broken, int(s.length - b < self.min_tail), abs(b - self.desired))
            if best is None or score < best[0]:
                best = (score, b)
        return None if best is None else (best[1], "best-effort")


def _reason(boundary: int, desired: int, phase: Phase, keep: Keep, s: Structure) -> str:
    if boundary == desired:
        return f"kept {keep.describe()} as asked ({phase})"
    notes: list[str] = []
    if s.crossing[desired]:
        notes.append("the desired cut would separate a tool call from its result")
    if desired < s.min_boundary:
        notes.append(f"an orphaned result at message {s.orphans[-1]} may not be kept")
    if desired > s.max_boundary:
        notes.append(f"the calls of message {s.running} may still be running")
    if not notes:
        notes.append(
            "a turn start within the tail budget" if phase == "turn-start" else "token budget"
        )
    direction = "earlier" if boundary < desired else "later"
    return f"cut at {boundary} instead of {desired} ({direction}, {phase}): " + "; ".join(notes)
