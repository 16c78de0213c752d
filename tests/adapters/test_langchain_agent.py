"""The LangChain middleware inside ``create_agent``, run offline with LangChain's own fake chat
model: a tool-using agent for eighty turns in a small window, through both forms, blocking and
async. Every request the model receives must be valid for OpenAI (converted as LangChain
converts it) and within the window by the Compactor's own counter; compactions must happen; the
agent's state and checkpoint must stay consistent; and every message the model no longer sees
must be recallable from the store.

Eighty turns compact ten times, all but the first a history holding a summary already: what
two hundred turns did, at a fraction of the cost (the request form's state keeps every message,
and each turn converts it whole)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

import synopsis
from synopsis import CompactionCompleted
from synopsis.adapters.langchain import SynopsisMiddleware, SynopsisRequestMiddleware
from tests.unmeasured import unmeasured_environ

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from langchain_core.outputs import ChatResult

MODEL = "gpt-4o"
WINDOW = 6000
ROOT = Path(__file__).resolve().parents[2]


@tool
def bash(cmd: str) -> str:
    """Run a shell command and return what it printed."""
    return f"$ {cmd}\n" + "PASSED " * 120


GREP: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "grep",
        "description": "Search the repository.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
"""A tool given as a provider's definition rather than a LangChain tool."""


class Recorder(GenericFakeChatModel):
    """LangChain's fake chat model, keeping what each request carried (messages and tools)."""

    requests: list[tuple[list[BaseMessage], list[dict[str, Any]]]] = Field(default_factory=list)
    bound: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Recorder:
        self.bound = [convert_to_openai_tool(t) for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.requests.append((list(messages), self.bound))
        return super()._generate(messages, *args, **kwargs)


def script(turns: int) -> Iterator[AIMessage]:
    """Each turn: a tool call, then a reply once its result is in."""
    for k in range(turns):
        yield AIMessage(
            "", tool_calls=[{"name": "bash", "args": {"cmd": f"pytest -k t{k}"}, "id": f"c{k}"}]
        )
        yield AIMessage(f"step {k} done")


def expected(turns: int) -> list[BaseMessage]:
    """The messages the agent's state gains, turn by turn (ids aside)."""
    out: list[BaseMessage] = []
    for k in range(turns):
        args = {"cmd": f"pytest -k t{k}"}
        out += [
            HumanMessage(f"go {k}"),
            AIMessage("", tool_calls=[{"name": "bash", "args": args, "id": f"c{k}"}]),
            ToolMessage(bash.invoke(args), tool_call_id=f"c{k}", name="bash"),
            AIMessage(f"step {k} done"),
        ]
    return out


def key(message: BaseMessage) -> str:
    return json.dumps(convert_to_openai_messages(message), sort_keys=True)


def check_requests(model: Recorder, middleware: Any) -> None:
    setup = middleware.compactor.setup
    assert model.requests
    for messages, tools in model.requests:
        wire = convert_to_openai_messages(messages)
        assert wire[0]["role"] == "system"
        assert synopsis.validate(wire, "openai", format="openai") == []
        decoded = synopsis.decode(wire, format="openai").messages
        assert setup.counter.count_messages(decoded, tools=tools) <= setup.limit


def check_recallable(
    model: Recorder, middleware: Any, final: list[BaseMessage], turns: int, thread: str
) -> None:
    """Each message the agent gained is in the state, in the last request, or recallable."""
    present = {key(m) for m in final} | {key(m) for m in model.requests[-1][0]}
    recalled = {key(m) for m in middleware.recall(thread)}
    # The store keeps ids the agent's messages had; compare what the provider would read.
    missing = [m for m in expected(turns) if key(m) not in present | recalled]
    assert missing == []


def agent_for(middleware: Any, turns: int, *, system: str = "You are a coding agent.") -> Any:
    model = Recorder(messages=script(turns))
    agent = create_agent(
        model,
        tools=[bash, GREP],
        system_prompt=system,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    return agent, model


def run(agent: Any, turns: int, config: dict[str, Any], *, asynchronous: bool) -> None:
    if asynchronous:

        async def go() -> None:
            for k in range(turns):
                await agent.ainvoke({"messages": [HumanMessage(f"go {k}")]}, config)

        asyncio.run(go())
        return
    for k in range(turns):
        agent.invoke({"messages": [HumanMessage(f"go {k}")]}, config)


@pytest.mark.parametrize(("turns", "asynchronous"), [(80, False), (30, True)])
def test_persistent_middleware_keeps_the_state_compacted(turns: int, asynchronous: bool) -> None:
    events: list[Any] = []
    middleware = SynopsisMiddleware(model=MODEL, context_window=WINDOW, listeners=[events.append])
    agent, model = agent_for(middleware, turns)
    config = {"configurable": {"thread_id": "t1"}}
    run(agent, turns, config, asynchronous=asynchronous)

    assert len(model.requests) == 2 * turns
    check_requests(model, middleware)
    assert sum(isinstance(e, CompactionCompleted) for e in events) >= turns // 20
    state = agent.get_state(config).values["messages"]
    # The checkpoint holds what the model saw last, and its answer.
    assert state[:-1] == model.requests[-1][0][1:]
    assert state[-1].content == f"step {turns - 1} done"
    assert len(state) < 2 * turns
    assert len({m.id for m in state}) == len(state)
    assert synopsis.validate(convert_to_openai_messages(state), "openai", format="openai") == []
    assert sum("<synopsis-summary" in str(m.content) for m in state) == 1
    check_recallable(model, middleware, state, turns, "t1")


@pytest.mark.parametrize(("turns", "asynchronous"), [(80, False), (30, True)])
def test_request_middleware_leaves_the_state_whole(turns: int, asynchronous: bool) -> None:
    events: list[Any] = []
    middleware = SynopsisRequestMiddleware(
        model=MODEL, context_window=WINDOW, listeners=[events.append]
    )
    agent, model = agent_for(middleware, turns)
    config = {"configurable": {"thread_id": "t1"}}
    run(agent, turns, config, asynchronous=asynchronous)

    assert len(model.requests) == 2 * turns
    check_requests(model, middleware)
    assert sum(isinstance(e, CompactionCompleted) for e in events) >= turns // 20
    state = agent.get_state(config).values["messages"]
    assert [key(m) for m in state] == [key(m) for m in expected(turns)]
    # The model sees one summary for what was compacted, the same one from call to call
    # until the next compaction: the resent history is not summarized again.
    seen: list[str] = []
    for messages, _ in model.requests:
        summaries = [str(m.content) for m in messages if "<synopsis-summary" in str(m.content)]
        assert len(summaries) <= 1
        if summaries and (not seen or seen[-1] != summaries[0]):
            seen.append(summaries[0])
    compactions = sum(isinstance(e, CompactionCompleted) for e in events)
    assert 0 < len(seen) <= compactions
    check_recallable(model, middleware, state[-1:], turns, "t1")


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_first_request_counts_the_system_prompt_the_state_does_not_hold(
    asynchronous: bool,
) -> None:
    # A history under the trigger by itself, over it with this long system prompt: the
    # persistent form leaves the state alone, then compacts the request it sees.
    events: list[Any] = []
    middleware = SynopsisMiddleware(model=MODEL, context_window=WINDOW, listeners=[events.append])
    system = "Follow the house rules. " * 500
    agent, model = agent_for(middleware, 1, system=system)
    history = expected(8)
    given: Any = {"messages": [*history, HumanMessage("go 0")]}
    config = {"configurable": {"thread_id": "t"}}
    if asynchronous:
        asyncio.run(agent.ainvoke(given, config))
    else:
        agent.invoke(given, config)
    check_requests(model, middleware)
    first = model.requests[0][0]
    assert len(first) < len(history) + 2
    assert any(isinstance(e, CompactionCompleted) for e in events)


def test_without_a_checkpointer_the_session_option_names_the_conversation() -> None:
    middleware = SynopsisRequestMiddleware(model=MODEL, context_window=WINDOW, session_id="s1")
    model = Recorder(messages=iter([AIMessage("All tests pass.")]))
    agent = create_agent(model, middleware=[middleware])  # no tools, no system prompt
    given: Any = {"messages": [*expected(20), HumanMessage("go 0")]}
    agent.invoke(given)
    wire = convert_to_openai_messages(model.requests[0][0])
    assert wire[0]["role"] == "user"
    assert model.requests[0][1] == []
    assert synopsis.validate(wire, "openai", format="openai") == []
    assert middleware.recall("s1")
    assert middleware.recall() == middleware.recall("s1")


def test_the_example_runs_offline() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "langchain_agent.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=unmeasured_environ(),
    )
    assert "compactions:" in out.stdout
    assert "recalled" in out.stdout
