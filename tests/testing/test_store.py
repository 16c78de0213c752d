"""FailingStore: every call passes to the inner store, but those told to fail, sync and async."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

import pytest

from synopsis import Compactor
from synopsis.errors import ConfigurationError, StoreError
from synopsis.stores import AsyncStore, MemoryStore, SQLiteStore, Store
from synopsis.testing import OPERATIONS, FailingStore, conversation
from tests.stores.helpers import BlockingOnly

if TYPE_CHECKING:
    from pathlib import Path


def compacted(store: Store) -> Compactor:
    """A compactor that has saved one compaction of session "s" into ``store``."""
    compactor = Compactor(model="gpt-4o", store=store, session_id="s", environ={})
    assert compactor.compact(conversation(turns=8), force=True).compacted
    return compactor


def arguments(store: Store, operation: str) -> tuple[Any, ...]:
    """Arguments for ``operation`` on a store that holds session "s"."""
    inner = store.inner if isinstance(store, FailingStore) else store
    assert isinstance(inner, MemoryStore)
    state = inner.session("s")
    assert state is not None
    return {
        "save": (),  # filled in by the caller: a compaction cannot be saved twice unchanged
        "session": ("s",),
        "save_session": (state,),
        "summaries": ("s",),
        "summary": ("s", state.summary_id),
        "recall": ("s",),
        "search": ("s", "parse_2"),
        "sessions": (),
    }[operation]


READS = ["session", "summaries", "summary", "recall", "search", "sessions"]


def test_it_is_a_store_in_both_forms() -> None:
    store = FailingStore()
    assert isinstance(store, Store)
    assert isinstance(store, AsyncStore)
    assert isinstance(store.inner, MemoryStore)
    assert store.failing == frozenset()
    store.fail("save")
    assert repr(store) == "FailingStore(MemoryStore(sessions=0), failing=['save'])"


@pytest.mark.parametrize("operation", READS)
def test_a_read_gives_what_the_inner_store_gives(operation: str) -> None:
    store = FailingStore()
    compacted(store)
    args = arguments(store, operation)
    expected = getattr(store.inner, operation)(*args)
    assert expected  # something to compare
    assert getattr(store, operation)(*args) == expected
    assert asyncio.run(getattr(store, "a" + operation)(*args)) == expected
    assert store.calls[-2:] == [operation, "a" + operation]


def test_an_async_compaction_saves_through_it() -> None:
    store = FailingStore()
    compactor = Compactor(model="gpt-4o", store=store, session_id="s", environ={})
    result = asyncio.run(compactor.acompact(conversation(turns=8), force=True))
    assert "asave" in store.calls
    assert [m.id for m in store.inner.recall("s")] == list(result.offloaded)


def test_writes_reach_the_inner_store_in_both_forms() -> None:
    store = FailingStore()
    compacted(store)
    state = store.session("s")
    assert state is not None
    store.save_session(state)
    asyncio.run(store.asave_session(state))
    saved = store.inner.session("s")
    assert saved is not None
    assert saved.compactions == state.compactions
    assert store.calls == ["session", "save", "session", "save_session", "asave_session"]


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_failing_operation_raises_in_both_forms_before_the_inner_store(operation: str) -> None:
    store = FailingStore()
    compacted(store)
    args = arguments(store, operation) if operation != "save" else ("not a compaction",)
    before = store.inner.recall("s")
    store.fail(operation)
    with pytest.raises(OSError, match=f"^{operation} is broken$"):
        getattr(store, operation)(*args)
    with pytest.raises(OSError, match=f"^a{operation} is broken$"):
        asyncio.run(getattr(store, "a" + operation)(*args))
    assert store.calls[-2:] == [operation, "a" + operation]
    assert store.inner.recall("s") == before


def test_an_async_name_fails_only_the_async_form() -> None:
    store = FailingStore(fail={"asessions"})
    assert store.sessions() == []
    with pytest.raises(OSError, match="asessions is broken"):
        asyncio.run(store.asessions())


def test_fail_and_heal() -> None:
    store = FailingStore(fail=["save", "recall"])
    store.fail("search")
    assert store.failing == {"save", "recall", "search"}
    store.heal("recall")
    assert store.failing == {"save", "search"}
    store.heal()
    assert store.failing == frozenset()
    with pytest.raises(ConfigurationError, match="no store operation 'sav'"):
        store.fail("sav")
    with pytest.raises(ConfigurationError, match="no store operation 'close'"):
        FailingStore(fail={"close"})


def test_the_error_is_built_from_the_name_called() -> None:
    store = FailingStore(fail={"sessions"}, error=TimeoutError)
    with pytest.raises(TimeoutError, match=r"^sessions$"):
        store.sessions()


def test_close_never_fails_and_closes_the_inner_store() -> None:
    store = FailingStore()
    store.close()
    with pytest.raises(StoreError):
        store.inner.sessions()
    other = FailingStore()
    asyncio.run(other.aclose())
    with pytest.raises(StoreError):
        other.inner.sessions()
    assert (store.calls, other.calls) == (["close"], ["aclose"])


def test_it_wraps_any_store(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as inner:
        store = FailingStore(inner)
        compacted(store)
        (record,) = inner.summaries("s")
        assert store.summary("s", record.id) == record


def test_a_summary_lookup_of_a_store_without_one_reads_the_chain() -> None:
    minimal = BlockingOnly()
    store = FailingStore(minimal)
    compacted(store)
    (record,) = minimal.summaries("s")
    assert store.summary("s", record.id) == record
    assert asyncio.run(store.asummary("s", record.id)) == record
    assert store.summary("s", "0" * 32) is None


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_compaction_whose_save_fails_keeps_nothing(run: str) -> None:
    store = FailingStore(fail={"save"})
    compactor = Compactor(model="gpt-4o", store=store, session_id="s", environ={})
    history = conversation(turns=8)
    with pytest.raises(StoreError, match="not saved"):
        compactor.compact(history, force=True) if run == "sync" else asyncio.run(
            compactor.acompact(history, force=True)
        )
    assert ("save" if run == "sync" else "asave") in store.calls
    store.heal()
    assert store.recall("s") == []
    assert store.summaries("s") == []


def test_every_store_method_is_wrapped() -> None:
    # A new store method would pass through unchecked: this names the ones there are (the
    # protocol's, and the lookup of one summary every bundled store has).
    methods = {
        name
        for name, _ in inspect.getmembers(Store, inspect.isfunction)
        if not name.startswith("_")
    }
    assert methods | {"summary"} == OPERATIONS | {"close"}
