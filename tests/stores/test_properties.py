"""Properties over any input: saved messages come back equal, any query is safe, and the two
stores rank alike."""

from __future__ import annotations

import math
from datetime import UTC

from hypothesis import given
from hypothesis import strategies as st

from synopsis.formats import FORMATS
from synopsis.messages import Role
from synopsis.stores import MemoryStore, SessionState, SQLiteStore, StoredMessage
from synopsis.stores._query import ELLIPSIS, MARK, query_words, snippet, words
from synopsis.stores.records import Compaction
from tests.stores.helpers import record

SUMMARY = record()
LONE = st.sampled_from(["\ud800", "\udfff", "\ud83d"])
ANY_TEXT = st.text(st.one_of(st.characters(), LONE), max_size=60)
ASCII = st.text(st.sampled_from("abcde fgh XY 12_-:*\"'()"), max_size=40)


def messages(text: st.SearchStrategy[str] = ANY_TEXT) -> st.SearchStrategy[list[StoredMessage]]:
    one = st.builds(
        StoredMessage,
        session_id=st.just("s"),
        id=st.sampled_from(["a", "b", "call_1", "msg_é"]),
        position=st.integers(0, 20),
        role=st.sampled_from([r.value for r in Role]),
        text=text,
        sha256=st.sampled_from(["0" * 64, "f" * 64]),
        format=st.sampled_from(FORMATS),
        data=ANY_TEXT,
        compaction_id=st.just(SUMMARY.id),
        created_at=st.datetimes(timezones=st.just(UTC)),
    )
    return st.lists(one, max_size=12)


def save(store: MemoryStore | SQLiteStore, rows: list[StoredMessage]) -> None:
    store.save(Compaction("s", SUMMARY, tuple(rows), SessionState("s")))


def expected(rows: list[StoredMessage]) -> list[StoredMessage]:
    first: dict[tuple[str, str], StoredMessage] = {}
    for row in rows:
        first.setdefault((row.id, row.sha256), row)
    return sorted(first.values(), key=lambda m: m.position)  # stable: saved order breaks ties


@given(messages(), st.lists(st.sampled_from(["a", "b", "zz"]), max_size=3), st.integers(0, 20))
def test_saved_messages_come_back_equal(rows, ids, cut) -> None:
    want = expected(rows)
    for store in (MemoryStore(), SQLiteStore(":memory:")):
        save(store, rows)
        save(store, rows)  # append-only: a second save changes nothing
        assert store.recall("s") == want
        assert store.recall("s", ids=ids) == [m for m in want if m.id in ids]
        assert store.recall("s", start=cut) == [m for m in want if m.position >= cut]
        assert store.recall("s", stop=cut) == [m for m in want if m.position < cut]
        store.close()


@given(messages(), ANY_TEXT)
def test_any_query_is_safe_and_hits_hold_a_query_word(rows, query) -> None:
    terms = set(query_words(query))
    for store in (MemoryStore(), SQLiteStore(":memory:")):
        save(store, rows)
        for hit in store.search("s", query, limit=50):
            assert terms & set(words(hit.message.text))
            assert hit.score > 0
        store.close()


@given(messages(ASCII), ASCII)
def test_memory_and_sqlite_rank_alike(rows, query) -> None:
    memory, sqlite = MemoryStore(), SQLiteStore(":memory:")
    save(memory, rows)
    save(sqlite, rows)
    mine, theirs = memory.search("s", query, limit=50), sqlite.search("s", query, limit=50)
    assert [h.message for h in mine] == [h.message for h in theirs]
    for a, b in zip(mine, theirs, strict=True):
        assert math.isclose(a.score, b.score, rel_tol=1e-9)
        assert a.snippet == b.snippet
    sqlite.close()


@given(
    st.text(st.characters(exclude_characters="*…"), max_size=80),
    st.lists(st.sampled_from(["a", "b", "é", "x1"]), max_size=3),
)
def test_a_snippet_is_a_marked_piece_of_the_text(text, terms) -> None:
    cut = snippet(text, terms)
    plain = cut.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS).replace(MARK, "")
    assert plain in text
    assert len(words(plain)) <= 16
    if cut.startswith(ELLIPSIS):
        assert not text.startswith(plain)
