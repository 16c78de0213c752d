"""A session over many calls: nothing offloaded is ever lost, a prefix is never summarized
twice (also when a stateless caller sends its uncompacted history again), and one compaction
makes one summary however many passes it takes."""

from __future__ import annotations

from typing import Any

from synopsis.compaction import Compactor
from synopsis.stores import MemoryStore, SQLiteStore
from synopsis.testing import ScriptedSummarizer
from tests.compaction.helpers import TRANSCRIPTS, load_items


def turn(i: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": f"chapter {i}"},
        {"role": "user", "content": "continue"},
    ]


def test_equal_messages_in_later_compactions_are_all_kept():
    store = MemoryStore()
    c = Compactor(store=store, session_id="s", keep=2, environ={})
    given: list[dict[str, Any]] = [{"role": "user", "content": "Write a story."}]
    for i in range(8):
        given += turn(i)
    history = list(c.compact(given, force=True).messages)
    for i in range(8, 16):
        history += turn(i)
        given += turn(i)
    result = c.compact(history, force=True)
    sent_on = result.messages.count({"role": "user", "content": "continue"})
    stored = [m for m in store.recall("s") if m.text == "continue"]
    assert sent_on + len(stored) == 16
    positions = [m.position for m in store.recall("s")]
    assert positions == list(range(len(positions)))
    state = store.session("s")
    assert state is not None
    assert state.offset == len(positions)


def test_a_resent_uncompacted_history_reuses_the_summary_it_already_has(tmp_path):
    items = load_items(next(p for p in TRANSCRIPTS if "ponyc-4588" in p.name))
    summarizer = ScriptedSummarizer()
    store = SQLiteStore(tmp_path / "s.db")
    c = Compactor(
        context_window=20_000, store=store, session_id="s", summarizer=summarizer, environ={}
    )
    first = c.compact(items)
    assert first.compacted
    calls = len(summarizer.calls)
    offloaded = len(store.recall("s"))
    again = c.compact(items)  # a retry: the same uncompacted history
    # The summary takes the place of what it stands for before anything is measured: the
    # history is the compacted one again, under the trigger, and sent as it was.
    assert not again.compacted
    assert again.code == "under-trigger"
    assert len(summarizer.calls) == calls  # nothing new to summarize
    assert again.messages == first.messages
    assert len(store.recall("s")) == offloaded
    state = store.session("s")
    assert state is not None
    assert state.offset == offloaded
    # Sent again with more, only the new part is summarized, onto the same chain. The new
    # part outgrows the automatic tail, so the cut falls after the summarized prefix (with a
    # smaller one, the turn-start search backs the cut onto that prefix: nothing to add).
    grown = [*items, {"role": "user", "content": "And now the changelog."}]
    for _ in range(10):
        grown += [
            {"role": "assistant", "content": "Writing it. " * 300},
            {"role": "user", "content": "Go on."},
        ]
    later = c.compact(grown, force=True)
    assert later.record is not None
    assert later.record.parent_id == first.record.id  # type: ignore[union-attr]
    assert len(summarizer.calls[-1].messages) < len(items)


def test_one_compaction_never_summarizes_a_summary_alone():
    items = load_items(next(p for p in TRANSCRIPTS if "pydicom" in p.name))
    summarizer = ScriptedSummarizer()
    store = MemoryStore()
    c = Compactor(
        context_window=8_000, store=store, session_id="s", summarizer=summarizer, environ={}
    )
    result = c.compact(items)
    assert result.compacted
    assert all(call.messages for call in summarizer.calls)
    records = store.summaries("s")
    assert all(r.covers for r in records)
    export = c.export()
    assert export.count("## Summarized at") == len(records)
