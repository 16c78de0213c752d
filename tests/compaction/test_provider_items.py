"""The providers' own items through compaction, in the Responses and Anthropic formats: a
history mixing them with ordinary tool calls, cut at every place the planner may cut it and
compacted by ``compact`` at budgets drawn from its size, comes out valid for its provider,
each of those items it keeps byte for byte, every item it does not keep in the store, and a
provider's compaction with everything before it where it was (it already stands for them:
nothing before it is summarized again, nothing is moved after it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hypothesis import event, given, settings
from hypothesis import strategies as st

import synopsis
from synopsis.formats import anthropic, decode, encode, responses
from synopsis.messages import Message, Role, TextPart, holds_compaction
from synopsis.planning import Keep, plan_split
from synopsis.stores import MemoryStore
from synopsis.validation import get_profile, repair_messages, validate
from tests.compaction.test_properties import COUNTER, MIN_TOKENS, agent_history, bulk
from tests.formats.provider_items import special, with_anthropic_items, with_responses_items

if TYPE_CHECKING:
    from collections.abc import Sequence

Format = Literal["responses", "anthropic"]
FORMATS: list[Format] = ["responses", "anthropic"]


@dataclass(frozen=True)
class History:
    format: Format
    items: list[dict[str, Any]]
    system: Any

    def decoded(self) -> tuple[Message, ...]:
        return decode(self.items, self.format, system=self.system).messages


@st.composite
def histories(draw: st.DrawFn, fmt: Format) -> History:
    """An agent's history in ``fmt`` (long enough for a summary to save something) with the
    provider's own items put in."""
    raw = draw(agent_history("tool" if fmt == "responses" else "user", reasoning=False))
    copies = draw(st.integers(10, 30))
    history = bulk(raw, copies)
    while COUNTER.count_messages(history) < MIN_TOKENS:
        copies *= 2
        history = bulk(raw, copies)
    if fmt == "responses":
        items = draw(with_responses_items(responses.encode(history).messages))
        return History(fmt, items, None)
    wire = anthropic.encode(history)
    return History(fmt, draw(with_anthropic_items(wire.messages)), wire.system)


def _last_compaction(messages: Sequence[Message]) -> int | None:
    return max((i for i, m in enumerate(messages) if holds_compaction(m)), default=None)


def _blocks(items: Sequence[Any]) -> list[Any]:
    """Every item, and for Anthropic every block of a message's content, in order."""
    out: list[Any] = []
    for item in items:
        out.append(item)
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list):
            out.extend(content)
    return out


def _specials(items: Sequence[Any]) -> list[str]:
    """The providers' own items and blocks of ``items``, each as its JSON text (keys in their
    order: the bytes a client sends)."""
    return [json.dumps(b) for b in _blocks(items) if special(b)]


# ---------------------------------------------------------------- at every cut point


@settings(deadline=None)
@given(st.sampled_from(FORMATS).flatmap(histories))
def test_every_cut_keeps_a_providers_compaction_and_all_before_it(history: History) -> None:
    messages = history.decoded()
    profile = get_profile(history.format)
    last = _last_compaction(messages)
    event("with a provider's compaction" if last is not None else "without one")
    summary = Message(Role.USER, (TextPart("<synopsis-summary> earlier turns"),))
    counts = [COUNTER.count_message(m) for m in messages]
    for kept in range(len(messages) + 1):
        plan = plan_split(
            messages, counts, keep=Keep.messages(kept), threshold=10**6, window=10**6, min_tail=0
        )
        if plan is None:
            continue
        if last is not None:
            assert set(range(last + 1)) <= set(plan.head)
            assert min(plan.summarize) > last
        out = repair_messages(plan.apply(messages, [summary]), profile).messages
        wire = encode(out, history.format)
        assert validate(wire.messages, profile, format=history.format, system=wire.system) == []
        # what is kept of the providers' own items is kept byte for byte
        assert set(_specials(wire.messages)) <= set(_specials(history.items))


# ---------------------------------------------------------------- through compact


@st.composite
def budgets(draw: st.DrawFn) -> tuple[History, int, Keep]:
    history = draw(st.sampled_from(FORMATS).flatmap(histories))
    tokens = COUNTER.count_messages(history.decoded())
    # from a little over the trigger to past the whole window, as in test_properties
    window = int(tokens / draw(st.floats(0.85, 1.3)))
    keep = draw(st.one_of(st.just(Keep.auto()), st.integers(0, 6).map(Keep.messages)))
    return history, window, keep


@settings(deadline=None)
@given(budgets(), st.sampled_from(["summarize", "clear,summarize", "clear"]))
def test_compact_keeps_the_providers_items_valid_exact_and_recallable(
    case: tuple[History, int, Keep], strategy: str
) -> None:
    history, window, keep = case
    store = MemoryStore()
    compactor = synopsis.Compactor(
        context_window=window,
        reserve_output_tokens=window // 10,
        keep=keep,
        provider=history.format,
        store=store,
        session_id="p",
        min_messages=0,
        strategy=strategy,
        clear_at_least=0,
        environ={},
    )
    sent = json.dumps([history.items, history.system])
    try:
        result = compactor.compact(history.items, format=history.format, system=history.system)
    except synopsis.BudgetUnreachableError:
        event("outcome: unreachable")
        assert json.dumps([history.items, history.system]) == sent
        return
    event(f"outcome: {result.code}{'' if result.compacted else ' (not compacted)'}")
    out: list[Any] = result.messages
    system = result.system
    assert validate(out, history.format, format=history.format, system=system) == []
    # The providers' own items that are kept are the same bytes.
    kept = _specials(out)
    assert set(kept) <= set(_specials(history.items))
    # A provider's compaction and everything before it are where they were: none of them is
    # summarized or moved, and nothing is put before it. A message there that a reduction
    # made smaller (thinking dropped, an old argument cut) has its original in the store.
    stored = [json.loads(m.data) for m in store.recall("p")]
    last = _last_compaction(history.decoded())
    event("with a provider's compaction" if last is not None else "without one")
    if last is not None:
        lead = len(history.decoded()) - len(history.items)
        end = last - lead + 1
        assert json.dumps(out[end - 1]) == json.dumps(history.items[end - 1])
        for given_, returned in zip(history.items[:end], out[:end], strict=True):
            assert returned == given_ or given_ in stored
        assert _last_compaction(decode(out, history.format, system=system).messages) == last
    # Nothing is lost: an item not returned as it was is in the store.
    for item in history.items:
        assert item in out or item in stored
