"""The bounded pass loop of one compaction, as a pure function.

Summarize everything but the kept tail; if the result is still above the target (the governor's
reset ratio of the window, or the trigger if that is lower), summarize again (the previous
summary is part of what gets summarized), up to ``max_passes``; then shrink the kept tail
(halving, never below ``min_tail_messages``) and try once more. The caller supplies the
summarizer as a function, so this stays free of I/O and the same loop can drive any summarizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from synopsis.planning.split import Keep, Protect, SplitPlan, plan_split
from synopsis.planning.triggers import Measure, Trigger

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence

    from synopsis.messages import Message
    from synopsis.planning.governor import GovernorConfig
    from synopsis.planning.units import Structure

__all__ = ["PassResult", "PassStep", "iter_passes", "run_passes"]


@dataclass(frozen=True, slots=True)
class PassResult:
    messages: tuple[Message, ...]
    plans: tuple[SplitPlan, ...]
    fits: bool
    """Under the trigger: the compaction made progress."""
    on_target: bool
    """Under the target too."""
    shrunk: bool
    measure: Measure

    @property
    def passes(self) -> int:
        return len(self.plans)


PassStep = tuple[SplitPlan, list["Message"]]
"""What a pass asks for: the plan, and the messages it cuts, to be replaced by their summary."""


def iter_passes(
    messages: Sequence[Message],
    *,
    count: Callable[[Message], int],
    overhead: int,
    keep: Keep,
    trigger: Trigger,
    window: int,
    config: GovernorConfig,
    protect: Protect | None = None,
    turn_start_tail: int | None = None,
    shrink_tail: bool = True,
    hold: bool = False,
    counts: Sequence[int] | None = None,
    structure: Structure | None = None,
) -> Generator[PassStep, Sequence[Message], PassResult]:
    """The pass loop as a generator: it yields each pass's plan and cut, is sent back the
    message(s) that stand for the cut, and returns the :class:`PassResult`. The caller does
    the summarizing, blocking or awaiting (see :func:`run_passes`).

    ``count`` gives a message's tokens and ``overhead`` the tokens outside the messages
    (system prompt sent apart, tool definitions, framing); ``turn_start_tail`` is passed on
    to :func:`~synopsis.planning.split.plan_split`. With ``shrink_tail`` false the last
    attempt, with half the tail, is not made: a tail the caller asked to keep verbatim stays
    whole outside an emergency; with ``hold`` no pass cuts into it either (see
    :func:`~synopsis.planning.split.plan_split`). ``counts`` and ``structure``, when the
    caller has them, are those of ``messages`` (the first pass does not work them out again).
    """
    current = tuple(messages)
    plans: list[SplitPlan] = []
    shrunk = False

    def measure(history: Sequence[Message]) -> tuple[list[int], Measure]:
        counts = [count(m) for m in history]
        return counts, Measure(overhead + sum(counts), len(history), window)

    if counts is None:
        counts, now = measure(current)
    else:
        counts = list(counts)
        now = Measure(overhead + sum(counts), len(current), window)
    threshold = trigger.token_threshold(window) or window
    target = min(threshold, int(config.reset_ratio * window))
    attempts = [keep] * config.max_passes
    if shrink_tail:
        smaller = keep.shrunk(0.5)
        if smaller.kind == "messages":
            smaller = Keep.messages(max(int(smaller.value), config.min_tail_messages))
        attempts.append(smaller)
    for attempt, policy in enumerate(attempts):
        if attempt and now.tokens < target:
            break
        plan = plan_split(
            current,
            counts,
            keep=policy,
            threshold=threshold,
            window=window,
            protect=protect,
            min_tail=config.min_tail_messages,
            turn_start_tail=turn_start_tail,
            hold=hold,
            structure=structure,
        )
        structure = None  # the messages a pass leaves have a structure of their own
        if plan is None:
            break
        shrunk = shrunk or attempt >= config.max_passes
        cut = [current[i] for i in plan.summarize]
        summary = yield plan, cut
        current = plan.apply(current, summary)
        plans.append(plan)
        counts, now = measure(current)
    return PassResult(
        current, tuple(plans), not trigger.fires(now), now.tokens < target, shrunk, now
    )


def run_passes(
    messages: Sequence[Message],
    *,
    count: Callable[[Message], int],
    overhead: int,
    summarize: Callable[[Sequence[Message]], Sequence[Message]],
    keep: Keep,
    trigger: Trigger,
    window: int,
    config: GovernorConfig,
    protect: Protect | None = None,
) -> PassResult:
    """Compact ``messages`` until the trigger no longer fires, within the pass cap;
    ``summarize`` turns the messages a plan cuts into the message(s) that stand for them."""
    steps = iter_passes(
        messages,
        count=count,
        overhead=overhead,
        keep=keep,
        trigger=trigger,
        window=window,
        config=config,
        protect=protect,
    )
    try:
        _, cut = next(steps)
        while True:
            _, cut = steps.send(summarize(cut))
    except StopIteration as stop:
        result: PassResult = stop.value
    return result
