"""The store contract, run against every bundled store (see conftest: memory, SQLite, and
SQLite reopened from its file before reading back)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC
from typing import TYPE_CHECKING

import pytest

from synopsis.errors import ConfigurationError, StoreError
from synopsis.stores import AsyncStore, Compaction, SessionState, Store, export_markdown
from tests.stores.helpers import T0, compaction, offload, record, stored, three

if TYPE_CHECKING:
    from tests.stores.conftest import Harness


def test_bundled_stores_implement_both_protocols(harness: Harness) -> None:
    assert isinstance(harness.store, Store)
    assert isinstance(harness.store, AsyncStore)


def test_data_comes_back_byte_identical(harness: Harness) -> None:
    summary = record()
    wires = [
        {"role": "user", "content": "naïve café, 東京, Ελληνικά"},
        {"role": "user", "content": "emoji 🙂👩‍💻 and a flag 🇳🇴"},
        {"role": "user", "content": "lone \ud83d surrogate, raw"},
        {"role": "user", "content": "x" * 2_000_000},
    ]
    # content_hash cannot hash a lone surrogate (reported), so that row's text is set after.
    rows = [
        replace(stored(i, f"row {i}", compaction=summary.id, item=wire), text=wire["content"])
        for i, wire in enumerate(wires)
    ]
    # JSON text the pipeline did not write itself: escapes, spacing and key order kept as sent.
    escaped = '{"content": "lone \\ud800 escape \\u00e9 \\n",  "role":"user"}'
    rows.append(replace(stored(9, "lone escape", compaction=summary.id), data=escaped))
    harness.store.save(compaction(summary, rows))
    back = harness.reader().recall("s1")
    assert back == rows
    assert [m.data for m in back] == [m.data for m in rows]
    assert back[-1].data == escaped
    assert json.loads(back[2].data)["content"] == "lone \ud83d surrogate, raw"
    assert back[2].text == "lone \ufffd surrogate, raw"


def test_a_real_transcript_round_trips(harness: Harness) -> None:
    saved, items = offload("sweagent-marshmallow-1867-fc", 12)
    harness.store.save(saved)
    store = harness.reader()
    back = store.recall("s1")
    assert back == list(saved.messages)
    assert [json.loads(m.data) for m in back] == items
    assert any(m.role == "tool" for m in back)
    assert store.session("s1") == saved.state
    assert store.summaries("s1") == [saved.record]


def test_one_compaction_may_save_several_records(harness: Harness) -> None:
    first = record()
    second = record(first, minutes=1)
    rows = [
        stored(0, "early part", compaction=first.id),
        stored(1, "late part", compaction=second.id),
    ]
    state = SessionState("s1", summary_id=second.id, compactions=1, updated_at=T0)
    harness.store.save(Compaction("s1", (first, second), rows, state))
    store = harness.reader()
    assert store.summaries("s1") == [first, second]
    assert store.recall("s1") == rows
    sections = export_markdown(store, "s1").split("## Summarized at ")[1:]
    assert ["early part" in s for s in sections] == [True, False]
    assert ["late part" in s for s in sections] == [False, True]


def test_recall_by_ids_is_in_timeline_order(harness: Harness) -> None:
    summary, rows = three()
    harness.store.save(compaction(summary, list(reversed(rows))))
    store = harness.reader()
    got = store.recall("s1", ids=[rows[2].id, "no-such-id", rows[0].id, rows[0].id])
    assert got == [rows[0], rows[2]]
    assert store.recall("s1", ids=[]) == []
    assert store.recall("s1", ids=(rows[1].id,)) == [rows[1]]


def test_recall_by_range_is_half_open(harness: Harness) -> None:
    summary, rows = three(first=10)
    harness.store.save(compaction(summary, rows))
    store = harness.reader()
    assert store.recall("s1", start=10, stop=12) == rows[:2]
    assert store.recall("s1", start=11) == rows[1:]
    assert store.recall("s1", stop=11) == rows[:1]
    assert store.recall("s1", start=12, stop=12) == []
    assert store.recall("s1") == rows
    assert store.recall("other") == []


def test_recall_refuses_ids_with_a_range_and_a_bare_string(harness: Harness) -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        harness.store.recall("s1", ids=["a"], start=0)
    with pytest.raises(ConfigurationError, match="not both"):
        harness.store.recall("s1", ids=["a"], stop=3)
    with pytest.raises(ConfigurationError, match="sequence of ids"):
        harness.store.recall("s1", ids="m0-abc")


def test_messages_are_append_only(harness: Harness) -> None:
    summary, rows = three()
    harness.store.save(compaction(summary, rows, compactions=1))
    # The same compaction again (a retried call): nothing doubles, the state is replaced.
    harness.store.save(compaction(summary, rows, compactions=2))
    # A later compaction that covers an already saved message keeps the first copy.
    later = record(summary, minutes=5)
    again = replace(rows[0], compaction_id=later.id, text="changed text, same hash")
    edited = stored(0, "please fix the parser in app.py!", compaction=later.id)
    harness.store.save(compaction(later, [again, edited], compactions=3))
    store = harness.reader()
    back = store.recall("s1")
    assert back == [rows[0], edited, rows[1], rows[2]]
    assert rows[0].id != edited.id
    assert store.summaries("s1") == [summary, later]
    state = store.session("s1")
    assert state is not None
    assert state.compactions == 3


def test_same_id_with_other_content_is_kept_beside_it(harness: Harness) -> None:
    summary = record()
    first = stored(0, "call_1 output v1", compaction=summary.id)
    first = replace(first, id="call_1")
    second = replace(first, sha256="f" * 64, text="call_1 output v2", position=5)
    harness.store.save(compaction(summary, [first, second]))
    assert harness.reader().recall("s1", ids=["call_1"]) == [first, second]


def test_sessions_are_isolated(harness: Harness) -> None:
    a_summary, a_rows = three("a")
    b_summary, b_rows = three("b")
    harness.store.save(compaction(a_summary, a_rows, session="a"))
    harness.store.save(compaction(b_summary, b_rows, session="b"))
    harness.store.save_session(SessionState("c", compactions=0))
    store = harness.reader()
    assert store.sessions() == ["a", "b", "c"]
    assert store.recall("a") == a_rows
    assert store.recall("b", ids=[a_rows[0].id]) == [b_rows[0]]  # same content, same id
    assert [h.message.session_id for h in store.search("a", "parser")] == ["a"]
    assert store.summaries("a") == [a_summary]
    assert store.summaries("c") == []
    assert store.recall("c") == []


def test_summaries_come_back_oldest_first(harness: Harness) -> None:
    chain = [record(narrative="first", key_points=("k1", "k2"))]
    for n in range(1, 4):
        chain.append(record(chain[-1], minutes=n, narrative=f"update {n} 🙂 \ud800"))
    for summary in chain:
        harness.store.save(compaction(summary, [stored(0, "x", compaction=summary.id)]))
    assert harness.reader().summaries("s1") == chain


def test_session_state_round_trips(harness: Harness) -> None:
    governor = {"compactions": 2, "length_after_last": 40, "armed": False, "turn": None}
    state = SessionState(
        "s1",
        governor=governor,
        summary_id="a" * 32,
        compactions=2,
        tokens_summarized=12_345,
        last_summary="summary 🙂 \ud800",
        offset=40,
        updated_at=T0,
    )
    harness.store.save_session(state)
    store = harness.reader()
    assert store.session("s1") == state
    assert store.session("unknown") is None
    assert store.sessions() == ["s1"]


def test_a_state_without_a_time_is_stamped(harness: Harness) -> None:
    harness.store.save_session(SessionState("s1", offset=3))
    summary, rows = three("s2")
    harness.store.save(compaction(summary, rows, session="s2", updated_at=None))
    store = harness.reader()
    for name in ("s1", "s2"):
        state = store.session(name)
        assert state is not None
        assert state.updated_at is not None
        assert state.updated_at.tzinfo == UTC
    first = store.session("s1")
    assert first is not None
    assert replace(first, updated_at=None) == SessionState("s1", offset=3)


def test_async_methods_agree_with_sync_ones(harness: Harness) -> None:
    summary, rows = three()

    async def run() -> tuple[object, ...]:
        store = harness.store
        await store.asave(compaction(summary, rows))
        await store.asave_session(SessionState("s2", offset=1, updated_at=T0))
        return (
            await store.asession("s1"),
            await store.asummaries("s1"),
            await store.arecall("s1", ids=[rows[1].id]),
            await store.arecall("s1", start=1, stop=3),
            await store.asearch("s1", "app", limit=5),
            await store.asessions(),
        )

    got = asyncio.run(run())
    store = harness.reader()
    want = (
        store.session("s1"),
        store.summaries("s1"),
        store.recall("s1", ids=[rows[1].id]),
        store.recall("s1", start=1, stop=3),
        store.search("s1", "app", limit=5),
        store.sessions(),
    )
    assert got == want
    assert want[2] == [rows[1]]
    assert len(want[4]) == 2


def test_a_closed_store_refuses_work(harness: Harness) -> None:
    store = harness.store
    with store as opened:
        assert opened is store
    store.close()  # twice is fine
    with pytest.raises(StoreError, match="closed"):
        store.recall("s1")
    with pytest.raises(StoreError, match="closed"):
        store.save(compaction(*three()))
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(store.asessions())
    asyncio.run(store.aclose())


def test_repr_names_the_store(harness: Harness) -> None:
    assert type(harness.store).__name__ in repr(harness.store)
