"""The incremental skip of a history sent as a new copy each time: a client that decodes its
history from JSON on every request (a proxy, a per-request framework hook), and one that
sends its whole uncompacted history again after a compaction (the session's projection)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from synopsis.errors import StoreError
from synopsis.stores import MemoryStore, SessionState
from tests.compaction.helpers import load_items
from tests.compaction.test_incremental import CLEAN, Counting, ask, big, both, view


def json_copy(items: list[Any]) -> list[Any]:
    return list(json.loads(json.dumps(items)))


def test_a_history_decoded_afresh_each_call_takes_the_fast_path() -> None:
    history = load_items(CLEAN)
    compactor = big()
    compactor.compact(json_copy(history))
    for n in range(3):
        history = [*history, {"role": "assistant", "content": f"done {n}"}, ask()]
        both(big, compactor, json_copy(history))
    assert compactor.fast == 3


def test_a_copy_of_what_was_changed_in_place_since_is_read_again() -> None:
    history = [dict(item) for item in load_items(CLEAN)]
    compactor = big()
    compactor.compact(history)
    history[1]["content"] = "rewritten " * 2_000  # after the memo read it
    got = both(big, compactor, [*json_copy(history), ask()])
    assert got[1] is not None
    assert compactor.fast == 0


def test_arguments_given_as_an_object_are_recognised_by_identity_only() -> None:
    # 1 == True, but the two are counted from different JSON text.
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"n": 1}}}
    history: list[Any] = [
        ask("go"),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    compactor = big()
    compactor.compact(history)
    assert compactor._memo is not None
    assert compactor._memo.snapshot is None
    changed = copy.deepcopy(history)
    changed[1]["tool_calls"][0]["function"]["arguments"] = {"n": True}
    assert changed == history
    both(big, compactor, [*changed, ask()])
    assert compactor.fast == 0
    compactor.compact(history)
    both(big, compactor, [*history, ask()])
    assert compactor.fast == 1  # the very objects still take it


IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}
NOT_PLAIN: dict[str, dict[str, Any]] = {
    "an image": {"role": "user", "content": [{"type": "text", "text": "see"}, IMAGE]},
    "a result in parts": {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "text", "text": "ok"}],
    },
}


@pytest.mark.parametrize("kind", sorted(NOT_PLAIN))
def test_media_and_results_in_parts_are_recognised_by_identity_only(kind: str) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history: list[Any] = [
        ask("go"),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    if kind == "an image":
        history.insert(0, NOT_PLAIN[kind])
    else:
        history[2] = NOT_PLAIN[kind]
    compactor = big()
    compactor.compact(history)
    assert compactor._memo is not None
    assert compactor._memo.snapshot is None
    both(big, compactor, [*json_copy(history), ask()])
    assert compactor.fast == 0


def test_a_history_resent_whole_after_a_compaction_takes_the_fast_path() -> None:
    def make(store: MemoryStore) -> Counting:
        return Counting(
            model="gpt-4o", context_window=16_000, summarizer="rules", store=store,
            session_id="s", environ={},
        )  # fmt: skip

    # The same calls on two stores: one Compactor reused, and a new one for every call.
    reused_store, fresh_store = MemoryStore(), MemoryStore()
    history = load_items(CLEAN)
    reused = make(reused_store)
    for compactor in (reused, make(fresh_store)):
        assert compactor.compact(history, force=True).compacted
    # The compaction itself is remembered: the first request after it is read alone too.
    assert reused._memo is not None
    assert reused._memo.output is not None
    grown = [*history, ask()]
    first = reused.compact(json_copy(grown))
    assert view(first) == view(make(fresh_store).compact(json_copy(grown)))
    assert reused.fast == 1
    assert not first.compacted
    assert len(first.messages) < len(grown)
    for n in range(3):
        grown = [*grown, {"role": "assistant", "content": f"done {n}"}, ask()]
        got = reused.compact(json_copy(grown))
        expected = make(fresh_store).compact(json_copy(grown))
        assert view(got) == view(expected)
        assert got.messages[: len(first.messages)] == first.messages  # the cached prefix
    assert reused.fast == 4
    # A summary sent back inside the history is not projected over: the full path decides.
    summary = next(m for m in first.messages if "<synopsis-summary" in str(m.get("content")))
    reused.compact(json_copy([*grown, {"role": "assistant", "content": "x"}, summary]))
    assert reused.fast == 4


def test_a_skips_result_is_the_callers_own_list() -> None:
    """The memo grows its own lists where they lie: a result handed out must share none of
    them, or a caller editing what it got back would edit what the next call compares to."""
    history = load_items(CLEAN)
    compactor = big()
    compactor.compact(json_copy(history))
    history = [*history, ask()]
    got = compactor.compact(json_copy(history))
    got.messages.append({"role": "assistant", "content": "appended to the result"})
    got.messages[0] = {"role": "user", "content": "replaced in the result"}
    history = [*history, {"role": "assistant", "content": "done"}, ask()]
    both(big, compactor, json_copy(history))
    assert compactor.fast == 2


def test_a_projected_skips_result_is_the_callers_own_list() -> None:
    store = MemoryStore()
    compactor = Counting(
        model="gpt-4o", context_window=16_000, summarizer="rules", store=store,
        session_id="s", environ={},
    )  # fmt: skip
    history = load_items(CLEAN)
    assert compactor.compact(history, force=True).compacted
    grown = [*history, ask()]
    first = compactor.compact(json_copy(grown))
    kept = copy.deepcopy(first.messages)
    first.messages.append({"role": "assistant", "content": "appended to the result"})
    grown = [*grown, {"role": "assistant", "content": "done"}, ask()]
    second = compactor.compact(json_copy(grown))
    assert compactor.fast == 2
    assert second.messages[: len(kept)] == kept
    assert second.messages[len(kept) :] == grown[-2:]


# -- a new turn after a compaction: the governor's memory moves on --------------------------


class FailingSaves(MemoryStore):
    fail = False

    def save_session(self, state: SessionState) -> None:
        if self.fail:
            raise OSError("disk full")
        super().save_session(state)


def _turns_after_a_compaction(store: MemoryStore) -> tuple[Counting, list[Any]]:
    """A Compactor that compacted, then saw the same turn go on (so it remembers a session
    whose turn made a compaction), and the history it was last given."""
    compactor = Counting(
        model="gpt-4o", context_window=16_000, summarizer="rules", store=store,
        session_id="s", environ={},
    )  # fmt: skip
    result = compactor.compact(load_items(CLEAN), force=True)
    assert result.compacted
    history = [*result.messages, {"role": "assistant", "content": "still on it"}]
    compactor.compact(history)
    assert compactor._memo is not None
    return compactor, history


def test_a_new_turn_after_a_compaction_saves_the_governors_memory_the_fast_way() -> None:
    reused_store, fresh_store = MemoryStore(), MemoryStore()
    reused, history = _turns_after_a_compaction(reused_store)
    _turns_after_a_compaction(fresh_store)
    turn = [*history, ask("next task")]
    got = reused.compact(turn)
    full = Counting(
        model="gpt-4o", context_window=16_000, summarizer="rules", store=fresh_store,
        session_id="s", environ={},
    )  # fmt: skip
    expected = full.compact(turn)
    assert reused.fast == 1
    assert view(got) == view(expected)
    saved, wanted = reused_store.session("s"), fresh_store.session("s")
    assert saved is not None
    assert wanted is not None
    assert saved.governor == wanted.governor
    assert saved.governor != SessionState("s").governor  # the new turn is remembered
    # And the call after it reads the session it saved back, the fast way again.
    reused.compact([*turn, {"role": "assistant", "content": "ok"}])
    assert reused.fast == 2


def test_a_store_that_fails_to_save_the_new_turn_sends_the_call_the_full_way() -> None:
    store = FailingSaves()
    compactor, history = _turns_after_a_compaction(store)
    store.fail = True
    with pytest.raises(StoreError, match="disk full"):
        compactor.compact([*history, ask("next task")])
    assert compactor.fast == 0


def test_only_a_compaction_a_resent_history_can_project_onto_is_remembered() -> None:
    def make() -> Counting:
        return Counting(
            model="gpt-4o", context_window=16_000, summarizer="rules", store=MemoryStore(),
            session_id="s", environ={},
        )  # fmt: skip

    history = load_items(CLEAN)
    resent = make()
    result = resent.compact(history, force=True)
    assert resent._memo is not None  # the projection saved gives back this output
    # A client that keeps the output sends a summary back: nothing is projected onto that.
    kept = make()
    kept.compact([*result.messages, ask()], force=True)
    assert kept._memo is None
    # Nor with no session to hold the projection.
    alone = Counting(model="gpt-4o", context_window=16_000, summarizer="rules", environ={})
    alone.compact(history, force=True)
    assert alone._memo is None
