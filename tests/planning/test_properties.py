"""Whatever the history and the budget: no plan breaks a tool unit or keeps an orphan, and
every compacted result, rebuilt for its provider, is one the provider accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import event, given, settings
from hypothesis import strategies as st

from synopsis.formats import decode
from synopsis.messages import Role, is_reasoning_only
from synopsis.pairing import pair_tool_calls
from synopsis.planning import Keep, Protect, analyze, plan_split
from synopsis.validation import check, get_profile, repair_messages
from tests.formats.strategies import responses_item
from tests.planning.helpers import summary
from tests.strategies import Style, any_history, valid_history

if TYPE_CHECKING:
    from synopsis.messages import Message

KEEPS = st.one_of(
    st.integers(0, 12).map(Keep.messages),
    st.integers(0, 400).map(Keep.tokens),
    st.floats(0, 0.5).map(Keep.fraction),
)
COUNTS = st.integers(1, 60)
STYLES: dict[Style, list[str]] = {
    "tool": ["openai", "openai-strict", "responses"],
    "user": ["anthropic", "gemini", "responses"],
}
STYLE_NAMES: list[Style] = ["tool", "user"]
# Histories of Responses items long enough to hold a few model turns: most of those of
# eight items or fewer had nothing before the kept tail to cut.
RESPONSES = st.lists(responses_item(), min_size=6, max_size=24).map(
    lambda items: list(decode(items, "responses").messages)
)


def kept_indices(plan, n: int) -> set[int]:
    return set(plan.head) | set(range(plan.boundary, n))


def assert_units_whole(msgs: list[Message], plan) -> None:
    kept = kept_indices(plan, len(msgs))
    assert kept.isdisjoint(plan.summarize)
    assert kept | set(plan.summarize) == set(range(len(msgs)))
    pairing = pair_tool_calls(msgs)
    for call, results in pairing.result_of.items():
        for r in results:
            assert (call[0] in kept) == (r[0] in kept), (call, r)
    for orphan in pairing.orphans:
        assert orphan[0] not in kept
    for i in range(len(msgs) - 1):
        if is_reasoning_only(msgs[i]) and msgs[i + 1].role is Role.ASSISTANT:
            assert (i in kept) == (i + 1 in kept)
    running = analyze(msgs).running
    if running is not None:
        assert running in kept


@st.composite
def planned(draw, base):
    msgs = draw(base)
    counts = draw(st.lists(COUNTS, min_size=len(msgs), max_size=len(msgs)))
    keep = draw(KEEPS)
    threshold = draw(st.integers(10, 2_000))
    protect = Protect(
        first_user=draw(st.booleans()),
        user_turns_tokens=draw(st.none() | st.integers(0, 100)),
    )
    min_tail = draw(st.integers(0, 4))
    plan = plan_split(
        msgs,
        counts,
        keep=keep,
        threshold=threshold,
        window=10_000,
        protect=protect,
        min_tail=min_tail,
    )
    event("no plan" if plan is None else f"plan ({plan.phase})")
    return msgs, plan


@settings(deadline=None)
@given(st.sampled_from(STYLE_NAMES).flatmap(any_history).flatmap(lambda h: planned(st.just(h))))
def test_no_plan_breaks_a_unit_or_keeps_an_orphan(case) -> None:
    msgs, plan = case
    if plan is not None:
        assert_units_whole(msgs, plan)
        assert plan.summarize


@settings(deadline=None)
@given(
    st.sampled_from(STYLE_NAMES).flatmap(lambda s: st.tuples(st.just(s), valid_history(s))),
    st.data(),
)
def test_every_compacted_valid_history_stays_valid_for_its_providers(case, data) -> None:
    style, msgs = case
    _, plan = data.draw(planned(st.just(msgs)))
    if plan is None:
        return
    assert_units_whole(msgs, plan)
    out = plan.apply(msgs, [summary()])
    for name in STYLES[style]:
        profile = get_profile(name)
        rebuilt = repair_messages(out, profile).messages
        problems = [p for p in check(rebuilt, profile) if not p.conservative]
        assert problems == [], (name, problems)


@settings(deadline=None)
@given(RESPONSES, st.data())
def test_responses_items_one_per_message_keep_their_model_turns(msgs, data) -> None:
    # Responses decodes one item per message: reasoning, function calls and outputs arrive as
    # separate messages, the shape where a cut inside one model turn is easiest to make.
    _, plan = data.draw(planned(st.just(msgs)))
    if plan is None:
        return
    assert_units_whole(msgs, plan)
    kept = kept_indices(plan, len(msgs))
    split = 0 < plan.desired < len(msgs) and all(
        msgs[i].role is Role.ASSISTANT for i in (plan.desired - 1, plan.desired)
    )
    event("the cut asked for lies inside a model turn" if split else "it does not")
    for i in range(len(msgs) - 1):
        if msgs[i].role is Role.ASSISTANT and msgs[i + 1].role is Role.ASSISTANT:
            assert (i in kept) == (i + 1 in kept)
