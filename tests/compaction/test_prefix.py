"""What a reused Compactor's full path does not read again (synopsis.compaction.prefix): the
messages the last full call decoded, for a later call whose list starts with the same items.
Every result is the one a fresh Compactor gives."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from synopsis.compaction import Compactor
from synopsis.compaction.prefix import boundary
from synopsis.errors import ConversationError
from tests.compaction.helpers import TRANSCRIPTS, load_items
from tests.compaction.test_incremental import ask, big, view

CLEAN = next(p for p in TRANSCRIPTS if p.name.startswith("sweagent-pydicom"))


def seeded() -> tuple[Compactor, list[Any]]:
    compactor = big()
    history = load_items(CLEAN)
    assert compactor.compact(history).code == "under-trigger"
    assert compactor._prefix is not None
    return compactor, history


def test_a_forced_compaction_decodes_only_what_was_appended() -> None:
    compactor, history = seeded()
    prefix = compactor._prefix
    assert prefix is not None
    grown = [*history, {"role": "assistant", "content": "done"}, ask()]
    result = compactor.compact(grown, force=True)
    assert view(result) == view(big().compact(grown, force=True))
    assert result.compacted
    after = compactor._prefix
    assert after is not None
    # The messages read before are the very objects again; only the new items were decoded.
    assert all(map(lambda a, b: a is b, after.messages, prefix.messages))
    assert len(after.messages) == len(grown)


def test_each_full_call_leaves_the_prefix_of_its_own_list() -> None:
    compactor, history = seeded()
    grown = [*history, ask()]
    compactor.compact(grown, force=True)
    prefix = compactor._prefix
    assert prefix is not None
    assert prefix.items == grown
    assert prefix.items is not grown  # a copy: the caller's list is the caller's to change


@pytest.mark.parametrize(
    "appended",
    [
        # breaks a rule: the whole history is checked and repaired
        [{"role": "tool", "tool_call_id": "call_nobody", "content": "stray"}],
        # its id is that of an earlier function_call: decoded with the whole list
        [{"role": "function", "name": "f", "content": "legacy"}],
        # a Responses item: the whole list would be read as another format
        [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}],
    ],
    ids=["orphan", "legacy-function", "other-format"],
)
def test_appended_items_the_prefix_cannot_vouch_for_go_the_whole_way(
    appended: list[Any],
) -> None:
    compactor, history = seeded()
    grown = [*history, *appended]

    def outcome(c: Compactor) -> Any:
        try:
            return view(c.compact(grown, force=True))
        except ConversationError as error:
            return str(error)

    assert outcome(compactor) == outcome(big())


def test_an_appended_item_that_does_not_decode_is_reported_as_by_the_full_path() -> None:
    compactor, history = seeded()
    grown = [*history, {"role": "bogus", "content": "?"}]
    with pytest.raises(ConversationError) as reused:
        compactor.compact(grown, force=True)
    with pytest.raises(ConversationError) as fresh:
        big().compact(grown, force=True)
    assert str(reused.value) == str(fresh.value)


@pytest.mark.parametrize(
    "change",
    ["shorter", "copy", "format-named", "session"],
)
def test_a_list_or_call_that_is_not_the_same_grown_is_read_again(change: str) -> None:
    compactor, history = seeded()
    options: dict[str, Any] = {"force": True}
    grown = [*history, ask()]
    if change == "shorter":
        grown = history[:-3]
    elif change == "copy":
        grown = [dict(item) for item in grown]
    elif change == "format-named":
        options["format"] = "openai"
    else:  # the first session of a store-less Compactor gives it a store: another setup
        options["session_id"] = "s1"
    old = compactor._prefix
    assert old is not None
    result = compactor.compact(grown, **options)
    assert view(result) == view(big().compact(grown, **options))
    new = compactor._prefix
    assert new is not None
    assert not any(map(lambda a, b: a is b, new.messages, old.messages))


def test_an_item_changed_in_place_is_read_again_after_reset() -> None:
    history = [dict(item) for item in load_items(CLEAN)]
    compactor = big()
    compactor.compact(history)
    history[1]["content"] += " and much longer now" * 500
    grown = [*history, ask()]
    stale = compactor.compact(grown, force=True)
    fresh = big().compact(grown, force=True)
    assert stale.tokens_before < fresh.tokens_before  # the documented cost of editing in place
    compactor.reset()
    assert compactor._prefix is None
    assert view(compactor.compact(grown, force=True)) == view(fresh)


def test_what_is_not_kept() -> None:
    compactor = big()
    items = load_items(CLEAN)
    compactor.compact(tuple(items))  # not a plain list
    assert compactor._prefix is None
    compactor.compact([{"role": "user", "content": "hi"}], format="responses")
    assert compactor._prefix is None  # another format
    compactor.compact([*items, {"role": "tool", "tool_call_id": "nobody", "content": "x"}])
    assert compactor._prefix is None  # a history that was repaired
    with_system = Compactor(model="gpt-4o", context_window=10**9, environ={})
    with_system.compact(items, system="be brief")
    assert with_system._prefix is None  # a system prompt given apart opens the messages


def test_the_boundary_is_the_last_person_turn_with_no_call_open() -> None:
    compactor, history = seeded()
    prefix = compactor._prefix
    assert prefix is not None
    b = boundary(prefix.messages)
    assert 0 < b < len(history)
    assert history[b]["role"] == "user"
    same = dataclasses.replace(prefix, messages=prefix.messages[b:])
    assert boundary(same.messages) == 0
