"""A part that fails: a summarizer that raises, hangs or answers garbage, a store that raises,
cannot read or whose disk is full, a counter that fails. Nothing is lost: the caller gets a
compacted history whose originals were saved, or its own history untouched and an error."""

from __future__ import annotations

import asyncio
import copy
import json
import sqlite3
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import pytest

from synopsis.compaction import Compactor, SummarizerOption
from synopsis.errors import (
    ConfigurationError,
    StoreError,
    SummarizerError,
)
from synopsis.events import CompactionFailed, Event, SummarizerFellBack
from synopsis.messages import Message
from synopsis.stores import MemoryStore, SQLiteStore
from synopsis.summarizers import LLMSummarizer, RuleBasedSummarizer
from synopsis.summarizers.llm.completion import CompletionRequest, CompletionResponse
from synopsis.testing import FailingStore
from synopsis.tokens import counter_for_model
from synopsis.validation import validate
from tests.compaction.helpers import (
    TRANSCRIPTS,
    kinds,
    load_items,
    make,
    run,
    store_of,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord

CLOCK = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ITEMS = load_items(next(p for p in TRANSCRIPTS if p.stem.startswith("sweagent-marshmallow")))


class Raises:
    def summarize(self, messages: Sequence[Message], **_: Any) -> SummaryRecord:
        raise RuntimeError("model exploded")


class Garbage:
    def summarize(self, messages: Sequence[Message], **_: Any) -> SummaryRecord:
        # A summarizer whose answer is not what its type says: the pipeline must notice.
        return cast("SummaryRecord", "not a record")


class Hangs:
    def __init__(self) -> None:
        self.release = threading.Event()

    def summarize(self, messages: Sequence[Message], **_: Any) -> SummaryRecord:
        self.release.wait(10)
        return RuleBasedSummarizer().summarize(messages)


def compactor(summarizer: SummarizerOption, **options: Any) -> Compactor:
    options.setdefault("store", MemoryStore())
    return Compactor(
        model="gpt-4o", context_window=8_000, summarizer=summarizer, session_id="f", **options
    )


def check_fell_back(c: Compactor, items: list[dict[str, Any]], reason: str) -> None:
    sent = copy.deepcopy(items)
    result = c.compact(items, force=True)
    assert items == sent
    assert result.compacted
    assert result.record is not None
    assert result.record.model == "rules"
    fell = [e for e in result.events if isinstance(e, SummarizerFellBack)]
    assert len(fell) == 1
    assert reason in fell[0].reason
    assert validate(result.messages, "openai") == []
    assert len(store_of(c).recall("f")) == len(result.offloaded) > 0


def test_a_summarizer_that_raises_falls_back_to_the_rules():
    check_fell_back(compactor(Raises()), list(ITEMS), "model exploded")


def test_a_summarizer_that_answers_garbage_falls_back_to_the_rules():
    check_fell_back(compactor(Garbage()), list(ITEMS), "not a SummaryRecord")


def test_a_summarizer_that_hangs_past_its_timeout_falls_back_to_the_rules():
    hangs = Hangs()
    try:
        check_fell_back(compactor(hangs, summarizer_timeout=0.2), list(ITEMS), "0.2 seconds")
    finally:
        hangs.release.set()


def test_an_async_summarizer_that_hangs_past_its_timeout_falls_back_too():
    class AsyncHangs:
        async def asummarize(self, messages: Sequence[Message], **_: Any) -> SummaryRecord:
            await asyncio.sleep(10)
            raise AssertionError("not reached")

    c = compactor(AsyncHangs(), summarizer_timeout=0.2)
    result = asyncio.run(c.acompact(list(ITEMS), force=True))
    assert result.record is not None
    assert result.record.model == "rules"


def test_an_llm_summarizer_falling_back_is_reported_in_the_result():
    def broken(request: CompletionRequest) -> CompletionResponse:
        return CompletionResponse("this is not json at all")

    llm = LLMSummarizer(broken, models=["gpt-4o-mini"])
    result = compactor(llm).compact(list(ITEMS), force=True)
    fell = [e for e in result.events if isinstance(e, SummarizerFellBack)]
    assert len(fell) == 1
    assert fell[0].model == "gpt-4o-mini"
    assert fell[0].session_id == "f"
    assert result.record is not None
    assert result.record.model == "rules"


@pytest.mark.parametrize("run", ["sync", "async"])
def test_abort_on_failure_raises_through_compact_and_leaves_everything_as_it_was(run: str):
    def broken(request: CompletionRequest) -> CompletionResponse:
        return CompletionResponse("this is not json at all")

    llm = LLMSummarizer(broken, models=["gpt-4o-mini"], abort_on_failure=True)
    store = MemoryStore()
    c = compactor(llm, store=store)
    items = copy.deepcopy(ITEMS)

    def call() -> object:
        if run == "sync":
            return c.compact(items, force=True)
        return asyncio.run(c.acompact(items, force=True))

    with pytest.raises(SummarizerError, match="every model failed"):
        call()
    assert items == ITEMS
    assert store.summaries("f") == []
    assert store.recall("f") == []


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_store_that_fails_leaves_the_history_untouched(run: str):
    store = FailingStore(fail={"save"})
    c = compactor(RuleBasedSummarizer(), store=store)
    items = list(ITEMS)
    sent = copy.deepcopy(items)

    def attempt() -> object:
        if run == "sync":
            return c.compact(items, force=True)
        return asyncio.run(c.acompact(items, force=True))

    with pytest.raises(StoreError, match="not saved, so it is not applied"):
        attempt()
    assert items == sent
    assert store.recall("f") == []
    assert store.summaries("f") == []


def test_a_full_disk_loses_nothing_and_the_store_still_works(tmp_path: Path):
    path = tmp_path / "full.db"
    store = SQLiteStore(path)
    # Fill the database to the page it has, then forbid it to grow: the next save cannot fit.
    page_count = sqlite3.connect(path).execute("PRAGMA page_count").fetchone()[0]
    db = store._db
    assert db is not None
    db.execute(f"PRAGMA max_page_count = {page_count + 1}")
    c = compactor(RuleBasedSummarizer(), store=store)
    items = list(ITEMS)
    sent = copy.deepcopy(items)
    with pytest.raises(StoreError) as raised:
        c.compact(items, force=True)
    assert "full" in str(raised.value)
    assert items == sent
    assert store.recall("f") == []
    assert store.session("f") is None
    db.execute("PRAGMA max_page_count = 1000000")
    result = c.compact(items, force=True)
    assert result.compacted
    assert len(store.recall("f")) == len(result.offloaded)


def test_sync_and_async_drivers_give_the_same_results():
    def make() -> Compactor:
        return compactor(RuleBasedSummarizer(deterministic_ids=True, clock=lambda: CLOCK))

    for path in [p for p in TRANSCRIPTS if not p.stem.startswith("codex")]:
        items = load_items(path)
        sync, asy = make(), make()
        a = sync.compact(items, force=True)
        b = asyncio.run(asy.acompact(items, force=True))
        assert a.messages == b.messages
        assert (a.code, a.tokens_before, a.tokens_after) == (
            b.code,
            b.tokens_before,
            b.tokens_after,
        )

        def stored(c: Compactor) -> list[tuple[Any, ...]]:
            return [
                (m.id, m.position, m.sha256, m.data, m.compaction_id)
                for m in store_of(c).recall("f")
            ]

        assert stored(sync) == stored(asy)


def test_the_compactor_recalls_searches_and_exports_what_it_offloaded():
    c = compactor(RuleBasedSummarizer())
    items = list(ITEMS)
    result = c.compact(items, force=True)
    recalled = c.recall()
    assert [m.id for m in recalled] == list(result.offloaded)
    assert all(json.loads(m.data) in items for m in recalled)
    first = recalled[0]
    assert c.recall(ids=[first.id]) == [first]
    assert c.recall(start=0, stop=1) == [first]
    word = max(first.text.split(), key=len)
    assert any(hit.message.id == first.id for hit in c.search(word))
    export = c.export()
    assert export.startswith("# Session f")
    assert "## Summarized at " in export


def test_a_compactor_without_a_store_has_nothing_to_recall():
    c = Compactor(model="gpt-4o", environ={})
    with pytest.raises(ConfigurationError, match="no store"):
        c.recall()


AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))


FOLLOW_UP = [
    {"role": "user", "content": "Now count the cities with more than 100000 people."},
    {"role": "assistant", "content": "There are 340 such cities in the 2020 census."},
]


def call(call_id: str, arguments: str = '{"path": "census.py"}') -> dict[str, Any]:
    function = {"name": "read_file", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


BIG_OUTPUT = "line 12: total population 331449281 for the census table\n" * 700


class BrokenCounter:
    """gpt-4o's counter, except that counting a bare text raises."""

    def __init__(self) -> None:
        self.inner = counter_for_model("gpt-4o")

    def count_text(self, text: str) -> int:
        raise RuntimeError("the tokenizer is gone")

    def count_message(self, message: Message) -> int:
        return self.inner.count_message(message)

    def count_messages(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        return self.inner.count_messages(messages, tools=tools)


def test_a_store_that_cannot_read_the_session_refuses_the_call() -> None:
    store = FailingStore(fail={"session"})
    history = list(AIDER)
    with pytest.raises(StoreError, match="could not read session 'st'") as caught:
        run(make(store=store, session_id="st"), history)
    assert "session is broken" in str(caught.value)
    assert history == AIDER
    assert store.recall("st") == []


def test_a_store_that_cannot_read_the_summaries_refuses_the_compaction() -> None:
    store = FailingStore()
    got: list[Event] = []
    compactor = make(store=store, session_id="st", listeners=[got.append])
    first = run(compactor, AIDER)
    assert first.compacted
    offloaded = store.recall("st")
    store.fail("summary")  # the chain's head, read alone
    with pytest.raises(StoreError, match="could not read the summary of 'st'"):
        run(compactor, [*first.messages, *FOLLOW_UP], force=True)
    assert kinds(got)[-1] == "CompactionFailed"
    store.heal()
    assert store.recall("st") == offloaded
    state = store.session("st")
    assert state is not None
    assert state.compactions == 1


def test_a_store_that_cannot_save_the_session_state_refuses_a_skipped_call() -> None:
    store = FailingStore(fail={"save_session"})
    with pytest.raises(StoreError, match="could not save session 'st'"):
        run(make(store=store, session_id="st"), AIDER[:4])
    store.heal()
    assert store.session("st") is None


def test_a_counter_that_fails_fails_the_compaction_and_counts_as_a_failure() -> None:
    store = MemoryStore()
    got: list[Event] = []
    compactor = make(
        store=store, session_id="count", counter=BrokenCounter(), listeners=[got.append]
    )
    # An oversized tool output: sizing its part is what needs count_text.
    history = [*AIDER, call("c1"), tool("c1", BIG_OUTPUT), *FOLLOW_UP]
    with pytest.raises(RuntimeError, match="the tokenizer is gone"):
        run(compactor, history)
    assert kinds(got) == ["CompactionStarted", "CompactionFailed"]
    failed = got[-1]
    assert isinstance(failed, CompactionFailed)
    assert failed.error_type == "RuntimeError"
    assert "the tokenizer is gone" in failed.error
    state = store.session("count")
    assert state is not None
    assert state.governor["consecutive_failures"] == 1
    assert state.compactions == 0
    assert store.recall("count") == []
