"""The fake server as the upstream of a proxy: every route recorded, overflow refusals in each
server's shape, how each reply ended, and waiting for requests from another thread."""

from __future__ import annotations

import base64
import http.client
import itertools
import json
import socket
import struct
import threading
import time
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from synopsis.testing.server import (
    FakeLLMServer,
    Picky,
    Recorded,
    anthropic_message,
    chat_completion,
    response,
    split,
)
from tests.testing.test_server import events_of, eventually, post


def tokens(*parts: object) -> int:
    """The server's count: the characters of each part's JSON, over 4."""
    return sum(len(json.dumps(part)) for part in parts) // 4


def raw_request(server: FakeLLMServer, request: bytes) -> bytes:
    """Send ``request`` as it is and read the whole answer (the server closes after it)."""
    host, port = server.root.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        raw.sendall(request)
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    return answer


# -- overflow refusals ---------------------------------------------------------------------------


def test_an_overflow_is_refused_in_the_shape_of_each_server() -> None:
    messages = [{"role": "user", "content": "x" * 400}]
    used = tokens(messages)
    expected: dict[str, dict[str, Any]] = {
        "openai": {
            "error": {
                "message": (
                    f"This model's maximum context length is 50 tokens. However, you requested "
                    f"{used} tokens ({used} in the messages, None in the completion). Please "
                    "reduce the length of the messages or completion."
                ),
                "type": "invalid_request_error",
                "param": None,
                "code": "context_length_exceeded",
            }
        },
        "anthropic": {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {used} tokens > 50 maximum",
            },
        },
        "vllm": {
            "object": "error",
            "message": (
                f"This model's maximum context length is 50 tokens. However, you requested "
                f"{used} tokens ({used} in the messages, 0 in the completion). Please reduce "
                "the length of the messages or completion."
            ),
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        "llamacpp": {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": used,
                "n_ctx": 50,
            }
        },
    }
    assert used > 50
    for shape, body in expected.items():
        with FakeLLMServer(picky=Picky(context_window=50, overflow=shape)) as server:
            status, answer = post(server, "/v1/chat/completions", {"messages": messages})
        assert (status, json.loads(answer)) == (400, body), shape


def test_an_unknown_overflow_shape_is_refused() -> None:
    with pytest.raises(ValueError, match=r"overflow must be one of .* not 'tgi'"):
        Picky(overflow="tgi")


@pytest.mark.parametrize(
    "system",
    ["s" * 400, [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral"}}]],
)
def test_an_anthropic_system_counts_in_the_window(system: Any) -> None:
    messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hi"}]
    used = tokens(system, messages)
    assert tokens(messages) < 50 < used
    picky = Picky(context_window=50, overflow="anthropic")
    with (
        FakeLLMServer(picky=picky) as server,
        anthropic.Anthropic(api_key="k", base_url=server.root, max_retries=0) as client,
        pytest.raises(anthropic.BadRequestError) as refused,
    ):
        client.messages.create(model="claude-test", max_tokens=10, system=system, messages=messages)
    assert refused.value.status_code == 400
    assert refused.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {used} tokens > 50 maximum",
        },
    }


def test_when_only_the_answer_overflows_anthropic_says_so() -> None:
    messages = [{"role": "user", "content": "hi"}]
    used = tokens(messages)
    picky = Picky(context_window=50, counts_answer=True, overflow="anthropic")
    with FakeLLMServer(picky=picky) as server:
        status, answer = post(server, "/v1/messages", {"messages": messages, "max_tokens": 100})
    assert status == 400
    assert json.loads(answer)["error"]["message"] == (
        f"input length and `max_tokens` exceed context limit: {used} + 100 > 50, "
        "decrease input length or `max_tokens` and try again"
    )


def test_vllm_counts_the_answer_in_what_was_requested() -> None:
    messages = [{"role": "user", "content": "hi"}]
    used = tokens(messages)
    picky = Picky(context_window=50, counts_answer=True, overflow="vllm")
    with (
        FakeLLMServer(picky=picky) as server,
        openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0) as client,
        pytest.raises(openai.BadRequestError) as refused,
    ):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=100
        )
    assert refused.value.response.json()["message"].startswith(
        f"This model's maximum context length is 50 tokens. However, you requested "
        f"{used + 100} tokens ({used} in the messages, 100 in the completion)."
    )


def test_a_responses_input_and_instructions_count_in_the_window() -> None:
    picky = Picky(context_window=50, overflow="llamacpp")
    with (
        FakeLLMServer(picky=picky) as server,
        openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0) as client,
    ):
        server.add(response("fits"))
        assert client.responses.create(model="m", input="hi").output_text == "fits"
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(model="m", input="hi", instructions="i" * 400)
        with pytest.raises(openai.BadRequestError) as too_long:
            client.responses.create(model="m", input=[{"role": "user", "content": "i" * 400}])
    assert refused.value.response.json()["error"]["n_prompt_tokens"] == tokens("i" * 400, "hi")
    assert too_long.value.response.json()["error"]["n_prompt_tokens"] == tokens(
        [{"role": "user", "content": "i" * 400}]
    )


# -- the routes that answer by themselves ------------------------------------------------------


def test_the_models_list_and_every_get_is_recorded() -> None:
    with (
        FakeLLMServer() as server,
        openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0) as client,
    ):
        listed = client.models.list(extra_query={"limit": "5", "after": "a b"})
        assert [model.id for model in listed] == ["gpt-test"]
        (recorded,) = server.requests
    assert (recorded.method, recorded.path, recorded.body, recorded.raw) == (
        "GET",
        "/v1/models",
        {},
        b"",
    )
    assert recorded.query == "limit=5&after=a+b"
    assert recorded.headers["authorization"] == "Bearer k"


def test_any_other_method_or_path_is_recorded_and_not_found() -> None:
    with FakeLLMServer() as server:
        server.add(chat_completion("kept"))
        for method, path in [
            ("DELETE", "/v1/models"),
            ("PUT", "/v1/x?y=1"),
            ("GET", "/v1/chat/completions"),
        ]:
            connection = http.client.HTTPConnection(server.root.removeprefix("http://"), timeout=5)
            try:
                connection.request(method, path)
                answer = connection.getresponse()
                assert answer.status == 404
                assert json.loads(answer.read())["error"]["message"].startswith(method)
            finally:
                connection.close()
        assert [(r.method, r.path, r.query) for r in server.requests] == [
            ("DELETE", "/v1/models", ""),
            ("PUT", "/v1/x", "y=1"),
            ("GET", "/v1/chat/completions", ""),
        ]
        assert len(server.script) == 1  # none of them takes a scripted reply


def test_embeddings_one_vector_per_input_as_floats_or_base64() -> None:
    texts = ["first text", "second text", "first text"]
    with (
        FakeLLMServer() as server,
        openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0) as client,
    ):
        default = client.embeddings.create(model="text-embedding-3-small", input=texts)
        floats = client.embeddings.create(
            model="text-embedding-3-small", input=texts, encoding_format="float"
        )
        small = client.embeddings.create(model="e", input="one", dimensions=40)
        token_ids = client.embeddings.create(model="e", input=[1, 2, 3])
    assert server.requests[0].body["encoding_format"] == "base64"  # the SDK's own default
    vectors = [item.embedding for item in default.data]
    assert vectors == [item.embedding for item in floats.data]
    assert [item.index for item in default.data] == [0, 1, 2]
    assert [len(vector) for vector in vectors] == [8, 8, 8]
    assert vectors[0] == vectors[2] != vectors[1]  # the same text, the same vector
    assert all(0 <= value < 1 for value in vectors[0])
    assert default.model == "text-embedding-3-small"
    assert default.usage.prompt_tokens == default.usage.total_tokens == tokens(texts)
    assert len(small.data[0].embedding) == 40
    assert len(token_ids.data) == 1  # one list of token ids is one input


def test_embeddings_raw_bodies() -> None:
    with FakeLLMServer() as server:
        status, answer = post(server, "/v1/embeddings", {"input": "x", "encoding_format": "base64"})
        body = json.loads(answer)
        assert status == 200
        assert body["model"] == "text-embedding-test"
        packed = base64.b64decode(body["data"][0]["embedding"])
        assert len(struct.unpack("<8f", packed)) == 8
        empty = json.loads(post(server, "/v1/embeddings", {"input": []})[1])
        assert empty["data"] == []


def test_count_tokens_gives_the_count_the_window_is_held_to() -> None:
    system = "You summarize."
    messages: list[anthropic.types.MessageParam] = [
        {"role": "user", "content": "Tell me about the river walk, please."}
    ]
    with (
        FakeLLMServer() as server,
        anthropic.Anthropic(api_key="k", base_url=server.root, max_retries=0) as client,
    ):
        counted = client.messages.count_tokens(
            model="claude-test",
            system=system,
            messages=messages,
        ).input_tokens
        assert counted == tokens(system, messages)
        assert server.requests[0].path == "/v1/messages/count_tokens"
        asked = {"system": system, "messages": messages, "max_tokens": 10}
        server.picky = Picky(context_window=counted, overflow="anthropic")
        server.add(anthropic_message("fits"))
        assert post(server, "/v1/messages", asked)[0] == 200
        server.picky = Picky(context_window=counted - 1, overflow="anthropic")
        status, answer = post(server, "/v1/messages", asked)
    assert status == 400
    assert json.loads(answer)["error"]["message"] == (
        f"prompt is too long: {counted} tokens > {counted - 1} maximum"
    )


def test_a_chunked_request_body_is_read_whole() -> None:
    with FakeLLMServer() as server:
        server.add(chat_completion("streamed up"))
        connection = http.client.HTTPConnection(server.root.removeprefix("http://"), timeout=5)
        try:
            pieces = [b'{"model": ', b'"m", "messages": ', b"[]}"]
            connection.request(
                "POST", "/v1/chat/completions", body=iter(pieces), encode_chunked=True
            )
            answer = connection.getresponse()
            assert (answer.status, json.loads(answer.read())) == (
                200,
                chat_completion("streamed up"),
            )
        finally:
            connection.close()
        # A chunk extension and a trailer, which a client may send and the body does not keep.
        whole = raw_request(
            server,
            b"POST /v1/messages/count_tokens HTTP/1.1\r\nHost: x\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
            b'6;name=value\r\n{"a": \r\n2\r\n1}\r\n0\r\nX-Trailer: yes\r\n\r\n',
        )
        assert whole.startswith(b"HTTP/1.1 200")
        assert [r.raw for r in server.requests] == [b"".join(pieces), b'{"a": 1}']
        assert server.requests[1].headers["transfer-encoding"] == "chunked"


# -- how each reply ended ------------------------------------------------------------------------


def fifty_events(events: list[Any]) -> list[Any]:
    """A chat stream of fifty events: the role, 47 deltas, the finish and ``[DONE]``."""
    return [events[0], *[events[1]] * 47, *events[-2:]]


def test_a_client_that_leaves_a_stream_is_a_hangup() -> None:
    with FakeLLMServer() as server:
        server.add(chat_completion("Hello there"), chunk_delay=0.05, rewrite=fifty_events)
        with (
            httpx2.Client(timeout=5) as client,
            client.stream(
                "POST", server.base_url + "/chat/completions", json={"stream": True}
            ) as answer,
        ):
            read = list(itertools.islice(answer.iter_lines(), 4))
        assert [line[:6] for line in read] == ["data: ", "", "data: ", ""]  # two events
        assert eventually(lambda: bool(server.hangups), within=1.0)
        assert (server.hangups, server.finished) == (["/v1/chat/completions"], [])


def test_a_stream_read_to_its_end_is_finished() -> None:
    with FakeLLMServer() as server:
        server.add(chat_completion("Hello there"), chunk_delay=0.002, rewrite=fifty_events)
        status, stream = post(server, "/v1/chat/completions", {"stream": True})
        assert status == 200
        assert len(events_of(stream)) == 50
        assert eventually(lambda: bool(server.finished))
        assert (server.finished, server.hangups) == (["/v1/chat/completions"], [])


def test_a_cut_stream_is_in_neither_list_and_a_clean_cut_is_finished() -> None:
    with FakeLLMServer() as server:
        server.add(anthropic_message("Hello there"), cut_after=1)
        server.add(anthropic_message("Hello there"), cut_after=1, cut_cleanly=True)
        with pytest.raises(http.client.IncompleteRead):
            post(server, "/v1/messages", {"stream": True})
        status, stream = post(server, "/v1/messages", {"stream": True})
        assert status == 200
        assert (
            "".join(
                d["delta"]["text"] for name, d in events_of(stream) if name == "content_block_delta"
            )
            == split("Hello there")[0]
        )
        assert eventually(lambda: bool(server.finished))
        assert (server.finished, server.hangups) == (["/v1/messages"], [])


def test_a_client_that_resets_under_a_long_write_is_a_hangup() -> None:
    # Far more than the socket buffers hold: the write blocks until the reset breaks it.
    with FakeLLMServer() as server:
        server.add(chat_completion("x" * 16_000_000))
        host, port = server.root.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as raw:
            raw.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
            )
            server.wait_for(1)
            assert raw.recv(12) == b"HTTP/1.1 200"
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        assert eventually(lambda: bool(server.hangups), within=5.0)
        assert (server.hangups, server.finished) == (["/v1/chat/completions"], [])


# -- waiting for requests ------------------------------------------------------------------------


def test_wait_for_blocks_until_the_requests_come() -> None:
    with FakeLLMServer() as server:
        server.add(chat_completion("one"))
        server.add(chat_completion("two"))

        def later() -> None:
            for _ in range(2):
                time.sleep(0.05)
                post(server, "/v1/chat/completions", {"model": "m"})

        sender = threading.Thread(target=later)
        sender.start()
        try:
            got = server.wait_for(2, timeout=5)
        finally:
            sender.join()
        assert [r.body for r in got] == [{"model": "m"}, {"model": "m"}]
        assert all(isinstance(r, Recorded) for r in got)
        assert server.wait_for(1, timeout=0) == got  # enough already: no wait
        got.clear()
        assert len(server.requests) == 2  # a copy


def test_wait_for_says_how_many_came_when_it_times_out() -> None:
    with FakeLLMServer() as server:
        post(server, "/v1/models")
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"^1 of 3 requests received in 0.1 seconds$"):
            server.wait_for(3, timeout=0.1)
        assert time.monotonic() - started >= 0.1


# -- usage in streams ----------------------------------------------------------------------------


def test_every_stream_carries_its_usage_to_the_sdks() -> None:
    with FakeLLMServer() as server:
        server.add(chat_completion("chat"))
        server.add(response("responses"))
        server.add(anthropic_message("messages"))
        with openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0) as client:
            chunks = list(
                client.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": "hi"}],
                    stream=True,
                    stream_options={"include_usage": True},
                )
            )
            events = list(client.responses.create(model="m", input="hi", stream=True))
        with (
            anthropic.Anthropic(api_key="k", base_url=server.root, max_retries=0) as other,
            other.messages.stream(
                model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            ) as stream,
        ):
            raw_events = list(stream)
            final = stream.get_final_message()
    usage = chunks[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (900, 80)
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 100
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.usage is not None
    assert (completed.response.usage.input_tokens, completed.response.usage.output_tokens) == (
        900,
        80,
    )
    started = next(e for e in raw_events if e.type == "message_start")
    assert started.message.usage.input_tokens == 800
    assert started.message.usage.cache_read_input_tokens == 100
    delta = next(e for e in raw_events if e.type == "message_delta")
    assert delta.usage.output_tokens == 80
    assert (final.usage.input_tokens, final.usage.output_tokens) == (800, 80)
