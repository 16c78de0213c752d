"""The Agents SDK adapter in runs of the SDK's own offline model: a tool loop of 120 model
calls, runs that continue one session, and a property: what the filter gives back is what the
SDK accepts, stores and reads back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import agents
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ScriptedModel, assistant_message, function_call
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from synopsis import CompactionCompleted, Compactor, decode, validate
from synopsis.adapters.agents import SynopsisInputFilter, SynopsisSession
from synopsis.testing import FixedCounter
from tests.unmeasured import unmeasured_environ

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from agents.testing import ModelCall

agents.set_tracing_disabled(True)

Item: TypeAlias = Any
"""A Responses input item (the SDK types them as TypedDicts)."""


@function_tool
def bash(cmd: str) -> str:
    """Run a shell command."""
    return f"$ {cmd}\n" + "PASSED " * 60


def key(item: object) -> str:
    return json.dumps(item, sort_keys=True)


def tool_loop(turns: int, prefix: str = "c") -> list[Any]:
    """A model that calls the tool ``turns`` times, then answers."""
    steps: list[Any] = [
        [function_call("bash", {"cmd": f"pytest -k t{k}"}, call_id=f"{prefix}{k}")]
        for k in range(turns)
    ]
    return [*steps, [assistant_message(f"{turns} tests pass")]]


def check_requests(calls: Iterable[ModelCall], compactor: Compactor, agent: Agent[Any]) -> None:
    """Every request is one OpenAI's Responses API accepts, and fits the window as the
    Compactor counts it (instructions and tools included)."""
    counter = compactor.setup.counter
    tools = [
        {
            "type": "function",
            "name": bash.name,
            "description": bash.description,
            "parameters": bash.params_json_schema,
        }
    ]
    assert agent.tools == [bash]
    for request in calls:
        system = request.system_instructions
        assert validate(request.input, "openai", format="responses", system=system) == []
        messages = decode(request.input, "responses", system=system).messages
        assert counter.count_messages(messages, tools=tools) <= compactor.setup.limit


def test_a_tool_loop_of_120_model_calls_stays_valid_and_inside_the_window() -> None:
    # Eight compactions, seven of a history holding a summary already: what 210 calls did
    # (fifteen), at a third of the cost.
    turns = 120
    model = ScriptedModel(tool_loop(turns))
    done: list[object] = []
    compactor = Compactor(model="gpt-4.1", context_window=6000, session_id="loop")
    flt = SynopsisInputFilter(
        compactor=compactor,
        session_id="loop",
        listeners=[lambda e: done.append(e) if isinstance(e, CompactionCompleted) else None],
    )
    agent: Agent[Any] = Agent(name="coder", instructions="Port it.", model=model, tools=[bash])
    result = asyncio.run(
        Runner.run(
            agent,
            "Port sched/core.py to asyncio",
            run_config=RunConfig(call_model_input_filter=flt),
            max_turns=turns + 5,
        )
    )
    assert result.final_output == f"{turns} tests pass"
    calls = model.calls
    assert len(calls) == turns + 1
    check_requests(calls, compactor, agent)
    assert len(done) >= 5
    assert max(len(c.input) for c in calls) < 80  # of 242
    # The run keeps its whole history; what the last request left out is in the store.
    history = result.to_input_list()
    assert len(history) == 2 * turns + 2
    sent = {key(i) for i in calls[-1].input}
    recalled = {key(json.loads(m.data)) for m in compactor.recall("loop")}
    assert all(key(item) in sent | recalled for item in history[:-1])


def test_runs_continuing_one_session_keep_it_valid_and_lose_nothing() -> None:
    # Twenty runs already make 35 summaries of the session (45 made 77, for nothing else).
    runs, turns = 20, 5
    compactor = Compactor(
        model="gpt-4.1", context_window=4000, counter=FixedCounter(per_message=100)
    )
    inner = SQLiteSession("project")
    session = SynopsisSession(inner, compactor=compactor)
    flt = SynopsisInputFilter(compactor=compactor, session_id="project")
    produced: list[Item] = []

    async def run_all() -> list[ModelCall]:
        calls: list[ModelCall] = []
        for r in range(runs):
            model = ScriptedModel(tool_loop(turns, prefix=f"r{r}c"))
            agent: Agent[Any] = Agent(name="coder", model=model, tools=[bash])
            result = await Runner.run(
                agent,
                f"task {r}",
                session=session,
                run_config=RunConfig(call_model_input_filter=flt),
            )
            produced.append({"role": "user", "content": f"task {r}"})
            produced.extend(i.to_input_item() for i in result.new_items)
            calls += model.calls
            stored = await inner.get_items()
            assert validate(stored, "openai", format="responses") == []
            assert len(stored) < 60
        return calls

    calls = asyncio.run(run_all())
    assert len(calls) == runs * (turns + 1)
    for request in calls:
        assert validate(request.input, "openai", format="responses") == []
        messages = decode(request.input, "responses").messages
        assert compactor.setup.counter.count_messages(messages) <= compactor.setup.limit
    stored = asyncio.run(inner.get_items())
    kept = {key(i) for i in stored}
    recalled = {key(json.loads(m.data)) for m in compactor.recall("project")}
    assert len(produced) == runs * (2 * turns + 2)
    assert all(key(item) in kept | recalled for item in produced)


# -- the property ---------------------------------------------------------------------------

text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)


@st.composite
def turn(draw: st.DrawFn, k: int) -> list[Item]:
    """One exchange as the SDK stores it: a user message, then tool calls (some after a
    reasoning item), then the assistant's answer, with the ids and statuses it keeps."""
    items: list[Item] = [
        draw(
            st.sampled_from(
                [
                    {"role": "user", "content": draw(text)},
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": draw(text)}],
                    },
                ]
            )
        )
    ]
    for c in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            items.append(
                {
                    "id": f"rs_{k}_{c}",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": draw(text)}],
                    "encrypted_content": draw(st.sampled_from(["gAAAAB==", "ZW5j"])),
                }
            )
        items += [
            {
                "id": f"fc_{k}_{c}",
                "type": "function_call",
                "call_id": f"call_{k}_{c}",
                "name": "bash",
                "arguments": json.dumps({"cmd": draw(text)}),
                "status": "completed",
            },
            {
                "type": "function_call_output",
                "call_id": f"call_{k}_{c}",
                "output": draw(text) * draw(st.integers(1, 30)),
            },
        ]
    items.append(
        {
            "id": f"msg_{k}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": draw(text), "annotations": [], "logprobs": []}
            ],
        }
    )
    return items


@st.composite
def histories(draw: st.DrawFn) -> list[Item]:
    count = draw(st.integers(1, 14))
    return [item for k in range(count) for item in draw(turn(k))]


def copies(items: Sequence[Item]) -> list[Item]:
    return json.loads(json.dumps(items))  # type: ignore[no-any-return]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_what_the_filter_gives_back_the_sdk_accepts_stores_and_reads_back(
    items: list[Item],
) -> None:
    compactor = Compactor(
        model="gpt-4.1", context_window=3000, counter=FixedCounter(per_message=100)
    )
    flt = SynopsisInputFilter(compactor=compactor)
    agent: Agent[Any] = Agent(name="a", instructions="Go on.")
    # The SDK's own copies, as on every model call; the first call sees a shorter history.
    asyncio.run(
        flt(CallModelData(ModelInputData(copies(items[:1]), "Go on."), agent, context=None))
    )
    sent = copies(items)
    out = asyncio.run(flt(CallModelData(ModelInputData(sent, "Go on."), agent, None))).input
    assert flt.last is not None
    event("compacted" if flt.last.compacted else "under the trigger")
    assert validate(out, "openai", format="responses", system="Go on.") == []
    # An item equal to one the SDK sent is that very object.
    for item in out:
        if any(item == s for s in sent):
            assert any(item is s for s in sent)
    # The SDK's own store and JSON give the same items back.
    assert json.loads(json.dumps(out)) == out

    async def through_the_sdk() -> None:
        store = SQLiteSession("p")
        await store.add_items(out)
        assert await store.get_items() == out
        model = ScriptedModel([[assistant_message("ok")]])
        await Runner.run(Agent(name="a", model=model), list(out))
        assert model.last_call is not None
        assert [key(i) for i in model.last_call.input] == [key(i) for i in out]

    asyncio.run(through_the_sdk())


def test_the_example_runs_offline_and_says_what_happened() -> None:
    example = Path(__file__).parents[2] / "examples" / "agents_agent.py"
    out = subprocess.run(
        [sys.executable, str(example)],
        capture_output=True,
        text=True,
        check=True,
        timeout=50,
        env=unmeasured_environ(),
    ).stdout
    assert "long run: 61 model calls" in out
    assert "run 2: 3 tests pass" in out
    assert "stored summary starts:" in out
    compactions = int(out.split("compactions: ")[1].split(";")[0])
    assert compactions >= 1
