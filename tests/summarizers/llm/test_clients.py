"""The real openai and anthropic SDKs, pointed at a fake server on 127.0.0.1, driving
LLMSummarizer end to end through the completions of :mod:`synopsis.summarizers.llm.clients`."""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anthropic
import openai
import pytest

from synopsis.errors import TransportError
from synopsis.summarizers import LLMSummarizer, SummaryRecord, Usage
from synopsis.summarizers.llm.clients import (
    DEFAULT_ANTHROPIC_MAX_TOKENS,
    anthropic_completion,
    openai_chat_completion,
    openai_responses_completion,
)
from synopsis.summarizers.llm.completion import CompletionRequest, CompletionResponse
from synopsis.summarizers.llm.prompts import SYSTEM_PROMPT
from synopsis.summarizers.llm.summarizer import SUMMARY_SCHEMA
from synopsis.summarizers.records import MAX_FACET_ITEMS, MAX_LIST_ITEMS
from synopsis.testing.server import anthropic_message, chat_completion, response
from tests.summarizers.helpers import GOOD, history

if TYPE_CHECKING:
    from synopsis.testing.server import FakeLLMServer


GOOD_TEXT = json.dumps(GOOD)

Factory = Callable[[Any], Callable[[CompletionRequest], Any]]


@dataclass(frozen=True)
class Flavour:
    name: str
    path: str
    model: str
    answer: Callable[[str], dict[str, Any]]
    usage: Usage
    adapter: Factory

    def client(self, server: FakeLLMServer, *, mode: str, timeout: float) -> Any:
        if self.name == "anthropic":
            cls: Any = anthropic.AsyncAnthropic if mode == "async" else anthropic.Anthropic
            return cls(api_key="test", base_url=server.root, max_retries=0, timeout=timeout)
        cls = openai.AsyncOpenAI if mode == "async" else openai.OpenAI
        return cls(api_key="test", base_url=server.base_url, max_retries=0, timeout=timeout)


OPENAI_USAGE = Usage(
    prompt_tokens=900,
    completion_tokens=80,
    total_tokens=980,
    cached_tokens=100,
    reasoning_tokens=30,
)
FLAVOURS = [
    Flavour(
        "chat",
        "/v1/chat/completions",
        "gpt-test",
        chat_completion,
        OPENAI_USAGE,
        openai_chat_completion,
    ),
    Flavour(
        "responses",
        "/v1/responses",
        "gpt-test",
        response,
        OPENAI_USAGE,
        openai_responses_completion,
    ),
    Flavour(
        "anthropic",
        "/v1/messages",
        "claude-test",
        anthropic_message,
        # 800 uncached + 100 read from the cache; the cached part counts in the prompt.
        Usage(prompt_tokens=900, completion_tokens=80, total_tokens=980, cached_tokens=100),
        anthropic_completion,
    ),
]
MODES = ["sync", "async"]

flavours = pytest.mark.parametrize("flavour", FLAVOURS, ids=[f.name for f in FLAVOURS])
modes = pytest.mark.parametrize("mode", MODES)


def run(
    flavour: Flavour, mode: str, server: FakeLLMServer, timeout: float = 5.0, **options: Any
) -> SummaryRecord:
    """Summarize ``history()`` through the SDK client (``mode`` sync or async), then close it."""
    if mode == "sync":
        with flavour.client(server, mode=mode, timeout=timeout) as client:
            summarizer = LLMSummarizer(flavour.adapter(client), models=[flavour.model], **options)
            return summarizer.summarize(history())

    async def main() -> SummaryRecord:
        async with flavour.client(server, mode=mode, timeout=timeout) as client:
            summarizer = LLMSummarizer(flavour.adapter(client), models=[flavour.model], **options)
            return await summarizer.asummarize(history())

    return asyncio.run(main())


def ask(
    flavour: Flavour,
    mode: str,
    server: FakeLLMServer,
    request: CompletionRequest,
    timeout: float = 5.0,
) -> CompletionResponse:
    """One completion call, straight through the adapter."""
    if mode == "sync":
        with flavour.client(server, mode=mode, timeout=timeout) as client:
            answer = flavour.adapter(client)(request)
            assert isinstance(answer, CompletionResponse)
            return answer

    async def main() -> CompletionResponse:
        async with flavour.client(server, mode=mode, timeout=timeout) as client:
            pending = flavour.adapter(client)(request)
            assert inspect.isawaitable(pending)
            return await cast("Awaitable[CompletionResponse]", pending)

    return asyncio.run(main())


def request(model: str, **fields: Any) -> CompletionRequest:
    return CompletionRequest(
        model=model, system="Be brief.", messages=[{"role": "user", "content": "hi"}], **fields
    )


@flavours
@modes
def test_a_valid_answer_becomes_a_record_with_its_usage(llm_server, flavour, mode):
    llm_server.add(flavour.answer(GOOD_TEXT))
    record = run(flavour, mode, llm_server)
    assert record.narrative == GOOD["narrative"]
    assert record.model == flavour.model
    assert record.usage == flavour.usage
    assert [r.path for r in llm_server.requests] == [flavour.path]


@flavours
@modes
def test_a_rate_limit_is_retried(llm_server, flavour, mode):
    llm_server.error(429, "slow down")
    llm_server.add(flavour.answer(GOOD_TEXT))
    slept: list[float] = []
    record = run(flavour, mode, llm_server, sleep=slept.append)
    assert record.model == flavour.model
    assert len(llm_server.requests) == 2
    assert slept == [0.25]


@flavours
@modes
def test_a_bad_request_is_not_retried_and_falls_back(llm_server, flavour, mode):
    llm_server.error(400, "bad request")
    slept: list[float] = []
    record = run(flavour, mode, llm_server, sleep=slept.append)
    assert record.model == "rules"
    assert len(llm_server.requests) == 1
    assert slept == []


@flavours
@modes
@pytest.mark.parametrize(("status", "retryable"), [(400, False), (404, False), (503, True)])
def test_status_errors_become_transport_errors(llm_server, flavour, mode, status, retryable):
    llm_server.error(status)
    with pytest.raises(TransportError, match=f"HTTP {status}") as caught:
        ask(flavour, mode, llm_server, request(flavour.model))
    assert caught.value.retryable is retryable
    assert isinstance(caught.value.__cause__, openai.APIStatusError | anthropic.APIStatusError)


@flavours
@modes
def test_a_reply_slower_than_the_timeout_is_a_retryable_transport_error(llm_server, flavour, mode):
    llm_server.add(flavour.answer(GOOD_TEXT), delay=0.6)
    with pytest.raises(TransportError, match="Timeout") as caught:
        ask(flavour, mode, llm_server, request(flavour.model), timeout=0.1)
    assert caught.value.retryable is True


@flavours
@modes
def test_a_closed_port_is_a_retryable_transport_error(flavour, mode):
    # A port held bound but not listening refuses every connection, and no other test (in this
    # worker or another) can start a server on it meanwhile.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        closed = cast("FakeLLMServer", _Closed(f"http://127.0.0.1:{port}"))
        with pytest.raises(TransportError, match="Connection") as caught:
            ask(flavour, mode, closed, request(flavour.model), timeout=1.0)
    assert caught.value.retryable is True


@dataclass
class _Closed:
    """Stands in for a server that is not listening at ``root``."""

    root: str

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"


def test_the_chat_request_carries_temperature_system_and_schema(llm_server):
    llm_server.add(chat_completion(GOOD_TEXT))
    run(FLAVOURS[0], "sync", llm_server)
    body = llm_server.requests[0].body
    assert body["model"] == "gpt-test"
    assert body["temperature"] == 0
    assert body["max_tokens"] == 2000
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert body["messages"][1]["role"] == "user"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SUMMARY_SCHEMA


def test_the_responses_request_carries_temperature_instructions_and_schema(llm_server):
    llm_server.add(response(GOOD_TEXT))
    run(FLAVOURS[1], "async", llm_server)
    body = llm_server.requests[0].body
    assert body["temperature"] == 0
    assert body["instructions"] == SYSTEM_PROMPT
    assert body["max_output_tokens"] == 2000
    assert body["input"][0]["role"] == "user"
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["text"]["format"]["schema"] == SUMMARY_SCHEMA


def test_the_anthropic_request_carries_temperature_system_and_max_tokens(llm_server):
    llm_server.add(anthropic_message(GOOD_TEXT))
    run(FLAVOURS[2], "sync", llm_server)
    body = llm_server.requests[0].body
    assert body["temperature"] == 0
    assert body["system"] == SYSTEM_PROMPT
    assert body["max_tokens"] == 2000
    assert [m["role"] for m in body["messages"]] == ["user"]


@flavours
@modes
def test_a_request_without_schema_or_max_tokens(llm_server, flavour, mode):
    llm_server.add(flavour.answer("plain"))
    answer = ask(flavour, mode, llm_server, request(flavour.model, temperature=0.5))
    assert answer.text == "plain"
    body = llm_server.requests[0].body
    assert body["temperature"] == 0.5
    assert "response_format" not in body
    assert "text" not in body
    assert "max_output_tokens" not in body
    if flavour.name == "anthropic":
        assert body["max_tokens"] == DEFAULT_ANTHROPIC_MAX_TOKENS
    else:
        assert "max_tokens" not in body


@pytest.mark.parametrize("flavour", FLAVOURS[:2], ids=[f.name for f in FLAVOURS[:2]])
def test_an_openai_answer_without_usage_costs_nothing(llm_server, flavour):
    llm_server.add(flavour.answer("plain") | {"usage": None})
    answer = ask(flavour, "sync", llm_server, request("asked"))
    assert answer.usage == Usage()
    assert answer.model == "gpt-test"


def test_a_chat_answer_without_choices_or_details(llm_server):
    body = chat_completion("unused")
    body["choices"] = []
    body["usage"] = {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}
    llm_server.add(body)
    answer = ask(FLAVOURS[0], "sync", llm_server, request("asked"))
    assert answer.text == ""
    assert answer.usage == Usage(prompt_tokens=5, total_tokens=5)


def test_an_anthropic_answer_joins_text_blocks_and_counts_cache_writes(llm_server):
    body = anthropic_message("one ")
    body["content"].append({"type": "text", "text": "two"})
    body["usage"] = {
        "input_tokens": 10,
        "output_tokens": 3,
        "cache_read_input_tokens": None,
        "cache_creation_input_tokens": 20,
    }
    llm_server.add(body)
    answer = ask(FLAVOURS[2], "sync", llm_server, request("asked"))
    assert answer.text == "one two"
    assert answer.usage == Usage(prompt_tokens=30, completion_tokens=3, total_tokens=33)


@pytest.mark.parametrize(
    ("module", "adapter"),
    [
        ("openai", openai_chat_completion),
        ("openai", openai_responses_completion),
        ("anthropic", anthropic_completion),
    ],
)
def test_a_missing_sdk_names_the_extra(monkeypatch, module, adapter):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=rf'pip install "synopsis\[{module}\]"'):
        adapter(cast("Any", None))


def test_the_schema_a_model_is_asked_for_bounds_every_list_at_what_an_answer_keeps() -> None:
    # The record itself holds as many items as a budget allows; a model is asked for no more
    # than its answer keeps. A server that turns the schema into a grammar (llama.cpp) built
    # one from a bound of 100,000 items and crashed on the next request.
    bounds: list[int] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "maxItems" in node:
                bounds.append(node["maxItems"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(SUMMARY_SCHEMA)
    assert bounds
    assert max(bounds) <= MAX_FACET_ITEMS < MAX_LIST_ITEMS
