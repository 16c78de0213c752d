"""Two calls on one session at once never both summarize the same prefix, and a cancelled
``acompact`` leaves nothing half-saved."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

import synopsis
from tests.compaction.helpers import TRANSCRIPTS, load_items, store_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.compaction import StoreOption, SummarizerOption
    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord

ITEMS = load_items(next(p for p in TRANSCRIPTS if "ponyc-4588" in p.name))


class Slow(synopsis.RuleBasedSummarizer):
    """The rules, taking their time, and counting their calls: a second call that did not
    wait would summarize meanwhile."""

    def __init__(self) -> None:
        super().__init__(max_summary_tokens=8_000)
        self.calls = 0
        self.lock = threading.Lock()

    def summarize(self, messages: Sequence[Message], **options: Any) -> SummaryRecord:
        with self.lock:
            self.calls += 1
        time.sleep(0.2)
        return super().summarize(messages, **options)


class AsyncSlow(Slow):
    async def asummarize(self, messages: Sequence[Message], **options: Any) -> SummaryRecord:
        self.calls += 1
        await asyncio.sleep(0.2)
        return synopsis.RuleBasedSummarizer.summarize(self, messages, **options)


def compactor(summarizer: SummarizerOption, store: StoreOption) -> synopsis.Compactor:
    return synopsis.Compactor(
        context_window=8_000, summarizer=summarizer, store=store, session_id="busy"
    )


def test_two_threads_on_one_session_summarize_once() -> None:
    summarizer = Slow()
    store = synopsis.MemoryStore()
    results: list[synopsis.CompactionResult] = []

    def call() -> None:
        # Two compactors on one store: a process serving requests with one each.
        results.append(compactor(summarizer, store).compact(list(ITEMS), format="openai"))

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    compacted = [r for r in results if r.compacted]
    assert len(compacted) == 1
    first_calls = summarizer.calls
    alone = compactor(Slow(), synopsis.MemoryStore()).compact(list(ITEMS), format="openai")
    assert alone.compacted
    assert [json.dumps(r.messages) for r in results] == [json.dumps(alone.messages)] * 2
    assert [r.id for r in store.summaries("busy")] == [compacted[0].record.id]  # type: ignore[union-attr]
    assert len({m.position for m in store.recall("busy")}) == len(store.recall("busy"))
    assert summarizer.calls == first_calls


def test_two_tasks_on_one_session_summarize_once() -> None:
    summarizer = AsyncSlow()
    store = synopsis.MemoryStore()

    async def both() -> list[synopsis.CompactionResult]:
        c = compactor(summarizer, store)
        return list(
            await asyncio.gather(
                c.acompact(list(ITEMS), format="openai"),
                c.acompact(list(ITEMS), format="openai"),
            )
        )

    first, second = asyncio.run(both())
    assert [first.compacted, second.compacted].count(True) == 1
    assert json.dumps(first.messages) == json.dumps(second.messages)
    offloaded = store.recall("busy")
    assert len({m.position for m in offloaded}) == len(offloaded)


@pytest.mark.parametrize("at", [0, 0.05, 0.15])
def test_a_cancelled_acompact_leaves_nothing_half_done(at: float) -> None:
    store = synopsis.MemoryStore()
    summarizer = AsyncSlow()

    async def cancel_then_call() -> synopsis.CompactionResult:
        c = compactor(summarizer, store)
        task = asyncio.create_task(c.acompact(list(ITEMS), format="openai"))
        await asyncio.sleep(at)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await c.acompact(list(ITEMS), format="openai")

    result = asyncio.run(cancel_then_call())
    alone = compactor(AsyncSlow(), synopsis.MemoryStore())
    expected = asyncio.run(alone.acompact(list(ITEMS), format="openai"))
    assert result.compacted
    assert json.dumps(result.messages) == json.dumps(expected.messages)
    offloaded = store.recall("busy")
    assert [m.position for m in offloaded] == list(range(len(offloaded)))
    assert len(offloaded) == len(store_of(alone).recall("busy"))
