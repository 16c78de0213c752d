"""A record's coverage: two columns of text that read, compare, validate and serialize as the
tuple of Coverage items they stand for."""

from __future__ import annotations

import copy
import gc
import json
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from synopsis.messages import Message, Role, TextPart, content_hash, message_id
from synopsis.summarizers import Coverage, Covers, RuleBasedSummarizer, SummaryRecord
from synopsis.summarizers.coverage import covers_of
from tests.strategies import any_history


def said(*texts: str) -> list[Message]:
    return [Message(Role.USER, (TextPart(t),)) for t in texts]


def item(n: int) -> Coverage:
    return Coverage(id=f"m{n}", sha256=f"{n:x}".rjust(64, "0"))


@given(any_history(), st.integers(0, 10_000))
def test_of_covers_each_message_by_id_and_hash_from_its_position(
    messages: list[Message], start: int
) -> None:
    covers = Covers.of(messages, start)
    expected = tuple(
        Coverage(id=message_id(m, start + i), sha256=content_hash(m))
        for i, m in enumerate(messages)
    )
    assert covers == expected
    assert tuple(covers) == expected
    assert len(covers) == len(messages)
    assert covers.ids == tuple(c.id for c in expected)
    assert covers.hashes == tuple(c.sha256 for c in expected)
    record = SummaryRecord(covers=covers)
    assert SummaryRecord.model_validate_json(record.model_dump_json()) == record
    assert SummaryRecord.model_validate(record.model_dump()) == record


def test_items_and_slices_read_like_a_tuple() -> None:
    covers = Covers([item(0), item(1), item(2)])
    assert covers[0] == item(0)
    assert covers[-1] == item(2)
    assert isinstance(covers[1:], Covers)
    assert covers[1:] == (item(1), item(2))
    assert item(1) in covers
    assert item(7) not in covers
    assert covers.index(item(2)) == 2
    with pytest.raises(IndexError):
        covers[3]


def test_equality_with_a_tuple_needs_the_same_items_in_the_same_order() -> None:
    covers = Covers([item(0), item(1)])
    assert covers == (item(0), item(1))
    assert covers != (item(1), item(0))
    assert covers != (item(0),)
    assert covers != (item(0), "m1")
    assert covers != [item(0), item(1)]  # a list never equalled a tuple field either
    assert Covers() == ()
    assert Covers([item(0)]) != Covers([Coverage(id="other", sha256=item(0).sha256)])


def test_equal_covers_hash_equal_so_records_stay_hashable() -> None:
    a, b = Covers([item(0), item(1)]), Covers([item(0), item(1)])
    assert a == b
    assert hash(a) == hash(b)
    first = SummaryRecord(covers=a)
    assert hash(first.model_copy(update={"covers": b})) == hash(first)


def test_joined_covers_keep_their_order() -> None:
    joined = Covers([item(0)]) + Covers([item(1), item(2)])
    assert joined == (item(0), item(1), item(2))
    assert sum((Covers([item(n)]) for n in range(3)), Covers()) == joined
    with pytest.raises(TypeError):
        Covers([item(0)]) + (item(1),)  # noqa: RUF005


def test_a_record_takes_coverage_items_or_mappings_and_checks_them() -> None:
    # A tuple is what records held before Covers; it is still taken, and checked.
    from_items = SummaryRecord(covers=(item(0), item(1)))  # type: ignore[arg-type]
    from_dicts = SummaryRecord.model_validate(
        {"covers": [item(0).model_dump(), item(1).model_dump()]}
    )
    assert isinstance(from_items.covers, Covers)
    assert from_items.covers == from_dicts.covers
    with pytest.raises(ValidationError) as bad:
        SummaryRecord.model_validate({"covers": [{"id": "m0", "sha256": "xyz"}]})
    assert bad.value.errors()[0]["loc"] == ("covers", 0, "sha256")
    with pytest.raises(ValidationError):
        SummaryRecord.model_validate({"covers": "m0"})
    with pytest.raises(ValidationError):
        SummaryRecord.model_validate({"covers": [{"id": "m0", "sha256": "0" * 64, "x": 1}]})


def test_the_constructor_refuses_what_is_not_a_sequence_of_items() -> None:
    for wrong in ("m0", b"m0", {"id": "m0", "sha256": "0" * 64}):
        with pytest.raises(TypeError, match="Covers takes Coverage items"):
            Covers(wrong)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Covers([{"id": "m0", "sha256": "xyz"}])


def test_it_serializes_as_the_list_of_id_and_hash_objects() -> None:
    record = SummaryRecord(covers=Covers([item(0), item(1)]))
    dumped = json.loads(record.model_dump_json())
    assert dumped["covers"] == [item(0).model_dump(), item(1).model_dump()]
    assert record.model_dump()["covers"] == (item(0).model_dump(), item(1).model_dump())


def test_copies_and_pickles_are_equal() -> None:
    covers = Covers([item(0), item(1)])
    assert copy.copy(covers) is covers
    assert copy.deepcopy(covers) is covers
    assert pickle.loads(pickle.dumps(covers)) == covers
    record = RuleBasedSummarizer().summarize(said("Fix app.py", "and the tests"))
    assert pickle.loads(pickle.dumps(record)) == record
    assert record.model_copy(deep=True) == record


def test_repr_names_the_span() -> None:
    assert repr(Covers()) == "Covers()"
    assert repr(Covers([item(0), item(1), item(2)])) == "Covers(3 messages, 'm0' to 'm2')"


def test_the_collector_does_not_walk_its_columns() -> None:
    covers = Covers.of(said(*(f"message {n}" for n in range(50))))
    gc.collect()
    assert not gc.is_tracked(covers.ids)
    assert not gc.is_tracked(covers.hashes)


def test_a_record_copied_without_validation_still_serializes_and_joins() -> None:
    record = SummaryRecord(covers=Covers([item(0)]))
    copied = record.model_copy(update={"covers": (item(0), item(1))})
    assert json.loads(copied.model_dump_json())["covers"] == [
        item(0).model_dump(),
        item(1).model_dump(),
    ]
    assert covers_of(copied.covers) == (item(0), item(1))
    assert covers_of(record.covers) is record.covers
    assert Covers.join([record.covers, copied.covers]) == (item(0), item(0), item(1))


def test_equal_to_a_tuple_and_hashed_as_one() -> None:
    covers = Covers([item(0), item(1)])
    assert covers == (item(0), item(1))
    assert hash(covers) == hash((item(0), item(1)))
