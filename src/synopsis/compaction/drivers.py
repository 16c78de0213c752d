"""The two drivers of the compaction plan: :func:`run` blocks, :func:`arun` awaits.

Each sends the plan the value of every effect it yields, or the exception the effect raised
(the plan decides what a failure means: a summarizer's falls back to the rules, a store's
leaves the input untouched). A summarizer's deadline is kept here, where the waiting is.

:func:`arun` may take the plan's own steps (decoding, counting, planning: pure work that
takes seconds on a history of many megabytes) off the event loop, each into a worker thread,
while it awaits the effects on the loop as ever (so an async summarizer's call and an async
store's stay on it). The plan is a generator that only one thread runs at a time: the next
step starts once the last one ended. Cancelled while a step runs, the awaiting task ends at
once; the step runs to its end in its thread and its result is dropped, and the plan is
never resumed, so it saves nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import gc
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

from synopsis.compaction.effects import Summarize
from synopsis.errors import SummarizerError
from synopsis.stores.protocols import awaits
from synopsis.summarizers import AsyncSummarizer, Summarizer

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

    from synopsis.compaction.effects import Effect, Outcome, StoreEffect
    from synopsis.compaction.setup import Setup
    from synopsis.stores import Store

__all__ = ["arun", "run"]

_Advanced = tuple[bool, Any]
"""(whether the plan ended, then its value; else the effect it yields next)."""

T = TypeVar("T")
"""What the plan gives back: a compaction's result, or a skip's (see :mod:`.incremental`)."""


def _timed_out(seconds: float) -> SummarizerError:
    return SummarizerError(f"the summarizer did not answer within {seconds:g} seconds")


def _arguments(effect: Summarize) -> dict[str, Any]:
    return {
        "previous": effect.previous,
        "instructions": effect.instructions,
        "max_tokens": effect.max_tokens,
    }


def _summarize(setup: Setup, effect: Summarize) -> Outcome:
    summarizer = setup.summarizer
    arguments = _arguments(effect)
    try:
        if not isinstance(summarizer, Summarizer):
            return _run_async_summarizer(setup, summarizer, effect)
        if setup.summarizer_timeout is None:
            return summarizer.summarize(effect.messages, **arguments)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            # The listeners a summarizer reports to live in context variables: carry them over.
            context = contextvars.copy_context()
            future = pool.submit(
                context.run, functools.partial(summarizer.summarize, effect.messages, **arguments)
            )
            return future.result(timeout=setup.summarizer_timeout)
        except concurrent.futures.TimeoutError:
            return _timed_out(setup.summarizer_timeout)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    except Exception as error:  # any failure of the summarizer means falling back
        return error


def _run_async_summarizer(setup: Setup, summarizer: AsyncSummarizer, effect: Summarize) -> Outcome:
    """An async-only summarizer from blocking code: in a thread of its own with its own event
    loop, so that it works inside a running loop too (a notebook, an async framework)."""
    limit = setup.summarizer_timeout

    async def call() -> Outcome:
        work = summarizer.asummarize(effect.messages, **_arguments(effect))
        return await (asyncio.wait_for(work, limit) if limit is not None else work)

    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        try:
            return pool.submit(context.run, asyncio.run, call()).result()
        except TimeoutError:
            return _timed_out(limit or 0.0)


async def _asummarize(setup: Setup, effect: Summarize) -> Outcome:
    summarizer = setup.summarizer
    arguments = _arguments(effect)
    try:
        if isinstance(summarizer, AsyncSummarizer):
            call = summarizer.asummarize(effect.messages, **arguments)
        else:
            call = asyncio.to_thread(summarizer.summarize, effect.messages, **arguments)
        if setup.summarizer_timeout is None:
            return await call
        try:
            return await asyncio.wait_for(call, setup.summarizer_timeout)
        except TimeoutError:
            return _timed_out(setup.summarizer_timeout)
    except Exception as error:
        return error


def _store(setup: Setup, effect: StoreEffect) -> Outcome:
    try:
        # Compactor.compact refuses an async-only store before the plan starts.
        return effect.run(cast("Store", setup.store))
    except Exception as error:  # the pipeline turns it into a StoreError, input untouched
        return error


async def _astore(setup: Setup, effect: StoreEffect) -> Outcome:
    store = setup.store
    try:
        if awaits(store):
            return await effect.arun(store)
        return await asyncio.to_thread(effect.run, cast("Store", store))
    except Exception as error:
        return error


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while the plan's pure steps run: they create a
    few objects per message and free them by reference counting, and on a history of 100k
    messages the collector's passes over every object alive took a quarter of a compaction.
    It runs again at every effect (a summarizer's call, a store's), and after the plan."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _step(plan: Generator[Effect, Outcome, T], outcome: Outcome) -> Effect:
    with _collector_paused():
        return plan.send(outcome)


def _advance(plan: Generator[Effect, Outcome, T], outcome: Outcome) -> _Advanced:
    """One step, its end told apart by value: a StopIteration cannot cross a future."""
    try:
        return False, _step(plan, outcome)
    except StopIteration as stop:
        return True, stop.value


def run(plan: Generator[Effect, Outcome, T], setup: Setup) -> T:
    """Carry the plan out, blocking on each effect."""
    outcome: Outcome = None
    try:
        while True:
            effect = _step(plan, outcome)
            if isinstance(effect, Summarize):
                outcome = _summarize(setup, effect)
            else:
                outcome = _store(setup, effect)
    except StopIteration as stop:
        result: T = stop.value
    return result


async def arun(plan: Generator[Effect, Outcome, T], setup: Setup, *, threaded: bool = False) -> T:
    """Carry the plan out, awaiting each effect (a blocking summarizer or store runs in a
    thread); ``threaded``: the plan's own steps too (see the module docstring)."""
    outcome: Outcome = None
    while True:
        if threaded:
            ended, value = await asyncio.to_thread(_advance, plan, outcome)
        else:
            ended, value = _advance(plan, outcome)
        if ended:
            result: T = value
            return result
        if isinstance(value, Summarize):
            outcome = await _asummarize(setup, value)
        else:
            outcome = await _astore(setup, value)
