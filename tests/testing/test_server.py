"""The fake OpenAI/Anthropic server: scripted replies, recorded requests, streams, refusals."""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING, Any

import anthropic
import openai
import pytest

from synopsis.testing.server import (
    PATHS,
    Event,
    FakeLLMServer,
    Picky,
    Recorded,
    Reply,
    anthropic_message,
    chat_completion,
    response,
    split,
    stream_events,
)

if TYPE_CHECKING:
    from collections.abc import Callable


def post(
    server: FakeLLMServer, path: str, body: dict[str, Any] | bytes | None = None
) -> tuple[int, bytes]:
    """POST ``body`` (JSON, raw bytes, or nothing at all) and read the whole answer."""
    connection = http.client.HTTPConnection(server.root.removeprefix("http://"), timeout=5)
    try:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        connection.request("POST", path, body=data, headers={"X-Test": "yes"})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def eventually(condition: Callable[[], bool], within: float = 1.0) -> bool:
    """Whether ``condition`` holds within ``within`` seconds (the server notes how a reply
    ended just after its last byte, so a client may read it a moment before)."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def events_of(stream: bytes) -> list[tuple[str | None, Any]]:
    """The server-sent events of a stream: ``(name, data)``, data as JSON when it is."""
    found: list[tuple[str | None, Any]] = []
    for block in stream.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = lines["data"]
        found.append((lines.get("event"), data if data == "[DONE]" else json.loads(data)))
    return found


def test_as_a_context_manager_it_listens_then_stops() -> None:
    server = FakeLLMServer()
    assert repr(server) == "FakeLLMServer(not started, 0 scripted, 0 received)"
    with server:
        assert server.root.startswith("http://127.0.0.1:")
        assert server.base_url == server.root + "/v1"
        server.add(chat_completion("hi"))
        assert repr(server) == f"FakeLLMServer({server.base_url}, 1 scripted, 0 received)"
        status, body = post(server, "/v1/chat/completions?x=1", {"model": "m"})
        assert (status, json.loads(body)) == (200, chat_completion("hi"))
        (recorded,) = server.requests
        assert recorded.path == "/v1/chat/completions"
        assert recorded.body == {"model": "m"}
        assert recorded.headers["x-test"] == "yes"
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url
    server.stop()  # stopping a stopped server is nothing


def test_it_starts_once() -> None:
    with FakeLLMServer() as server, pytest.raises(RuntimeError, match="already started"):
        server.start()


def test_what_it_does_not_serve_is_recorded_and_refused() -> None:
    with FakeLLMServer() as server:
        server.add(anthropic_message("kept for a request it serves"))
        status, body = post(server, "/v1/nothing", {"a": 1})
        assert (status, json.loads(body)["error"]["message"]) == (404, "POST /v1/nothing")
        status, body = post(server, "/v1/messages", b"{not json")
        assert status == 400
        assert json.loads(body)["error"]["type"] == "invalid_request_error"
        status, body = post(server, "/v1/embeddings", b"[1, 2]")
        assert (status, json.loads(body)["error"]["message"]) == (
            400,
            "the body is not a JSON object",
        )
        assert [(r.path, r.body, r.raw) for r in server.requests] == [
            ("/v1/nothing", {"a": 1}, b'{"a": 1}'),
            ("/v1/messages", {}, b"{not json"),
            ("/v1/embeddings", {}, b"[1, 2]"),
        ]
        assert len(server.script) == 1  # none of them took the scripted reply
        assert eventually(lambda: len(server.finished) == 3)
        # Each reply is noted once its handler is done, which may come after the client has
        # its answer and sent the next request: the order between them is not the point.
        assert sorted(server.finished) == ["/v1/embeddings", "/v1/messages", "/v1/nothing"]


def test_past_the_script_a_500_or_the_default() -> None:
    with FakeLLMServer() as server:
        server.add(response("scripted"))
        assert json.loads(post(server, "/v1/responses")[1]) == response("scripted")
        status, body = post(server, "/v1/responses")
        assert status == 500
        assert json.loads(body)["error"]["message"] == "no scripted reply left"
        assert [r.body for r in server.requests] == [{}, {}]  # a POST without a body

    def echo(recorded: Recorded) -> Reply:
        return Reply(anthropic_message(recorded.body["messages"][-1]["content"]))

    with FakeLLMServer(default=echo) as server:
        server.error(529, "overloaded")
        asked = {"model": "claude", "messages": [{"role": "user", "content": "hello"}]}
        status, body = post(server, "/v1/messages", asked)
        assert status == 529
        assert json.loads(body)["error"]["message"] == "overloaded"
        assert json.loads(post(server, "/v1/messages", asked)[1]) == anthropic_message("hello")


def test_the_sdks_talk_to_it() -> None:
    with FakeLLMServer() as server:
        server.add(chat_completion("from chat"))
        server.add(anthropic_message("from messages"))
        with openai.OpenAI(api_key="test", base_url=server.base_url, max_retries=0) as client:
            answer = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )
        assert answer.choices[0].message.content == "from chat"
        with anthropic.Anthropic(api_key="test", base_url=server.root, max_retries=0) as other:
            message = other.messages.create(
                model="claude-haiku-4-5",
                max_tokens=100,
                messages=[{"role": "user", "content": "hi"}],
            )
        assert message.content[0].text == "from messages"  # type: ignore[union-attr]
        assert [r.path for r in server.requests] == ["/v1/chat/completions", "/v1/messages"]
        assert server.requests[0].headers["authorization"] == "Bearer test"


STREAMED = [
    ("/v1/chat/completions", chat_completion("Hello there"), {"include_usage": True}),
    ("/v1/chat/completions", chat_completion("Hello there"), {}),
    ("/v1/responses", response("Hello there"), {}),
    ("/v1/messages", anthropic_message("Hello there"), {}),
]


def _text(path: str, events: list[tuple[str | None, Any]]) -> str:
    if path == "/v1/chat/completions":
        return "".join(
            choice["delta"].get("content") or ""
            for _, data in events
            if data != "[DONE]"
            for choice in data["choices"]
        )
    if path == "/v1/responses":
        return "".join(d["delta"] for name, d in events if name == "response.output_text.delta")
    return "".join(d["delta"]["text"] for name, d in events if name == "content_block_delta")


@pytest.mark.parametrize(("path", "body", "options"), STREAMED)
def test_a_stream_in_each_format_carries_the_scripted_text(
    path: str, body: dict[str, Any], options: dict[str, Any]
) -> None:
    with FakeLLMServer() as server:
        server.add(body, chunk_delay=0.001)
        status, stream = post(server, path, {"stream": True, "stream_options": options})
    assert status == 200
    events = events_of(stream)
    assert _text(path, events) == "Hello there"
    assert [(name, data) for name, data in events] == [
        (event.name, event.data) for event in stream_events(path, body, {"stream_options": options})
    ]
    if options:
        assert events[-2][1]["usage"] == body["usage"]


def test_a_stream_cut_cleanly_ends_early_and_one_cut_otherwise_breaks() -> None:
    with FakeLLMServer() as server:
        server.add(chat_completion("Hello there"), cut_after=1, cut_cleanly=True)
        server.add(chat_completion("Hello there"), cut_after=1)
        status, stream = post(server, "/v1/chat/completions", {"stream": True})
        assert status == 200
        assert _text("/v1/chat/completions", events_of(stream)) == split("Hello there")[0]
        with pytest.raises(http.client.IncompleteRead):
            post(server, "/v1/chat/completions", {"stream": True})


def test_a_rewrite_edits_the_events_and_an_error_status_is_not_streamed() -> None:
    error = Event("error", {"type": "error", "error": {"type": "overloaded_error"}})
    with FakeLLMServer() as server:
        server.add(anthropic_message("hi"), rewrite=lambda events: [*events[:2], error])
        server.error(429, "slow down")
        _, stream = post(server, "/v1/messages", {"stream": True})
        assert [name for name, _ in events_of(stream)] == ["message_start", "ping", "error"]
        status, body = post(server, "/v1/messages", {"stream": True})
        assert (status, json.loads(body)["error"]["message"]) == (429, "slow down")


def handlers_end(before: set[threading.Thread], within: float = 2.0) -> bool:
    """Whether every request thread started since ``before`` ends within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any("process_request" in t.name for t in threading.enumerate() if t not in before):
            return True
        time.sleep(0.01)
    return False


def test_a_delayed_reply_gives_up_when_the_client_resets_the_connection() -> None:
    before = set(threading.enumerate())
    with FakeLLMServer() as server:
        server.add(chat_completion("late"), delay=5)
        host, port = server.root.removeprefix("http://").split(":")
        body = b'{"model": "m"}'
        with socket.create_connection((host, int(port))) as raw:
            raw.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            while not server.requests:  # the reply's delay has begun
                time.sleep(0.005)
            # Close with a reset, not a goodbye: the waiting reply must notice and give up.
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        assert handlers_end(before)  # long before the 5 seconds are up
        assert (server.hangups, server.finished) == (["/v1/chat/completions"], [])


def test_a_paced_stream_stops_when_the_client_hangs_up() -> None:
    before = set(threading.enumerate())
    with FakeLLMServer() as server:
        server.add(response("Hello there"), chunk_delay=5)
        connection = http.client.HTTPConnection(server.root.removeprefix("http://"), timeout=5)
        connection.request("POST", "/v1/responses", body=b'{"stream": true}')
        assert connection.getresponse().status == 200  # the headers, then a long pause
        connection.close()
        assert handlers_end(before)
        assert (server.hangups, server.finished) == (["/v1/responses"], [])


@pytest.mark.parametrize(
    ("picky", "body", "status", "says"),
    [
        (Picky(json_mode=True), {"response_format": {"type": "json_object"}}, 400, "supported"),
        (
            Picky(json_schema=True),
            {"text": {"format": {"type": "json_schema", "schema": {}}}},
            500,
            "Input should be 'text' or 'json_object'",
        ),
        (
            Picky(schema_in_json_mode=True),
            {"response_format": {"type": "json_object", "schema": {}}},
            422,
            "Extra inputs are not permitted",
        ),
        (
            Picky(null_content=True),
            {
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": None},
                ]
            },
            500,
            "5 validation errors",
        ),
        (
            Picky(alternation=True),
            {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]},
            500,
            "Conversation roles must alternate",
        ),
        (
            Picky(context_window=10),
            {"messages": [{"role": "user", "content": "x" * 100}]},
            400,
            "maximum context length is 10 tokens",
        ),
        (
            Picky(context_window=30, counts_answer=True),
            {"messages": [{"role": "user", "content": "x" * 50}], "max_tokens": 20},
            400,
            "maximum context length is 30 tokens",
        ),
    ],
)
def test_a_picky_server_refuses_what_servers_of_local_models_refuse(
    picky: Picky, body: dict[str, Any], status: int, says: str
) -> None:
    with FakeLLMServer(picky=picky) as server:
        server.add(chat_completion("never sent"))
        got, answer = post(server, "/v1/chat/completions", body)
        assert got == status
        assert says in json.loads(answer)["error"]["message"]
        assert len(server.requests) == 1
        assert len(server.script) == 1  # a refusal takes no scripted reply


def test_a_picky_server_serves_what_it_accepts() -> None:
    picky = Picky(json_schema=True, schema_in_json_mode=True, context_window=1_000)
    fine = {
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_object"},
        "max_tokens": 5_000,  # counted only with counts_answer
    }
    with FakeLLMServer(picky=picky) as server:
        server.add(chat_completion("ok"))
        assert post(server, "/v1/chat/completions", fine)[0] == 200


def test_answer_bodies_without_usage() -> None:
    assert "usage" not in chat_completion("hi", usage=False)
    assert "usage" not in response("hi", usage=False)
    assert chat_completion("hi", model="local")["model"] == "local"
    assert anthropic_message("hi")["usage"]["input_tokens"] == 800


def test_split_and_the_endpoints() -> None:
    assert split("") == []
    assert split("abcdefg") == ["abc", "def", "g"]
    assert split("ab", pieces=5) == ["a", "b"]
    assert sorted(PATHS) == ["/v1/chat/completions", "/v1/messages", "/v1/responses"]
    assert Event(None, "[DONE]").encode() == b"data: [DONE]\n\n"
    assert Event("ping", {"type": "ping"}).encode() == b'event: ping\ndata: {"type": "ping"}\n\n'
