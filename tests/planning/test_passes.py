from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from synopsis.planning import GovernorConfig, Keep, Protect, Trigger, iter_passes, run_passes
from tests.planning.helpers import calls, result, say, summary, system, user

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message


def grow(turns: int, size: int) -> list[Message]:
    out = [system(), user("the task: port the parser")]
    for i in range(turns):
        out += [say(f"answer {i} " + "x" * size), user(f"question {i}")]
    return out


def tokens(message: Message) -> int:
    return max(1, len(message.text) // 4)


def compact(msgs: list[Message], *, summary_tokens: int, keep: int, overhead: int = 50):
    return run_passes(
        msgs,
        count=tokens,
        overhead=overhead,
        summarize=fixed_summary(summary_tokens),
        keep=Keep.messages(keep),
        trigger=Trigger.fraction(0.8),
        window=2_000,
        config=GovernorConfig(),
    )


def fixed_summary(size: int):
    def summarize(cut):
        assert cut
        return [summary("S" * (size * 4))]

    return summarize


def test_a_small_context_compacts_repeatedly_up_to_the_pass_cap_then_shrinks() -> None:
    # A model with a 2K context; each summary alone is large, so passes over the same tail make
    # no room, and after the pass cap the kept tail shrinks (never below two).
    msgs = grow(20, 800)
    config = GovernorConfig()
    done = compact(msgs, summary_tokens=900, keep=8)
    assert done.passes == config.max_passes + 1
    assert done.shrunk
    assert done.fits
    tail = len(done.messages) - len(done.plans[-1].head) - 1
    assert 2 <= tail < 8


def test_one_pass_is_enough_when_the_summary_is_small() -> None:
    msgs = grow(20, 300)
    done = compact(msgs, summary_tokens=50, keep=4)
    assert done.passes == 1
    assert done.fits
    assert done.on_target
    assert not done.shrunk
    assert done.measure.tokens < 1_600
    assert done.messages[:2] == tuple(msgs[:2])
    assert done.messages[-4:] == tuple(msgs[-4:])


def test_passes_go_on_below_the_trigger_until_the_reset_target() -> None:
    # The first summary lands between the reset ratio (70%) and the trigger (80%): progress,
    # but hysteresis wants the target, so a second pass summarizes the summary again.
    sizes = iter([1_350, 300])

    def shrinking(cut: Sequence[Message]) -> list[Message]:
        return [summary("S" * (next(sizes) * 4))]

    done = run_passes(
        grow(20, 300),
        count=tokens,
        overhead=50,
        summarize=shrinking,
        keep=Keep.messages(2),
        trigger=Trigger.fraction(0.8),
        window=2_000,
        config=GovernorConfig(),
    )
    assert done.passes == 2
    assert done.fits
    assert done.on_target
    assert done.measure.tokens < 1_400


def test_no_plan_means_no_pass() -> None:
    msgs = [system(), user("only")]
    done = compact(msgs, summary_tokens=10, keep=4, overhead=5_000)
    assert done.passes == 0
    assert done.messages == tuple(msgs)
    assert not done.fits
    assert done.shrunk is False


def test_a_token_keep_shrinks_by_half_after_the_pass_cap() -> None:
    done = run_passes(
        grow(20, 800),
        count=tokens,
        overhead=50,
        summarize=fixed_summary(900),
        keep=Keep.tokens(800),
        trigger=Trigger.fraction(0.8),
        window=2_000,
        config=GovernorConfig(),
    )
    assert done.shrunk
    assert done.plans[-1].tokens_tail <= 400


def sized(*sizes: int):
    """A summarizer whose summaries are ``sizes`` tokens long, in turn."""
    left = iter(sizes)

    def summarize(cut: Sequence[Message]) -> list[Message]:
        assert cut
        return [summary("S" * (next(left) * 4))]

    return summarize


def passes(msgs: list[Message], summarize, **options):
    base = {
        "count": tokens,
        "overhead": 50,
        "summarize": summarize,
        "keep": Keep.messages(2),
        "trigger": Trigger.fraction(0.8),
        "window": 2_000,
        "config": GovernorConfig(),
    }
    return run_passes(msgs, **{**base, **options})


def test_a_pass_that_lands_exactly_on_the_target_is_not_under_it() -> None:
    # The target is 70% of 2,000 tokens: 1,400. A first summary of 1,258 tokens lands on it
    # exactly, so a second pass runs; one token less and the first is enough.
    on = passes(grow(20, 300), sized(1_258, 10))
    assert (on.passes, on.on_target) == (2, True)
    under = passes(grow(20, 300), sized(1_257))
    assert (under.passes, under.measure.tokens, under.on_target) == (1, 1_399, True)
    assert under.shrunk is False


def test_a_last_pass_exactly_on_the_target_is_reported_off_it() -> None:
    steps = iter_passes(
        grow(20, 300),
        count=tokens,
        overhead=50,
        keep=Keep.messages(2),
        trigger=Trigger.fraction(0.8),
        window=2_000,
        config=GovernorConfig(max_passes=1),
        shrink_tail=False,
    )
    _, cut = next(steps)
    with pytest.raises(StopIteration) as done:
        steps.send(sized(1_258)(cut))
    result = done.value.value
    assert (result.passes, result.measure.tokens, result.on_target) == (1, 1_400, False)


def test_the_shrunk_tail_keeps_at_least_the_minimum_of_messages() -> None:
    # Three messages halve to one, but two must stay: the last attempt asks for two.
    done = passes(grow(20, 800), sized(1_300, 1_300, 1_300, 1_300), keep=Keep.messages(3))
    assert done.shrunk
    last = done.plans[-1]
    assert last.desired == last.length - 2


def test_a_token_trigger_sizes_the_tail_a_turn_start_may_keep() -> None:
    # Phase one walks back to a turn start while the tail stays within 70% of the trigger's
    # tokens, not of the window: under a 300-token trigger that is 210 tokens, and the
    # person's turn four messages back (403 tokens of tail) is too far; the cut stays where
    # the keep policy put it.
    msgs = [system(), user("task"), *grow(3, 300)[2:], user("q")]
    msgs += [calls("x"), result("x", "r" * 800), calls("y"), result("y", "r" * 800)]
    done = passes(msgs, sized(10), keep=Keep.messages(2), trigger=Trigger.tokens(300))
    first = done.plans[0]
    assert (first.boundary, first.phase) == (len(msgs) - 2, "forward")


def test_the_passes_honour_the_protection_the_window_and_the_turn_start_budget() -> None:
    msgs = grow(20, 300)
    pinned = msgs[5]
    protected = passes(msgs, sized(10, 10, 10, 10), protect=Protect(pin=lambda m: m is pinned))
    assert pinned in protected.messages
    by_share = passes(msgs, sized(10, 10, 10, 10), keep=Keep.fraction(0.1))
    assert by_share.plans[0].tokens_tail <= 200
    steps = iter_passes(
        msgs,
        count=tokens,
        overhead=50,
        keep=Keep.messages(1),
        trigger=Trigger.fraction(0.8),
        window=2_000,
        config=GovernorConfig(),
        turn_start_tail=0,
    )
    first, _ = next(steps)
    steps.close()
    assert first.phase != "turn-start"


def test_the_passes_keep_the_minimum_tail_the_governor_asks_for() -> None:
    done = passes(
        grow(20, 300), sized(10), keep=Keep.messages(0), config=GovernorConfig(min_tail_messages=5)
    )
    assert done.plans[0].tail_messages == 5
