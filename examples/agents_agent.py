"""An OpenAI Agents SDK agent that keeps its history inside a small context window with synopsis.

Runs offline: the SDK's own ``ScriptedModel`` plays the model (it calls a tool many times, then
answers), and synopsis's default summarizer needs no model. Two hooks:

- ``SynopsisInputFilter`` compacts each model request inside a run (a long tool loop), while
  the session keeps every item; what it replaced stays recallable from synopsis's store;
- ``SynopsisSession`` compacts what the session stores, so later runs start from the summary.

    python examples/agents_agent.py

To use a real model, drop ``model=`` from the ``Agent`` (the SDK's default OpenAI model, with
``OPENAI_API_KEY`` set) and give synopsis that model's own window:

    agent = Agent(name="coder", instructions=INSTRUCTIONS, tools=[run_tests])
    compactor = Compactor(model="gpt-4.1", session_id=SESSION)   # and no context_window
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import agents
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from synopsis import CompactionCompleted, Compactor, Event
from synopsis.adapters.agents import SynopsisInputFilter, SynopsisSession

TURNS = 60
SESSION = "port-scheduler"
INSTRUCTIONS = "You are a coding agent. Run the tests one by one."


@function_tool
def run_tests(name: str) -> str:
    """Run one test and return its output."""
    return f"tests/{name}.py " + "PASSED " * 150


def scripted(turns: int, run: int) -> ScriptedModel:
    """The offline model: ``turns`` tool calls, then an answer."""
    steps: list[Any] = [
        [function_call("run_tests", {"name": f"test_{k}"}, call_id=f"r{run}c{k}")]
        for k in range(turns)
    ]
    return ScriptedModel([*steps, [assistant_message(f"run {run}: {turns} tests pass")]])


async def main() -> None:
    agents.set_tracing_disabled(True)  # no key, no trace export
    compactions: list[Event] = []
    listeners = [lambda e: compactions.append(e) if isinstance(e, CompactionCompleted) else None]
    compactor = Compactor(model="gpt-4.1", context_window=8000, session_id=SESSION)
    stored = SQLiteSession(SESSION)

    # 1. A long tool loop in one run: the filter compacts each request; the session keeps all.
    flt = SynopsisInputFilter(compactor=compactor, session_id=SESSION, listeners=listeners)
    model = scripted(TURNS, 0)
    agent = Agent(name="coder", instructions=INSTRUCTIONS, model=model, tools=[run_tests])
    result = await Runner.run(
        agent,
        "Port sched/core.py to asyncio",
        session=stored,
        run_config=RunConfig(call_model_input_filter=flt),
        max_turns=TURNS + 5,
    )
    sizes = [len(call.input) for call in model.calls]
    print(f"long run: {len(sizes)} model calls, largest request {max(sizes)} items")
    print(f"  answer: {result.final_output}")
    print(f"  compactions: {len(compactions)}; the session stores {len(await stored.get_items())}")

    # 2. Later runs through a compacting session: it writes the compacted history back.
    session = SynopsisSession(
        stored, compactor=Compactor(model="gpt-4.1", context_window=8000), listeners=listeners
    )
    for run, task in enumerate(["Now the timers", "And the docs"], start=1):
        model = scripted(3, run)
        agent = Agent(name="coder", instructions=INSTRUCTIONS, model=model, tools=[run_tests])
        result = await Runner.run(agent, task, session=session)
        print(f"run {run}: first request {len(model.calls[0].input)} items; {result.final_output}")
        print(f"  the session stores {len(await stored.get_items())} items")
    items = await stored.get_items()
    summary = next(i for i in items if "<synopsis-summary" in json.dumps(i))
    print("stored summary starts:", json.dumps(summary)[:90], "...")
    print(f"recallable from the store: {len(compactor.recall(SESSION))} items the filter replaced")


if __name__ == "__main__":
    asyncio.run(main())
