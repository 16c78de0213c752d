"""Hostile requests on every route: bodies of every wrong type at every level, nesting past
what a JSON library writes, bytes that are not UTF-8, headers outside ASCII, integers past 64
bits, and paths that try to leave the upstream's base path.

The property throughout: an answer is the upstream's (and the upstream got the request), or an
error in the route's own JSON shape with a status of 400 or more, counted in the metrics and
logged; never plain text, never a server traceback. Each proxy runs on a real uvicorn in front
of a fake upstream that records every request as it came.
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from typing import TYPE_CHECKING, Any

import httpx2
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route as Endpoint

from synopsis.proxy import create_app
from synopsis.testing import FixedCounter, conversation
from synopsis.testing.server import chat_completion
from tests.proxy.hostile import (
    CHAT,
    COUNT,
    MESSAGES,
    RESPONSES,
    SHAPES,
    Rig,
    assert_shaped,
    assert_upstreams_or_shaped,
    request,
    rigged,
    send_raw,
    served_with,
)
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from collections.abc import Iterator

    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import Message

COMPACTING: dict[str, Any] = {"context_window": 10_000, "counter": FixedCounter(per_message=100)}
HISTORY = conversation(turns=24)
"""97 messages, over the trigger of a 10,000-token window at 100 tokens a message."""
TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
CHAT_BODY: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        {"role": "user", "content": [{"type": "text", "text": "and?"}]},
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
}
RESPONSES_BODY: dict[str, Any] = {
    "model": "gpt-4o",
    "instructions": "Be brief.",
    "input": [
        {"role": "user", "content": "hello"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "42"},
        {"role": "user", "content": [{"type": "input_text", "text": "and?"}]},
    ],
    "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
}
MESSAGES_BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "system": [{"type": "text", "text": "Be brief."}],
    "messages": [
        {"role": "user", "content": "hello"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"q": 1}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "42"}],
        },
    ],
    "tools": [{"name": "f", "input_schema": {"type": "object"}}],
}
BODIES = {CHAT: CHAT_BODY, RESPONSES: RESPONSES_BODY, MESSAGES: MESSAGES_BODY, COUNT: MESSAGES_BODY}
LONG = {CHAT: {"model": "gpt-4o", "messages": HISTORY, "tools": CHAT_BODY["tools"]}}
"""A body whose history is compacted: what is wrong in it reaches the compaction too."""

# Where each route's body keeps something a client could get wrong.
PLACES: dict[str, list[tuple[Any, ...]]] = {
    CHAT: [
        (),
        ("model",),
        ("messages",),
        ("messages", 0),
        ("messages", 1),
        ("messages", 0, "role"),
        ("messages", 1, "content"),
        ("messages", 4, "content"),
        ("messages", 4, "content", 0),
        ("messages", 2, "tool_calls"),
        ("messages", 2, "tool_calls", 0),
        ("messages", 2, "tool_calls", 0, "function"),
        ("messages", 3, "tool_call_id"),
        ("tools",),
        ("tools", 0),
        ("tools", 0, "function"),
        ("tools", 0, "function", "name"),
        ("stream",),
    ],
    RESPONSES: [
        (),
        ("model",),
        ("input",),
        ("input", 0),
        ("input", 0, "content"),
        ("input", 1),
        ("input", 1, "arguments"),
        ("input", 2, "output"),
        ("input", 3, "content", 0),
        ("instructions",),
        ("tools",),
        ("tools", 0),
        ("tools", 0, "name"),
        ("previous_response_id",),
    ],
    MESSAGES: [
        (),
        ("model",),
        ("system",),
        ("system", 0),
        ("messages",),
        ("messages", 0),
        ("messages", 0, "content"),
        ("messages", 1, "content"),
        ("messages", 1, "content", 0),
        ("messages", 1, "content", 0, "input"),
        ("messages", 2, "content", 0, "content"),
        ("tools",),
        ("tools", 0),
        ("tools", 0, "name"),
        ("max_tokens",),
    ],
}
PLACES[COUNT] = PLACES[MESSAGES]
LONG_PLACES = [
    ("messages", 5), ("messages", 5, "content"), ("messages", 40, "role"),
    ("messages", 60), ("messages", 96, "content"), ("tools", 0, "function"),
]  # fmt: skip

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)


def replaced(body: Any, place: tuple[Any, ...], value: Any) -> Any:
    """``body`` with what is at ``place`` replaced by ``value``."""
    if not place:
        return value
    out = copy.deepcopy(body)
    parent = out
    for key in place[:-1]:
        parent = parent[key]
    parent[place[-1]] = value
    return out


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with rigged(**COMPACTING) as made:
        yield made


@pytest.fixture(scope="module")
def closed() -> Iterator[Rig]:
    """A proxy that fails closed: a compaction that fails is an error, not a forward."""
    with rigged(fail_open=False, **COMPACTING) as made:
        yield made


def _post(rig: Rig, path: str, data: bytes, headers: dict[str, str] | None = None) -> None:
    """``data`` posted to ``path``: the answer has the property."""
    before, errors = len(rig.fake.requests), rig.errors()
    sent = {"content-type": "application/json", **(headers or {})}
    with httpx2.Client(base_url=rig.served.url, timeout=30) as client:
        answer = client.post(path, content=data, headers=sent)
    assert_upstreams_or_shaped(rig, SHAPES[path], answer, before, errors)


@given(route=st.sampled_from(sorted(PLACES)), data=st.data(), value=JSON)
def test_a_wrong_type_anywhere_in_a_body_is_the_upstreams_or_an_error_in_shape(
    rig: Rig, closed: Rig, route: str, data: st.DataObject, value: object
) -> None:
    place = data.draw(st.sampled_from(PLACES[route]))
    body = json.dumps(replaced(BODIES[route], place, value)).encode()
    _post(rig, route, body)
    _post(closed, route, body)


@given(place=st.sampled_from(LONG_PLACES), value=JSON)
def test_a_wrong_type_in_a_history_that_is_compacted_is_the_upstreams_or_an_error_in_shape(
    rig: Rig, closed: Rig, place: tuple[Any, ...], value: object
) -> None:
    body = json.dumps(replaced(LONG[CHAT], place, value)).encode()
    _post(rig, CHAT, body)
    _post(closed, CHAT, body)


@given(route=st.sampled_from([*sorted(PLACES), "/v1/models"]), data=st.binary(max_size=64))
def test_any_bytes_as_a_body_are_the_upstreams_or_an_error_in_shape(
    rig: Rig, route: str, data: bytes
) -> None:
    _post(rig, route, data) if route in SHAPES else _post_other(rig, route, data)


def _post_other(rig: Rig, path: str, data: bytes) -> None:
    before, errors = len(rig.fake.requests), rig.errors()
    with httpx2.Client(base_url=rig.served.url, timeout=30) as client:
        answer = client.post(path, content=data)
    assert_upstreams_or_shaped(rig, "openai", answer, before, errors)
    assert len(rig.fake.requests) == before + 1  # relayed untouched, whatever it holds


@pytest.mark.parametrize("route", sorted(PLACES))
@pytest.mark.parametrize("value", ["f", ["f"], 7, 1.5, True])
def test_a_tool_whose_function_is_not_an_object_reaches_the_upstream(
    rig: Rig, route: str, value: object
) -> None:
    """Before: a plain-text 500 (the session's key read ``function.name`` of a string)."""
    body = {**BODIES[route], "tools": [{"type": "function", "function": value}]}
    before = len(rig.fake.requests)
    with httpx2.Client(base_url=rig.served.url, timeout=30) as client:
        answer = client.post(route, json=body)
    assert answer.status_code == 200
    assert len(rig.fake.requests) == before + 1


@pytest.mark.parametrize("route", sorted(PLACES))
@pytest.mark.parametrize("role", [[], ["system"], {}, {"role": "user"}])
def test_a_role_that_is_not_a_string_is_the_upstreams_or_an_error_in_shape(
    rig: Rig, route: str, role: object
) -> None:
    """Before: a 500 (the session's key asked whether an unhashable role was a system one)."""
    items = "input" if route == RESPONSES else "messages"
    _post(rig, route, json.dumps(replaced(BODIES[route], (items, 0, "role"), role)).encode())


# -- nesting -----------------------------------------------------------------------------------


def with_nested(body: dict[str, Any], depth: int, place: tuple[Any, ...]) -> bytes:
    """``body``'s JSON with a list nested ``depth`` deep at ``place`` (written by hand: no
    JSON library here writes it)."""
    mark = "@nested@"
    text = json.dumps(replaced(body, place, mark)).encode()
    return text.replace(b'"' + mark.encode() + b'"', b"[" * depth + b'"core"' + b"]" * depth)


def posted(rig: Rig, path: str, raw: bytes) -> httpx2.Response:
    """``raw`` posted to ``path`` in a session of its own."""
    headers = {"content-type": "application/json", "x-synopsis-session": uuid.uuid4().hex}
    with httpx2.Client(base_url=rig.served.url, timeout=30) as client:
        return client.post(path, content=raw, headers=headers)


@pytest.mark.parametrize("depth", [253, 300, 600])
def test_a_compacted_body_nested_deeper_than_orjson_writes_goes_on_whole(
    rig: Rig, depth: int
) -> None:
    """Before: a plain-text 500 (orjson reads 1,024 levels but writes 254)."""
    raw = with_nested({**LONG[CHAT], "metadata": {"deep": None}}, depth, ("metadata", "deep"))
    answer = posted(rig, CHAT, raw)
    assert answer.status_code == 200
    assert answer.headers["x-synopsis-compacted"] == "true"
    sent = rig.fake.requests[-1]
    assert json.loads(sent.raw)["metadata"] == json.loads(raw)["metadata"]
    assert len(sent.body["messages"]) < len(HISTORY)


@pytest.mark.parametrize("route", sorted(PLACES))
@pytest.mark.parametrize("depth", [253, 300, 1000, 1023])
def test_a_history_nested_deep_anywhere_is_the_upstreams_or_an_error_in_shape(
    rig: Rig, route: str, depth: int
) -> None:
    """Before: a plain-text 500 from the session's key, which writes the opening again."""
    items = "input" if route == RESPONSES else "messages"
    _post(rig, route, with_nested(BODIES[route], depth, (items, 0, "content")))
    _post(rig, route, with_nested(BODIES[route], depth, ("tools",)))
    # Nested as deep as orjson reads at all, and deeper.
    _post(rig, route, b'{"model":"m","messages":' + b"[" * depth + b"]" * depth + b"}")
    _post(rig, route, b"[" * 1025 + b"]" * 1025)


@pytest.mark.parametrize("route", sorted(PLACES))
def test_a_conversation_opening_nested_deeper_than_orjson_writes_reaches_the_upstream(
    rig: Rig, route: str
) -> None:
    """Before: a plain-text 500 from the session's key, which writes the opening again."""
    items = "input" if route == RESPONSES else "messages"
    body = copy.deepcopy(BODIES[route])
    body[items][0]["metadata"] = None
    raw = with_nested(body, 300, (items, 0, "metadata"))
    before = len(rig.fake.requests)
    with httpx2.Client(base_url=rig.served.url, timeout=30) as client:
        answer = client.post(route, content=raw)  # no session named: the proxy names it
    assert answer.status_code == 200
    assert answer.headers["x-synopsis-session"].startswith("auto:")
    (sent,) = rig.fake.requests[before:]
    assert json.loads(sent.raw)[items][0] == json.loads(raw)[items][0]


def test_a_body_nested_past_pythons_own_limit_is_refused_in_shape(rig: Rig) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": None}]}
    raw = with_nested(body, 1000, ("messages", 0, "content"))
    with httpx2.Client(base_url=rig.served.url, timeout=30) as client:
        answer = client.post(CHAT, content=raw)  # no session named: the proxy names it
    error = assert_shaped("openai", answer.status_code, answer.content)
    assert answer.status_code == 400
    assert "nested too deeply" in error["message"]


def test_a_compacted_body_too_deep_to_write_goes_on_as_the_client_sent_it() -> None:
    received: list[bytes] = []

    async def upstream(request: Request) -> Response:
        received.append(await request.body())  # kept as bytes: Python could not read it
        return JSONResponse(chat_completion("ok"))

    app = Starlette(routes=[Endpoint("/v1/chat/completions", upstream, methods=["POST"])])
    with served_with(app) as port:
        proxy = create_app(upstream_openai=f"http://127.0.0.1:{port}", environ={}, **COMPACTING)
        with Served(proxy) as served, httpx2.Client(base_url=served.url, timeout=30) as client:
            raw = with_nested({**LONG[CHAT], "metadata": None}, 1020, ("metadata",))
            answer = client.post(CHAT, content=raw)
    assert answer.status_code == 200
    assert answer.headers["x-synopsis-failed-open"] == "RecursionError"
    assert "x-synopsis-compacted" not in answer.headers
    assert received == [raw]


# -- integers past 64 bits ---------------------------------------------------------------------


def test_integers_past_64_bits_go_on_exact_in_a_compacted_body(rig: Rig) -> None:
    """Before: ``"seed": 123456789012345678901234567890`` went on as ``1.2345678901234568e+29``
    (orjson reads such an integer as a float)."""
    seed, own = 123456789012345678901234567890, -9223372036854775809
    messages = [*HISTORY[:-1], {**HISTORY[-1], "x-id": own}]
    raw = json.dumps({"model": "gpt-4o", "messages": messages, "seed": seed}).encode()
    answer = posted(rig, CHAT, raw)
    assert answer.status_code == 200
    assert answer.headers["x-synopsis-compacted"] == "true"
    sent = json.loads(rig.fake.requests[-1].raw)
    assert sent["seed"] == seed
    assert sent["messages"][-1]["x-id"] == own  # a message kept as it came
    assert len(sent["messages"]) < len(messages)
    assert b"123456789012345678901234567890" in rig.fake.requests[-1].raw


def test_a_long_run_of_digits_in_a_string_changes_nothing_in_a_compacted_body(rig: Rig) -> None:
    digits = "1" * 40
    body = {**LONG[CHAT], "user": digits, "temperature": 0.25}
    answer = posted(rig, CHAT, json.dumps(body).encode())
    assert answer.headers["x-synopsis-compacted"] == "true"
    sent = json.loads(rig.fake.requests[-1].raw)
    assert (sent["user"], sent["temperature"]) == (digits, 0.25)


def test_a_compacted_anthropic_body_keeps_its_system_prompt_and_exact_integers(rig: Rig) -> None:
    from tests.proxy.test_faults import LONG as FAULT_LONG  # noqa: PLC0415

    body = {**FAULT_LONG[MESSAGES], "metadata": {"n": 2**70}}
    session = {"x-synopsis-session": uuid.uuid4().hex}
    with httpx2.Client(base_url=rig.served.url, timeout=30, headers=session) as client:
        answer = client.post(MESSAGES, content=json.dumps(body).encode())
        assert answer.headers["x-synopsis-compacted"] == "true"
        # The session's next request: its system prompt comes from the compaction's memo.
        turn = [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
        body = {**body, "messages": [*body["messages"], *turn]}
        again = client.post(MESSAGES, content=json.dumps(body).encode())
    assert again.status_code == 200
    assert int(again.headers["x-synopsis-tokens"].split("/")[1]) < len(body["messages"]) * 100
    sent = json.loads(rig.fake.requests[-1].raw)
    assert sent["metadata"]["n"] == 2**70
    assert sent["system"] == body["system"]
    assert sent["messages"][-2:] == turn


# -- headers and bytes -------------------------------------------------------------------------


@pytest.mark.parametrize("route", [*sorted(PLACES), "/v1/models"])
def test_a_header_outside_ascii_reaches_the_upstream_as_its_bytes(rig: Rig, route: str) -> None:
    """Before: a plain-text 500 (the upstream client encodes header values as ASCII)."""
    value = "caf\u00e9 \u2603".encode()
    method = "GET" if route == "/v1/models" else "POST"
    body = orjson.dumps(BODIES.get(route, {}))
    raw = request(method, route, body if method == "POST" else b"", {b"x-note": value})
    before = len(rig.fake.requests)
    answer = send_raw(rig.port, raw)
    assert answer.status == 200
    (sent,) = rig.fake.requests[before:]
    assert sent.headers["x-note"].encode("latin-1") == value


FIELD = [9, 32, *range(0x21, 0x7F), *range(0x80, 0x100)]
"""What HTTP/1.1 lets a header's value hold (the server refuses the rest as not HTTP)."""


@given(value=st.lists(st.sampled_from(FIELD), min_size=1, max_size=16).map(bytes))
def test_any_header_bytes_are_the_upstreams_or_an_error_in_shape(rig: Rig, value: bytes) -> None:
    value = value.strip(b" \t") or b"x"
    for route in (CHAT, "/v1/models"):
        before, errors = len(rig.fake.requests), rig.errors()
        method = "POST" if route == CHAT else "GET"
        body = orjson.dumps(CHAT_BODY) if route == CHAT else b""
        answer = send_raw(rig.port, request(method, route, body, {b"x-note": value}))
        assert_upstreams_or_shaped(rig, "openai", answer, before, errors)


def test_a_token_outside_ascii_is_compared_as_the_bytes_sent() -> None:
    token = "s\u00e9same"
    with rigged(auth_token=token) as rig:
        good = {b"x-synopsis-token": token.encode()}
        assert send_raw(rig.port, request("GET", "/v1/models", headers=good)).status == 200
        bad = {b"x-synopsis-token": token.encode("latin-1")}
        answer = send_raw(rig.port, request("GET", "/v1/models", headers=bad))
        assert_shaped("openai", answer.status, answer.body)


# -- paths -------------------------------------------------------------------------------------

TRICKS = [
    "/v1/../../admin",
    "/v1/%2e%2e/%2e%2e/admin",
    "/v1/%2E%2E/%2E%2E/admin",
    "/v1/..%2f..%2fadmin",
    "/v1/..%2F..%2Fadmin",
    "/v1/%2e%2e%2f%2e%2e%2fadmin",
    "/v1/./../../admin",
    "/v1/..\\..\\admin",
    "/v1/..%5c..%5cadmin",
    "/v1/models/..",
    "/v1/messages/../../admin",
    "http://evil.example/admin",
    "*",
]


@pytest.fixture(scope="module")
def tenant() -> Iterator[Rig]:
    """A proxy whose upstreams live under a base path, ``/tenantA/v1``."""
    with rigged("/tenantA/v1") as made:
        yield made


@pytest.mark.parametrize("target", TRICKS)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_path_that_could_leave_the_base_path_is_refused_in_shape(
    tenant: Rig, target: str, method: str
) -> None:
    """Before: ``GET /v1/../../admin`` and its escaped kin reached the upstream's ``/admin``."""
    before, errors = len(tenant.fake.requests), tenant.errors()
    answer = send_raw(tenant.port, request(method, target, b"{}" if method == "POST" else b""))
    api = "anthropic" if target.startswith("/v1/messages") else "openai"
    error = assert_shaped(api, answer.status, answer.body)
    assert answer.status == 400
    assert "path" in error["message"]
    assert len(tenant.fake.requests) == before  # nothing reached the upstream
    assert tenant.errors() == errors + 1
    assert tenant.lines.proxy()[-1].startswith(f"method={method} ")


@pytest.mark.parametrize(
    ("target", "arrives"),
    [
        ("/v1/models", "/tenantA/v1/models"),
        ("/v1/files/a%3Fb%23c", "/tenantA/v1/files/a%3Fb%23c"),
        ("/v1/%252e%252e/%252e%252e/admin", "/tenantA/v1/%252e%252e/%252e%252e/admin"),
        ("//evil.example/admin", "/tenantA/v1//evil.example/admin"),
        ("/v1/files/caf%C3%A9", "/tenantA/v1/files/caf%C3%A9"),
        ("/v1/..files/a..b/.c", "/tenantA/v1/..files/a..b/.c"),
    ],
)
def test_other_paths_go_on_under_the_base_path_as_the_client_wrote_them(
    tenant: Rig, target: str, arrives: str
) -> None:
    answer = send_raw(tenant.port, request("GET", target + "?q=%2e%2e/x"))
    assert answer.status in (200, 404)  # the upstream's answer
    sent = tenant.fake.requests[-1]
    assert (sent.path, sent.query) == (arrives, "q=%2e%2e/x")


def test_a_path_outside_ascii_is_escaped_on_its_way(tenant: Rig) -> None:
    from synopsis.proxy.forward import upstream_url  # noqa: PLC0415

    scope = {"raw_path": "/v1/caf\u00e9".encode(), "path": "/v1/caf\u00e9", "query_string": b""}
    assert upstream_url("http://up/tenantA/v1/", scope) == "http://up/tenantA/v1/caf%C3%A9"
    scope = {"path": "/v1/models", "query_string": b"a=\xff"}
    assert upstream_url("http://up", scope) == "http://up/v1/models?a=%FF"


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "CONNECT"])
def test_a_method_the_proxy_does_not_relay_is_refused_in_shape(rig: Rig, method: str) -> None:
    before = len(rig.fake.requests)
    target = "proxy:443" if method == "CONNECT" else "/v1/models"
    answer = send_raw(rig.port, request(method, target))
    assert_shaped("openai", answer.status, answer.body)
    assert answer.status in (400, 405)
    assert len(rig.fake.requests) == before


@pytest.mark.parametrize(("path", "api"), [("/v1/models", "openai"), (MESSAGES, "anthropic")])
def test_a_websocket_handshake_is_refused_in_shape(rig: Rig, path: str, api: str) -> None:
    before, errors = len(rig.fake.requests), rig.errors()
    upgrade = {
        b"upgrade": b"websocket",
        b"connection": b"Upgrade",
        b"sec-websocket-key": b"dGhlIHNhbXBsZSBub25jZQ==",
        b"sec-websocket-version": b"13",
    }
    answer = send_raw(rig.port, request("GET", path, headers=upgrade))
    assert answer.status == 400
    assert "WebSocket" in assert_shaped(api, answer.status, answer.body)["message"]
    assert len(rig.fake.requests) == before
    assert rig.errors() == errors + 1
    assert rig.lines.proxy()[-1].startswith(f"method=GET path={path} status=400 ")


def test_a_websocket_handshake_is_closed_where_the_server_cannot_answer_it_in_http() -> None:
    app = create_app(environ={})
    sent: list[Message] = []

    async def receive() -> Message:  # pragma: no cover - the refusal reads nothing
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "websocket", "path": "/v1/models", "headers": [], "extensions": {}}
    asyncio.run(app(scope, receive, send))
    assert sent == [{"type": "websocket.close", "code": 1008}]
    metrics = app.state.proxy.metrics.registry
    assert metrics.get_sample_value("synopsis_proxy_errors_total", {"kind": "bad_request"}) == 1
