"""The lifecycle half of the store contract, run against every bundled store: forgetting a
session, pruning the old ones, and what each session costs the store. Then a property: after
any forget, a store answers as one that never held the forgotten sessions."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConfigurationError, StoreError
from synopsis.messages import Role
from synopsis.stores import (
    Compaction,
    MemoryStore,
    SessionState,
    SessionStats,
    SQLiteStore,
    StoredMessage,
)
from tests.stores.helpers import T0, compaction, record, stored, three

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from synopsis.stores._base import StoreBase
    from synopsis.summarizers import SummaryRecord
    from tests.stores.conftest import Harness


def size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def expected_stats(
    session_id: str,
    messages: Iterable[StoredMessage],
    records: Iterable[SummaryRecord],
    updated_at: datetime | None,
) -> SessionStats:
    """What ``stats`` must say of a session, worked out from what was saved: each message's
    wire item and text as UTF-8, each summary record as the JSON the stores keep."""
    rows, kept = list(messages), list(records)
    total = sum(size(m.data) + size(m.text) for m in rows)
    total += sum(len(json.dumps(r.model_dump(mode="json"))) for r in kept)
    return SessionStats(session_id, len(rows), len(kept), total, updated_at)


def fill(store: StoreBase, *sessions: str) -> dict[str, Compaction]:
    """Three messages and one record for each session, saved; the compactions by session."""
    saved = {}
    for name in sessions:
        summary, rows = three(name)
        saved[name] = compaction(summary, rows, session=name)
        store.save(saved[name])
    return saved


def test_forget_takes_everything_of_that_session_and_nothing_else(harness: Harness) -> None:
    saved = fill(harness.store, "a", "b")
    assert harness.store.forget("a") is True
    store = harness.reader()
    assert store.recall("a") == []
    assert store.recall("a", ids=[m.id for m in saved["a"].messages]) == []
    assert store.summaries("a") == []
    assert store.summary("a", saved["a"].records[0].id) is None
    assert store.session("a") is None
    assert store.search("a", "parser") == []
    assert store.sessions() == ["b"]
    assert [s.session_id for s in store.stats()] == ["b"]
    # The other session is whole.
    b = saved["b"]
    assert store.recall("b") == list(b.messages)
    assert store.summaries("b") == list(b.records)
    assert store.session("b") == b.state
    assert [h.message for h in store.search("b", "parser")] == [b.messages[0]]
    # Nothing is left to forget a second time, and an unknown session has nothing.
    assert store.forget("a") is False
    assert store.forget("nobody") is False
    assert store.sessions() == ["b"]


def test_a_session_of_state_alone_is_forgotten_too(harness: Harness) -> None:
    harness.store.save_session(SessionState("lone", offset=4, updated_at=T0))
    assert harness.store.forget("lone") is True
    store = harness.reader()
    assert store.session("lone") is None
    assert store.sessions() == []
    assert store.stats() == []


def test_a_forgotten_session_can_be_saved_again(harness: Harness) -> None:
    summary, rows = three()
    harness.store.save(compaction(summary, rows))
    assert harness.store.forget("s1")
    # The same messages, ids and hashes as before: taken again, once each.
    harness.store.save(compaction(summary, rows))
    harness.store.save(compaction(summary, rows))
    store = harness.reader()
    assert store.recall("s1") == rows
    assert store.summaries("s1") == [summary]
    assert {h.message for h in store.search("s1", "app")} == set(rows[:2])
    assert store.stats() == [expected_stats("s1", rows, [summary], T0)]


def test_a_search_after_forget_scores_as_if_the_session_was_never_saved(
    harness: Harness,
) -> None:
    words = ["parser bug in app.py", "lunch menu", "parser parser fix", "the lunch parser"]

    def session(name: str, first: int = 0) -> Compaction:
        summary = record()
        rows = [
            stored(first + i, text, compaction=summary.id, session=name)
            for i, text in enumerate(words[first:] + words[:first])
        ]
        return compaction(summary, rows, session=name)

    kept, searched, unsearched = session("kept"), session("gone", 1), session("late", 2)
    harness.store.save(searched)
    harness.store.save(kept)
    # One forgotten session was counted by a search before, the other not yet.
    assert harness.store.search("kept", "parser lunch")
    harness.store.save(unsearched)
    assert harness.store.forget("gone")
    assert harness.store.forget("late")
    store = harness.reader()
    fresh = harness.another()
    fresh.save(kept)
    for query in ("parser lunch", "parser", "menu bug", "fix"):
        got = [(h.message, h.score, h.snippet) for h in store.search("kept", query)]
        assert got == [(h.message, h.score, h.snippet) for h in fresh.search("kept", query)]
        assert got
    assert store.search("gone", "parser") == []


def test_stats_count_what_each_session_keeps(harness: Harness) -> None:
    first = record()
    second = record(first, minutes=3, narrative="naïve 🙂 \ud800 résumé")
    rows = [
        stored(0, "plain ascii", compaction=first.id, session="é"),
        stored(1, "東京 and 🙂", compaction=second.id, session="é", role=Role.ASSISTANT),
        # A lone surrogate in the wire item, a NUL in the text: both cost their bytes.
        replace(
            stored(2, "tool output", compaction=second.id, session="é"),
            data='{"role":"user","content":"lone \ud83d here"}',
            text="nul \x00 inside",
        ),
    ]
    late = T0 + timedelta(days=3, microseconds=5)
    harness.store.save(Compaction("é", (first, second), rows, SessionState("é", updated_at=late)))
    harness.store.save_session(SessionState("B", updated_at=T0))
    summary, others = three("a")
    harness.store.save(compaction(summary, others, session="a"))
    store = harness.reader()
    # Code-point order: upper case before lower case, then the rest of Unicode.
    assert store.stats() == [
        expected_stats("B", [], [], T0),
        expected_stats("a", others, [summary], T0),
        expected_stats("é", rows, [first, second], late),
    ]
    assert store.stats()[2].bytes > sum(len(m.data) + len(m.text) for m in rows)
    # The counts alone, as the operator's page reads them: a session with a state and no
    # originals counts none.
    assert store.message_counts() == {"B": 0, "a": len(others), "é": len(rows)}


def test_stats_of_an_empty_store_are_empty(harness: Harness) -> None:
    assert harness.reader().stats() == []
    assert harness.reader().message_counts() == {}


def test_prune_forgets_the_sessions_last_saved_before_the_cutoff(harness: Harness) -> None:
    now = datetime.now(UTC)
    ages = {"ancient": T0, "week": now - timedelta(days=7), "hour": now - timedelta(hours=1)}
    saved = fill(harness.store, *ages)
    for name, when in ages.items():
        harness.store.save(replace(saved[name], state=replace(saved[name].state, updated_at=when)))
    harness.store.save_session(SessionState("fresh", offset=1))  # stamped now
    assert harness.store.prune(timedelta(days=30)) == ["ancient"]
    store = harness.reader()
    assert store.sessions() == ["fresh", "hour", "week"]
    assert store.recall("ancient") == []
    assert store.search("ancient", "parser") == []
    assert store.prune(timedelta(days=30)) == []
    # A moment rather than an age; in any zone.
    two_days_ago = (now - timedelta(days=2)).astimezone(timezone(timedelta(hours=-5)))
    assert store.prune(two_days_ago) == ["week"]
    assert store.prune(timedelta(minutes=30)) == ["hour"]
    assert store.sessions() == ["fresh"]
    assert store.recall("hour") == []
    assert [s.session_id for s in store.stats()] == ["fresh"]


def test_prune_of_nothing_forgets_nothing(harness: Harness) -> None:
    assert harness.store.prune(timedelta(0)) == []
    fill(harness.store, "a")
    assert harness.store.prune(datetime(2000, 1, 1, tzinfo=UTC)) == []
    # Longer ago than the calendar reaches: no session is that old.
    assert harness.store.prune(timedelta.max) == []
    assert harness.reader().sessions() == ["a"]


@pytest.mark.parametrize(
    ("older_than", "expected"),
    [
        (datetime(2025, 1, 1), "timezone-aware"),  # naive
        (timedelta(seconds=-1), "must not be negative"),
        (7, "timedelta or a datetime"),
        ("7 days", "timedelta or a datetime"),
        (None, "timedelta or a datetime"),
    ],
)
def test_prune_refuses_what_is_not_a_moment_or_an_age(
    harness: Harness, older_than: Any, expected: str
) -> None:
    fill(harness.store, "a")
    with pytest.raises(ConfigurationError, match=expected):
        harness.store.prune(older_than)
    assert harness.reader().sessions() == ["a"]


def test_a_closed_store_refuses_the_lifecycle_too(harness: Harness) -> None:
    store = harness.store
    store.close()
    for call in (
        lambda: store.forget("s1"),
        lambda: store.prune(timedelta(days=1)),
        store.stats,
        lambda: asyncio.run(store.astats()),
    ):
        with pytest.raises(StoreError, match="closed"):
            call()


def test_async_lifecycle_agrees_with_the_sync_one(harness: Harness) -> None:
    saved = fill(harness.store, "a", "b", "c")  # last saved at T0, long ago
    now = datetime.now(UTC)
    harness.store.save_session(replace(saved["b"].state, updated_at=now))

    head = saved["a"].records[0].id

    async def run() -> tuple[list[SessionStats], bool, bool, list[str], list[SessionStats]]:
        store = harness.store
        assert await store.asummary("a", head) == saved["a"].records[0]
        stats = await store.astats()
        forgot = await store.aforget("a")
        assert await store.asummary("a", head) is None
        return (
            stats,
            forgot,
            await store.aforget("a"),
            await store.aprune(timedelta(days=1)),
            await store.astats(),
        )

    before, forgot, again, pruned, after = asyncio.run(run())
    assert [s.session_id for s in before] == ["a", "b", "c"]
    assert forgot is True
    assert again is False
    assert pruned == ["c"]
    b = saved["b"]
    assert after == harness.reader().stats()
    assert after == [expected_stats("b", b.messages, b.records, now)]


# -- the property: forget leaves a store as if the session had never been saved --------------

WORDS = st.text(st.sampled_from("abcde fgh XY 12_-:é"), max_size=30)
SESSION_IDS = ["s", "t", "u"]


def _rows(session_id: str, texts: Sequence[str], summary: SummaryRecord) -> list[StoredMessage]:
    return [
        replace(
            stored(n, text or "empty", compaction=summary.id, session=session_id),
            data=json.dumps({"n": n, "text": text}),
        )
        for n, text in enumerate(texts)
    ]


@given(
    st.dictionaries(st.sampled_from(SESSION_IDS), st.lists(WORDS, max_size=6), min_size=1),
    st.sets(st.sampled_from(SESSION_IDS)),
    st.lists(WORDS, min_size=1, max_size=3),
    st.booleans(),
)
def test_after_forget_a_store_answers_as_one_that_never_held_the_session(
    texts: dict[str, list[str]], forget: set[str], queries: list[str], search_first: bool
) -> None:
    summaries = {name: record(narrative=f"summary of {name}") for name in texts}
    saved = {
        name: compaction(summaries[name], _rows(name, rows, summaries[name]), session=name)
        for name, rows in texts.items()
    }
    kept = [name for name in saved if name not in forget]
    for make in (MemoryStore, lambda: SQLiteStore(":memory:")):
        store, fresh = make(), make()
        for done in saved.values():
            store.save(done)
        if search_first:
            for name in saved:
                store.search(name, queries[0])
        for name in kept:
            fresh.save(saved[name])
        assert [store.forget(name) for name in sorted(forget)] == [
            name in saved for name in sorted(forget)
        ]
        assert store.sessions() == sorted(kept)
        assert store.stats() == fresh.stats()
        assert store.stats() == [
            expected_stats(name, saved[name].messages, saved[name].records, T0)
            for name in sorted(kept)
        ]
        for name in SESSION_IDS:
            for query in queries:
                got = [(h.message, h.score, h.snippet) for h in store.search(name, query)]
                want = [(h.message, h.score, h.snippet) for h in fresh.search(name, query)]
                assert got == want
        store.close()
        fresh.close()
