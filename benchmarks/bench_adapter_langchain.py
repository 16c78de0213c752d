"""What the LangChain middleware costs per model call, against the bare Compactor and against
LangChain's own ``SummarizationMiddleware``, all in the same run.

A LangChain agent calls its middleware once per model call with the whole history: a new list
of the same message objects, two messages longer than the last (the model's tool call and the
tool's result). Each path here is driven that way, at 1,000 and 10,000 messages, with a window
the history never reaches (so nothing is compacted: the cost every call pays), on one thread:

- ``bare Compactor``: ``Compactor.compact`` on the same history as OpenAI chat dicts, one list
  grown in place, with the thread as its ``session_id``, the system prompt and the tools (what
  the adapter passes it): the floor the adapter is held to (target: within 3x).
- ``SynopsisMiddleware``: the persistent form, ``before_model`` and then ``wrap_model_call``
  (which only notes the system prompt and tools), as one model call runs them.
- ``SynopsisRequestMiddleware``: the per-request form, ``wrap_model_call``.
- ``SummarizationMiddleware``: LangChain's built-in, ``before_model``, its trigger above the
  history (``("tokens", N)``), with a fake chat model as its summarizer.

Then one call each when the history is over the trigger: the built-in summarizing (its fake
model answers at once, so this is its own work) and synopsis compacting through the persistent
form (its default summarizer is offline), each on a thread it has not seen. A last row shows the
persistent form after a checkpoint reload (every message a new, equal object, compared by
value and not converted again).

Each figure is the median of the timed calls, after untimed ones; the ratios come from the same
run. Run: ``python -m benchmarks.bench_adapter_langchain`` (about a minute); it writes
``benchmarks/results/adapter-langchain.md``.
"""

from __future__ import annotations

import gc
import itertools
import statistics
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import (
    AgentState,
    ModelRequest,
    ModelResponse,
    SummarizationMiddleware,
)
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.runtime import ExecutionInfo, Runtime

from benchmarks import _adapters, _harness
from benchmarks._adapters import FULL_SIZES, HUGE, grown, in_turn, measured, medians, plan_from
from benchmarks._harness import figure, listed, now, timed, versions, write
from synopsis import Compactor, decode
from synopsis.adapters.langchain import SynopsisMiddleware, SynopsisRequestMiddleware

if TYPE_CHECKING:
    from collections.abc import Callable

MODEL = "gpt-4o"
RESULTS = Path(__file__).resolve().parent / "results" / "adapter-langchain.md"
SYSTEM = SystemMessage("You are a careful coding agent. Run the tests before you answer.")
BASH: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
}
TOOLS = [BASH]
THREAD = "bench"
PATHS = ("bare Compactor", "SynopsisMiddleware", "SynopsisRequestMiddleware", "built-in")
BUILT_IN = "SummarizationMiddleware"


@dataclass(frozen=True)
class Plan(_adapters.Plan):
    summarizing: int = 3
    """Timed calls over the trigger (each on a fresh thread)."""
    reloads: int = 3


FULL = Plan(sizes=FULL_SIZES)


@dataclass
class Size:
    messages: int
    calls: int
    under: dict[str, float] = field(default_factory=dict)
    """Median milliseconds per model call under the trigger, per path."""
    summarizing: dict[str, float] = field(default_factory=dict)
    """Median milliseconds of a call over the trigger: synopsis and the built-in."""
    reload: float = 0.0
    """The persistent form's call after a checkpoint reload."""


@dataclass
class Results:
    sizes: list[Size]
    seconds: float
    started: str


# -- histories ---------------------------------------------------------------------------------


def step(k: int) -> list[BaseMessage]:
    """What one model call adds: its tool call, and the tool's result."""
    call = {"name": "bash", "args": {"cmd": f"pytest tests/test_{k}.py -q"}, "id": f"call_{k}"}
    return [
        AIMessage(
            f"Running test {k}.",
            tool_calls=[call],
            id=f"ai_{k}",
            usage_metadata={"input_tokens": 100 + k, "output_tokens": 20, "total_tokens": 120 + k},
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
        ),
        ToolMessage(
            f"tests/test_{k}.py " + "." * (k % 40) + f"\n{k % 7 + 1} passed in 0.{k % 9}s",
            tool_call_id=f"call_{k}",
            name="bash",
            id=f"tool_{k}",
        ),
    ]


def history(n: int) -> list[BaseMessage]:
    task: BaseMessage = HumanMessage("Make every test in the repository pass.", id="task")
    return grown([task], step, n)


# -- timing ------------------------------------------------------------------------------------


def state(messages: list[BaseMessage]) -> AgentState[Any]:
    return {"messages": messages}  # type: ignore[typeddict-item]


def runtime() -> Runtime[Any]:
    return Runtime(
        execution_info=ExecutionInfo(
            checkpoint_id="cp", checkpoint_ns="", task_id="task", thread_id=THREAD
        )
    )


def _unchanged(out: object, path: str) -> None:
    if out is not None:
        raise AssertionError(f"{path} changed a history under its trigger")


class Fake(GenericFakeChatModel):
    """A chat model that answers at once; ``bind_tools`` is what ``ModelRequest`` may need."""


def answer(_: ModelRequest[Any]) -> ModelResponse[Any]:
    return ModelResponse(result=[AIMessage("ok")])


def under_trigger(size: Size, plan: Plan) -> None:
    """Each path on the same growing history, in turn, call after call."""
    base = history(size.messages)
    total = plan.warmup + size.calls
    steps = [step(10_000_000 + k) for k in range(total)]
    rt = runtime()
    model = Fake(messages=itertools.repeat(AIMessage("ok")))

    compactor = Compactor(model=MODEL, context_window=HUGE)
    items = convert_to_openai_messages(base, include_id=True)
    system = convert_to_openai_messages(SYSTEM)["content"]
    persistent = SynopsisMiddleware(model=MODEL, context_window=HUGE)
    per_request = SynopsisRequestMiddleware(model=MODEL, context_window=HUGE)
    built_in = SummarizationMiddleware(model, trigger=("tokens", HUGE))
    tools = [convert_to_openai_tool(t) for t in TOOLS]

    def bare() -> object:
        result = compactor.compact(
            items, format="openai", session_id=THREAD, system=system, tools=tools
        )
        return None if not result.compacted else result

    def request(messages: list[BaseMessage]) -> ModelRequest[Any]:
        return ModelRequest(
            model=model,
            messages=messages,  # type: ignore[arg-type]
            system_message=SYSTEM,
            tools=list(TOOLS),
            state=state(messages),
            runtime=rt,
        )

    def persistent_call(messages: list[BaseMessage]) -> object:
        update = persistent.before_model(state(messages), rt)
        persistent.wrap_model_call(request(messages), answer)
        return update

    def request_call(messages: list[BaseMessage]) -> object:
        seen: list[ModelRequest[Any]] = []

        def handler(r: ModelRequest[Any]) -> ModelResponse[Any]:
            seen.append(r)
            return answer(r)

        per_request.wrap_model_call(request(messages), handler)
        return None if seen[0].messages is messages else seen[0]

    samples: dict[str, list[float]] = {p: [] for p in PATHS}
    messages = list(base)
    for n in range(total):
        grown = steps[n]
        messages = [*messages, *grown]  # LangGraph's reducer makes a new list each step
        items.extend(convert_to_openai_messages(grown, include_id=True))
        calls: dict[str, Callable[[], object]] = {
            "bare Compactor": bare,
            "SynopsisMiddleware": partial(persistent_call, messages),
            "SynopsisRequestMiddleware": partial(request_call, messages),
            "built-in": partial(built_in.before_model, state(messages), rt),
        }
        gc.collect()
        for path, call in in_turn(calls, n):
            seconds, out = timed(call)
            _unchanged(out, path)
            if n >= plan.warmup:
                samples[path].append(seconds * 1e3)
    size.under = medians(samples)

    # After a checkpoint reload every message is a new, equal object: compared, not converted.
    reloads: list[float] = []
    for _ in range(plan.reloads):
        copy = messages_from_dict(messages_to_dict(messages))
        seconds, out = timed(partial(persistent_call, copy))
        _unchanged(out, "SynopsisMiddleware after a reload")
        reloads.append(seconds * 1e3)
    size.reload = statistics.median(reloads)


def summarizing(size: Size, plan: Plan) -> None:
    """One call over the trigger, each path on a thread it has not seen."""
    base = history(size.messages)
    tokens = Compactor(model=MODEL).setup.counter.count_messages(
        decode(convert_to_openai_messages(base), format="openai").messages
    )
    ours: list[float] = []
    theirs: list[float] = []
    for k in range(plan.summarizing):
        messages = messages_from_dict(messages_to_dict(base))
        middleware = SynopsisMiddleware(model=MODEL, context_window=max(tokens // 4, 1_000))
        rt = Runtime(
            execution_info=ExecutionInfo(
                checkpoint_id="cp", checkpoint_ns="", task_id="t", thread_id=f"s{k}"
            )
        )
        seconds, out = timed(partial(middleware.before_model, state(messages), rt))
        if out is None:
            raise AssertionError("synopsis did not compact a history over its trigger")
        ours.append(seconds * 1e3)

        messages = messages_from_dict(messages_to_dict(base))
        model = Fake(messages=itertools.repeat(AIMessage("Summary: the tests were run.")))
        built_in = SummarizationMiddleware(model, trigger=("tokens", tokens // 4))
        seconds, out = timed(partial(built_in.before_model, state(messages), rt))
        if out is None:
            raise AssertionError("the built-in did not summarize a history over its trigger")
        theirs.append(seconds * 1e3)
    size.summarizing = {"synopsis": statistics.median(ours), "built-in": statistics.median(theirs)}


def run(plan: Plan = FULL) -> Results:
    started = now()
    begin = time.perf_counter()
    sizes: list[Size] = []
    for messages, calls in plan.sizes:
        size = Size(messages, calls)
        gc.collect()
        under_trigger(size, plan)
        summarizing(size, plan)
        sizes.append(size)
    return Results(sizes, time.perf_counter() - begin, started)


# -- the report --------------------------------------------------------------------------------


def table(results: Results) -> list[str]:
    def row(s: Size) -> list[str]:
        bare = s.under["bare Compactor"]
        persistent = s.under["SynopsisMiddleware"]
        request = s.under["SynopsisRequestMiddleware"]
        built_in = s.under["built-in"]
        return [
            f"{s.messages:,}",
            f"{s.calls}",
            figure(bare),
            figure(persistent),
            f"**{persistent / bare:.2f}x**",
            figure(request),
            f"**{request / bare:.2f}x**",
            figure(built_in),
            f"{built_in / persistent:.1f}x",
        ]

    columns = (
        "messages",
        "calls",
        "bare Compactor",
        "SynopsisMiddleware",
        "ratio",
        "SynopsisRequestMiddleware",
        "ratio",
        "SummarizationMiddleware",
        "built-in / persistent",
    )
    return _harness.table(columns, map(row, results.sizes))


def summarizing_table(results: Results) -> list[str]:
    columns = (
        "messages",
        "synopsis compacts (SynopsisMiddleware)",
        "built-in summarizes",
        "persistent form after a checkpoint reload",
    )
    rows = (
        [
            f"{s.messages:,}",
            figure(s.summarizing["synopsis"]),
            figure(s.summarizing["built-in"]),
            figure(s.reload),
        ]
        for s in results.sizes
    )
    return _harness.table(columns, rows)


def markdown(results: Results) -> str:
    within = all(
        s.under[p] <= 3 * s.under["bare Compactor"]
        for s in results.sizes
        for p in ("SynopsisMiddleware", "SynopsisRequestMiddleware")
    )
    ahead = all(s.under["built-in"] > s.under["SynopsisMiddleware"] for s in results.sizes)
    return "\n".join(
        [
            "# The LangChain middleware's cost per model call",
            "",
            measured(
                results.started,
                "bench_adapter_langchain",
                results.seconds,
                listed(versions("langchain", "langchain-core", "langgraph")),
            ),
            "",
            "Each call grows the history by two messages (a tool call and its result), as an "
            "agent's loop does; the window is far above the history, so nothing is compacted. "
            "Milliseconds per model call, median of the timed calls; ratios against the bare "
            "`Compactor.compact` on the same history as OpenAI chat dicts, one list grown in "
            "place, same thread id as its session, same system prompt and tools.",
            "",
            *table(results),
            "",
            f"Target: each middleware within 3x of the bare Compactor: "
            f"**{'met' if within else 'not met'}**. "
            f"Cheaper than `SummarizationMiddleware` under its trigger: "
            f"**{'yes' if ahead else 'no'}**. Under its trigger the built-in estimates the "
            "whole history's tokens from its characters on every call; synopsis's skip counts "
            "and checks only the appended messages against the provider's rules (with the "
            "turn's opening and the tool loop's last step)"
            + (", and still costs more at these sizes." if not ahead else "."),
            "",
            "## Over the trigger, and after a reload (milliseconds, one call)",
            "",
            "Synopsis: the persistent form on a thread it has not seen, a window a quarter of "
            "the history's tokens, the offline default summarizer (conversion, compaction and "
            "the store's writes included). Built-in: its trigger at the same quarter, a fake "
            "chat model as its summarizer that answers at once, so the figure is its own work "
            "(a real model adds its latency, seconds). The last column is a call of the "
            "persistent form when every message is a new, equal object (an agent's next "
            "`invoke` loads the thread from its checkpoint): each is compared with the message "
            "converted before, by value, and none is converted again.",
            "",
            *summarizing_table(results),
            "",
        ]
    )


def main(plan: Plan = FULL, results_path: Path | None = RESULTS) -> Results:
    results = run(plan)
    print("\n".join(table(results)))
    print("\n".join(summarizing_table(results)))
    write(results_path, markdown(results))
    return results


if __name__ == "__main__":
    main(plan_from(sys.argv, FULL))
