"""How a compaction shares out the window: the target, the summary's share between its floor
and ceiling, the verbatim tail."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from synopsis.errors import ConfigurationError
from synopsis.planning import Keep
from synopsis.planning.room import Room, share_room, summary_budget

BASE: dict[str, Any] = {
    "window": 100_000,
    "limit": 90_000,
    "fixed": 10_000,
    "target_ratio": 0.45,
    "reset_ratio": 0.6,
    "summary_ratio": 0.3,
    "floor": 256,
    "ceiling": 8_000,
}


def room(**changes: Any) -> Room:
    return share_room(**{**BASE, **changes})


def test_the_room_is_shared_between_summary_and_tail() -> None:
    # The passes stop under the reset ratio (60k); the target keeps 0.45 / 0.6 = 75% of what
    # the fixed part leaves under that line: 10k + 75% of 50k. Of the 37.5k free, the
    # summary would take 30% (11.25k) but its ceiling is 8k; the tail takes the rest.
    assert room() == Room(target=47_500, fixed=10_000, summary=8_000, tail=29_500)
    assert room(ceiling=20_000) == Room(47_500, 10_000, 11_250, 26_250)


def test_the_target_follows_the_trigger_the_reset_ratio_and_the_limit() -> None:
    # A trigger below the reset ratio is the line the passes aim under: 10k + 75% of 10k.
    assert room(threshold=20_000).target == 17_500
    assert room(reset_ratio=0.9).target == 10_000 + int(0.5 * 80_000)
    assert room(target_ratio=0.9, reset_ratio=0.95, limit=40_000).target == 40_000
    # Never on the line itself: a summary a few tokens over its share would cost a pass.
    assert room(target_ratio=1.0, reset_ratio=1.0, limit=100_000).target == 10_000 + 81_000


def test_the_default_ratios_land_at_half_the_window() -> None:
    default = share_room(**{**BASE, "fixed": 0, "target_ratio": 0.5, "reset_ratio": 0.7})
    assert default.target == 50_000


def test_a_large_fixed_part_gets_the_share_of_what_it_leaves_on_top() -> None:
    # A 10k system prompt in a 32k window: 75% of the 9.2k it leaves under the reset ratio.
    big = room(window=32_000, limit=28_000, fixed=10_000)
    assert big.target == 10_000 + 6_900
    assert (big.summary, big.tail) == (2_070, 4_830)


def test_a_small_room_still_gets_the_floor() -> None:
    # 0.5% of what is free is under the floor: the summary gets the floor, the tail the rest.
    small = room(summary_ratio=0.005)
    assert small.summary == 256
    assert small.tail == small.target - small.fixed - 256


def test_the_ceiling_wins_over_the_floor() -> None:
    assert room(floor=5_000, ceiling=1_000).summary == 1_000
    assert summary_budget(10, floor=5_000, ceiling=1_000) == 1_000
    assert summary_budget(3_000, floor=256, ceiling=8_000) == 3_000
    assert summary_budget(100, floor=256, ceiling=8_000) == 256
    assert summary_budget(9_000, floor=256, ceiling=8_000) == 8_000


def test_a_fixed_part_beyond_the_limit_leaves_no_tail() -> None:
    crowded = room(fixed=95_000)
    assert crowded.target == 90_000
    assert room(fixed=70_000).target == 70_000  # over the aim: nothing more
    assert crowded.tail == 0
    assert crowded.summary == 256  # the floor, even though nothing is free


def test_a_callers_tail_leaves_the_summary_what_remains() -> None:
    # The tail leaves 2.5k of the 37.5k free; the summary still gets its 30% share (11.25k):
    # the passes shorten what then does not fit, and a summary cut to its floor forgets.
    assert room(tail=35_000, ceiling=20_000) == Room(47_500, 10_000, 11_250, 35_000)
    assert room(tail=20_000, ceiling=20_000).summary == 17_500  # what the tail leaves
    # Within the same bounds: never above the ceiling, never under the floor.
    assert room(tail=1_000).summary == 8_000
    assert room(tail=37_400, summary_ratio=0.001) == Room(47_500, 10_000, 256, 37_400)
    assert room(tail=0).summary == 8_000


@pytest.mark.parametrize("name", ["target_ratio", "summary_ratio"])
@pytest.mark.parametrize("value", [0, -0.1, 1.01, 2, float("nan"), True, "0.5", None])
def test_bad_ratios_are_configuration_errors(name: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=name):
        room(**{name: value})


@pytest.mark.parametrize("name", ["target_ratio", "summary_ratio"])
def test_a_ratio_of_one_is_allowed(name: str) -> None:
    assert room(**{name: 1}).target > 0


@given(
    window=st.integers(1, 2_000_000),
    reserve=st.integers(0, 100_000),
    fixed=st.integers(0, 1_000_000),
    target_ratio=st.floats(0.01, 1.0),
    reset_ratio=st.floats(0.01, 1.0),
    summary_ratio=st.floats(0.01, 1.0),
    floor=st.integers(0, 10_000),
    ceiling=st.integers(1, 20_000),
)
def test_the_shares_never_exceed_the_target(
    window: int,
    reserve: int,
    fixed: int,
    target_ratio: float,
    reset_ratio: float,
    summary_ratio: float,
    floor: int,
    ceiling: int,
) -> None:
    assume(reserve < window)
    shared = share_room(
        window=window,
        limit=window - reserve,
        fixed=fixed,
        target_ratio=target_ratio,
        reset_ratio=reset_ratio,
        summary_ratio=summary_ratio,
        floor=floor,
        ceiling=ceiling,
    )
    assert shared.target <= window - reserve
    if fixed < reset_ratio * window:
        assert shared.target <= reset_ratio * window
    if fixed <= window - reserve:
        assert shared.target >= fixed
    assert shared.summary <= ceiling
    assert shared.tail >= 0
    if fixed + floor <= shared.target:
        assert shared.fixed + shared.summary + shared.tail <= shared.target
        assert shared.summary >= min(floor, ceiling)


@given(
    fixed=st.integers(0, 600_000),
    tail=st.integers(0, 600_000),
    target_ratio=st.floats(0.01, 1.0),
    floor=st.integers(0, 10_000),
    ceiling=st.integers(1, 20_000),
)
def test_a_callers_tail_is_kept_and_the_summary_fills_what_it_leaves(
    fixed: int, tail: int, target_ratio: float, floor: int, ceiling: int
) -> None:
    assume(floor <= ceiling)
    shared = share_room(
        window=1_000_000,
        limit=1_000_000,
        fixed=fixed,
        target_ratio=target_ratio,
        reset_ratio=1.0,
        summary_ratio=0.3,
        floor=floor,
        ceiling=ceiling,
        tail=tail,
    )
    assert shared.tail == tail
    assert floor <= shared.summary <= ceiling
    free = max(0, shared.target - fixed)
    # The summary takes all the tail leaves, and at least its share, within its bounds.
    expected = min(max(free - tail, int(0.3 * free), floor), ceiling)
    assert shared.summary == expected
    if tail + max(floor, int(0.3 * free)) <= free:
        assert shared.fixed + shared.summary + shared.tail <= shared.target


def test_an_automatic_tail_is_the_one_the_room_leaves() -> None:
    auto = Keep.auto()
    assert auto.kind == "auto"
    assert auto.describe() == "the tail the target leaves room for"
    # Resolved to tokens before any pass runs; unresolved, it keeps nothing, and shrinking
    # it is a token policy like any other.
    assert auto.desired_boundary([10, 10, 10], 0, 1_000) == 3
    assert auto.shrunk(0.5) == Keep.tokens(0)


@pytest.mark.parametrize("name", ["target_ratio", "summary_ratio", "reset_ratio"])
def test_a_refused_ratio_is_named_exactly(name: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        room(**{name: 1.5})
    assert str(refused.value) == f"{name} must be above 0 and at most 1, got 1.5"
