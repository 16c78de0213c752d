"""The OpenAI Agents SDK adapter: the input filter and the compacting session, their options,
and how the session writes a compacted history back to the session it wraps."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any, TypeAlias

import agents
import pytest
from agents import Agent, RunConfig, Runner, SessionABC, SQLiteSession, function_tool
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ScriptedModel, assistant_message

from synopsis import CompactionCompleted, Compactor, RuleBasedSummarizer
from synopsis.adapters.agents import SynopsisInputFilter, SynopsisSession
from synopsis.errors import ConfigurationError
from synopsis.testing import FixedCounter
from tests.adapters.clearing import cleared, recalled

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agents import TResponseInputItem

    from synopsis import Message, SummaryRecord

agents.set_tracing_disabled(True)

Item: TypeAlias = Any
"""A Responses input item as a test writes it (the SDK types them as TypedDicts)."""


def history(turns: int, *, size: int = 40) -> list[Item]:
    """A task and ``turns`` tool turns, as the SDK stores them (Responses input items)."""
    items: list[Item] = [{"role": "user", "content": "Port sched/core.py to asyncio"}]
    for k in range(turns):
        items += [
            {
                "id": f"fc_{k}",
                "type": "function_call",
                "call_id": f"c{k}",
                "name": "bash",
                "arguments": json.dumps({"cmd": f"pytest -k t{k}"}),
                "status": "completed",
            },
            {"type": "function_call_output", "call_id": f"c{k}", "output": "PASSED " * size},
            {
                "id": f"msg_{k}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"step {k} done", "annotations": []}],
            },
        ]
    return items


def small(**options: Any) -> Compactor:
    """A Compactor whose window a few dozen items fill (100 tokens an item)."""
    return Compactor(
        model="gpt-4.1", context_window=4000, counter=FixedCounter(per_message=100), **options
    )


def call(
    items: list[TResponseInputItem], context: object = None, instructions: str | None = "Be brief."
) -> CallModelData[Any]:
    agent: Agent[Any] = Agent(name="a", instructions=instructions)
    return CallModelData(
        model_data=ModelInputData(input=items, instructions=instructions),
        agent=agent,
        context=context,
    )


def copies(items: Sequence[Item]) -> list[Item]:
    """The items as the SDK passes them on every model call: new dicts, equal content."""
    return json.loads(json.dumps(items))  # type: ignore[no-any-return]


class ListSession(SessionABC):
    """A session of one's own (the SDK's protocol, in memory), which offers no atomic
    replacement; ``fail_adds`` makes that many of the next writes fail."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.items: list[TResponseInputItem] = []
        self.fail_adds = 0
        self.writes = 0

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return copies(self.items if limit is None else self.items[-limit:])

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if self.fail_adds:
            self.fail_adds -= 1
            raise OSError("disk full")
        self.writes += 1
        self.items += copies(items)

    async def pop_item(self) -> TResponseInputItem | None:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items = []


def summary_in(items: Sequence[TResponseInputItem]) -> bool:
    return any("<synopsis-summary" in json.dumps(i) for i in items)


# -- the extra ------------------------------------------------------------------------------


def test_without_the_sdk_the_module_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)
    monkeypatch.delitem(sys.modules, "synopsis.adapters.agents")
    with pytest.raises(ImportError, match=r'pip install "synopsis\[agents\]"'):
        importlib.import_module("synopsis.adapters.agents")


def test_importing_synopsis_and_its_adapters_does_not_import_the_sdk() -> None:
    code = "import sys, synopsis, synopsis.adapters; print('agents' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


# -- options --------------------------------------------------------------------------------


def test_options_or_a_compactor_not_both() -> None:
    compactor = small()
    assert SynopsisInputFilter(compactor=compactor).compactor is compactor
    assert SynopsisSession(ListSession("s"), compactor=compactor).compactor is compactor
    with pytest.raises(ConfigurationError, match="not both"):
        SynopsisInputFilter(compactor=compactor, model="gpt-4.1")
    with pytest.raises(ConfigurationError, match="not both"):
        SynopsisSession(ListSession("s"), compactor=compactor, trigger=0.5)
    with pytest.raises(ConfigurationError, match="conversations must be at least 1"):
        SynopsisInputFilter(model="gpt-4.1", conversations=0)


def test_the_store_is_the_compactors() -> None:
    assert SynopsisInputFilter(model="gpt-4.1", session_id=lambda context: "s").store is None
    kept = SynopsisInputFilter(model="gpt-4.1", session_id="s")
    assert kept.store is kept.compactor.setup.store is not None
    session = SynopsisSession(ListSession("s"), model="gpt-4.1")
    assert session.session_id == "s"
    assert session.store is session.compactor.setup.store is not None


# -- the filter -----------------------------------------------------------------------------


def test_under_the_trigger_the_request_goes_as_the_sdk_made_it() -> None:
    flt = SynopsisInputFilter(model="gpt-4.1")
    data = call(history(3))
    assert asyncio.run(flt(data)) is data.model_data
    assert flt.last is not None
    assert flt.last.code == "under-trigger"


def test_the_filter_compacts_and_kept_items_are_the_sdks_objects_of_that_call() -> None:
    events: list[object] = []
    flt = SynopsisInputFilter(compactor=small(), session_id="s", listeners=[events.append])
    data = call(history(40))
    out = asyncio.run(flt(data))
    assert flt.last is not None
    assert flt.last.compacted
    assert events
    assert out.instructions == "Be brief."
    assert summary_in(out.input)
    sent = {id(i) for i in data.model_data.input}
    kept = [i for i in out.input if id(i) in sent]
    assert len(kept) == len(out.input) - 1  # all but the summary
    assert kept[-1] is data.model_data.input[-1]


def test_the_clearing_strategy_makes_old_function_call_outputs_placeholders() -> None:
    """``strategy=("clear",)``, passed as any option: the oldest ``function_call_output``
    items become placeholders with their call ids, the newest three stay whole, nothing is
    summarized, every other item is the SDK's object of that call, and the placeholder's
    recall gives the original back. (The outputs are alike: not deduplicated here, so that
    only clearing changes them.)"""
    flt = SynopsisInputFilter(
        model="gpt-4.1",
        context_window=4000,
        strategy=("clear",),
        dedupe_results=False,
        session_id="s",
    )
    data = call(history(10, size=150))
    sent: list[Item] = list(data.model_data.input)
    out: list[Item] = list(asyncio.run(flt(data)).input)
    assert len(out) == len(sent)
    outputs = [
        (o, g) for o, g in zip(out, sent, strict=True) if g.get("type") == "function_call_output"
    ]
    placeholders = [(o, g) for o, g in outputs if cleared(o["output"])]
    assert placeholders == outputs[: len(placeholders)]  # the oldest
    assert 0 < len(placeholders) <= len(outputs) - 3
    for item, original in placeholders:
        assert (item["type"], item["call_id"]) == (original["type"], original["call_id"])
        assert json.dumps(original["output"]) in recalled(flt.store, "s", item["output"])
    made = {id(o) for o, _ in placeholders}
    assert all(o is g for o, g in zip(out, sent, strict=True) if id(o) not in made)


def test_copies_of_the_same_items_give_synopsis_one_list_grown_in_place() -> None:
    flt = SynopsisInputFilter(model="gpt-4.1")
    items = history(5)
    read: list[object] = []
    flt.listeners = (lambda event: None,)
    for n in (6, 9, len(items)):
        data = call(copies(items[:n]))
        asyncio.run(flt(data))
        conversation = flt._seen[None]
        read.append(conversation.items.items)
    assert read[0] is read[1] is read[2]
    assert read[0] == items
    # An edited item: a new list, which keeps the first copies of the items before it.
    edited = copies(items)
    edited[3]["output"] = "FAILED"
    before = read[0][:3]
    asyncio.run(flt(call(edited)))
    now = flt._seen[None].items.items
    assert now is not read[0]
    assert now == edited
    assert all(a is b for a, b in zip(now[:3], before, strict=True))
    # A shorter list (a run rewound): the leading copies, in a new list.
    shorter = flt._seen[None].items.align(copies(edited[:4]))
    assert shorter is not now
    assert all(a is b for a, b in zip(shorter, now[:4], strict=True))


def test_one_filter_serves_many_conversations_and_keeps_the_latest() -> None:
    seen: list[object] = []

    def conversation(context: object) -> str | None:
        seen.append(context)
        return context["thread"] if isinstance(context, dict) else None

    flt = SynopsisInputFilter(compactor=small(), session_id=conversation, conversations=2)
    for thread in ("a", "b", "a", "c"):
        asyncio.run(flt(call(history(2), context={"thread": thread})))
    assert list(flt._seen) == ["a", "c"]
    asyncio.run(flt(call(history(2))))
    assert list(flt._seen) == ["c", None]
    empty = call([])
    assert asyncio.run(flt(empty)) is empty.model_data
    assert seen[-1] is None


def test_tools_and_instructions_are_measured_with_the_request() -> None:
    @function_tool
    def bash(cmd: str) -> str:
        """Run a shell command."""
        return cmd

    counted = Compactor(model="gpt-4.1", context_window=10**6)
    flt = SynopsisInputFilter(compactor=counted)
    agent: Agent[Any] = Agent(name="a", instructions="x " * 2000, tools=[bash])
    items = history(1)
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions="x " * 2000), agent=agent, context=None
    )
    asyncio.run(flt(data))
    with_all = flt.last
    flt2 = SynopsisInputFilter(compactor=Compactor(model="gpt-4.1", context_window=10**6))
    asyncio.run(flt2(call(items, instructions=None)))
    assert with_all is not None
    assert flt2.last is not None
    assert with_all.tokens_before > flt2.last.tokens_before + 1500
    assert with_all.system == "x " * 2000
    conversation = flt._seen[None]
    assert conversation.tools(agent.tools) is conversation.tools(agent.tools)
    assert conversation.instructions("x " * 2000) == "x " * 2000


def test_a_run_with_the_filter_keeps_its_whole_history() -> None:
    model = ScriptedModel([[assistant_message("ok")]])
    flt = SynopsisInputFilter(compactor=small(), session_id="run")
    agent: Agent[Any] = Agent(name="coder", instructions="Code.", model=model)
    given = [*history(40), {"role": "user", "content": "what next?"}]
    result = asyncio.run(
        Runner.run(agent, given, run_config=RunConfig(call_model_input_filter=flt))
    )
    assert model.last_call is not None
    assert len(model.last_call.input) < 40
    assert summary_in(model.last_call.input)
    assert len(result.to_input_list()) == len(given) + 1


# -- the session ----------------------------------------------------------------------------


def test_reads_keep_the_wrapped_sessions_semantics() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        session = SynopsisSession(inner, model="gpt-4.1")
        await session.add_items(history(2))
        assert await session.get_items(limit=2) == history(2)[-2:]
        assert await session.get_items() == history(2)
        assert await session.pop_item() == history(2)[-1]
        assert await session.get_items() == history(2)[:-1]
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.add_items(history(1))
        assert await inner.get_items() == history(1)

    asyncio.run(run())


def test_adding_items_compacts_the_stored_history_in_one_replacement() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        session = SynopsisSession(inner, compactor=small())
        for k in range(40):
            await session.add_items(history(k + 1)[-3:] if k else history(1))
        stored = await inner.get_items()
        assert summary_in(stored)
        assert len(stored) < 40
        assert session.last is not None
        # What this wrapper remembers is what is stored.
        assert session._items is not None
        assert session._items.items == stored

    asyncio.run(run())


def test_a_history_stored_before_wrapping_is_compacted_when_a_run_reads_it() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        await inner.add_items(history(40))
        session = SynopsisSession(inner, compactor=small())
        model = ScriptedModel([[assistant_message("ok")], [assistant_message("ok")]])
        agent: Agent[Any] = Agent(name="coder", model=model)
        await Runner.run(agent, "what next?", session=session)
        assert model.last_call is not None
        assert summary_in(model.last_call.input)
        stored: list[Item] = await inner.get_items()
        assert summary_in(stored)
        assert stored[-1]["content"][0]["text"] == "ok"
        await Runner.run(agent, "and then?", session=session)
        assert len(await inner.get_items()) == len(stored) + 2

    asyncio.run(run())


def test_a_session_without_atomic_replacement_is_cleared_and_refilled() -> None:
    async def run() -> None:
        inner = ListSession("s")
        inner.items = history(40)
        session = SynopsisSession(inner, compactor=small())
        result = await session.compact()
        assert result is not None
        assert result.compacted
        assert summary_in(inner.items)
        assert len(inner.items) < 40

    asyncio.run(run())


def test_a_failed_refill_puts_the_previous_items_back() -> None:
    async def run() -> None:
        inner = ListSession("s")
        inner.items = history(40)
        session = SynopsisSession(inner, compactor=small())
        inner.fail_adds = 1
        with pytest.raises(OSError, match="disk full"):
            await session.compact()
        assert inner.items == history(40)

    asyncio.run(run())


def test_forced_compaction_under_the_trigger() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        await inner.add_items(history(6))
        session = SynopsisSession(inner, model="gpt-4.1")
        assert await SynopsisSession(SQLiteSession("empty"), model="gpt-4.1").compact() is None
        first = await session.compact()
        assert first is not None
        assert not first.compacted
        forced = await session.compact(force=True)
        assert forced is not None
        assert forced.compacted
        assert summary_in(await inner.get_items())

    asyncio.run(run())


def test_popping_what_another_writer_stored_forgets_what_the_wrapper_saw() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        session = SynopsisSession(inner, model="gpt-4.1")
        await session.add_items(history(2))
        await inner.add_items([{"role": "user", "content": "from elsewhere"}])
        assert await session.pop_item() == {"role": "user", "content": "from elsewhere"}
        assert session._items is None
        again = await session.compact()
        assert again is not None
        assert not again.compacted
        assert session._items is not None
        assert session._items.items == history(2)

    asyncio.run(run())


def test_items_another_writer_stored_are_compacted_too() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        session = SynopsisSession(inner, compactor=small())
        await session.add_items(history(3))
        extra: Item = {"role": "user", "content": "from elsewhere"}
        await inner.add_items([extra])
        await session.add_items(history(40)[10:])
        stored = await inner.get_items()
        assert summary_in(stored)
        recalled = [json.loads(m.data) for m in session.compactor.recall("s")]
        assert extra in stored or extra in recalled

    asyncio.run(run())


class Interrupting:
    """A summarizer during whose call, once ``armed``, another writer appends to the
    session: the write the compaction would make is then refused by the session's atomic
    replacement."""

    def __init__(self, session: SQLiteSession, item: Item) -> None:
        self.session = session
        self.item: Item | None = item
        self.armed = False
        self.rules = RuleBasedSummarizer()

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        if self.armed and self.item is not None:
            await self.session.add_items([self.item])
            self.item = None
        return self.rules.summarize(
            messages, previous=previous, instructions=instructions, max_tokens=max_tokens
        )


def test_a_write_between_compaction_and_replacement_is_not_overwritten() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        late: Item = {"role": "user", "content": "written meanwhile"}
        interrupting = Interrupting(inner, late)
        session = SynopsisSession(inner, compactor=small(summarizer=interrupting))
        await session.add_items(history(40))
        extra: Item = {"role": "user", "content": "from elsewhere"}
        await inner.add_items([extra])
        before = await inner.get_items()

        def arm(event: object) -> None:
            if isinstance(event, CompactionCompleted):
                interrupting.armed = True

        # The view is stale (the other writer's item): the compaction is run again on what
        # is stored, and during that one a third write lands.
        session.listeners = (arm,)
        result = await session.compact(force=True)
        assert result is not None
        assert result.compacted
        stored = await inner.get_items()
        assert stored == [*before, late]  # nothing replaced, nothing lost
        assert session._items is None
        # The next read compacts what is stored now.
        session.listeners = ()
        await session.compact(force=True)
        stored = await inner.get_items()
        assert summary_in(stored)
        assert stored[-1] == late

    asyncio.run(run())


def test_a_stale_view_is_read_again_before_writing() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        session = SynopsisSession(inner, compactor=small())
        await session.add_items(history(40))
        extra: Item = {"role": "user", "content": "from elsewhere"}
        await inner.add_items([extra])
        await session.compact(force=True)
        stored = await inner.get_items()
        assert stored[-1] == extra

    asyncio.run(run())


def test_a_stale_view_that_needed_compaction_is_not_written_when_what_is_stored_does_not() -> None:
    async def run() -> None:
        inner = SQLiteSession("s")
        session = SynopsisSession(inner, compactor=small())
        await session.add_items(history(40))
        # Another writer starts the session over; this wrapper still sees its summary.
        await inner.clear_session()
        chat: list[Item] = [
            {"role": "user" if k % 2 == 0 else "assistant", "content": f"message {k}"}
            for k in range(30)
        ]
        await session.add_items(chat)
        assert session.last is not None
        assert not session.last.compacted
        assert await inner.get_items() == chat
        assert session._items is not None
        assert session._items.items == chat

    asyncio.run(run())
