"""A client that leaves is let go at once, wherever the proxy is in its request: during the
compaction (cancelled, nothing saved, nothing sent upstream), while the upstream has not
answered yet, and in the middle of a stream (the upstream's connection is closed).

Each test runs the proxy on a real uvicorn in front of the fake LLM server, with a client
that gives up after a fraction of a second, and measures how soon the proxy lets go.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from synopsis.proxy import create_app
from synopsis.stores import MemoryStore
from synopsis.summarizers import RuleBasedSummarizer
from synopsis.testing import FixedCounter, conversation
from synopsis.testing.server import (
    Event,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    chat_completion,
    response,
)
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord

SESSION = "leaver"
HISTORY = conversation(turns=20)
"""81 messages: 8,100 tokens at 100 a message, over the trigger of a 10,000-token window."""
COMPACTING: dict[str, Any] = {"context_window": 10_000, "counter": FixedCounter(per_message=100)}
CLIENT_TIMEOUT = 0.3
HI = [{"role": "user", "content": "hi"}]
CHAT = ("/v1/chat/completions", {"model": "gpt-4o", "messages": HI})
RESPONSES = ("/v1/responses", {"model": "gpt-4o", "input": HI})
MESSAGES = ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": HI})


def _answer(recorded: Recorded) -> Reply:
    return Reply(chat_completion("ok"))


@contextlib.contextmanager
def proxied(upstream: FakeLLMServer, **options: Any) -> Iterator[Served]:
    app = create_app(
        upstream_openai=upstream.root, upstream_anthropic=upstream.root, environ={}, **options
    )
    with Served(app) as served:
        yield served


def eventually(check: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def client_gone(served: Served) -> float:
    found = served.state.metrics.registry.get_sample_value(
        "synopsis_proxy_errors_total", {"kind": "client_gone"}
    )
    return float(found or 0.0)


class SlowSummarizer:
    """Takes ``seconds`` to summarize, asynchronously or (``blocking``) in a sleeping
    thread; says when it started, ended, and whether its coroutine was cancelled."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.ended = threading.Event()

    def record(self, messages: Sequence[Message]) -> SummaryRecord:
        return RuleBasedSummarizer().summarize(messages)


class SlowAsync(SlowSummarizer):
    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        self.started.set()
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        finally:
            self.ended.set()
        return self.record(messages)


class SlowBlocking(SlowSummarizer):
    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        self.started.set()
        time.sleep(self.seconds)
        self.ended.set()
        return self.record(messages)


def _leave_early(served: Served, path: str, body: dict[str, Any]) -> float:
    """Post ``body`` with a client that gives up after CLIENT_TIMEOUT; when it gave up."""
    with httpx2.Client(timeout=CLIENT_TIMEOUT) as client, pytest.raises(httpx2.ReadTimeout):
        client.post(served.url + path, json=body, headers={"x-synopsis-session": SESSION})
    return time.monotonic()


def test_a_client_gone_during_compaction_cancels_it_and_nothing_goes_upstream() -> None:
    summarizer = SlowAsync(seconds=2.0)
    store = MemoryStore()
    with (
        FakeLLMServer(default=_answer) as upstream,
        proxied(upstream, summarizer=summarizer, store=store, **COMPACTING) as served,
    ):
        body = {"model": "gpt-4o", "messages": HISTORY}
        left = _leave_early(served, "/v1/chat/completions", body)
        assert summarizer.started.is_set()
        assert summarizer.cancelled.wait(1.0), "the compaction outlived its client"
        assert time.monotonic() - left < 1.0
        assert eventually(lambda: client_gone(served) == 1, within=1.0)
        with pytest.raises(TimeoutError):  # the summary would have come at 2 s: nothing did
            upstream.wait_for(1, timeout=1.0)
        assert upstream.requests == []
    assert store.summaries(SESSION) == []
    assert store.sessions() == []


def test_a_blocking_summarizer_that_ends_after_its_client_left_saves_and_sends_nothing() -> None:
    summarizer = SlowBlocking(seconds=1.2)
    store = MemoryStore()
    with (
        FakeLLMServer(default=_answer) as upstream,
        proxied(upstream, summarizer=summarizer, store=store, **COMPACTING) as served,
    ):
        _leave_early(served, "/v1/chat/completions", {"model": "gpt-4o", "messages": HISTORY})
        assert eventually(lambda: client_gone(served) == 1, within=1.0)
        assert not summarizer.ended.is_set()  # the proxy let go before the thread ended
        assert summarizer.ended.wait(3.0)
        with pytest.raises(TimeoutError):
            upstream.wait_for(1, timeout=0.5)
    assert store.summaries(SESSION) == []


@pytest.mark.parametrize(("path", "body"), [CHAT, MESSAGES])
def test_a_client_gone_before_the_first_byte_closes_the_upstream_connection(
    path: str, body: dict[str, Any]
) -> None:
    answer = (
        chat_completion("late") if path == "/v1/chat/completions" else anthropic_message("late")
    )
    with FakeLLMServer() as upstream, proxied(upstream) as served:
        upstream.add(answer, delay=3.0)
        left = _leave_early(served, path, {**body, "stream": True})
        assert eventually(lambda: upstream.hangups == [path], within=1.5)
        assert time.monotonic() - left < 1.5
        assert upstream.finished == []
        assert eventually(lambda: client_gone(served) == 1, within=1.0)


def _many_deltas(events: list[Event]) -> list[Event]:
    """The stream with its text deltas repeated: a long answer, at the fake's pace."""
    out: list[Event] = []
    for event in events:
        out.extend([event] * (40 if event.delta else 1))
    return out


@pytest.mark.parametrize(
    ("path", "body", "answer"),
    [
        (*CHAT, chat_completion("a long answer")),
        (*RESPONSES, response("a long answer")),
        (*MESSAGES, anthropic_message("a long answer")),
    ],
)
def test_a_client_gone_mid_stream_closes_the_upstream_stream(
    path: str, body: dict[str, Any], answer: dict[str, Any]
) -> None:
    with FakeLLMServer() as upstream, proxied(upstream) as served:
        upstream.add(answer, chunk_delay=0.05, rewrite=_many_deltas)
        with (
            httpx2.Client(timeout=5.0) as client,
            client.stream("POST", served.url + path, json={**body, "stream": True}) as streamed,
        ):
            assert streamed.status_code == 200
            chunks = streamed.iter_raw()
            read = [next(chunks), next(chunks)]
        left = time.monotonic()
        assert all(b"data: " in chunk for chunk in read)
        assert eventually(lambda: upstream.hangups == [path], within=1.0)
        assert time.monotonic() - left < 1.0
        assert upstream.finished == []
