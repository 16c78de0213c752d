"""The proxy end to end: the real OpenAI and Anthropic SDKs talk to it, served by uvicorn, in
front of the fake upstream. Answers reach the SDKs as their own objects, streams arrive as the
upstream paces them, errors as each SDK's own exceptions."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import Message, RawContentBlockDeltaEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseCompletedEvent, ResponseTextDeltaEvent

from synopsis.testing import ScriptedSummarizer
from synopsis.testing.server import (
    FakeLLMServer,
    Picky,
    anthropic_message,
    chat_completion,
    response,
    split,
)
from synopsis.validation import validate
from tests.proxy.sdk_clients import (
    API_KEY,
    TEXT,
    anthropic_client,
    assert_forwarded,
    holds_summary,
    openai_client,
)
from tests.proxy.servers import refusing

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from tests.proxy.conftest import ServeProxy

MESSAGES: list[Any] = [
    {"role": "system", "content": "You answer in one line."},
    {"role": "user", "content": "Say hello."},
]
TURNS: list[Any] = [{"role": "user", "content": "Say hello."}]
SESSION = {"x-synopsis-session": "sdk-test"}


def eventually(condition: Callable[[], bool], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# -- answers as each SDK's own objects -----------------------------------------------------------


def test_openai_chat_completion(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    sent: list[httpx2.Request] = []
    with openai_client(proxy(), sent, default_headers=SESSION) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=MESSAGES, temperature=0.5
        )
        completion = raw.parse()
    assert isinstance(completion, ChatCompletion)
    assert completion.choices[0].message.content == TEXT
    (recorded,) = upstream.requests
    assert (recorded.method, recorded.path) == ("POST", "/v1/chat/completions")
    assert recorded.body == {"model": "gpt-4o", "messages": MESSAGES, "temperature": 0.5}
    assert recorded.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent[0].headers["x-synopsis-session"] == "sdk-test"
    assert_forwarded(sent[0], recorded)
    assert raw.headers["x-synopsis-session"] == "sdk-test"
    assert raw.headers["x-synopsis-compacted"] == "false"
    before, after = raw.headers["x-synopsis-tokens"].split("/")
    assert int(before) == int(after) > 0


def test_openai_chat_completion_streamed(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    sent: list[httpx2.Request] = []
    with (
        openai_client(proxy(), sent) as client,
        client.chat.completions.create(
            model="gpt-4o",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        ) as stream,
    ):
        chunks = list(stream)
    assert all(isinstance(chunk, ChatCompletionChunk) for chunk in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.prompt_tokens == 900  # the upstream's usage chunk, relayed
    (recorded,) = upstream.requests
    assert recorded.body == {
        "model": "gpt-4o",
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert_forwarded(sent[0], recorded)


def test_openai_responses(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    sent: list[httpx2.Request] = []
    with openai_client(proxy(), sent) as client:
        answered = client.responses.create(
            model="gpt-4o", instructions="You answer in one line.", input=TURNS
        )
    assert isinstance(answered, Response)
    assert answered.output_text == TEXT
    (recorded,) = upstream.requests
    assert recorded.path == "/v1/responses"
    assert recorded.body == {
        "model": "gpt-4o",
        "instructions": "You answer in one line.",
        "input": TURNS,
    }
    assert_forwarded(sent[0], recorded)


def test_openai_responses_streamed(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    sent: list[httpx2.Request] = []
    with (
        openai_client(proxy(), sent) as client,
        client.responses.create(
            model="gpt-4o", instructions="You answer in one line.", input=TURNS, stream=True
        ) as stream,
    ):
        events = list(stream)
    deltas = [e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)]
    assert deltas == split(TEXT)
    assert isinstance(events[-1], ResponseCompletedEvent)
    assert events[-1].response.output_text == TEXT
    (recorded,) = upstream.requests
    assert recorded.body["stream"] is True
    assert recorded.body["instructions"] == "You answer in one line."
    assert_forwarded(sent[0], recorded)


def test_anthropic_message(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    sent: list[httpx2.Request] = []
    with anthropic_client(proxy(), sent) as client:
        raw = client.messages.with_raw_response.create(
            model="claude-sonnet-4-6",
            max_tokens=64,
            system="You answer in one line.",
            messages=TURNS,
        )
        message = raw.parse()
    assert isinstance(message, Message)
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == TEXT  # type: ignore[union-attr]
    (recorded,) = upstream.requests
    assert recorded.path == "/v1/messages"
    assert recorded.body == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": "You answer in one line.",
        "messages": TURNS,
    }
    assert "anthropic-version" in recorded.headers
    assert_forwarded(sent[0], recorded)
    assert raw.headers["x-synopsis-compacted"] == "false"
    assert raw.headers["x-synopsis-session"].startswith("auto:")


def test_anthropic_message_streamed(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    sent: list[httpx2.Request] = []
    with (
        anthropic_client(proxy(), sent) as client,
        client.messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=64,
            system="You answer in one line.",
            messages=TURNS,
        ) as stream,
    ):
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == TEXT
    assert isinstance(final, Message)
    assert (final.usage.input_tokens, final.usage.output_tokens) == (800, 80)
    (recorded,) = upstream.requests
    assert recorded.body["stream"] is True
    assert recorded.body["system"] == "You answer in one line."
    assert recorded.body["messages"] == TURNS
    assert_forwarded(sent[0], recorded)


# -- streams are relayed as they come --------------------------------------------------------------


def chat_deltas(client: openai.OpenAI) -> Iterator[str]:
    with client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True) as stream:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content


def responses_deltas(client: openai.OpenAI) -> Iterator[str]:
    with client.responses.create(model="gpt-4o", input=TURNS, stream=True) as stream:
        for event in stream:
            if isinstance(event, ResponseTextDeltaEvent):
                yield event.delta


def messages_deltas(client: anthropic.Anthropic) -> Iterator[str]:
    with client.messages.stream(model="claude-sonnet-4-6", max_tokens=64, messages=TURNS) as stream:
        for event in stream:
            if isinstance(event, RawContentBlockDeltaEvent) and event.delta.type == "text_delta":
                yield event.delta.text


@pytest.mark.parametrize("route", ["chat", "responses", "messages"])
def test_a_stream_reaches_the_client_as_the_upstream_sends_it(
    upstream: FakeLLMServer, proxy: ServeProxy, route: str
) -> None:
    served = proxy()
    with openai_client(served) as chat, anthropic_client(served) as messages:
        if route == "chat":
            upstream.add(chat_completion(TEXT), chunk_delay=0.2)
            deltas = chat_deltas(chat)
        elif route == "responses":
            upstream.add(response(TEXT), chunk_delay=0.2)
            deltas = responses_deltas(chat)
        else:
            upstream.add(anthropic_message(TEXT), chunk_delay=0.2)
            deltas = messages_deltas(messages)
        arrivals: list[tuple[str, float, int]] = []
        for delta in deltas:
            arrivals.append((delta, time.monotonic(), len(upstream.finished)))
    assert [delta for delta, _, _ in arrivals] == split(TEXT)
    # The first piece arrives while the upstream is still sending, a pause before the last.
    assert arrivals[0][2] == 0
    assert arrivals[-1][1] - arrivals[0][1] >= 0.3


def test_a_stream_the_upstream_leaves_silent_is_cut_at_the_timeout(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    upstream.add(chat_completion(TEXT), chunk_delay=1.0)
    with (
        openai_client(proxy(timeout=0.3)) as client,
        pytest.raises(openai.APIConnectionError) as broken,
    ):
        list(chat_deltas(client))
    assert isinstance(broken.value.__cause__, httpx2.RemoteProtocolError)
    assert eventually(lambda: upstream.hangups == ["/v1/chat/completions"])


# -- errors as each SDK's own exceptions ---------------------------------------------------------


@pytest.fixture
def closed() -> Iterator[str]:
    """The root of a port bound but not listening: connecting is refused."""
    with refusing() as root:
        yield root


def test_an_unreachable_upstream_is_a_502_in_each_shape(proxy: ServeProxy, closed: str) -> None:
    served = proxy(upstream_openai=closed, upstream_anthropic=closed)
    with openai_client(served) as client:
        with pytest.raises(openai.InternalServerError) as chat:
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        with pytest.raises(openai.InternalServerError) as responses:
            client.responses.create(model="gpt-4o", input=TURNS)
        with pytest.raises(openai.InternalServerError) as listed:
            client.models.list()
    with (
        anthropic_client(served) as other,
        pytest.raises(anthropic.InternalServerError) as messages,
    ):
        other.messages.create(model="claude-sonnet-4-6", max_tokens=64, messages=TURNS)
    for refused in (chat.value, responses.value, listed.value):
        assert refused.status_code == 502
        assert isinstance(refused.body, dict)
        assert refused.body["type"] == "upstream_error"
        assert refused.body["message"].startswith("the upstream could not be reached: ")
        assert refused.message.startswith("Error code: 502")
    assert messages.value.status_code == 502
    assert isinstance(messages.value.body, dict)
    assert messages.value.body["type"] == "error"
    assert messages.value.body["error"]["type"] == "api_error"
    assert messages.value.body["error"]["message"].startswith("the upstream could not be reached")


def test_an_upstream_too_slow_to_answer_is_a_504(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    served = proxy(timeout=0.3)
    upstream.add(chat_completion(TEXT), delay=2)
    upstream.add(anthropic_message(TEXT), delay=2)
    started = time.monotonic()
    with openai_client(served) as client, pytest.raises(openai.InternalServerError) as chat:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    with (
        anthropic_client(served) as other,
        pytest.raises(anthropic.InternalServerError) as messages,
    ):
        other.messages.create(model="claude-sonnet-4-6", max_tokens=64, messages=TURNS)
    assert time.monotonic() - started < 2
    assert chat.value.status_code == 504
    assert chat.value.body == {
        "message": "the upstream did not answer within 0.3 s",
        "type": "timeout",
        "param": None,
        "code": None,
    }
    assert messages.value.status_code == 504
    assert messages.value.body == {
        "type": "error",
        "error": {"type": "timeout_error", "message": "the upstream did not answer within 0.3 s"},
    }
    # The proxy hung up on the upstream: neither reply was sent.
    assert eventually(lambda: len(upstream.hangups) == 2)
    assert upstream.finished == []


def test_an_upstream_error_is_relayed_as_it_came(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    served = proxy()
    upstream.error(400, "temperature must be at most 2")
    upstream.add(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        status=429,
    )
    with openai_client(served) as client, pytest.raises(openai.BadRequestError) as chat:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, temperature=9)
    with anthropic_client(served) as other, pytest.raises(anthropic.RateLimitError) as messages:
        other.messages.create(model="claude-sonnet-4-6", max_tokens=64, messages=TURNS)
    assert chat.value.status_code == 400
    assert chat.value.body == {"type": "error", "message": "temperature must be at most 2"}
    assert chat.value.response.headers["x-synopsis-compacted"] == "false"
    assert messages.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }
    assert len(upstream.requests) == 2  # an error that is no overflow is not retried


def test_without_the_proxy_token_the_sdk_gets_a_401(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    served = proxy(auth_token="let-me-in")
    with openai_client(served) as client, pytest.raises(openai.AuthenticationError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    with (
        anthropic_client(served) as other,
        pytest.raises(anthropic.AuthenticationError) as refused_too,
    ):
        other.messages.create(model="claude-sonnet-4-6", max_tokens=64, messages=TURNS)
    assert refused.value.status_code == refused_too.value.status_code == 401
    assert upstream.requests == []
    sent: list[httpx2.Request] = []
    with openai_client(served, sent, default_headers={"x-synopsis-token": "let-me-in"}) as client:
        answered = client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert answered.choices[0].message.content == TEXT
    (recorded,) = upstream.requests
    assert "x-synopsis-token" not in recorded.headers
    assert_forwarded(sent[0], recorded)


def test_a_history_synopsis_cannot_read_is_a_400(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    narrated: list[Any] = [{"role": "narrator", "content": "Once upon a time"}]
    with openai_client(proxy()) as client, pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=narrated)
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["message"].startswith("synopsis cannot read this history: ")
    assert refused.value.body["type"] == "invalid_request_error"
    assert upstream.requests == []


# -- an upstream that says the request is too long -------------------------------------------------


def long_history(turns: int = 30) -> list[Any]:
    history: list[Any] = []
    for n in range(turns):
        history.append({"role": "user", "content": f"Question {n}: what does step {n} do? " * 4})
        history.append({"role": "assistant", "content": f"Step {n} reads file {n}. " * 12})
    history.append({"role": "user", "content": "And the last step?"})
    return history


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("shape", ["openai", "anthropic", "vllm", "llamacpp"])
def test_an_overflow_is_compacted_harder_and_sent_once_more(
    upstream: FakeLLMServer, proxy: ServeProxy, shape: str, stream: bool
) -> None:
    summarizer = ScriptedSummarizer(default="The user asked about thirty steps.")
    served = proxy(context_window=100_000, summarizer=summarizer)
    upstream.picky = Picky(context_window=1500, overflow=shape)
    history = long_history()
    if shape == "anthropic":
        with anthropic_client(served) as other:
            if stream:
                with other.messages.stream(
                    model="claude-sonnet-4-6", max_tokens=64, messages=history
                ) as streamed:
                    text = "".join(streamed.text_stream)
                    headers = streamed.response.headers
            else:
                raw = other.messages.with_raw_response.create(
                    model="claude-sonnet-4-6", max_tokens=64, messages=history
                )
                text = raw.parse().content[0].text  # type: ignore[union-attr]
                headers = raw.headers
    else:
        with openai_client(served) as client:
            raw_chat = client.chat.completions.with_raw_response.create(
                model="gpt-4o", messages=history, stream=stream
            )
            headers = raw_chat.headers
            parsed = raw_chat.parse()
            if isinstance(parsed, ChatCompletion):
                text = parsed.choices[0].message.content or ""
            else:
                text = "".join(c.choices[0].delta.content or "" for c in parsed if c.choices)
    assert text == TEXT
    assert headers["x-synopsis-retried"] == "overflow"
    assert headers["x-synopsis-compacted"] == "true"
    refused, accepted = upstream.requests
    assert refused.body["messages"] == history
    assert len(accepted.raw) < len(refused.raw)
    assert {k: v for k, v in accepted.body.items() if k != "messages"} == {
        k: v for k, v in refused.body.items() if k != "messages"
    }
    assert accepted.body["messages"][-1] == history[-1]
    assert [holds_summary(m) for m in accepted.body["messages"]].count(True) == 1
    assert len(summarizer.calls) == 1
    before, after = map(int, headers["x-synopsis-tokens"].split("/"))
    assert after < before


def test_an_overflow_is_retried_once_only(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    served = proxy(context_window=100_000, summarizer=ScriptedSummarizer(default="Thirty steps."))
    refusal = {
        "error": {
            "message": "This model's maximum context length is 2000 tokens.",
            "type": "invalid_request_error",
            "param": None,
            "code": "context_length_exceeded",
        }
    }
    for _ in range(2):  # the upstream refuses whatever it gets
        upstream.add(refusal, status=400)
    history = long_history()
    with openai_client(served) as client, pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=history)
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["code"] == "context_length_exceeded"
    assert refused.value.response.headers["x-synopsis-retried"] == "overflow"
    first, second = upstream.requests  # one retry, no more
    assert len(second.raw) < len(first.raw)
    assert [holds_summary(m) for m in second.body["messages"]].count(True) == 1
    assert served.state.compactors.window("gpt-4o", upstream.root) == 2000


def test_an_overflow_that_compaction_cannot_fix_is_relayed(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    served = proxy(context_window=100_000, summarizer=ScriptedSummarizer(default="Thirty steps."))
    upstream.picky = Picky(context_window=1_300)  # less than the system prompt alone
    history = [{"role": "system", "content": "You are a careful agent. " * 250}, *long_history()]
    with openai_client(served) as client, pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=history)
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["code"] == "context_length_exceeded"
    headers = refused.value.response.headers
    assert headers["x-synopsis-failed-open"] == "BudgetUnreachableError"
    assert "x-synopsis-retried" not in headers
    (recorded,) = upstream.requests
    assert recorded.body["messages"] == history


def test_an_overflow_with_nothing_left_to_cut_is_relayed(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    served = proxy(context_window=100_000)
    upstream.picky = Picky(context_window=100)
    messages: list[Any] = [{"role": "user", "content": "Read this. " * 400}]
    with openai_client(served) as client, pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=messages)
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["code"] == "context_length_exceeded"
    # Nothing smaller to send: the refusal as it came, and no second request.
    (recorded,) = upstream.requests
    assert recorded.body["messages"] == messages
    assert "x-synopsis-retried" not in refused.value.response.headers
    assert refused.value.response.headers["x-synopsis-compacted"] == "false"


def test_a_compacted_responses_request_keeps_its_instructions(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    served = proxy(context_window=2000, summarizer=ScriptedSummarizer(default="Thirty steps."))
    history = long_history()
    with openai_client(served) as client:
        raw = client.responses.with_raw_response.create(
            model="gpt-4o", instructions="You answer in one line.", input=history
        )
        assert raw.parse().output_text == TEXT
    assert raw.headers["x-synopsis-compacted"] == "true"
    (recorded,) = upstream.requests
    assert recorded.body["instructions"] == "You answer in one line."
    assert len(recorded.body["input"]) < len(history)
    assert [holds_summary(m) for m in recorded.body["input"]].count(True) == 1


def test_a_compacted_messages_request_keeps_its_system_blocks(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    system: list[Any] = [
        {"type": "text", "text": "You are a careful agent.", "cache_control": {"type": "ephemeral"}}
    ]
    served = proxy(context_window=2000, summarizer=ScriptedSummarizer(default="Thirty steps."))
    history = long_history()
    with anthropic_client(served) as client:
        raw = client.messages.with_raw_response.create(
            model="claude-sonnet-4-6", max_tokens=64, system=system, messages=history
        )
    assert raw.headers["x-synopsis-compacted"] == "true"
    (recorded,) = upstream.requests
    assert recorded.body["system"] == system
    assert recorded.body["messages"][-1] == history[-1]
    assert [holds_summary(m) for m in recorded.body["messages"]].count(True) == 1
    assert validate(recorded.body["messages"], "anthropic", format="anthropic", system=system) == []


@pytest.mark.parametrize("continued", [False, True], ids=["string-input", "stored-response"])
def test_a_responses_history_the_provider_keeps_is_sent_as_it_came(
    upstream: FakeLLMServer, proxy: ServeProxy, continued: bool
) -> None:
    sent: list[httpx2.Request] = []
    served = proxy(context_window=2000, summarizer=ScriptedSummarizer(default="Thirty steps."))
    with openai_client(served, sent) as client:
        if continued:
            raw = client.responses.with_raw_response.create(
                model="gpt-4o", previous_response_id="resp_0", input=long_history()
            )
        else:
            raw = client.responses.with_raw_response.create(
                model="gpt-4o", input="Say hello. " * 2000
            )
        assert raw.parse().output_text == TEXT
    (recorded,) = upstream.requests
    assert_forwarded(sent[0], recorded)  # the very bytes, though far over the window
    assert "x-synopsis-compacted" not in raw.headers
    assert "x-synopsis-session" not in raw.headers


# -- everything else passes through --------------------------------------------------------------


def test_models_and_embeddings_pass_through(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    sent: list[httpx2.Request] = []
    with openai_client(proxy(), sent) as client:
        listed = client.models.list()
        embedded = client.embeddings.create(
            model="text-embedding-3-small", input=["one", "two"], encoding_format="float"
        )
    assert [model.id for model in listed] == ["gpt-test"]
    assert [len(item.embedding) for item in embedded.data] == [8, 8]
    assert embedded.data[0].embedding != embedded.data[1].embedding
    models, embeddings = upstream.requests
    assert (models.method, models.path, models.raw) == ("GET", "/v1/models", b"")
    assert (embeddings.method, embeddings.path) == ("POST", "/v1/embeddings")
    assert embeddings.body == {
        "model": "text-embedding-3-small",
        "input": ["one", "two"],
        "encoding_format": "float",
    }
    assert_forwarded(sent[0], models)
    assert_forwarded(sent[1], embeddings)


def test_health_is_answered_by_the_proxy(upstream: FakeLLMServer, proxy: ServeProxy) -> None:
    with httpx2.Client() as client:
        answered = client.get(f"{proxy().url}/healthz")
    assert (answered.status_code, answered.json()) == (200, {"status": "ok"})
    assert upstream.requests == []


def test_an_upstream_base_ending_in_v1_gets_no_second_v1(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    with openai_client(proxy(upstream_openai=upstream.base_url)) as client:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        client.models.list()
    assert [r.path for r in upstream.requests] == ["/v1/chat/completions", "/v1/models"]


def test_count_tokens_by_the_upstream_or_by_the_proxy(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    counted_upstream = proxy()
    # The upstream at this base has no count_tokens (a 404): the proxy counts itself.
    counted_here = proxy(upstream_anthropic=f"{upstream.root}/elsewhere")
    with anthropic_client(counted_upstream) as client:
        by_upstream = client.messages.count_tokens(
            model="claude-sonnet-4-6", system="Be brief.", messages=TURNS
        )
    with anthropic_client(counted_here) as client:
        raw = client.messages.with_raw_response.count_tokens(
            model="claude-sonnet-4-6", system="Be brief.", messages=TURNS
        )
        by_proxy = raw.parse()
    fake_count = len(json.dumps("Be brief.") + json.dumps(TURNS)) // 4
    assert by_upstream.input_tokens == fake_count
    assert by_proxy.input_tokens == int(raw.headers["x-synopsis-tokens"].split("/")[1]) > 0
    assert [r.path for r in upstream.requests] == [
        "/v1/messages/count_tokens",
        "/elsewhere/v1/messages/count_tokens",
    ]


# -- what the proxy keeps of idle sessions -----------------------------------------------------


def test_the_proxy_keeps_the_prompts_of_its_newest_sessions_only(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    served = proxy(remembered_sessions=2)
    tools: list[Any] = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    with openai_client(served) as client:
        for session in ("first", "second", "first", "third"):
            client.chat.completions.create(
                model="gpt-4o",
                messages=MESSAGES,
                tools=tools,
                extra_headers={"x-synopsis-session": session},
            )
    assert list(served.state.stable) == ["first", "third"]
    assert len(upstream.requests) == 4
