"""What the ADK callback costs per model call, against the bare Compactor and against ADK's own
context options, all in the same run.

ADK calls a ``before_model_callback`` (or a plugin's) once per model call with an
``LlmRequest`` holding the whole history as ``Content`` objects, two longer than the last time
(the model's function call and the tool's response). ADK builds each request from fresh
shallow copies of the session's contents (so that a hook may edit them), which share their
payloads with the session. Each path is driven that way, at 1,000 and 10,000 contents, with a
window the history never reaches (nothing is compacted: the cost every call pays), on one
thread and one event loop:

- ``bare Compactor``: ``Compactor.acompact`` on the same history as Gemini JSON, one list grown
  in place, with the session id, the system instruction and the tools (what the adapter
  passes it): the floor the adapter is held to (target: within 3x).
- ``SynopsisCallback, ADK's copies``: the callback on a request of fresh copies, as ADK sends.
- ``SynopsisCallback, same objects``: the callback on a request of the same ``Content``
  objects each time (a request built by hand, or a framework that keeps its objects).
- ``EventsCompactionConfig``: ADK's built-in summarization with a token threshold, whose
  request processor runs before every model call: it reads the session's events (rewinds
  applied, scoped) for the latest prompt token count and compares it with the threshold. The
  session holds the same contents as events, the model's with the usage a model reports. It is
  called as the processor calls it (``_run_compaction_for_token_threshold_config``, ADK's own
  private function: the processor itself needs a whole invocation context).
- ``ContextFilterPlugin``: ADK's built-in per-request trimmer, keeping every invocation (its
  cost under no trimming), on the same copies: no summary, the floor of a per-request hook.

Then one call each over the trigger: synopsis compacting through the callback (offline default
summarizer) on a session it has not seen, a window a quarter of the history's tokens; ADK's
``LlmEventSummarizer`` (what ``EventsCompactionConfig`` runs) on the same contents as events,
with a model that answers at once, so the figure is its own work; and ``ContextFilterPlugin``
keeping the last ten invocations.

Each figure is the median of the timed calls, after untimed ones; the ratios come from the same
run. Run: ``python -m benchmarks.bench_adapter_adk`` (about a minute); it writes
``benchmarks/results/adapter-adk.md``.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from google.adk.agents import LlmAgent
from google.adk.apps.app import EventsCompactionConfig
from google.adk.apps.compaction import _run_compaction_for_token_threshold_config
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.context_filter_plugin import ContextFilterPlugin
from google.adk.sessions import InMemorySessionService, Session
from google.genai import types

from benchmarks import _adapters, _harness
from benchmarks._adapters import FULL_SIZES, HUGE, grown, in_turn, measured, medians, plan_from
from benchmarks._harness import figure, listed, now, timed_on, versions, write
from synopsis import Compactor, decode
from synopsis.adapters.adk import SynopsisCallback, to_wire

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable

    from google.adk.agents.callback_context import CallbackContext

MODEL = "gemini-2.5-flash"
RESULTS = Path(__file__).resolve().parent / "results" / "adapter-adk.md"
SYSTEM = "You are a careful coding agent. Run the tests before you answer."
TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="bash",
            description="Run a shell command.",
            parameters_json_schema={"type": "object", "properties": {"cmd": {"type": "string"}}},
        )
    ]
)
SESSION = "bench"
AGENT = "coder"
PATHS = (
    "bare Compactor",
    "SynopsisCallback, ADK's copies",
    "SynopsisCallback, same objects",
    "EventsCompactionConfig",
    "ContextFilterPlugin",
)
NO_CONTEXT = cast("CallbackContext", None)
"""Neither hook reads the callback context when called directly with a session id."""


@dataclass(frozen=True)
class Plan(_adapters.Plan):
    summarizing: int = 3
    """Timed calls over the trigger (each on a fresh session)."""


FULL = Plan(sizes=FULL_SIZES)


@dataclass
class Size:
    contents: int
    calls: int
    under: dict[str, float] = field(default_factory=dict)
    """Median milliseconds per model call under the trigger, per path."""
    over: dict[str, float] = field(default_factory=dict)
    """Median milliseconds of a call over the trigger: synopsis and the built-ins."""


@dataclass
class Results:
    sizes: list[Size]
    seconds: float
    started: str


# -- histories ---------------------------------------------------------------------------------


def step(k: int) -> list[types.Content]:
    """What one model call adds: its function call (signed, as Gemini's are) and the result."""
    call = types.FunctionCall(name="bash", args={"cmd": f"pytest tests/test_{k}.py -q"})
    output = f"tests/test_{k}.py " + "." * (k % 40) + f"\n{k % 7 + 1} passed in 0.{k % 9}s"
    return [
        types.Content(
            role="model",
            parts=[types.Part(function_call=call, thought_signature=b"sig" + str(k).encode())],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        name="bash", response={"output": output}
                    )
                )
            ],
        ),
    ]


def history(n: int) -> list[types.Content]:
    task = types.Part(text="Make every test in the repository pass.")
    return grown([types.Content(role="user", parts=[task])], step, n)


def copies(contents: list[types.Content]) -> list[types.Content]:
    """Fresh shallow copies, as ADK makes them for each request (its payloads shared)."""
    return [
        c.model_copy(update={"parts": [p.model_copy() for p in c.parts or ()]}) for c in contents
    ]


def event(content: types.Content, k: int) -> Event:
    """``content`` as the session's event: the model's with the prompt's token count, as a
    model reports it (ADK's token-threshold check reads the latest)."""
    if content.role != "model":
        return Event(author="user", content=content)
    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=1_000 + 50 * k)
    return Event(author=AGENT, content=content, usage_metadata=usage)


def request(contents: list[types.Content]) -> LlmRequest:
    out = LlmRequest(model=MODEL)
    out.contents = contents
    out.config.system_instruction = SYSTEM
    out.config.tools = [TOOL]
    return out


# -- timing ------------------------------------------------------------------------------------


class Instant(BaseLlm):
    """A model that answers at once: the built-in summarizer's own work is what is timed."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        text = "Summary: the tests were run and pass."
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def under_trigger(loop: asyncio.AbstractEventLoop, size: Size, plan: Plan) -> None:
    """Each path on the same growing history, in turn, call after call."""
    base = history(size.contents)
    total = plan.warmup + size.calls
    steps = [step(10_000_000 + k) for k in range(total)]

    compactor = Compactor(model=MODEL, context_window=HUGE)
    items = [to_wire(c) for c in base]
    tools = [TOOL.model_dump(mode="json", by_alias=True, exclude_none=True)]
    copied = SynopsisCallback(model=MODEL, context_window=HUGE)
    same = SynopsisCallback(model=MODEL, context_window=HUGE)
    trimmer = ContextFilterPlugin(num_invocations_to_keep=HUGE)
    session = Session(
        id=SESSION,
        app_name="bench",
        user_id="bench",
        events=[event(c, k) for k, c in enumerate(base)],
    )
    with warnings.catch_warnings():  # ADK marks it experimental
        warnings.simplefilter("ignore")
        config = EventsCompactionConfig(token_threshold=HUGE, event_retention_size=10)
    agent = LlmAgent(name=AGENT, model=MODEL)
    service = InMemorySessionService()

    async def events_compaction() -> object:
        return await _run_compaction_for_token_threshold_config(
            config=config, session=session, session_service=service, agent=agent, agent_name=AGENT
        )

    async def bare() -> object:
        result = await compactor.acompact(
            items, format="gemini", session_id=SESSION, system=SYSTEM, tools=tools
        )
        return result.compacted

    async def callback(adapter: SynopsisCallback, contents: list[types.Content]) -> object:
        result = await adapter.compact(request(contents), SESSION)
        return result.compacted

    async def trim(contents: list[types.Content]) -> object:
        r = request(contents)
        await trimmer.before_model_callback(callback_context=NO_CONTEXT, llm_request=r)
        return len(r.contents) != len(contents)

    samples: dict[str, list[float]] = {p: [] for p in PATHS}
    contents = list(base)
    for n in range(total):
        grown = steps[n]
        contents = [*contents, *grown]
        items.extend(to_wire(c) for c in grown)
        session.events.extend(event(c, len(session.events)) for c in grown)
        fresh = [copies(contents), copies(contents)]  # made by ADK, outside the hook's time
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "bare Compactor": bare,
            "SynopsisCallback, ADK's copies": partial(callback, copied, fresh[0]),
            "SynopsisCallback, same objects": partial(callback, same, list(contents)),
            "EventsCompactionConfig": events_compaction,
            "ContextFilterPlugin": partial(trim, fresh[1]),
        }
        gc.collect()
        for path, call in in_turn(calls, n):
            seconds, changed = timed_on(loop, call)
            if changed:
                raise AssertionError(f"{path} changed a history under its trigger")
            if n >= plan.warmup:
                samples[path].append(seconds * 1e3)
    size.under = medians(samples)


def over_trigger(loop: asyncio.AbstractEventLoop, size: Size, plan: Plan) -> None:
    """One call over the trigger, each on a session it has not seen."""
    base = history(size.contents)
    tokens = Compactor(model=MODEL).setup.counter.count_messages(
        decode([to_wire(c) for c in base], format="gemini").messages
    )
    events = [Event(author="user" if c.role == "user" else "coder", content=c) for c in base]
    times: dict[str, list[float]] = {"synopsis": [], "LlmEventSummarizer": [], "filter": []}
    for k in range(plan.summarizing):
        adapter = SynopsisCallback(model=MODEL, context_window=max(tokens // 4, 1_000))
        seconds, result = timed_on(loop, partial(adapter.compact, request(copies(base)), f"s{k}"))
        if not result.compacted:
            raise AssertionError("synopsis did not compact a history over its trigger")
        times["synopsis"].append(seconds * 1e3)

        summarizer = LlmEventSummarizer(llm=Instant(model="instant"))
        seconds, event = timed_on(loop, partial(summarizer.maybe_summarize_events, events=events))
        if event is None:
            raise AssertionError("ADK's summarizer did not summarize")
        times["LlmEventSummarizer"].append(seconds * 1e3)

        trimmer = ContextFilterPlugin(num_invocations_to_keep=10)
        r = request(copies(base))
        trim = partial(trimmer.before_model_callback, callback_context=NO_CONTEXT, llm_request=r)
        seconds, _ = timed_on(loop, trim)
        times["filter"].append(seconds * 1e3)
    size.over = medians(times)


def run(plan: Plan = FULL) -> Results:
    started = now()
    begin = time.perf_counter()
    sizes: list[Size] = []
    loop = asyncio.new_event_loop()
    try:
        for contents, calls in plan.sizes:
            size = Size(contents, calls)
            gc.collect()
            under_trigger(loop, size, plan)
            over_trigger(loop, size, plan)
            sizes.append(size)
    finally:
        loop.close()
    return Results(sizes, time.perf_counter() - begin, started)


# -- the report --------------------------------------------------------------------------------


def table(results: Results) -> list[str]:
    def row(s: Size) -> list[str]:
        bare = s.under["bare Compactor"]
        copied = s.under["SynopsisCallback, ADK's copies"]
        same = s.under["SynopsisCallback, same objects"]
        return [
            f"{s.contents:,}",
            f"{s.calls}",
            figure(bare),
            figure(copied),
            f"**{copied / bare:.2f}x**",
            figure(same),
            f"**{same / bare:.2f}x**",
            figure(s.under["EventsCompactionConfig"]),
            figure(s.under["ContextFilterPlugin"]),
        ]

    columns = (
        "contents",
        "calls",
        "bare Compactor",
        "SynopsisCallback, ADK's copies",
        "ratio",
        "SynopsisCallback, same objects",
        "ratio",
        "EventsCompactionConfig",
        "ContextFilterPlugin",
    )
    return _harness.table(columns, map(row, results.sizes))


def over_table(results: Results) -> list[str]:
    columns = (
        "contents",
        "synopsis compacts (SynopsisCallback)",
        "LlmEventSummarizer summarizes",
        "ContextFilterPlugin trims",
    )
    rows = (
        [
            f"{s.contents:,}",
            figure(s.over["synopsis"]),
            figure(s.over["LlmEventSummarizer"]),
            figure(s.over["filter"]),
        ]
        for s in results.sizes
    )
    return _harness.table(columns, rows)


def markdown(results: Results) -> str:
    bare = "bare Compactor"
    copied = all(
        s.under["SynopsisCallback, ADK's copies"] <= 3 * s.under[bare] for s in results.sizes
    )
    same = all(
        s.under["SynopsisCallback, same objects"] <= 3 * s.under[bare] for s in results.sizes
    )
    lead = [
        s.under["EventsCompactionConfig"] > s.under["SynopsisCallback, ADK's copies"]
        for s in results.sizes
    ]
    ahead = all(lead)
    where = " and ".join(f"{s.contents:,}" for s, a in zip(results.sizes, lead, strict=True) if a)
    partly = f" (ahead at {where} contents)" if where and not ahead else ""
    floor = all(
        s.under["ContextFilterPlugin"] > s.under["SynopsisCallback, ADK's copies"]
        for s in results.sizes
    )
    return "\n".join(
        [
            "# The ADK callback's cost per model call",
            "",
            measured(
                results.started,
                "bench_adapter_adk",
                results.seconds,
                listed(versions("google-adk", "google-genai")),
            ),
            "",
            "Each call grows the history by two contents (a function call and its response), "
            "as an agent's tool loop does; the window is far above the history, so nothing is "
            "compacted. Milliseconds per model call, median of the timed calls; ratios against "
            "the bare `Compactor.acompact` on the same history as Gemini JSON, one list grown "
            "in place, same session id, system instruction and tools. ADK builds each request "
            "from fresh copies of the session's contents (outside the timed call here, as ADK "
            "makes them before any hook runs): the callback compares them with the last "
            "request's by value before reading only the new ones.",
            "",
            *table(results),
            "",
            f"Target: the callback within 3x of the bare Compactor: on ADK's copies "
            f"**{'met' if copied else 'not met'}**, on the same objects "
            f"**{'met' if same else 'not met'}**. Ahead of ADK's built-in summarization "
            "(`EventsCompactionConfig` with a token threshold, whose check runs before every "
            f"model call) on ADK's copies: **{'yes' if ahead else 'no'}**{partly}. "
            "`ContextFilterPlugin` keeps every invocation here (its cost when it trims "
            "nothing); it writes no summary, counts nothing and cannot see the window, so it "
            "is only the floor of a per-request hook: the callback is "
            f"**{'below' if floor else 'above'}** it.",
            "",
            "## Over the trigger (milliseconds, one call)",
            "",
            "Synopsis: the callback on a session it has not seen, a window a quarter of the "
            "history's tokens, the offline default summarizer (conversion, compaction and the "
            "store's writes included). `LlmEventSummarizer`: ADK's summarizer for "
            "`EventsCompactionConfig` on the same contents as events, with a model that "
            "answers at once, so the figure is its own work (formatting the events as text; a "
            "real model adds its latency, seconds), where synopsis also measures, plans the cut, "
            "checks the provider's rules and writes the summary and the originals to its "
            "store. `ContextFilterPlugin`: keeping the last ten invocations (it drops the rest "
            "without a summary).",
            "",
            *over_table(results),
            "",
        ]
    )


def main(plan: Plan = FULL, results_path: Path | None = RESULTS) -> Results:
    results = run(plan)
    print("\n".join(table(results)))
    print("\n".join(over_table(results)))
    write(results_path, markdown(results))
    return results


if __name__ == "__main__":
    main(plan_from(sys.argv, FULL))
