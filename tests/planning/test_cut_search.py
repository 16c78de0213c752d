"""The search for a cut at its edges: each phase at the first and last boundary it may take,
the best effort's order of preference, what a plan says about its cut, and the keep
policies and protections at their limits. Counts are 10 tokens a message unless given."""

from __future__ import annotations

from typing import Any

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import SUMMARY_TAG, Message, Role, TextPart
from synopsis.planning import Keep, Protect, SplitPlan, plan_split
from tests.planning.helpers import calls, ones, result, say, system, user


def plan(
    messages: list[Message],
    keep: Keep,
    *,
    counts: list[int] | None = None,
    threshold: int = 1_000,
    **kw: Any,
) -> SplitPlan:
    p = plan_split(
        messages,
        ones(messages) if counts is None else counts,
        keep=keep,
        threshold=threshold,
        window=100_000,
        **kw,
    )
    assert p is not None
    return p


def tool_steps(n: int) -> list[Message]:
    """``n`` tool exchanges, one call and its result each: safe cuts between them, and no
    turn start among them."""
    out: list[Message] = []
    for i in range(n):
        out += [calls(f"c{i}"), result(f"c{i}")]
    return out


def synopsis_summary() -> Message:
    return Message(Role.USER, (TextPart(f"{SUMMARY_TAG}>earlier work</synopsis-summary>"),))


# ------------------------------------------------------------------------- the phases


def test_when_only_one_boundary_is_allowed_the_phases_still_run_in_order() -> None:
    # The first message is protected and one must stay: the cut can only fall at 2, a turn
    # start, which phase one takes.
    p = plan([user("task"), say("a"), user("b")], Keep.messages(1), min_tail=1)
    assert (p.boundary, p.phase) == (2, "turn-start")


def test_phase_three_walks_back_from_the_cut_just_before_the_one_asked_for() -> None:
    # Nothing to keep asked for, two messages that must stay: the cut at 8 splits the last
    # exchange, 9 would keep one message; phase three steps back to 7.
    msgs = [user("task"), *tool_steps(4), say("end")]
    p = plan(msgs, Keep.messages(0), min_tail=2)
    assert (p.boundary, p.phase) == (7, "within-80")
    assert p.summarize == (1, 2, 3, 4, 5, 6)
    assert p.reason == "cut at 7 instead of 10 (earlier, within-80): token budget"


def test_phase_three_takes_the_nearest_safe_cut_however_deep() -> None:
    # An exchange spans 1 to 5 (its result arrives after another call's): from 7, phase
    # three passes every cut inside it and takes 6.
    msgs = [user("task"), calls("a"), say("x"), calls("b"), result("b"), result("a")]
    p = plan([*msgs, calls("late"), result("late")], Keep.messages(1), min_tail=2)
    assert (p.boundary, p.phase, p.summarize) == (6, "within-80", (1, 2, 3, 4, 5))


def test_phase_three_stops_once_the_tail_passes_eighty_percent_of_the_threshold() -> None:
    msgs = [user("task"), *tool_steps(4), say("end")]
    # The tail from 7 holds 30 tokens: within 80% of a 38-token threshold (30.4), not of 37.
    assert plan(msgs, Keep.messages(0), min_tail=2, threshold=38).phase == "within-80"
    assert plan(msgs, Keep.messages(0), min_tail=2, threshold=37).phase == "best-effort"


def test_a_cut_at_the_first_message_keeps_every_token_after_it() -> None:
    msgs = [user("a"), say("b"), user("c"), say("d")]
    p = plan(msgs, Keep.messages(3), protect=Protect(first_user=False), min_tail=1)
    assert (p.boundary, p.summarize, p.tokens_tail) == (1, (0,), 30)


# ------------------------------------------------------------------------- the best effort


def test_the_best_effort_takes_the_longer_tail_of_two_cuts_as_near_as_each_other() -> None:
    # Safe cuts at 1, 3, 5 and 7; 4 is asked for and no cut keeps seven messages.
    msgs = [user("task"), *tool_steps(3)]
    p = plan(msgs, Keep.messages(3), min_tail=7)
    assert (p.boundary, p.desired, p.phase) == (3, 4, "best-effort")


def test_the_best_effort_keeps_the_tail_minimum_before_it_keeps_close() -> None:
    # Safe cuts at 3, 5, 7 and 9 (8 would split the model's last turn). With a tail budget
    # of a few tokens no phase applies; 7 keeps exactly the minimum of two, 9 keeps nothing.
    msgs = [user("task"), *tool_steps(3), say("x"), say("y")]
    p = plan(msgs, Keep.messages(0), min_tail=2, threshold=10)
    assert (p.boundary, p.phase) == (7, "best-effort")


def test_the_best_effort_summarizes_as_few_unfinished_calls_as_it_can() -> None:
    # The calls at 3 and 5 never got a result. No cut keeps eight messages, so the best
    # effort looks for the fewest unfinished calls first: cutting at 3 summarizes none.
    msgs = [user("task"), say("a"), user("b"), calls("q1"), user("c"), calls("q2")]
    msgs += [user("d"), say("e")]
    p = plan(msgs, Keep.messages(1), min_tail=8)
    assert (p.boundary, p.phase, p.unfinished_summarized) == (3, "best-effort", ())
    # With no cut before the first, the one that summarizes one (not two) is taken.
    later = plan(msgs[:2] + msgs[3:], Keep.messages(1), min_tail=8)
    assert later.unfinished_summarized == (2,)
    assert later.boundary == 4


def test_the_best_effort_never_cuts_where_nothing_would_be_summarized() -> None:
    # The one safe cut before the end is right after the protected head, where nothing
    # would be summarized: the whole exchange after it goes instead.
    msgs = [system(), user("task"), calls("a"), say("x"), result("a")]
    p = plan(msgs, Keep.messages(3))
    assert (p.boundary, p.phase, p.summarize) == (5, "best-effort", (2, 3, 4))


# ------------------------------------------------------------------------- what a plan says


def test_a_plan_says_why_its_cut_moved() -> None:
    orphaned = [result("zz", "stray"), user("t"), say("a"), user("b"), say("c")]
    p = plan(orphaned, Keep.messages(5), protect=Protect(first_user=False))
    assert p.reason == (
        "cut at 1 instead of 0 (later, forward): an orphaned result at message 0 may not be kept"
    )
    running = plan([user("t"), say("a"), user("b"), calls("r")], Keep.messages(0), min_tail=0)
    assert running.reason == (
        "cut at 2 instead of 4 (earlier, turn-start): the calls of message 3 may still be running"
    )
    split = plan(
        [user("t"), calls("a"), result("a"), say("x"), user("u"), say("y")],
        Keep.messages(4),
        min_tail=1,
        threshold=10,
    )
    assert split.reason == (
        "cut at 3 instead of 2 (later, forward): the desired cut would separate a tool call "
        "from its result"
    )
    budget = plan([user("task"), *tool_steps(4), say("end")], Keep.messages(0), min_tail=2)
    assert budget.reason == "cut at 7 instead of 10 (earlier, within-80): token budget"


def test_a_cut_asked_for_at_the_start_of_a_running_turn_blames_the_turn_start() -> None:
    # The running turn starts at 3; a cut asked for there moves back to the person's turn
    # at 2 for the tail budget, not because of the running call.
    p = plan([user("t"), say("a"), user("b"), calls("r")], Keep.messages(1), min_tail=0)
    assert p.reason == (
        "cut at 2 instead of 3 (earlier, turn-start): a turn start within the tail budget"
    )


# ------------------------------------------------------------------------- keep and protect


@pytest.mark.parametrize(
    "build",
    [
        lambda: Keep.messages("3"),  # type: ignore[arg-type]
        lambda: Keep.fraction("0.5"),  # type: ignore[arg-type]
        lambda: Keep.fraction(True),
        lambda: Protect(user_turns_tokens="5"),  # type: ignore[arg-type]
        lambda: plan([user("a"), say("b")], Keep.messages(1), min_tail="2"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_as_configuration(build: Any) -> None:
    with pytest.raises(ConfigurationError):
        build()


def test_policies_keep_their_kind_and_value() -> None:
    assert Keep.auto() == Keep("auto", 0)
    assert Keep.fraction(0.4).shrunk(0.5) == Keep("fraction", 0.2)


def test_a_token_budget_that_holds_everything_asks_for_a_cut_at_the_start() -> None:
    assert Keep.tokens(1_000).desired_boundary([10, 10, 10], 0, 100_000) == 0
    assert Keep.tokens(1_000).desired_boundary([10, 10, 10], 1, 100_000) == 1


def test_a_pinned_message_at_the_cut_is_kept_once_in_the_tail() -> None:
    msgs = [user("t"), say("a"), user("b"), say("c"), user("d"), say("e")]
    pinned = msgs[4]
    p = plan(msgs, Keep.messages(2), protect=Protect(pin=lambda m: m is pinned))
    assert p.boundary == 4
    assert 4 not in p.head
    out = p.apply(msgs, [say("summary")])
    assert sum(1 for m in out if m is pinned) == 1


def test_user_turns_older_than_a_summary_in_the_cut_are_still_kept() -> None:
    # A synopsis summary is user-voiced but no one's request: it is passed over, not a stop.
    msgs = [system(), user("task"), say("a"), user("q1"), say("b"), synopsis_summary()]
    msgs += [say("c"), user("now"), say("d")]
    p = plan(msgs, Keep.messages(2), protect=Protect(user_turns_tokens=100))
    assert 3 in p.head
    assert 5 in p.summarize


def test_user_turns_leave_one_message_to_summarize() -> None:
    # Both turns before the cut fit the bound and one answer is left to summarize.
    msgs = [system(), user("task"), user("q1"), say("a"), user("q2"), say("b"), user("now")]
    p = plan(msgs, Keep.messages(1), protect=Protect(user_turns_tokens=1_000))
    assert (p.head, p.summarize) == ((0, 1, 2), (3,))


def test_phase_three_may_walk_back_to_the_first_cut_after_the_head() -> None:
    # An exchange spans 2 to 6; the only safe cut in reach is 2, right after the head.
    msgs = [user("task"), user("more"), calls("a"), say("x"), calls("b"), result("b")]
    msgs += [result("a"), say("end")]
    p = plan(msgs, Keep.messages(0), min_tail=2)
    assert (p.boundary, p.phase, p.summarize) == (2, "within-80", (1,))


def test_phase_three_takes_a_tail_of_exactly_eighty_percent() -> None:
    msgs = [user("task"), *tool_steps(4), say("end")]
    counts = [10] * 9 + [20]  # the tail from 7 holds 40 tokens: 80% of 50
    p = plan(msgs, Keep.messages(0), counts=counts, min_tail=2, threshold=50)
    assert (p.boundary, p.phase) == (7, "within-80")


def test_the_best_effort_may_cut_right_after_the_head() -> None:
    msgs = [user("task"), user("more"), *tool_steps(3)]
    p = plan(msgs, Keep.messages(6), min_tail=9)
    assert (p.boundary, p.desired, p.phase) == (2, 2, "best-effort")


def test_a_plan_gives_every_reason_its_cut_moved() -> None:
    msgs = [user("t"), calls("a"), result("a"), result("zz", "stray"), say("x"), user("u")]
    p = plan(msgs, Keep.messages(4), protect=Protect(first_user=False))
    assert p.reason == (
        "cut at 4 instead of 2 (later, forward): the desired cut would separate a tool call "
        "from its result; an orphaned result at message 3 may not be kept"
    )


def test_the_limits_of_a_share_and_a_bound_of_nothing() -> None:
    assert Keep.fraction(0).desired_boundary([10, 10], 0, 100_000) == 2
    assert Protect(user_turns_tokens=0).user_turns_tokens == 0
