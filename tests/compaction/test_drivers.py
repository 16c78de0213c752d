"""The awaiting driver with blocking parts: a summarizer that raises, a store that only
blocks, a store that cannot save."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

import pytest

import synopsis
import synopsis.testing
from synopsis.errors import ConfigurationError, StoreError
from synopsis.events import SummarizerFellBack
from synopsis.stores import AsyncStore, MemoryStore, Store
from tests.compaction.helpers import (
    TRANSCRIPTS,
    arun,
    kinds,
    load_items,
    make,
    run,
)
from tests.stores.helpers import BlockingOnly

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message
    from synopsis.stores import Compaction, SearchHit, SessionState, StoredMessage
    from synopsis.summarizers import SummaryRecord

AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))


FOLLOW_UP = [
    {"role": "user", "content": "Now count the cities with more than 100000 people."},
    {"role": "assistant", "content": "There are 340 such cities in the 2020 census."},
]


class Failing:
    """A summarizer with nothing but a blocking ``summarize``, which always raises."""

    def summarize(self, messages: Sequence[Message], **_: Any) -> SummaryRecord:
        raise RuntimeError("the model is down")


def test_acompact_with_a_blocking_summarizer_that_raises_falls_back_to_the_rules() -> None:
    result = arun(make(summarizer=Failing()), AIDER)
    assert result.compacted
    assert kinds(result.events) == [
        "CompactionStarted",
        "SummarizerFellBack",
        "CompactionCompleted",
    ]
    fell = next(e for e in result.events if isinstance(e, SummarizerFellBack))
    assert "the model is down" in fell.reason
    assert result.record is not None
    assert result.record.model == "rules"


def test_acompact_uses_a_store_that_only_blocks() -> None:
    store = BlockingOnly()
    assert isinstance(store, Store)
    assert not isinstance(store, AsyncStore)
    compactor = make(store=store, session_id="sync")
    assert compactor.setup.store is store
    first = arun(compactor, AIDER)
    assert first.compacted
    assert [m.id for m in store.recall("sync")] == list(first.offloaded)
    second = arun(compactor, [*first.messages, *FOLLOW_UP], force=True)
    assert second.record is not None
    assert first.record is not None
    assert second.record.parent_id == first.record.id  # the chain was read back from it
    state = store.session("sync")
    assert state is not None
    assert state.compactions == 2


def test_acompact_with_a_blocking_store_that_cannot_save_leaves_the_input_untouched() -> None:
    class Full(BlockingOnly):
        def save(self, compaction: Compaction) -> None:
            raise OSError("disk full")

    store = Full()
    with pytest.raises(StoreError, match="disk full"):
        arun(make(store=store, session_id="full"), AIDER)
    assert store.recall("full") == []
    assert store.session("full") is None


class AsyncOnlyStore:
    """The async half of a MemoryStore and nothing else: no blocking method, no ``summary``
    or ``asummary`` (a store need not offer them; the chain is read whole instead)."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.chains_read = 0

    async def asave(self, compaction: Compaction) -> None:
        await self.inner.asave(compaction)

    async def asession(self, session_id: str) -> SessionState | None:
        return await self.inner.asession(session_id)

    async def asave_session(self, state: SessionState) -> None:
        await self.inner.asave_session(state)

    async def asummaries(self, session_id: str) -> list[SummaryRecord]:
        self.chains_read += 1
        return await self.inner.asummaries(session_id)

    async def arecall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        return await self.inner.arecall(session_id, ids=ids, start=start, stop=stop)

    async def asearch(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        return await self.inner.asearch(session_id, query, limit=limit)

    async def asessions(self) -> list[str]:
        return await self.inner.asessions()

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("kind", ["both", "async-only"])
def test_acompact_reads_the_previous_summary_through_the_async_methods(kind: str) -> None:
    store: MemoryStore | AsyncOnlyStore = MemoryStore() if kind == "both" else AsyncOnlyStore()
    assert isinstance(store, AsyncStore)
    compactor = make(store=store, session_id="chain")
    first = arun(compactor, AIDER, force=True)
    second = arun(compactor, [*first.messages, *FOLLOW_UP], force=True)
    assert first.record is not None
    assert second.record is not None
    # The second compaction updates the first's record: it read it back from the store, one
    # record by id where the store offers that, else the whole chain.
    assert second.record.parent_id == first.record.id
    if isinstance(store, AsyncOnlyStore):
        assert store.chains_read >= 1
        assert [r.id for r in store.inner.summaries("chain")] == [
            first.record.id,
            second.record.id,
        ]


def test_the_blocking_helpers_refuse_a_store_with_only_async_methods() -> None:
    compactor = make(store=AsyncOnlyStore(), session_id="a")
    for call in (compactor.recall, lambda: compactor.search("census"), compactor.export):
        with pytest.raises(ConfigurationError, match="only async methods"):
            call()


class _Watching(synopsis.testing.ScriptedSummarizer):
    """Records whether the cyclic garbage collector ran while it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.collecting: list[bool] = []

    def summarize(self, messages: Any, **options: Any) -> synopsis.SummaryRecord:
        self.collecting.append(gc.isenabled())
        return super().summarize(messages, **options)

    async def asummarize(self, messages: Any, **options: Any) -> synopsis.SummaryRecord:
        self.collecting.append(gc.isenabled())
        return await super().asummarize(messages, **options)


class _Counting(synopsis.testing.FixedCounter):
    """A counter that notes whether the collector ran while the plan counted."""

    def __init__(self) -> None:
        super().__init__(per_message=150)
        self.collecting: set[bool] = set()

    def count_message(self, message: Any) -> int:
        self.collecting.add(gc.isenabled())
        return super().count_message(message)


@pytest.mark.parametrize("mode", ["blocking", "async"])
def test_the_plan_runs_with_the_collector_paused_and_effects_with_it_running(mode: str) -> None:
    summarizer, counter = _Watching(), _Counting()
    compactor = make(summarizer=summarizer, counter=counter, store="memory", session_id="gc")
    assert gc.isenabled()
    result = run(compactor, AIDER) if mode == "blocking" else arun(compactor, AIDER)
    assert result.compacted
    assert counter.collecting == {False}  # the pure steps
    assert summarizer.collecting  # the effect, with the collector running
    assert all(summarizer.collecting)
    assert gc.isenabled()


def test_a_collector_the_caller_paused_stays_paused() -> None:
    compactor = make()
    gc.disable()
    try:
        assert run(compactor, AIDER).compacted
        assert not gc.isenabled()
    finally:
        gc.enable()
