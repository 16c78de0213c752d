from __future__ import annotations

from typing import Any

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import (
    SUMMARY_TAG,
    Message,
    OpaquePart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    content_hash,
    message_id,
)
from synopsis.planning import Keep, Protect, SplitPlan, analyze, plan_split
from tests.planning.helpers import calls, ones, reasoning, result, say, summary, system, user

WINDOW = 100_000


FOUR = Keep.messages(4)


def plan(
    messages: list[Message],
    counts: list[int] | None = None,
    *,
    keep: Keep = FOUR,
    threshold: int = 10_000,
    **kw: Any,
) -> SplitPlan | None:
    return plan_split(
        messages,
        ones(messages) if counts is None else counts,
        keep=keep,
        threshold=threshold,
        window=WINDOW,
        **kw,
    )


def chat(turns: int) -> list[Message]:
    out = [system(), user("task")]
    for i in range(turns):
        out += [say(f"answer {i}"), user(f"question {i}")]
    return out


def test_a_plain_chat_keeps_the_last_messages_and_protects_the_head() -> None:
    msgs = chat(6)  # 14 messages
    p = plan(msgs)
    assert p is not None
    # Four messages would start at an answer; the cut walks back to the question before it.
    assert (p.desired, p.boundary, p.phase) == (10, 9, "turn-start")
    assert p.head == (0, 1)
    assert p.summarize == tuple(range(2, 9))
    assert p.tail_messages == 5
    assert (p.tokens_head, p.tokens_summarized, p.tokens_tail) == (20, 70, 50)
    assert "cut at 9 instead of 10 (earlier, turn-start)" in p.reason
    out = p.apply(msgs, [summary()])
    assert out[:2] == tuple(msgs[:2])
    assert out[2] == summary()
    assert out[3:] == tuple(msgs[9:])
    exact = plan(msgs, keep=Keep.messages(5))
    assert exact is not None
    assert (exact.boundary, exact.reason) == (9, "kept the last 5 messages as asked (turn-start)")


def test_a_keep_boundary_on_a_tool_result_moves_to_keep_the_call_with_it() -> None:
    # A worked case: the message at the keep boundary is a tool result.
    msgs = [system(), user("task"), say("a"), user("b"), calls("c1"), result("c1"), say("done")]
    p = plan(msgs, keep=Keep.messages(2))
    assert p is not None
    assert p.desired == 5
    assert p.boundary == 3
    assert p.summarize == (2,)
    assert "separate a tool call from its result" in p.reason


def test_parallel_calls_with_results_apart_from_their_call_form_one_unit() -> None:
    msgs = [
        system(),
        user("task"),
        calls("a", "b"),
        result("b"),
        say("thinking out loud"),
        result("a"),
        user("next"),
        say("ok"),
    ]
    s = analyze(msgs)
    assert [s.is_safe(b) for b in range(len(msgs) + 1)] == [
        True, True, True, False, False, False, True, True, True,
    ]  # fmt: skip
    assert list(s.unit(4)) == [2, 3, 4, 5]
    p = plan(msgs, keep=Keep.messages(4))
    assert p is not None
    assert p.boundary == 6


def test_reused_ids_pair_with_the_nearest_open_call() -> None:
    msgs = [user("t"), calls("x"), result("x"), say("a"), calls("x"), user("wait"), result("x")]
    s = analyze(msgs)
    assert s.is_safe(3)
    assert not s.is_safe(5)
    assert s.orphans == ()


def test_a_running_call_at_the_end_is_kept_never_summarized() -> None:
    msgs = [*chat(5), calls("r1", "r2"), result("r2")]
    s = analyze(msgs)
    assert s.running == len(msgs) - 2
    p = plan(msgs, keep=Keep.messages(1), min_tail=0)
    assert p is not None
    assert p.boundary <= len(msgs) - 2
    assert "may still be running" in p.reason


def test_orphaned_results_are_never_kept() -> None:
    msgs = [*chat(5), result("ghost"), say("x"), user("y"), say("z")]
    s = analyze(msgs)
    ghost = len(msgs) - 4
    assert s.orphans == (ghost,)
    p = plan(msgs, keep=Keep.messages(6))
    assert p is not None
    assert p.boundary > ghost
    assert "orphaned result" in p.reason


def test_a_result_recorded_before_its_call_is_corrupt_and_summarized() -> None:
    msgs = [user("t"), result("late"), calls("late"), say("a"), user("b"), say("c")]
    s = analyze(msgs)
    assert s.orphans == (1,)
    assert s.dangling == (2,)
    p = plan(msgs, keep=Keep.messages(5))
    assert p is not None
    assert 1 in p.summarize


def test_a_reasoning_item_stays_with_what_it_produced() -> None:
    msgs = [user("t"), say("a"), user("b"), reasoning(), say("answer"), user("c"), say("d")]
    assert not analyze(msgs).is_safe(4)
    p = plan(msgs, keep=Keep.messages(3))
    assert p is not None
    assert p.boundary == 2
    no_turns = [user("t"), say("a"), reasoning(), say("answer"), say("d")]
    q = plan(no_turns, keep=Keep.messages(2), min_tail=0)
    assert q is not None
    # Consecutive assistant messages are one model turn: it goes whole.
    assert (q.boundary, q.phase) == (5, "forward")
    assert q.summarize == (1, 2, 3, 4)


def test_a_model_turn_sent_as_separate_items_is_never_cut() -> None:
    # Responses sends [reasoning, function_call, function_call] as items; a cut between the
    # calls would orphan one output (R2) or strand a call from its reasoning (R4).
    running = [system(), user("hi"), say("a"), user("go"), reasoning(), calls("c1"), calls("c2")]
    s = analyze(running)
    assert s.running == 4
    p = plan(running, keep=Keep.messages(1), threshold=10, min_tail=1)
    assert p is not None
    assert p.boundary <= 4
    answered = [user("t"), say("x"), user("go"), reasoning(), say("on it"), calls("c1")]
    answered += [result("c1"), say("done"), user("next"), say("ok")]
    s = analyze(answered)
    assert [b for b in range(3, 8) if s.is_safe(b)] == [3, 7]
    partial = [user("t"), say("x"), user("go"), calls("c1"), calls("c2"), result("c2")]
    assert analyze(partial).running == 3


def test_first_user_and_systems_are_protected_and_can_be_released() -> None:
    msgs = [system(), user("the task"), say("a"), system("late rule"), user("b"), say("c")]
    msgs += [user("d"), say("e")]
    p = plan(msgs, keep=Keep.messages(2))
    assert p is not None
    assert p.head == (0, 1, 3)
    assert 3 not in p.summarize
    bare = plan(msgs, keep=Keep.messages(2), protect=Protect(system=False, first_user=False))
    assert bare is not None
    assert bare.head == ()
    assert bare.summarize == tuple(range(6))


def test_pins_by_id_and_by_predicate_keep_their_whole_unit() -> None:
    msgs = [*chat(2), calls("c1"), result("c1", "pin me"), *chat(3)[2:]]
    pinned_id = message_id(msgs[7], 7)
    by_id = plan(msgs, keep=Keep.messages(2), protect=Protect(pinned=[pinned_id]))
    assert by_id is not None
    assert {6, 7} <= set(by_id.head)
    by_pred = plan(msgs, keep=Keep.messages(2), protect=Protect(pin=lambda m: "pin" in m.text))
    assert by_pred is not None
    assert by_pred.head == by_id.head


def test_user_turns_are_kept_newest_first_up_to_their_token_bound() -> None:
    msgs = chat(6)
    counts = ones(msgs)
    p = plan(msgs, counts, keep=Keep.messages(2), protect=Protect(user_turns_tokens=25))
    assert p is not None
    assert p.boundary == 11
    kept_users = [i for i in p.head if i not in (0, 1)]
    assert kept_users == [7, 9]
    assert not set(kept_users) & set(p.summarize)


def test_a_user_turn_exactly_the_size_of_what_is_left_of_the_bound_is_kept() -> None:
    # Two turns of 10 tokens under a bound of 20: the second fills the bound to the token,
    # and a bound is inclusive ("up to"), so both are kept.
    msgs = chat(6)
    p = plan(msgs, ones(msgs), keep=Keep.messages(2), protect=Protect(user_turns_tokens=20))
    assert p is not None
    assert [i for i in p.head if i not in (0, 1)] == [7, 9]
    one_short = plan(msgs, keep=Keep.messages(2), protect=Protect(user_turns_tokens=19))
    assert one_short is not None
    assert [i for i in one_short.head if i not in (0, 1)] == [9]


def test_user_turns_kept_by_tokens_always_leave_one_to_summarize() -> None:
    # Every message before the tail is a person's turn and all of them fit the bound: the
    # oldest is still summarized, or the plan would summarize nothing.
    msgs = [user(f"turn {i}") for i in range(4)] + [say("done")]
    p = plan(
        msgs, keep=Keep.messages(1), protect=Protect(user_turns_tokens=1_000, first_user=False)
    )
    assert p is not None
    assert (p.summarize, p.head, p.boundary) == ((0,), (1, 2), 3)


def test_keep_by_tokens_and_by_fraction_of_the_window() -> None:
    msgs = chat(6)
    by_tokens = plan(msgs, keep=Keep.tokens(35))
    assert by_tokens is not None
    assert by_tokens.desired == 11
    by_share = plan(msgs, keep=Keep.fraction(0.0005))  # 50 tokens of the 100k window
    assert by_share is not None
    assert by_share.desired == 9


def test_phase_one_walks_back_to_a_turn_start_within_the_budget() -> None:
    msgs = [system(), user("t"), say("a"), user("b"), calls("c"), result("c"), say("d")]
    msgs += [calls("e"), result("e"), say("f")]
    p = plan(msgs, keep=Keep.messages(5))
    assert p is not None
    assert (p.boundary, p.phase) == (3, "turn-start")


def test_a_turn_start_tail_bound_of_its_own_keeps_phase_one_from_walking_far_back() -> None:
    msgs = [system(), user("t"), say("a"), user("b"), calls("c"), result("c"), say("d")]
    msgs += [calls("e"), result("e"), say("f")]
    counts = [10] * len(msgs)
    # zrb's bound (70% of the threshold) lets phase 1 keep 70 tokens to reach the turn at 3;
    # a bound of 50 does not, so the cut goes forward to a safe boundary instead.
    wide = plan(msgs, counts, keep=Keep.messages(5), threshold=100)
    narrow = plan(msgs, counts, keep=Keep.messages(5), threshold=100, turn_start_tail=50)
    assert wide is not None
    assert narrow is not None
    assert (wide.boundary, wide.phase) == (3, "turn-start")
    assert narrow.boundary > 3
    assert narrow.phase != "turn-start"


def test_phase_two_goes_forward_when_no_turn_start_fits() -> None:
    msgs = [system(), user("t"), calls("a"), result("a"), calls("b"), result("b"), say("x")]
    msgs += [calls("c"), result("c"), say("y")]
    p = plan(msgs, keep=Keep.messages(5))
    assert p is not None
    assert (p.boundary, p.phase) == (6, "forward")


def test_phase_three_takes_a_bigger_safe_tail_within_80_percent() -> None:
    msgs = [system(), user("t"), say("x"), calls("a"), result("a"), calls("b"), say("b?")]
    msgs += [result("b"), say("end")]
    counts = [10, 10, 10, 10, 10, 10, 10, 10, 10]
    p = plan(msgs, counts, keep=Keep.messages(3), threshold=100)
    assert p is not None
    assert (p.boundary, p.phase) == (5, "within-80")


def test_best_effort_prefers_summarizing_fewer_unfinished_calls() -> None:
    msgs = [system(), user("t"), say("x"), user("y"), calls("dead"), say("m")]
    msgs += [calls("a"), result("a")]
    p = plan(msgs, keep=Keep.messages(1), min_tail=6)
    assert p is not None
    assert (p.boundary, p.phase) == (4, "best-effort")
    assert p.unfinished_summarized == ()
    early = [system(), user("t"), calls("dead"), user("moving on"), calls("a"), result("a")]
    forced = plan(early, keep=Keep.messages(1), min_tail=4)
    assert forced is not None
    assert forced.unfinished_summarized == (2,)


def test_no_plan_when_nothing_can_go_and_a_whole_unit_goes_together() -> None:
    assert plan([user("t"), calls("running")], keep=Keep.messages(0)) is None
    assert plan([system(), user("only")], keep=Keep.messages(0)) is None
    whole = [calls("a", "b"), result("a"), say("x"), result("b")]
    p = plan(whole, keep=Keep.messages(1), min_tail=0)
    assert p is not None
    assert p.boundary == 4  # the only safe cut keeps nothing after the one unit
    assert plan([], keep=Keep.messages(0)) is None


def test_keep_shrinks_for_further_passes() -> None:
    assert Keep.messages(6).shrunk(0.5) == Keep.messages(3)
    assert Keep.tokens(1000).shrunk(0.5) == Keep.tokens(500)
    assert Keep.fraction(0.3).shrunk(0.5).value == pytest.approx(0.15)
    assert Keep.tokens(8000).describe() == "the last 8,000 tokens"
    assert Keep.fraction(0.25).describe() == "the last 25% of the window"


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Keep.messages(-1), "Keep.messages"),
        (lambda: Keep.tokens(1.5), "Keep.tokens"),  # type: ignore[arg-type]
        (lambda: Keep.fraction(1.0), "Keep.fraction"),
        (lambda: Keep.fraction(float("nan")), "Keep.fraction"),
        (lambda: Protect(user_turns_tokens=-5), "user_turns_tokens"),
        (lambda: plan([user("a")], [1, 2]), "counts has 2 entries for 1 messages"),
        (lambda: plan([user("a")], min_tail=-1), "min_tail"),
        (lambda: plan(chat(6)).apply(chat(2), []), "plan is for 14 messages, not 6"),  # type: ignore[union-attr]
    ],
)
def test_bad_arguments_are_refused_with_a_sentence(build, match) -> None:
    with pytest.raises(ConfigurationError, match=match):
        build()


def test_an_orphan_is_never_protected_even_when_pinned() -> None:
    stray = result("zz", "stray")
    msgs = [system(), user("hi"), stray, say("a"), user("b"), say("c"), user("d"), say("e")]
    p = plan(msgs, keep=Keep.messages(2), protect=Protect(pin=lambda m: m is stray))
    assert p is not None
    assert 2 not in p.head
    assert 2 in p.summarize


def test_a_pin_by_content_hash_survives_the_history_shifting() -> None:
    msgs = [*chat(2), say("remember: the API key lives in vault/prod"), *chat(4)[2:]]
    digest = content_hash(msgs[6])
    first = plan(msgs, keep=Keep.messages(2), protect=Protect(pinned=[digest]))
    assert first is not None
    assert 6 in first.head
    shifted = list(first.apply(msgs, [summary()]))
    shifted += [say("more"), user("more")]
    second = plan(shifted, keep=Keep.messages(2), protect=Protect(pinned=[digest]))
    assert second is not None
    kept = [shifted[i] for i in second.head]
    assert msgs[6] in kept


def test_an_earlier_summary_is_summarized_again_not_protected() -> None:
    earlier = user(f'{SUMMARY_TAG} depth="0">what happened before</synopsis-summary>')
    msgs = [system(), earlier, say("a"), user("b"), say("c"), user("d"), say("e")]
    p = plan(msgs, keep=Keep.messages(2), protect=Protect(user_turns_tokens=1_000))
    assert p is not None
    assert 1 in p.summarize
    assert 1 not in p.head
    assert 3 in p.head  # a person's turn is still kept by the user-turn bound


def test_a_pinned_call_whose_unit_holds_an_orphan_is_not_kept() -> None:
    pinned_call = calls("a")
    msgs = [system(), user("t"), pinned_call, result("zz"), result("a"), say("x"), user("y")]
    msgs += [say("z")]
    p = plan(msgs, keep=Keep.messages(2), protect=Protect(pin=lambda m: m is pinned_call))
    assert p is not None
    assert p.head == (0, 1)
    assert {2, 3, 4} <= set(p.summarize)


def test_a_result_inside_its_own_call_message_ties_nothing_else() -> None:
    server = Message(Role.ASSISTANT, (ToolCallPart("s", "web_search"), ToolResultPart("s", "hits")))
    msgs = [user("t"), server, user("more"), say("ok")]
    s = analyze(msgs)
    assert all(s.is_safe(b) for b in range(len(msgs) + 1))
    assert 1 not in s.tied


def test_when_no_phase_finds_a_cut_within_the_minimum_tail_the_best_effort_does() -> None:
    msgs = [system(), user("t"), calls("a"), say("x"), result("a"), say("y")]
    p = plan(msgs, keep=Keep.messages(3), min_tail=3)
    assert p is not None
    assert (p.boundary, p.phase) == (5, "best-effort")
    assert p.summarize == (2, 3, 4)


def _compaction(fmt: str) -> Message:
    """A provider's compaction as its converter decodes it: an OpenAI ``compaction`` item
    (an assistant message of its own) or an Anthropic block opening an assistant turn."""
    if fmt == "responses":
        item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"}
        return Message(Role.ASSISTANT, (OpaquePart("compaction", item),))
    block = {"type": "compaction", "content": "Summary so far", "signature": "s"}
    parts = (OpaquePart("compaction", block, "Summary so far"), TextPart("going on"))
    return Message(Role.ASSISTANT, parts)


@pytest.mark.parametrize("fmt", ["responses", "anthropic"])
def test_a_providers_compaction_and_all_before_it_are_kept_never_summarized(fmt: str) -> None:
    msgs = [*chat(3), _compaction(fmt), user("go on"), *chat(4)[2:]]
    at = 8
    assert analyze(msgs).compacted == at
    for keep in range(len(msgs)):
        p = plan(msgs, keep=Keep.messages(keep), min_tail=0)
        # nothing before it is summarized again, and the summary goes after it
        assert p is None or (set(range(at + 1)) <= set(p.head) and min(p.summarize) > at)
    p = plan(msgs, keep=Keep.messages(2))
    assert p is not None
    assert p.head == tuple(range(at + 1))
    # with a later one, the later one is the boundary
    again = [*msgs, _compaction(fmt), user("and on")]
    assert analyze(again).compacted == len(msgs)
    late = plan(again, keep=Keep.messages(1))
    assert late is not None
    assert late.summarize == (len(again) - 1,)  # all it may summarize lies after it
    assert analyze(chat(2)).compacted is None
