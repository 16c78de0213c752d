"""What the pydantic-ai capability costs per model call, against the bare Compactor (and
against pydantic-ai-harness's ``SummarizingCompaction`` when a Python that has it is named),
all in the same run.

pydantic-ai calls a capability's ``before_model_request`` once per model request with the
whole history: a new list of the same message objects, two messages longer than the last (the
model's tool call, and the request carrying the tool's return). Each path here is driven that
way, at 1,000 and 10,000 messages, with a window the history never reaches (so nothing is
compacted: the cost every call pays), on one event loop:

- ``bare Compactor``: ``Compactor.acompact`` on the same history as synopsis messages (what
  the adapter converts each pydantic-ai message to, converted beforehand), one list grown in
  place, the conversation as its ``session_id``, the instructions as ``system``, provider
  ``anthropic``: the floor the adapter is held to (target: within 3x).
- ``SynopsisCapability``: the persistent form's ``before_model_request``, with a real
  ``RunContext`` and ``ModelRequestContext``.
- ``SynopsisRequestCapability``: the per-request form's.
- ``SummarizingCompaction`` (built-in): pydantic-ai-harness pins an older pydantic-ai-slim than
  the one synopsis is tested with, so it runs in a Python of its own (``--harness-python``),
  on the same history built there, its ``before_model_request`` with ``max_tokens`` above the
  history: what it costs under its trigger. Without that Python the row says why it is absent.
  pydantic-ai core's own options (``OpenAICompaction``, ``AnthropicCompaction``) compact at
  the provider and cannot run offline.

Then one call each when the history is over the trigger: synopsis compacting through the
persistent form on a conversation it has not seen (its default summarizer is offline).

Each figure is the median of the timed calls, after untimed ones; the ratios come from the same
run. Run: ``python -m benchmarks.bench_adapter_pydantic_ai [--harness-python PATH]`` (about a
minute); it writes ``benchmarks/results/adapter-pydantic_ai.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai import messages as pm
from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RunUsage

from benchmarks import _adapters
from benchmarks._adapters import FULL_SIZES, HUGE, measured
from benchmarks._harness import figure, listed, now, versions
from synopsis import Compactor
from synopsis.adapters.pydantic_ai import (
    SynopsisCapability,
    SynopsisRequestCapability,
    to_message,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

MODEL = "claude-sonnet-4-5"
RESULTS = Path(__file__).resolve().parent / "results" / "adapter-pydantic_ai.md"
INSTRUCTIONS = "You are a careful coding agent. Run the tests before you answer."
CONVERSATION = "bench"
PATHS = ("bare Compactor", "SynopsisCapability", "SynopsisRequestCapability")
BUILT_IN = "SummarizingCompaction"

HISTORY_CODE = """
from pydantic_ai import messages as pm


def step(k):
    return [
        pm.ModelResponse(
            parts=[
                pm.TextPart(f"Running test {k}."),
                pm.ToolCallPart("bash", {"cmd": f"pytest tests/test_{k}.py -q"}, f"call_{k}"),
            ],
            usage=pm.RequestUsage(input_tokens=100 + k, output_tokens=20),
            model_name="fake",
            provider_response_id=f"resp_{k}",
        ),
        pm.ModelRequest(
            parts=[
                pm.ToolReturnPart(
                    "bash",
                    f"tests/test_{k}.py " + "." * (k % 40) + f"\\n{k % 7 + 1} passed in 0.{k % 9}s",
                    f"call_{k}",
                )
            ]
        ),
    ]


def history(n):
    out = [pm.ModelRequest(parts=[pm.UserPromptPart("Make every test in the repository pass.")])]
    k = 0
    while len(out) < n:
        out += step(k)
        k += 1
    return out
"""
"""The history, as code: the harness's Python builds the same one from it."""

_namespace: dict[str, Any] = {}
exec(compile(HISTORY_CODE, "<history>", "exec"), _namespace)
step: Callable[[int], list[pm.ModelMessage]] = _namespace["step"]
history: Callable[[int], list[pm.ModelMessage]] = _namespace["history"]

HARNESS_CODE = (
    HISTORY_CODE
    + """
import asyncio, gc, json, statistics, sys, time
from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RunUsage
from pydantic_ai_harness.compaction import SummarizingCompaction

sizes, warmup = json.loads(sys.argv[1]), int(sys.argv[2])


async def measure(n, calls):
    compaction = SummarizingCompaction(model=TestModel(), max_tokens=10**9, keep_messages=20)
    messages = history(n)
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    timed = []
    k = len(messages)
    for i in range(warmup + calls):
        messages = messages + step(k + i)
        ctx.messages = list(messages)
        rc = ModelRequestContext(model=TestModel(), messages=list(messages), model_settings=None,
                                 model_request_parameters=ModelRequestParameters())
        start = time.perf_counter()
        await compaction.before_model_request(ctx, rc)
        if i >= warmup:
            timed.append((time.perf_counter() - start) * 1000)
    return statistics.median(timed)


async def main():
    out = {}
    for n, calls in sizes:
        gc.collect()
        out[str(n)] = await measure(n, calls)
    import importlib.metadata as md
    out["versions"] = {p: md.version(p) for p in ("pydantic-ai-slim", "pydantic-ai-harness")}
    print(json.dumps(out))


asyncio.run(main())
"""
)
"""What the harness's Python runs: the built-in under its trigger, median milliseconds."""


@dataclass(frozen=True)
class Plan(_adapters.Plan):
    summarizing: int = 1
    """Timed calls over the trigger (each on a fresh conversation)."""


FULL = Plan(sizes=FULL_SIZES)


@dataclass
class Size:
    messages: int
    calls: int
    under: dict[str, float] = field(default_factory=dict)
    """Median milliseconds per model call under the trigger, per path."""
    compacting: float = 0.0
    """Median milliseconds of a call over the trigger through the persistent form."""


@dataclass
class Results:
    sizes: list[Size]
    seconds: float
    started: str
    built_in: str
    """Why the built-in has no row, or the versions it ran with."""


def context(conversation: str = CONVERSATION) -> RunContext[None]:
    return RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=conversation)


def parameters() -> ModelRequestParameters:
    return ModelRequestParameters(instruction_parts=[pm.InstructionPart(INSTRUCTIONS)])


def _sizes(results: Results, ahead: list[bool]) -> str:
    """The sizes where synopsis was ahead, as the report names them."""
    sizes = [f"{s.messages:,}" for s, a in zip(results.sizes, ahead, strict=False) if a]
    return " and ".join(sizes) + " messages"


async def _median(
    n: int,
    plan: Plan,
    calls: int,
    prepare: Callable[[list[pm.ModelMessage]], Callable[[], Awaitable[object]]],
) -> float:
    """Median milliseconds of the call ``prepare`` makes ready (outside the timing, as
    pydantic-ai builds a request before its hooks run) on a history of ``n`` messages grown by
    one step (two messages) before each call, as one model call after another."""
    messages = history(n)
    k = len(messages)
    timed: list[float] = []
    gc.collect()
    for i in range(plan.warmup + calls):
        messages = [*messages, *step(k + i)]
        call = prepare(messages)
        start = time.perf_counter()
        await call()
        if i >= plan.warmup:
            timed.append((time.perf_counter() - start) * 1000)
    return statistics.median(timed)


async def _bare(n: int, plan: Plan, calls: int) -> float:
    """The floor: the same history as synopsis messages, converted outside the timing, one
    list grown in place."""
    compactor = Compactor(model=MODEL, context_window=HUGE, provider="anthropic")
    items = [to_message(m) for m in history(n)]
    k = len(items)
    timed: list[float] = []
    gc.collect()
    for i in range(plan.warmup + calls):
        items.extend(to_message(m) for m in step(k + i))
        start = time.perf_counter()
        await compactor.acompact(
            items, format="synopsis", session_id=CONVERSATION, system=INSTRUCTIONS
        )
        if i >= plan.warmup:
            timed.append((time.perf_counter() - start) * 1000)
    return statistics.median(timed)


async def _capability(
    capability: SynopsisCapability[None] | SynopsisRequestCapability[None],
    n: int,
    plan: Plan,
    calls: int,
    conversation: str = CONVERSATION,
) -> float:
    ctx = context(conversation)

    def prepare(messages: list[pm.ModelMessage]) -> Callable[[], Awaitable[object]]:
        ctx.messages = messages
        request = ModelRequestContext(
            model=TestModel(),
            messages=list(messages),
            model_settings=None,
            model_request_parameters=parameters(),
        )
        return partial(capability.before_model_request, ctx, request)

    return await _median(n, plan, calls, prepare)


async def _compacting(n: int, plan: Plan) -> float:
    """One call over the trigger per fresh conversation: a window a quarter of the history's
    tokens, the offline default summarizer."""
    probe = Compactor(model=MODEL, context_window=HUGE, provider="anthropic")
    counted = probe.setup.counter.count_messages([to_message(m) for m in history(n)])
    window = max(counted // 4, 2000)
    timed: list[float] = []
    for r in range(plan.summarizing):
        capability: SynopsisCapability[None] = SynopsisCapability(
            model=MODEL, context_window=window
        )
        ctx = context(f"over-{r}")
        messages = history(n)
        ctx.messages = list(messages)
        request = ModelRequestContext(
            model=TestModel(),
            messages=list(messages),
            model_settings=None,
            model_request_parameters=parameters(),
        )
        start = time.perf_counter()
        await capability.before_model_request(ctx, request)
        timed.append((time.perf_counter() - start) * 1000)
        result = capability.last_result
        if result is None or not result.compacted:
            raise RuntimeError(f"the persistent form did not compact {n} messages")
    return statistics.median(timed)


def _harness(python: str | None, plan: Plan) -> tuple[dict[int, float], str]:
    if not python:
        return {}, (
            "not run: pydantic-ai-harness pins an older pydantic-ai-slim than the one synopsis "
            "is tested with; name a Python that has it with --harness-python"
        )
    done = subprocess.run(
        [python, "-c", HARNESS_CODE, json.dumps(plan.sizes), str(plan.warmup)],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    versions = found.pop("versions")
    ran = ", ".join(f"{k} {v}" for k, v in versions.items())
    return {int(k): float(v) for k, v in found.items()}, f"ran in its own Python with {ran}"


async def _form(
    kind: type[SynopsisCapability[None] | SynopsisRequestCapability[None]],
    n: int,
    plan: Plan,
    calls: int,
) -> float:
    # Made here, so that each path's objects are gone before the next path runs: a path
    # timed while an earlier one's 10,000 messages are alive pays for them in the
    # collector's passes.
    return await _capability(kind(model=MODEL, context_window=HUGE), n, plan, calls)


async def _run(plan: Plan) -> list[Size]:
    sizes: list[Size] = []
    for n, calls in plan.sizes:
        size = Size(n, calls)
        size.under["bare Compactor"] = await _bare(n, plan, calls)
        gc.collect()
        size.under["SynopsisCapability"] = await _form(SynopsisCapability, n, plan, calls)
        gc.collect()
        size.under["SynopsisRequestCapability"] = await _form(
            SynopsisRequestCapability, n, plan, calls
        )
        gc.collect()
        size.compacting = await _compacting(n, plan)
        sizes.append(size)
    return sizes


def run(plan: Plan = FULL, harness_python: str | None = None) -> Results:
    started = now()
    begun = time.perf_counter()
    # A loop of its own, left as it found the thread's: asyncio.run would unset the loop that
    # pydantic-ai's run_sync keeps for the thread, to be collected unclosed.
    loop = asyncio.new_event_loop()
    try:
        sizes = loop.run_until_complete(_run(plan))
    finally:
        loop.close()
    built_in, why = _harness(harness_python, plan)
    for size in sizes:
        if size.messages in built_in:
            size.under[BUILT_IN] = built_in[size.messages]
    return Results(sizes, time.perf_counter() - begun, started, why)


def report(results: Results) -> str:
    lines = [
        "# The pydantic-ai capability's cost per model call",
        "",
        measured(
            results.started,
            "bench_adapter_pydantic_ai",
            results.seconds,
            listed(versions("pydantic-ai-slim", "pydantic")),
        ),
        "",
        "Each call grows the history by two messages (the model's tool call, and the request "
        "carrying the tool's return), as an agent's loop does; the window is far above the "
        "history, so nothing is compacted. Milliseconds per model call, median of the timed "
        "calls; ratios against the bare `Compactor.acompact` on the same history as synopsis "
        "messages, one list grown in place, the same conversation as its session, the same "
        "instructions as its system prompt, provider `anthropic`.",
        "",
        "| messages | calls | bare Compactor | SynopsisCapability | ratio | "
        "SynopsisRequestCapability | ratio | SummarizingCompaction (harness) | "
        "built-in / persistent |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst = 0.0
    ahead: list[bool] = []
    for s in results.sizes:
        bare = s.under["bare Compactor"]
        persistent = s.under["SynopsisCapability"]
        per_request = s.under["SynopsisRequestCapability"]
        worst = max(worst, persistent / bare, per_request / bare)
        built = s.under.get(BUILT_IN)
        built_cells = ("n/a", "n/a")
        if built is not None:
            built_cells = (figure(built), f"{built / persistent:.2g}x")
            ahead.append(persistent < built)
        lines.append(
            f"| {s.messages:,} | {s.calls} | {figure(bare)} | {figure(persistent)} | "
            f"**{persistent / bare:.2f}x** | {figure(per_request)} | **{per_request / bare:.2f}x** "
            f"| {built_cells[0]} | {built_cells[1]} |"
        )
    met = "met" if worst <= 3 else "not met"
    lines += [
        "",
        f"Target: each capability within 3x of the bare Compactor: **{met}** (worst {worst:.2f}x).",
        "",
        f"Built-in (`pydantic_ai_harness.compaction.SummarizingCompaction`): {results.built_in}.",
    ]
    if ahead:
        verdict = "yes" if all(ahead) else "no"
        lines.append(
            f"Cheaper than the built-in under its trigger: **{verdict}**"
            + (f" (ahead at {_sizes(results, ahead)})" if any(ahead) and not all(ahead) else "")
            + ". Under its trigger the harness estimates the history's tokens from the last "
            "response's reported usage and the characters after it, and checks nothing else; "
            "synopsis's skip counts and checks only the appended messages against the "
            "provider's rules, and the adapter compares the run's messages with those it has "
            "converted before as two lists, in C."
        )
    lines += [
        "",
        "## Over the trigger (milliseconds, one call)",
        "",
        "The persistent form on a conversation it has not seen, a window a quarter of the "
        "history's tokens, the offline default summarizer (conversion, compaction and the "
        "store's writes included).",
        "",
        "| messages | synopsis compacts (SynopsisCapability) |",
        "|---:|---:|",
    ]
    lines += [f"| {s.messages:,} | {figure(s.compacting)} |" for s in results.sizes]
    return "\n".join(lines) + "\n"


def main(plan: Plan = FULL, out: Path = RESULTS, harness_python: str | None = None) -> Results:
    results = run(plan, harness_python)
    text = report(results)
    out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness-python", help="a Python with pydantic-ai-harness installed")
    args = parser.parse_args()
    main(harness_python=args.harness_python)
