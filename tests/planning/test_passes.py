from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.planning import GovernorConfig, Keep, Trigger, run_passes
from tests.planning.helpers import say, summary, system, user

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
