"""What the OpenAI Agents SDK adapter costs per model call, against the bare Compactor and
against the SDK's own options, all in the same run.

The SDK calls a ``call_model_input_filter`` once per model call with the run's whole history:
a new list of *new* item dicts (it rebuilds them on every call), two items longer than the
last (the model's function call and the tool's output). Each path here is driven that way, at
1,000 and 10,000 items, with a window the history never reaches (so nothing is compacted: the
cost every call pays), on one conversation:

- ``bare Compactor``: ``Compactor.acompact`` on the same history, one list grown in place
  (its items never copied), with the conversation as its ``session_id`` and the agent's
  instructions and tool schema (what the filter passes it): the floor the adapter is held to
  (target: within 3x).
- ``SynopsisInputFilter``: the filter, given fresh copies of every item as the SDK gives them.
- ``ToolOutputTrimmer``: the SDK's built-in filter (``agents.extensions``), on the same copies.
- ``SynopsisSession``: the compacting session's ``add_items`` of one turn's two items over an
  in-memory ``SQLiteSession``, against that session's own ``add_items`` plus the bare
  Compactor's call (the same work done by hand).

Then one call over the trigger: the filter compacting (a window a quarter of the history's
tokens, the offline default summarizer, the store's writes included), on a conversation it has
not seen. The SDK's summarizing built-in, ``OpenAIResponsesCompactionSession``, calls OpenAI's
``responses.compact``; it is tried here against ``synopsis.testing.server.FakeLLMServer``, which
has no such route, and the report says what it answered.

Each figure is the median of the timed calls, after untimed ones; the ratios come from the same
run. Run: ``python -m benchmarks.bench_adapter_agents`` (under a minute); it writes
``benchmarks/results/adapter-agents.md``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import openai
from agents import Agent, SQLiteSession, function_tool
from agents.extensions import ToolOutputTrimmer
from agents.memory import OpenAIResponsesCompactionSession
from agents.run_config import CallModelData, ModelInputData

from benchmarks import _adapters, _harness
from benchmarks._adapters import FULL_SIZES, HUGE, grown, measured, medians, plan_from
from benchmarks._harness import figure, listed, now, timed_on, versions, write
from synopsis import Compactor, count_tokens
from synopsis.adapters.agents import SynopsisInputFilter, SynopsisSession
from synopsis.testing.server import FakeLLMServer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

MODEL = "gpt-4.1"
RESULTS = Path(__file__).resolve().parent / "results" / "adapter-agents.md"
INSTRUCTIONS = "You are a careful coding agent. Run the tests before you answer."
THREAD = "bench"
PATHS = ("bare Compactor", "SynopsisInputFilter", "ToolOutputTrimmer")
SESSION_PATHS = ("SQLiteSession + bare Compactor", "SynopsisSession")

Item: TypeAlias = Any
"""A Responses input item (the SDK types them as TypedDicts)."""


@function_tool
def bash(cmd: str) -> str:
    """Run a shell command."""
    return cmd


TOOLS = [
    {
        "type": "function",
        "name": bash.name,
        "description": bash.description,
        "parameters": bash.params_json_schema,
    }
]


class Plan(_adapters.Plan):
    """Sizes and untimed calls only: the call over the trigger is timed once per size."""


FULL = Plan(sizes=FULL_SIZES)


@dataclass
class Size:
    items: int
    calls: int
    under: dict[str, float] = field(default_factory=dict)
    """Median milliseconds per model call under the trigger, per path."""
    session: dict[str, float] = field(default_factory=dict)
    """Median milliseconds per saved turn, per session path."""
    compacting: float = 0.0
    """Milliseconds of the filter's call over the trigger."""


@dataclass
class Results:
    sizes: list[Size]
    built_in: str
    """What ``OpenAIResponsesCompactionSession`` did offline."""
    seconds: float
    started: str


# -- histories ---------------------------------------------------------------------------------


def step(k: int) -> list[Item]:
    """One tool turn as the SDK hands it to the next model call."""
    return [
        {
            "arguments": json.dumps({"cmd": f"pytest -k test_{k}"}),
            "call_id": f"call_{k}",
            "name": "bash",
            "type": "function_call",
            "id": f"fc_{k}",
        },
        {
            "call_id": f"call_{k}",
            "output": f"tests/test_{k}.py::test_{k} PASSED " + "." * (k % 40),
            "type": "function_call_output",
        },
    ]


def history(n: int) -> list[Item]:
    """A task and tool turns: ``n`` items, or ``n + 1`` so that it ends with a tool output."""
    return grown([{"role": "user", "content": "Port sched/core.py to asyncio"}], step, n)


def copies(items: list[Item]) -> list[Item]:
    """The items as the SDK passes them on each model call: new dicts, equal content."""
    return json.loads(json.dumps(items))  # type: ignore[no-any-return]


def data(agent: Agent[Any], items: list[Item]) -> CallModelData[Any]:
    return CallModelData(ModelInputData(items, INSTRUCTIONS), agent, context=None)


def under_trigger(loop: asyncio.AbstractEventLoop, size: Size, plan: Plan) -> None:
    """Each path on the same growing history, in turn, call after call."""
    base = history(size.items)
    total = plan.warmup + size.calls
    steps = [step(10_000_000 + k) for k in range(total)]
    agent: Agent[Any] = Agent(name="coder", instructions=INSTRUCTIONS, tools=[bash])
    bare = Compactor(model=MODEL, context_window=HUGE)
    flt = SynopsisInputFilter(model=MODEL, context_window=HUGE, session_id=THREAD)
    trimmer = ToolOutputTrimmer()
    grown = list(base)  # the bare Compactor's list, grown in place
    sdk = list(base)  # the history the SDK holds; each call gets copies of it
    times: dict[str, list[float]] = {p: [] for p in PATHS}

    async def trim(d: CallModelData[Any]) -> object:
        return trimmer(d)

    for k in range(total):
        grown += steps[k]
        sdk += steps[k]
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "bare Compactor": partial(
                bare.acompact,
                grown,
                format="responses",
                system=INSTRUCTIONS,
                tools=TOOLS,
                session_id=THREAD,
            ),
            "SynopsisInputFilter": partial(flt, data(agent, copies(sdk))),
            "ToolOutputTrimmer": partial(trim, data(agent, copies(sdk))),
        }
        for path in PATHS:
            seconds, _ = timed_on(loop, calls[path])
            if k >= plan.warmup:
                times[path].append(seconds * 1e3)
    if flt.last is None or flt.last.compacted or bare.setup.store is None:
        raise AssertionError("the filter compacted a history under its trigger")
    size.under = medians(times)


def sessions(loop: asyncio.AbstractEventLoop, size: Size, plan: Plan) -> None:
    """A turn saved through each session path: its two items added to a stored history."""
    base = history(size.items)
    total = plan.warmup + size.calls
    steps = [step(20_000_000 + k) for k in range(total)]
    plain = SQLiteSession(THREAD)
    stored = SQLiteSession(THREAD)
    loop.run_until_complete(plain.add_items(copies(base)))
    loop.run_until_complete(stored.add_items(copies(base)))
    bare = Compactor(model=MODEL, context_window=HUGE, session_id=THREAD)
    session = SynopsisSession(stored, model=MODEL, context_window=HUGE)
    grown = list(base)
    times: dict[str, list[float]] = {p: [] for p in SESSION_PATHS}

    async def by_hand(items: list[Item]) -> None:
        await plain.add_items(items)
        grown.extend(items)
        await bare.acompact(grown, format="responses", session_id=THREAD)

    for k in range(total):
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "SQLiteSession + bare Compactor": partial(by_hand, copies(steps[k])),
            "SynopsisSession": partial(session.add_items, copies(steps[k])),
        }
        for path in SESSION_PATHS:
            seconds, _ = timed_on(loop, calls[path])
            if k >= plan.warmup:
                times[path].append(seconds * 1e3)
    if session.last is None or session.last.compacted:
        raise AssertionError("the session compacted a history under its trigger")
    plain.close()
    stored.close()
    size.session = medians(times)


def compacting(loop: asyncio.AbstractEventLoop, size: Size) -> None:
    """One filter call over the trigger, on a conversation it has not seen."""
    items = history(size.items)
    window = count_tokens(items, MODEL, format="responses") // 4
    flt = SynopsisInputFilter(model=MODEL, context_window=window, session_id="over")
    agent: Agent[Any] = Agent(name="coder", instructions=INSTRUCTIONS, tools=[bash])
    seconds, _ = timed_on(loop, lambda: flt(data(agent, copies(items))))
    size.compacting = seconds * 1e3
    if flt.last is None or not flt.last.compacted:
        raise AssertionError("the filter did not compact a history over its trigger")


def built_in(loop: asyncio.AbstractEventLoop) -> str:
    """What the SDK's summarizing session does offline, against the fake OpenAI server."""
    with FakeLLMServer() as server:
        client = openai.AsyncOpenAI(api_key="test", base_url=server.base_url)
        inner = SQLiteSession("built-in")
        loop.run_until_complete(inner.add_items(copies(history(40))))
        session = OpenAIResponsesCompactionSession("built-in", inner, client=client)
        try:
            loop.run_until_complete(session.run_compaction({"force": True}))
        except openai.APIStatusError as error:
            paths = [r.path for r in server.requests]
            return f"`{', '.join(paths)}` answered HTTP {error.status_code}; nothing compacted"
        finally:
            loop.run_until_complete(client.close())
            inner.close()
    return "compacted"  # pragma: no cover - the fake server has no compact route


def run(plan: Plan = FULL) -> Results:
    started = now()
    begin = time.perf_counter()
    loop = asyncio.new_event_loop()
    try:
        sizes: list[Size] = []
        for items, calls in plan.sizes:
            size = Size(items, calls)
            gc.collect()
            under_trigger(loop, size, plan)
            sessions(loop, size, plan)
            compacting(loop, size)
            sizes.append(size)
        offline = built_in(loop)
    finally:
        loop.close()
    return Results(sizes, offline, time.perf_counter() - begin, started)


# -- the report --------------------------------------------------------------------------------


def table(results: Results) -> list[str]:
    def row(s: Size) -> list[str]:
        bare = s.under["bare Compactor"]
        flt = s.under["SynopsisInputFilter"]
        by_hand = s.session["SQLiteSession + bare Compactor"]
        session = s.session["SynopsisSession"]
        return [
            f"{s.items:,}",
            f"{s.calls}",
            figure(bare),
            figure(flt),
            f"**{flt / bare:.2f}x**",
            figure(s.under["ToolOutputTrimmer"]),
            figure(by_hand),
            figure(session),
            f"**{session / by_hand:.2f}x**",
        ]

    columns = (
        "items",
        "calls",
        "bare Compactor",
        "SynopsisInputFilter",
        "ratio",
        "ToolOutputTrimmer",
        "SQLiteSession + bare Compactor",
        "SynopsisSession",
        "ratio",
    )
    return _harness.table(columns, map(row, results.sizes))


def compacting_table(results: Results) -> list[str]:
    rows = ([f"{s.items:,}", figure(s.compacting)] for s in results.sizes)
    return _harness.table(("items", "SynopsisInputFilter compacts"), rows)


def markdown(results: Results) -> str:
    within = all(
        s.under["SynopsisInputFilter"] <= 3 * s.under["bare Compactor"]
        and s.session["SynopsisSession"] <= 3 * s.session["SQLiteSession + bare Compactor"]
        for s in results.sizes
    )
    ahead = all(
        s.under["SynopsisInputFilter"] < s.under["ToolOutputTrimmer"] for s in results.sizes
    )
    return "\n".join(
        [
            "# The OpenAI Agents SDK adapter's cost per model call",
            "",
            measured(
                results.started,
                "bench_adapter_agents",
                results.seconds,
                listed(versions("openai-agents")),
            ),
            "",
            "Each call grows the history by two items (a function call and its output), as an "
            "agent's loop does; the window is far above the history, so nothing is compacted. "
            "Milliseconds per model call (per saved turn for the sessions), median of the timed "
            "calls. The filter and the trimmer get fresh copies of every item, as the SDK gives "
            "them; the bare `Compactor.acompact` gets one list grown in place, the same "
            "conversation id, instructions and tool schema. The session rows add one turn's two "
            "items to an in-memory `SQLiteSession` holding the history.",
            "",
            *table(results),
            "",
            f"Target: the filter and the session within 3x of the bare Compactor: "
            f"**{'met' if within else 'not met'}**. Cheaper than `ToolOutputTrimmer` per call: "
            f"**{'yes' if ahead else 'no'}**. The trimmer makes no summary and has no trigger: on "
            "every call it copies the items and shortens old tool outputs, and its column is "
            "that cost; synopsis's floor is the bare Compactor's, which counts and checks the "
            "appended items against the provider's rules, and the filter finds the items it "
            "has read before by equality, since the SDK copies them on every call.",
            "",
            "## Over the trigger (milliseconds, one call)",
            "",
            "The filter on a conversation it has not seen, a window a quarter of the history's "
            "tokens, the offline default summarizer, the store's writes included.",
            "",
            *compacting_table(results),
            "",
            "The SDK's summarizing built-in, `OpenAIResponsesCompactionSession`, needs OpenAI's "
            "`responses.compact` endpoint; against `synopsis.testing.server.FakeLLMServer` "
            f"(no such route) {results.built_in}. It cannot be measured offline.",
            "",
        ]
    )


def main(plan: Plan = FULL, results_path: Path | None = RESULTS) -> Results:
    results = run(plan)
    print("\n".join(table(results)))
    print("\n".join(compacting_table(results)))
    print(results.built_in)
    write(results_path, markdown(results))
    return results


if __name__ == "__main__":
    main(plan_from(sys.argv, FULL))
