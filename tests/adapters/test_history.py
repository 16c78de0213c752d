"""The per-conversation cache every adapter keeps: a framework list that only grows gives
synopsis the same list grown in place, converting only what is new; anything else converts
again from where it differs; and what synopsis kept comes back as the framework's objects."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

import synopsis
from synopsis.adapters._common import History
from synopsis.testing import FixedCounter, conversation


@dataclass(eq=False)
class Note:
    """A framework message: compared by identity, as framework objects are."""

    item: dict[str, object]


def converter() -> tuple[History[Note, dict[str, object]], list[Note]]:
    converted: list[Note] = []

    def convert(note: Note) -> dict[str, object]:
        converted.append(note)
        return dict(note.item)

    return History(convert, lambda item: Note(dict(item))), converted


def test_a_growing_list_is_converted_once_and_given_as_the_same_list() -> None:
    history, converted = converter()
    notes = [Note({"role": "user", "content": f"m{i}"}) for i in range(5)]
    first = history.items(notes[:3])
    again = history.items(notes[:5])
    assert again is first
    assert converted == notes
    assert [i["content"] for i in again] == [f"m{i}" for i in range(5)]


def test_a_list_that_changed_is_converted_again_from_where_it_differs() -> None:
    history, converted = converter()
    notes = [Note({"role": "user", "content": f"m{i}"}) for i in range(4)]
    first = history.items(notes)
    edited = Note({"role": "user", "content": "edited"})
    second = history.items([notes[0], edited, notes[2]])
    assert second is not first
    assert converted == [*notes, edited, notes[2]]
    assert second[0] is first[0]
    shorter = history.items([notes[0]])
    assert [i["content"] for i in shorter] == ["m0"]
    history.reset()
    assert history.items([notes[0]]) is not shorter


@dataclass
class Valued:
    """A framework message compared by value, as pydantic-ai's and LangChain's are."""

    content: str


def test_equal_copies_are_not_converted_again_and_come_back_as_the_copies() -> None:
    """A checkpoint read back gives equal copies of every message: they are what was
    converted, and what synopsis keeps comes back as the copies the call was given."""
    converted: list[Valued] = []

    def convert(message: Valued) -> dict[str, object]:
        converted.append(message)
        return {"role": "user", "content": message.content}

    history = History(convert, lambda item: Valued(str(item["content"])))
    first = [Valued(f"m{i}") for i in range(4)]
    items = history.items(first)
    copies = [Valued(m.content) for m in first]
    again = history.items([*copies, Valued("m4")])
    assert again is items
    assert [m.content for m in converted] == ["m0", "m1", "m2", "m3", "m4"]
    back = history.back(again)
    assert all(b is c for b, c in zip(back, copies, strict=False))
    assert back[4].content == "m4"
    # One message edited: converted again from there, into a new list.
    edited = [*copies[:2], Valued("changed"), *copies[3:]]
    assert history.items(edited) is not items
    assert converted[-2:] == [Valued("changed"), Valued("m3")]


def test_what_synopsis_kept_comes_back_as_the_frameworks_own_objects() -> None:
    history, _ = converter()
    notes = [Note(item) for item in conversation(turns=30)]
    compactor = synopsis.Compactor(
        model="gpt-4o", context_window=8000, counter=FixedCounter(per_message=100)
    )
    result = compactor.compact(history.items(notes), format="openai")
    assert result.compacted
    back = history.back(result.messages)
    kept = [n for n in back if any(n is original for original in notes)]
    made = [n for n in back if all(n is not original for original in notes)]
    assert len(kept) == len(back) - len(made)
    assert made  # the summary at least
    assert [n.item for n in back] == result.messages


@given(st.lists(st.integers(0, 5), max_size=20), st.lists(st.booleans(), max_size=20))
def test_items_always_match_the_list_given(steps: list[int], edits: list[bool]) -> None:
    """Whatever sequence of grown, edited and shortened lists it is given, the items are the
    conversion of exactly that list, and back() of them gives that list."""
    history, _ = converter()
    notes: list[Note] = []
    for n, step in enumerate(steps):
        if n < len(edits) and edits[n] and notes:
            notes = [*notes[: step % len(notes)], Note({"content": f"edit{n}"})]
        else:
            notes = [*notes, *(Note({"content": f"{n}.{k}"}) for k in range(step))]
        items = history.items(notes)
        assert [i["content"] for i in items] == [note.item["content"] for note in notes]
        assert all(a is b for a, b in zip(history.back(items), notes, strict=True))
