"""``acompact(threaded=...)``: the plan's own steps run in a worker thread (a compaction's,
or the fast path's too) and give the very result they give on the event loop; a task
cancelled while a step runs in its thread ends at once, and that step's work is dropped."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import TYPE_CHECKING, Any

import pytest

from synopsis.compaction import drivers
from synopsis.errors import ConfigurationError
from synopsis.stores import MemoryStore
from tests.compaction.helpers import TRANSCRIPTS, load_items, make

if TYPE_CHECKING:
    from collections.abc import Generator

    from synopsis.compaction import CompactionResult, Compactor

AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))
"""Compacted at the helpers' 4,000-token window; its first half is not."""
SHORT = AIDER[: len(AIDER) // 2]
APPENDED = {"role": "user", "content": "And the one after that?"}


Steps = list[tuple[str, bool]]


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> Steps:
    """Every step of a plan the drivers take: the plan's name ("skip" for the fast path,
    "compaction" for the full one), and whether it ran on the test's own thread."""
    seen: Steps = []
    step = drivers._step

    def spied(plan: Generator[Any, Any, Any], outcome: Any) -> Any:
        name = plan.gi_code.co_name  # type: ignore[attr-defined]
        seen.append((name, threading.current_thread() is threading.main_thread()))
        return step(plan, outcome)

    monkeypatch.setattr(drivers, "_step", spied)
    return seen


def _three_calls(compactor: Compactor, threaded: Any) -> list[CompactionResult]:
    """A short history (read whole), the same grown by one item (the fast path), then the
    whole transcript (a compaction)."""

    async def calls() -> list[CompactionResult]:
        history = list(SHORT)
        first = await compactor.acompact(history, session_id="s", threaded=threaded)
        history.append(APPENDED)
        second = await compactor.acompact(history, session_id="s", threaded=threaded)
        third = await compactor.acompact(list(AIDER), session_id="t", threaded=threaded)
        return [first, second, third]

    return asyncio.run(calls())


@pytest.mark.parametrize(
    ("threaded", "on_loop"),
    [
        (None, {"compaction": True, "skip": True}),
        ("compaction", {"compaction": False, "skip": True}),
        ("all", {"compaction": False, "skip": False}),
    ],
)
def test_each_plan_runs_where_it_is_told_with_the_same_result(
    steps: Steps, threaded: Any, on_loop: dict[str, bool]
) -> None:
    results = _three_calls(make(store=MemoryStore()), threaded)
    assert {name for name, _ in steps} == {"compaction", "skip"}
    assert all(loop == on_loop[name] for name, loop in steps)
    assert [r.compacted for r in results] == [False, False, True]
    alone = make(store=MemoryStore())
    history = list(SHORT)
    plain = [alone.compact(history, session_id="s")]
    history.append(APPENDED)
    plain.append(alone.compact(history, session_id="s"))
    plain.append(alone.compact(list(AIDER), session_id="t"))
    assert [json.dumps(r.messages) for r in results] == [json.dumps(r.messages) for r in plain]
    assert [r.tokens_after for r in results] == [r.tokens_after for r in plain]


def test_anything_but_the_three_choices_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="threaded must be None, 'compaction' or 'all'"):
        asyncio.run(make().acompact(list(SHORT), threaded=True))  # type: ignore[arg-type]


def test_a_task_cancelled_while_its_step_runs_in_a_thread_ends_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered, release = threading.Event(), threading.Event()
    step = drivers._step

    def held(plan: Generator[Any, Any, Any], outcome: Any) -> Any:
        if not release.is_set():
            entered.set()
            assert release.wait(10)
        return step(plan, outcome)

    monkeypatch.setattr(drivers, "_step", held)
    store = MemoryStore()
    compactor = make(store=store)

    async def cancelled() -> CompactionResult:
        task = asyncio.create_task(
            compactor.acompact(list(AIDER), session_id="s", threaded="compaction")
        )
        while not entered.is_set():  # the loop is free while the step is held
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not release.is_set()  # the task ended with its step still running
        release.set()
        return await compactor.acompact(list(AIDER), session_id="s", threaded="compaction")

    result = asyncio.run(cancelled())
    assert result.compacted
    # The cancelled call saved nothing: the one compaction saved is the second call's.
    assert len(store.summaries("s")) == 1
