"""Whether to compact now: the governor that keeps compaction from looping or wasting money.

Each check has a knob in :class:`GovernorConfig`, with its default:

- *trigger*: the caller's :class:`~synopsis.planning.triggers.Trigger` (default: 80% of the
  window, ``trigger_ratio``); below it nothing happens.
- *minimum messages* (12): short histories are left alone.
- *cooldown* (4): after a compaction, that many new messages must arrive before the next one,
  counted on the history as it was after the compaction.
- *hysteresis*: a compaction aims under ``reset_ratio`` (70%) of the window; one that stops
  between that line and the trigger waits for the cooldown's new messages like any other.
- *no progress*: a compaction that leaves the history still at or over the trigger is reported,
  and the trigger stays disarmed until the history is under the trigger and under the reset
  ratio again: it cannot loop. Both lines count, so that a trigger on tokens or messages set
  below the reset ratio holds too (with only the reset ratio, such a trigger would be re-armed
  at once and compact the same history again after every cooldown).
- *emergency* (100% of the window): the next request would fail, so the cooldown gives way. The
  other guards hold; after a compaction that made no progress even an emergency waits for the
  cooldown's new messages, since the same input would give the same result.
- *per-turn cap*: at most ``max_per_turn`` compactions while the same user turn runs (pass the
  turn, see :func:`turn_key`; without one the cap does not apply).
- *breaker*: after ``breaker_failures`` summarizer failures in a row the summarizer is not
  asked again until a forced compaction (or its success) closes the breaker; a history that
  no longer leaves room for the answer is still compacted, by the rules alone
  (``Decision.rules_only``). The state remembers what kind of failure opened it. A budget that
  cannot be reached is not a summarizer failure and never opens it.
- *refill breaker*: compactions that keep coming back (``refill_compactions`` in a row, each
  within ``refill_requests`` requests of the last) lower where the session's compactions land
  (``GovernorState.landing``), so that the room they leave outlasts a few requests.
- *savings pre-check*: a plan that would free less than ``min_savings`` (30%) of the trigger's
  token threshold is not worth a summarizer call. Tokens, not messages (zrb's test counted
  messages, which passes plans that free nothing).
- *refresh*: optionally, a compaction every ``refresh_after_messages`` new messages.

Every :class:`Decision` says why. :class:`GovernorState` is a plain value with a JSON form.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Literal

from synopsis.errors import ConfigurationError, brief
from synopsis.messages import content_hash, is_person_message, is_summary
from synopsis.planning.triggers import Measure, Trigger

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from synopsis.messages import Message

__all__ = [
    "LOWEST_LANDING",
    "Decision",
    "GovernorConfig",
    "GovernorState",
    "check_savings",
    "decide",
    "record_compaction",
    "record_failure",
    "refill_breaker",
    "turn_key",
]

Code = Literal[
    "disabled",
    "forced",
    "emergency",
    "triggered",
    "refresh",
    "under-trigger",
    "min-messages",
    "cooldown",
    "no-progress",
    "per-turn-cap",
    "breaker-open",
    "budget-unreachable",
    "too-little-savings",
    "nothing-to-compact",
    "worth-it",
]


def _whole(value: object, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be a whole number >= {minimum}, got {value!r}")


def _share(value: object, name: str, *, upper: float = 1.0) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or not 0 < value <= upper
    ):
        raise ConfigurationError(f"{name} must be above 0 and at most {upper:g}, got {value!r}")


@dataclass(frozen=True, slots=True)
class GovernorConfig:
    enabled: bool = True
    trigger_ratio: float = 0.8
    reset_ratio: float = 0.7
    min_messages: int = 12
    cooldown_messages: int = 4
    emergency_ratio: float = 1.0
    max_passes: int = 3
    min_tail_messages: int = 2
    max_per_turn: int = 5
    breaker_failures: int = 3
    min_savings: float = 0.3
    refresh_after_messages: int | None = None
    refill_compactions: int = 3
    refill_requests: int = 3

    def __post_init__(self) -> None:
        _share(self.trigger_ratio, "trigger_ratio")
        _share(self.reset_ratio, "reset_ratio")
        if self.reset_ratio >= self.trigger_ratio:
            raise ConfigurationError(
                f"reset_ratio ({self.reset_ratio}) must be below trigger_ratio "
                f"({self.trigger_ratio}): it is the level a compaction aims for"
            )
        _share(self.emergency_ratio, "emergency_ratio", upper=10.0)
        _share(self.min_savings, "min_savings")
        _whole(self.min_messages, "min_messages", 0)
        _whole(self.cooldown_messages, "cooldown_messages", 0)
        _whole(self.max_passes, "max_passes", 1)
        _whole(self.min_tail_messages, "min_tail_messages", 0)
        _whole(self.max_per_turn, "max_per_turn", 1)
        _whole(self.breaker_failures, "breaker_failures", 1)
        _whole(self.refill_compactions, "refill_compactions", 1)
        _whole(self.refill_requests, "refill_requests", 1)
        if self.refresh_after_messages is not None:
            _whole(self.refresh_after_messages, "refresh_after_messages", 1)

    def default_trigger(self) -> Trigger:
        return Trigger.fraction(self.trigger_ratio)

    @property
    def paced_requests(self) -> int:
        """How many requests after a compaction are counted: enough to tell a refill and the
        pace a session grows at (see :func:`synopsis.compaction.budgets.refill_cap`)."""
        return 3 * self.refill_requests


_RETIRED = frozenset({"armed"})
"""Keys earlier versions saved and this one ignores: a session stored then still loads.
``armed`` duplicated the cooldown (every state it held back was cooling anyway) and was
never consulted."""


@dataclass(frozen=True, slots=True)
class GovernorState:
    """What the governor remembers between calls; ``to_json``/``from_json`` round-trip it."""

    compactions: int = 0
    length_after_last: int | None = None
    stuck: bool = False
    consecutive_failures: int = 0
    turn: str | None = None
    turn_compactions: int = 0
    failure: str | None = None
    """What the last summarizer failure was (the breaker's skip says so)."""
    tokens_after_last: int | None = None
    """The tokens the last compaction left: an emergency after it says how much came since."""
    requests: int = 0
    """Requests since the last compaction (one per call whose history grew), counted up to
    ``GovernorConfig.paced_requests``: only the first few matter (to the refill breaker and
    the pace of growth), and a count that kept changing would be saved on every call."""
    seen: int | None = None
    """The messages of the last request counted."""
    refills: int = 0
    """Compactions in a row that came within ``refill_requests`` of the one before."""
    landing: float | None = None
    """The share of the window this session's compactions land at once the refill breaker
    lowered it (``None``: the configured target)."""

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> GovernorState:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known - _RETIRED
        if unknown:
            raise ConfigurationError(f"unknown governor state keys: {', '.join(sorted(unknown))}")
        state = cls(**{k: v for k, v in data.items() if k in known})  # type: ignore[arg-type]
        for name in ("compactions", "consecutive_failures", "turn_compactions", "requests"):
            _whole(getattr(state, name), name, 0)
        _whole(state.refills, "refills", 0)
        for name in ("length_after_last", "tokens_after_last", "seen"):
            if getattr(state, name) is not None:
                _whole(getattr(state, name), name, 0)
        if state.failure is not None and not isinstance(state.failure, str):
            raise ConfigurationError(f"failure must be a string or null, got {state.failure!r}")
        if state.landing is not None:
            _share(state.landing, "landing")
        if not isinstance(state.stuck, bool):
            raise ConfigurationError(f"stuck must be true or false, got {state.stuck!r}")
        if state.turn is not None and not isinstance(state.turn, str):
            raise ConfigurationError(f"turn must be a string or null, got {state.turn!r}")
        return state

    def messages_since(self, length: int) -> int | None:
        if self.length_after_last is None:
            return None
        return max(0, length - self.length_after_last)


@dataclass(frozen=True, slots=True)
class Decision:
    compact: bool
    code: Code
    reason: str
    measure: Measure
    threshold: int | None
    emergency: bool = False
    state: GovernorState = field(default_factory=GovernorState)
    rules_only: bool = False
    """The summarizer's breaker is open: a compaction that must happen is the rules'."""


def turn_key(messages: Sequence[Message]) -> str | None:
    """Which user turn is running: a hash of the last message a person wrote, skipping
    synopsis's own summaries (the message stays in the kept tail, so the key survives the
    compactions of its own turn). Two turns with the very same text share a key."""
    for message in reversed(messages):
        if is_person_message(message) and not is_summary(message):
            return content_hash(message)[:16]
    return None


def _bracketed(trigger: Trigger) -> str:
    """``trigger`` in parentheses once: a combined trigger describes itself in its own."""
    text = str(trigger)
    return text if trigger.kind in ("any", "all") else f"({text})"


_GIVES_WAY = frozenset({"under-trigger", "cooldown", "min-messages", "per-turn-cap"})
"""Reasons not to compact that give way when the history no longer leaves room to answer."""


def decide(
    measure: Measure,
    *,
    state: GovernorState | None = None,
    config: GovernorConfig | None = None,
    trigger: Trigger | None = None,
    turn: str | None = None,
    force: bool = False,
    reserve: int = 0,
) -> Decision:
    """Whether to compact a history of ``measure``; ``Decision.state`` is the state to keep.

    ``reserve`` is the room the answer needs: a history that leaves less than that of the
    window is an emergency whatever the trigger, the cooldown, the minimum of messages or the
    cap per turn say (the trigger is a share of the whole window, the request must leave room
    for the answer)."""
    config = config or GovernorConfig()
    state = _counted(state or GovernorState(), measure, config)
    decision = _decide(measure, state=state, config=config, trigger=trigger, turn=turn, force=force)
    over = measure.tokens > measure.window - reserve
    if decision.compact or not over:
        return decision
    room = (
        f"{measure.tokens:,} tokens leave less than the {reserve:,} reserved for the answer "
        f"in a window of {measure.window:,}"
    )
    if decision.code == "breaker-open":
        # Returned as it is, the history would be refused: the rules compact it instead.
        return replace(
            decision,
            compact=True,
            code="emergency",
            reason=f"{room}; the summarizer's breaker is open ({decision.reason}), so the "
            "rules summarize",
            rules_only=True,
        )
    if decision.code not in _GIVES_WAY:
        return decision
    return replace(decision, compact=True, code="emergency", reason=room)


def _counted(state: GovernorState, measure: Measure, config: GovernorConfig) -> GovernorState:
    """``state`` with this request counted, when it is one more since the last compaction
    (its history grew) and the count still matters to the refill breaker."""
    if state.length_after_last is None or state.requests >= config.paced_requests:
        return state
    if measure.messages <= (state.seen if state.seen is not None else state.length_after_last):
        return state  # the same request again (a retry), or a shorter history
    return replace(state, requests=state.requests + 1, seen=measure.messages)


def _decide(
    measure: Measure,
    *,
    state: GovernorState,
    config: GovernorConfig,
    trigger: Trigger | None,
    turn: str | None,
    force: bool,
) -> Decision:
    trigger = trigger or config.default_trigger()
    threshold = trigger.token_threshold(measure.window)
    since = state.messages_since(measure.messages)
    if turn is not None and turn != state.turn:
        state = replace(state, turn=turn, turn_compactions=0)
    if state.stuck and measure.ratio < config.reset_ratio and not trigger.fires(measure):
        state = replace(state, stuck=False)
    emergency = measure.ratio >= config.emergency_ratio
    usage = f"{measure.tokens:,} of {measure.window:,} tokens ({measure.ratio:.0%})"

    def no(code: Code, why: str) -> Decision:
        return Decision(False, code, why, measure, threshold, emergency, state)

    def yes(code: Code, why: str) -> Decision:
        return Decision(True, code, why, measure, threshold, emergency, state)

    if force:
        return yes("forced", f"compaction asked for at {usage}")
    if not config.enabled:
        return no("disabled", "compaction is disabled")
    refresh = (
        config.refresh_after_messages is not None
        and since is not None
        and since >= config.refresh_after_messages
    )
    fires = trigger.fires(measure)
    if not (fires or refresh or emergency):
        return no("under-trigger", f"{usage} is under the trigger {_bracketed(trigger)}")
    if turn is not None and state.turn_compactions >= config.max_per_turn:
        return no(
            "per-turn-cap",
            f"{state.turn_compactions} compactions already in this turn "
            f"(cap {config.max_per_turn})",
        )
    if state.consecutive_failures >= config.breaker_failures:
        last = f" (last: {state.failure})" if state.failure else ""
        return no(
            "breaker-open",
            f"the summarizer failed {state.consecutive_failures} times in a row{last}; only "
            "a forced compaction or a success closes the breaker",
        )
    if measure.messages < config.min_messages:
        return no(
            "min-messages",
            f"{measure.messages} messages, fewer than the minimum of {config.min_messages}",
        )
    cooling = since is not None and since < config.cooldown_messages
    waiting = f"{since} of {config.cooldown_messages} new messages since the last compaction"
    if emergency:
        if state.stuck and cooling:
            return no(
                "no-progress",
                f"{usage}, but the last compaction could not get under the trigger and the "
                f"history is the same but for {waiting}",
            )
        # Only claim the cooldown gave way when one was running: on a first compaction, or
        # once its messages arrived, there was nothing to give way.
        overrides = ", so the cooldown gives way" if cooling else ""
        return yes(
            "emergency",
            f"{usage} reaches {config.emergency_ratio:.0%} of the window: the next request "
            f"would not fit{overrides}",
        )
    if cooling:
        return no("cooldown", waiting)
    if state.stuck:
        return no(
            "no-progress",
            f"the last compaction left the history over the trigger; waiting for it to fall "
            f"below {config.reset_ratio:.0%} of the window",
        )
    if refresh and not fires:
        return yes("refresh", f"{since} new messages since the last compaction (refresh)")
    return yes("triggered", f"{usage} reached the trigger {_bracketed(trigger)}")


def record_compaction(
    state: GovernorState,
    after: Measure,
    *,
    config: GovernorConfig | None = None,
    trigger: Trigger | None = None,
    rules_only: bool = False,
    paced: bool = True,
) -> tuple[GovernorState, bool]:
    """The state after a compaction that left ``after``, and whether it made no progress
    (still at or over the trigger). A compaction the rules made while the summarizer's
    breaker was open (``rules_only``) does not close it: the summarizer was not tried.
    ``paced`` says the history it compacted was the last compaction's output grown (it held
    that summary), so that the requests counted since tell how soon the room was refilled: a
    client that sends its whole uncompacted history compacts on every request by design."""
    config = config or GovernorConfig()
    trigger = trigger or config.default_trigger()
    stuck = trigger.fires(after)
    refilled = (
        paced and state.length_after_last is not None and state.requests <= config.refill_requests
    )
    new = replace(
        state,
        compactions=state.compactions + 1,
        length_after_last=after.messages,
        tokens_after_last=after.tokens,
        stuck=stuck,
        consecutive_failures=state.consecutive_failures if rules_only else 0,
        failure=state.failure if rules_only else None,
        turn_compactions=state.turn_compactions + 1,
        requests=0,
        seen=after.messages,
        refills=state.refills + 1 if refilled else 0,
    )
    return new, stuck


LOWEST_LANDING = 0.15
"""The refill breaker lowers a session's landing no further than this share of the window."""
_LOWER_BY = 0.6


def refill_breaker(
    state: GovernorState, config: GovernorConfig, landing: float
) -> tuple[GovernorState, float | None]:
    """After :func:`record_compaction`: when the last ``refill_compactions`` compactions each
    came within ``refill_requests`` requests of the one before, the session's landing (now
    ``landing``, a target ratio) lowered, and the new one; else ``state`` and ``None``."""
    if state.refills < config.refill_compactions:
        return state, None
    lowered = max(LOWEST_LANDING, round(landing * _LOWER_BY, 4))
    if lowered >= landing:
        return replace(state, refills=0), None
    return replace(state, refills=0, landing=lowered), lowered


def record_failure(state: GovernorState, failure: str) -> GovernorState:
    """The state after a summarizer failure (``failure`` says what it was)."""
    return replace(
        state, consecutive_failures=state.consecutive_failures + 1, failure=brief(failure, 160)
    )


def check_savings(
    decision: Decision,
    *,
    tokens_summarized: int,
    summary_tokens: int,
    config: GovernorConfig | None = None,
) -> Decision:
    """``decision`` unchanged when the plan frees enough, else a "no" saying how little.

    Freed tokens are the summarized messages' tokens minus the summary expected to replace
    them. Emergencies and forced compactions always go ahead."""
    config = config or GovernorConfig()
    if not decision.compact or decision.code in ("emergency", "forced"):
        return decision
    base = decision.threshold if decision.threshold is not None else decision.measure.tokens
    freed = tokens_summarized - summary_tokens
    needed = math.ceil(config.min_savings * base)
    if freed >= needed:
        return decision
    return Decision(
        False,
        "too-little-savings",
        f"the plan frees {max(freed, 0):,} tokens, less than {config.min_savings:.0%} of "
        f"{base:,} ({needed:,})",
        decision.measure,
        decision.threshold,
        decision.emergency,
        decision.state,
    )
