"""What the store keeps of a replaced message: the caller's own item, as it was given,
from a request body of any format, a repaired history, synopsis messages, or a summary
another compactor wrote."""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from synopsis.compaction.offload import Originals
from synopsis.errors import (
    StoreError,
)
from synopsis.formats import decode, message_from_json
from synopsis.messages import Message, Role, TextPart, ToolResultPart, is_summary
from synopsis.stores import MemoryStore, SQLiteStore
from synopsis.stores._base import StoreBase
from synopsis.testing import ScriptedSummarizer
from synopsis.validation import validate
from tests.compaction.helpers import (
    TRANSCRIPTS,
    in_format,
    load_items,
    make,
    run,
)

if TYPE_CHECKING:
    from pathlib import Path

    from synopsis.compaction import CompactionResult
    from synopsis.summarizers import SummaryRecord

AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))


MARSHMALLOW = load_items(next(p for p in TRANSCRIPTS if p.stem == "sweagent-marshmallow-1867-fc"))


FOLLOW_UP = [
    {"role": "user", "content": "Now count the cities with more than 100000 people."},
    {"role": "assistant", "content": "There are 340 such cities in the 2020 census."},
]


def summaries_in(result: CompactionResult) -> list[Message]:
    decoded = decode(result.messages, result.format, system=result.system)
    return [m for m in decoded.messages if is_summary(m)]


def call(call_id: str, arguments: str = '{"path": "census.py"}') -> dict[str, Any]:
    function = {"name": "read_file", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def foreign_history() -> tuple[list[dict[str, Any]], str]:
    """A history compacted by another compactor (another store), one more turn on it."""
    first = run(make(store="memory", session_id="elsewhere"), AIDER)
    (summary,) = summaries_in(first)
    return [*first.messages, *FOLLOW_UP], summary.text


class WithoutOneRecord:
    """A store that meets the Store protocol by delegation, with no ``summary`` method: the
    chain is read whole, as before the method existed."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.summaries_read = 0

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        self.summaries_read += 1
        return self.inner.summaries(session_id)

    def __getattr__(self, name: str) -> Any:
        if name in ("summary", "asummary"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_a_gemini_request_body_stores_its_own_contents() -> None:
    items, _ = in_format(AIDER, "gemini")
    body = {"contents": items, "systemInstruction": {"parts": [{"text": "Be brief."}]}}
    store = MemoryStore()
    result = run(make(store=store, session_id="g"), body, format="gemini")
    assert result.compacted
    assert result.system == body["systemInstruction"]
    stored = store.recall("g")
    assert stored
    assert [m.id for m in stored] == list(result.offloaded)
    assert all(m.format == "gemini" for m in stored)
    # The system prompt (decoded as a leading message) is not an item: no shift.
    assert [json.loads(m.data) for m in stored] == items[1 : 1 + len(stored)]


def test_a_responses_request_body_stores_its_own_input_items() -> None:
    items, _ = in_format(AIDER, "responses")
    store = MemoryStore()
    result = run(make(store=store, session_id="r"), {"input": items}, format="responses")
    assert result.compacted
    stored = store.recall("r")
    assert stored
    assert all(m.format == "responses" for m in stored)
    assert [json.loads(m.data) for m in stored] == items[1 : 1 + len(stored)]


def test_a_responses_body_whose_input_is_a_string_comes_back_as_one_user_item() -> None:
    store = MemoryStore()
    result = run(make(store=store, session_id="s"), {"input": "How many counties?"})
    assert result.format == "responses"
    assert not result.compacted
    assert result.messages == [{"role": "user", "content": "How many counties?"}]
    assert validate(result.messages, "responses") == []


def test_a_repaired_history_still_stores_the_callers_own_items() -> None:
    broken = copy.deepcopy(MARSHMALLOW)
    del broken[6]  # a call goes; its result stays, answering nothing
    store = MemoryStore()
    compactor = make(context_window=8000, store=store, session_id="fixed")
    result = run(compactor, broken, force=True)
    assert result.compacted
    assert result.fixes
    stored = store.recall("fixed")
    assert stored
    assert [m.id for m in stored] == list(result.offloaded)
    for kept in stored:
        assert kept.format == "openai"
        assert json.loads(kept.data) in broken
    # The orphaned result the repair dropped was never part of the history sent on.
    orphan = broken[6]
    assert all(json.loads(m.data) != orphan for m in stored)


def test_synopsis_messages_are_stored_as_synopsis_json() -> None:
    messages = list(decode(AIDER, "openai").messages)
    store = MemoryStore()
    result = make(store=store, session_id="own").compact(messages, format="synopsis")
    assert result.compacted
    stored = store.recall("own")
    assert stored
    assert all(m.format == "synopsis" for m in stored)
    assert [message_from_json(m.data) for m in stored] == messages[1 : 1 + len(stored)]


def test_a_summary_from_another_compactor_is_summarized_with_the_rest() -> None:
    history, summary = foreign_history()
    summarizer = ScriptedSummarizer()
    store = MemoryStore()
    result = run(make(store=store, session_id="here", summarizer=summarizer), history, force=True)
    assert result.compacted
    assert result.record is not None
    assert result.record.depth == 0  # no record of it in this store: a new chain
    (call,) = summarizer.calls
    given = call.messages
    assert [m.text for m in given if is_summary(m)] == [summary]
    assert len(given) > 1
    assert len(summaries_in(result)) == 1


def test_a_summary_from_another_compactor_is_stored_with_the_callers_items() -> None:
    # This store has no record of it, so its text is the only copy: it is kept like any item
    # the caller sent, word for word.
    history, _ = foreign_history()
    store = MemoryStore()
    result = run(make(store=store, session_id="here"), history, force=True)
    stored = store.recall("here")
    assert len(stored) == len(result.offloaded) > 0
    foreign = [m for m in stored if m.text.startswith("<synopsis-summary")]
    assert len(foreign) == 1
    assert json.loads(foreign[0].data) in history


def test_adopting_a_message_that_is_not_an_input_changes_nothing() -> None:
    messages = decode(AIDER[:2], "openai").messages
    originals = Originals(messages, AIDER[:2], "openai")
    stranger = Message(Role.USER, (TextPart("not in the history"),))
    replacement = Message(Role.USER, (TextPart("a copy of it"),))
    originals.adopt(stranger, replacement)
    assert originals.index(replacement) is None
    assert not originals.changed(replacement)
    at = datetime(2024, 5, 1, tzinfo=UTC)
    assert originals.stored([replacement], session_id="s", offset=0, compaction_id="c", at=at) == []
    # An input's copy, by contrast, stands for the input's item.
    copy_of_first = Message(Role.USER, (TextPart("shorter"),))
    originals.adopt(messages[1], copy_of_first)
    assert originals.index(copy_of_first) == 1
    assert originals.changed(copy_of_first)
    (kept,) = originals.stored([copy_of_first], session_id="s", offset=7, compaction_id="c", at=at)
    assert json.loads(kept.data) == AIDER[1]
    assert kept.position == 7


def test_a_store_without_one_record_reads_the_chain_whole() -> None:
    store = WithoutOneRecord()
    plain = MemoryStore()
    first = run(make(store=store, session_id="w"), AIDER)
    second = run(make(store=store, session_id="w"), [*first.messages, *FOLLOW_UP], force=True)
    assert store.summaries_read == 1
    same = run(make(store=plain, session_id="w"), AIDER)
    other = run(make(store=plain, session_id="w"), [*same.messages, *FOLLOW_UP], force=True)
    assert second.record is not None
    assert other.record is not None
    assert second.record.depth == other.record.depth == 1
    assert first.record is not None
    assert second.record.parent_id == first.record.id
    broken = WithoutOneRecord()
    done = run(make(store=broken, session_id="w"), AIDER)
    broken.summaries = lambda session_id: (_ for _ in ()).throw(OSError("broken"))  # type: ignore[method-assign]
    with pytest.raises(StoreError, match="could not read the summaries of 'w'"):
        run(make(store=broken, session_id="w"), [*done.messages, *FOLLOW_UP], force=True)


def test_the_base_store_finds_one_record_among_them_all(tmp_path: Path) -> None:
    class Plain(MemoryStore):
        summary = StoreBase.summary  # the default, which reads every record

    for store in (Plain(), MemoryStore(), SQLiteStore(tmp_path / "s.db")):
        first = run(make(store=store, session_id="b"), AIDER)
        assert first.record is not None
        assert store.summary("b", first.record.id) == first.record
        assert store.summary("b", "no such record") is None
        assert store.summary("no such session", first.record.id) is None
        found = asyncio.run(store.asummary("b", first.record.id))
        assert found == first.record


def test_a_copy_given_up_never_lends_its_place_to_a_new_message() -> None:
    original = Message(Role.TOOL, (ToolResultPart("c1", "x" * 500),))
    originals = Originals([original], [{"role": "tool", "tool_call_id": "c1"}], "openai")
    for n in range(50):
        # Copies made and dropped, as a landing that is tried and given up makes them.
        originals.adopt(original, Message(Role.TOOL, (ToolResultPart("c1", f"copy {n}"),)))
    fresh = [Message(Role.TOOL, (ToolResultPart("c9", f"new {n}"),)) for n in range(500)]
    assert [m for m in fresh if originals.index(m) is not None or originals.changed(m)] == []
