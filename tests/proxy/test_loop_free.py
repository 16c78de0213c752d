"""A compaction's own work runs off the proxy's event loop: while one request's compaction is
held in the middle of counting, ``/healthz`` and another session's request are answered, and
a client that leaves meanwhile is let go (499) with the work's result dropped: nothing is
saved or sent upstream for it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from synopsis.compaction import drivers
from synopsis.proxy.exchange import THREADED_ABOVE
from synopsis.stores import MemoryStore
from synopsis.testing import FixedCounter, conversation
from synopsis.testing.server import FakeLLMServer, Recorded, Reply, chat_completion

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.proxy.conftest import ServeProxy

HISTORY = conversation(turns=20)
"""81 messages: 8,100 tokens at 100 a message, over the trigger of a 10,000-token window."""
SMALL = [{"role": "user", "content": "hi"}]


class HeldCounter(FixedCounter):
    """Counts 100 a message, but the first count of a history of ``held_from`` messages or
    more waits (in whatever thread counts it) until ``release`` is set."""

    def __init__(self, held_from: int) -> None:
        super().__init__(per_message=100)
        self.held_from = held_from
        self.reached = threading.Event()
        self.release = threading.Event()

    def count_messages(self, messages: Any, *, tools: Any = None) -> int:
        if len(messages) >= self.held_from and not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(20)
        return super().count_messages(messages, tools=tools)


def _answer(recorded: Recorded) -> Reply:
    return Reply(chat_completion("ok"))


def _chat(url: str, messages: list[Any], session: str, timeout: float) -> httpx2.Response:
    return httpx2.post(
        url + "/v1/chat/completions",
        json={"model": "gpt-4o", "messages": messages},
        headers={"x-synopsis-session": session},
        timeout=timeout,
    )


def _counted(state: Any, kind: str) -> float:
    found = state.metrics.registry.get_sample_value("synopsis_proxy_errors_total", {"kind": kind})
    return float(found or 0.0)


def test_others_are_answered_while_a_compaction_is_held_midway(proxy: ServeProxy) -> None:
    counter = HeldCounter(held_from=len(HISTORY))
    with FakeLLMServer(default=_answer) as upstream:
        served = proxy(upstream_openai=upstream.root, context_window=10_000, counter=counter)
        with ThreadPoolExecutor(1) as pool:
            large = pool.submit(_chat, served.url, HISTORY, "large", 30.0)
            assert counter.reached.wait(10)
            try:
                assert httpx2.get(served.url + "/healthz", timeout=5.0).status_code == 200
                small = _chat(served.url, SMALL, "small", 5.0)
                assert small.status_code == 200
                assert small.headers["x-synopsis-session"] == "small"
                assert not large.done()  # still held: the loop answered around it
            finally:
                counter.release.set()
            answer = large.result()
        assert answer.status_code == 200
        assert answer.headers["x-synopsis-compacted"] == "true"


def test_a_client_gone_while_its_compaction_runs_in_a_thread_gets_nothing_done(
    proxy: ServeProxy,
) -> None:
    counter = HeldCounter(held_from=len(HISTORY))
    store = MemoryStore()
    with FakeLLMServer(default=_answer) as upstream:
        served = proxy(
            upstream_openai=upstream.root, context_window=10_000, counter=counter, store=store
        )
        try:
            with pytest.raises(httpx2.ReadTimeout):
                _chat(served.url, HISTORY, "leaver", 1.0)
            assert counter.reached.is_set()
            # Let go while the work is still held in its thread.
            assert _eventually(lambda: _counted(served.state, "client_gone") == 1)
        finally:
            counter.release.set()
        # The held work ends, and its result goes nowhere: nothing saved, nothing sent.
        with pytest.raises(TimeoutError):
            upstream.wait_for(1, timeout=1.0)
    assert store.summaries("leaver") == []
    assert store.sessions() == []


def _eventually(check: Callable[[], bool], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_large_body_takes_even_the_fast_path_in_a_worker_thread(
    proxy: ServeProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, bool]] = []
    step = drivers._step

    def spied(plan: Any, outcome: Any) -> Any:
        # asyncio.to_thread's workers are the loop's executor's, named asyncio_N.
        seen.append((plan.gi_code.co_name, threading.current_thread().name.startswith("asyncio")))
        return step(plan, outcome)

    monkeypatch.setattr(drivers, "_step", spied)
    served = proxy(windows={"gpt-4o": 10**9})
    line = "word " * 20 + "\n"
    large = [{"role": "user", "content": line * (THREADED_ABOVE // len(line) + 1)}]
    where: dict[str, set[bool]] = {}
    for messages, session in ((SMALL, "small"), (large, "large")):
        grown = [*messages, {"role": "assistant", "content": "ok"}, *SMALL]
        for n, history in enumerate((messages, grown)):
            seen.clear()
            assert _chat(served.url, history, session, 30.0).status_code == 200
            plans = {name for name, _ in seen}
            assert plans == ({"compaction"} if n == 0 else {"skip"})
            where[f"{session} {plans.pop()}"] = {threaded for _, threaded in seen}
    # The fast path of the small body stayed on the loop; every other plan left it.
    assert where == {
        "small compaction": {True},
        "small skip": {False},
        "large compaction": {True},
        "large skip": {True},
    }
