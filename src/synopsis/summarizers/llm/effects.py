"""The sans-I/O core of the LLM summarizer: a plan is a generator of effects, and two drivers
carry them out, one blocking and one awaiting (the httpx pattern: one core, two drivers).

A plan yields :class:`Call` (ask the completion) and :class:`Sleep` (back off), receives the
outcome of each call (a response, or the exception it raised), and returns its result. Because
``summarize`` and ``asummarize`` run the same plan, they cannot drift apart.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from synopsis.errors import ConfigurationError
from synopsis.summarizers.llm.completion import Completion, CompletionRequest, CompletionResponse

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator

__all__ = ["Call", "Effect", "Outcome", "Sleep", "arun", "run"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    request: CompletionRequest


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


Effect: TypeAlias = Call | Sleep
Outcome: TypeAlias = CompletionResponse | Exception | None


async def _awaited(value: Awaitable[CompletionResponse]) -> CompletionResponse:
    return await value


def _call(completion: Completion, request: CompletionRequest) -> Outcome:
    try:
        value = completion(request)
    except Exception as error:  # every failure of a completion is classified by the plan
        return error
    if not inspect.isawaitable(value):
        return value
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        if inspect.iscoroutine(value):
            value.close()
        raise ConfigurationError(
            "an async completion cannot run inside a running event loop; use asummarize"
        )
    try:
        return asyncio.run(_awaited(value))
    except Exception as error:
        return error


async def _acall(completion: Completion, request: CompletionRequest) -> Outcome:
    try:
        value = completion(request)
        if inspect.isawaitable(value):
            value = await value
    except Exception as error:
        return error
    return value


def run(
    plan: Generator[Effect, Outcome, T],
    completion: Completion,
    sleep: Callable[[float], object] | None,
) -> T:
    """Carry out ``plan`` blocking: an async completion runs in its own event loop."""
    outcome: Outcome = None
    try:
        while True:
            effect = plan.send(outcome)
            if isinstance(effect, Sleep):
                (time.sleep if sleep is None else sleep)(effect.seconds)
                outcome = None
            else:
                outcome = _call(completion, effect.request)
    except StopIteration as stop:
        result: T = stop.value
    return result


async def arun(
    plan: Generator[Effect, Outcome, T],
    completion: Completion,
    sleep: Callable[[float], object] | None,
) -> T:
    """Carry out ``plan`` awaiting the completion and the sleep (when they are awaitable)."""
    outcome: Outcome = None
    try:
        while True:
            effect = plan.send(outcome)
            if isinstance(effect, Sleep):
                slept = (asyncio.sleep if sleep is None else sleep)(effect.seconds)
                if inspect.isawaitable(slept):
                    await slept
                outcome = None
            else:
                outcome = await _acall(completion, effect.request)
    except StopIteration as stop:
        result: T = stop.value
    return result
