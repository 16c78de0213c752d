"""What the proxy answers when something is wrong: a body it cannot read, a history synopsis
cannot read, a compaction that fails (forwarded unchanged, or refused when failing closed), a
missing inbound token, an upstream that is missing a route, unreachable or slow; and where
requests go (which upstream, which path).

Each test runs the proxy on a real uvicorn in front of the fake LLM server.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

import synopsis
from synopsis.proxy import create_app
from synopsis.testing import FailingStore, FixedCounter, conversation
from synopsis.testing.server import (
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    chat_completion,
)
from tests.proxy.servers import Served, refusing

if TYPE_CHECKING:
    from collections.abc import Iterator

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
COUNT = "/v1/messages/count_tokens"
HISTORY = conversation(turns=24)
"""97 messages: 9,700 tokens at 100 a message, over the trigger of a 10,000-token window."""
_WIRE = synopsis.encode(synopsis.decode(HISTORY, "openai").messages, "anthropic")
COMPACTING: dict[str, Any] = {"context_window": 10_000, "counter": FixedCounter(per_message=100)}
HELLO = [{"role": "user", "content": "hello"}]
BODIES: dict[str, dict[str, Any]] = {
    CHAT: {"model": "gpt-4o", "messages": HELLO},
    "/v1/responses": {"model": "gpt-4o", "input": HELLO},
    MESSAGES: {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": HELLO},
    COUNT: {"model": "claude-sonnet-4-5", "messages": HELLO},
}
LONG: dict[str, dict[str, Any]] = {
    CHAT: {"model": "gpt-4o", "messages": HISTORY},
    MESSAGES: {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": _WIRE.system,
        "messages": _WIRE.messages,
    },
}
"""A body on each side whose history is compacted."""
SHAPES = {CHAT: "openai", "/v1/responses": "openai", MESSAGES: "anthropic", COUNT: "anthropic"}


def _answer(recorded: Recorded) -> Reply:
    if recorded.path.startswith(MESSAGES):
        return Reply(anthropic_message("ok"))
    return Reply(chat_completion("ok"))


@dataclass
class Rig:
    """A proxy served in front of a fake upstream, and a client of the proxy."""

    served: Served
    client: httpx2.Client
    fake: FakeLLMServer

    def errors(self, kind: str) -> float:
        found = self.served.state.metrics.registry.get_sample_value(
            "synopsis_proxy_errors_total", {"kind": kind}
        )
        return float(found or 0.0)


@contextlib.contextmanager
def proxied(
    openai: str, anthropic: str | None = None, **options: Any
) -> Iterator[tuple[Served, httpx2.Client]]:
    app = create_app(
        upstream_openai=openai, upstream_anthropic=anthropic or openai, environ={}, **options
    )
    with Served(app) as served, httpx2.Client(base_url=served.url, timeout=10.0) as client:
        yield served, client


@contextlib.contextmanager
def upstream() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default=_answer) as server:
        yield server


@contextlib.contextmanager
def rigged(**options: Any) -> Iterator[Rig]:
    with upstream() as fake, proxied(fake.root, **options) as (served, client):
        yield Rig(served, client, fake)


# Proxies of one configuration serve every test of it (a server takes a quarter of a second
# to start and stop); each test starts from an empty record of requests.


@pytest.fixture(scope="module")
def _plain() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


@pytest.fixture
def plain(_plain: Rig) -> Rig:
    _plain.fake.requests.clear()
    return _plain


@pytest.fixture(scope="module")
def _guarded() -> Iterator[Rig]:
    with rigged(auth_token="s3cret") as rig:
        yield rig


@pytest.fixture
def guarded(_guarded: Rig) -> Rig:
    _guarded.fake.requests.clear()
    return _guarded


def assert_error(api: str, response: httpx2.Response, status: int, kind: str, words: str) -> None:
    """``response`` is ``status``, in ``api``'s error shape, of ``kind``, saying ``words``."""
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    if api == "anthropic":
        assert body == {
            "type": "error",
            "error": {"type": kind, "message": body["error"]["message"]},
        }
        message = body["error"]["message"]
    else:
        error = body["error"]
        assert error == {"message": error["message"], "type": kind, "param": None, "code": None}
        message = error["message"]
    assert words in message


@contextlib.contextmanager
def silent() -> Iterator[str]:
    """An upstream that takes the connection and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


# -- bodies the proxy cannot read ----------------------------------------------------------------


@pytest.mark.parametrize("path", [CHAT, "/v1/responses", MESSAGES, COUNT])
def test_a_body_that_is_not_json_is_a_400_in_the_routes_shape(plain: Rig, path: str) -> None:
    before = plain.errors("bad_request")
    answer = plain.client.post(
        path,
        content=b'{"model": "gpt-4o", "messages": [',
        headers={"content-type": "application/json"},
    )
    assert_error(SHAPES[path], answer, 400, "invalid_request_error", "the request body is not JSON")
    assert plain.fake.requests == []
    assert plain.errors("bad_request") == before + 1


@pytest.mark.parametrize("path", [CHAT, MESSAGES])
@pytest.mark.parametrize(
    "body", [[{"model": "gpt-4o"}], "gpt-4o", {"messages": HELLO}, {"model": 4, "messages": HELLO}]
)
def test_a_body_that_is_no_object_naming_a_model_is_a_400(
    plain: Rig, path: str, body: object
) -> None:
    answer = plain.client.post(path, json=body)
    words = "must be a JSON object naming a model"
    assert_error(SHAPES[path], answer, 400, "invalid_request_error", words)
    assert plain.fake.requests == []


@pytest.mark.parametrize(
    ("path", "history"),
    [
        (CHAT, [{"role": "alien", "content": "hello"}]),
        (CHAT, [{"role": "user", "content": {"text": "not a list of parts"}}]),
        (MESSAGES, [{"role": "user", "content": "hi"}, {"role": "moderator", "content": "no"}]),
    ],
)
def test_a_history_synopsis_cannot_read_is_a_400_and_goes_nowhere(
    plain: Rig, path: str, history: list[Any]
) -> None:
    before = plain.errors("bad_request")
    answer = plain.client.post(path, json={**BODIES[path], "messages": history})
    words = "synopsis cannot read this history"
    assert_error(SHAPES[path], answer, 400, "invalid_request_error", words)
    assert plain.fake.requests == []
    assert plain.errors("bad_request") == before + 1


# -- a budget no compaction can reach ----------------------------------------------------------

HUGE_SYSTEM = "You follow these rules exactly. " * 800
"""About 5,600 tokens: alone over what a 4,000-token window leaves for the answer."""
UNREACHABLE: dict[str, dict[str, Any]] = {
    CHAT: {
        "model": "gpt-4o",
        "messages": [{"role": "system", "content": HUGE_SYSTEM}, *HELLO],
    },
    MESSAGES: {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": HUGE_SYSTEM,
        "messages": HELLO,
    },
}


@pytest.mark.parametrize("path", [CHAT, MESSAGES])
def test_a_request_no_compaction_can_fit_is_a_400_naming_the_sizes(path: str) -> None:
    # The upstream would refuse it as it is: the proxy says so in the route's own shape,
    # with the protected part's size and the window, and sends nothing on.
    with rigged(context_window=4_000) as rig:
        before = rig.errors("budget_unreachable")
        answer = rig.client.post(path, json=UNREACHABLE[path])
        words = "synopsis cannot fit this request into the window"
        assert_error(SHAPES[path], answer, 400, "invalid_request_error", words)
        message = json.dumps(answer.json())
        assert "the system prompt alone takes" in message
        assert "the window of 4,000" in message
        assert rig.fake.requests == []
        assert rig.errors("budget_unreachable") == before + 1
        # Every request says so again: no breaker turns it into a forwarded one.
        for _ in range(4):
            again = rig.client.post(path, json=UNREACHABLE[path])
            assert again.status_code == 400
        assert rig.fake.requests == []


def test_a_proxy_told_to_forward_what_cannot_fit_sends_it_unchanged() -> None:
    raw = json.dumps(UNREACHABLE[CHAT]).encode()
    with rigged(context_window=4_000, on_unreachable="return") as rig:
        answer = rig.client.post(CHAT, content=raw, headers={"content-type": "application/json"})
        assert answer.status_code == 200
        (sent,) = rig.fake.requests
        assert sent.raw == raw
        assert answer.headers["x-synopsis-compacted"] == "false"


# -- a compaction that fails -------------------------------------------------------------------


@pytest.mark.parametrize("path", [CHAT, MESSAGES])
def test_a_failed_compaction_forwards_the_request_unchanged_and_says_so(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="synopsis.proxy")
    raw = json.dumps(LONG[path]).encode()
    store = FailingStore(fail={"session"})
    with upstream() as fake, proxied(fake.root, store=store, **COMPACTING) as (served, client):
        answer = client.post(path, content=raw, headers={"content-type": "application/json"})
        assert answer.status_code == 200
        assert answer.headers["x-synopsis-failed-open"] == "StoreError"
        assert "x-synopsis-compacted" not in answer.headers
        (forwarded,) = fake.requests
        assert forwarded.raw == raw
        errors = served.state.metrics.registry.get_sample_value(
            "synopsis_proxy_errors_total", {"kind": "compaction_failed"}
        )
        assert errors == 1
    (line,) = [r for r in caplog.records if r.name == "synopsis.proxy"]
    assert line.levelno == logging.WARNING
    assert "failed_open=StoreError" in line.getMessage()
    assert "status=200" in line.getMessage()


@pytest.mark.parametrize("path", [CHAT, MESSAGES, COUNT])
def test_failing_closed_a_failed_compaction_is_a_500_in_the_routes_shape(path: str) -> None:
    store = FailingStore(fail={"session"})
    options: dict[str, Any] = {"store": store, "fail_open": False, **COMPACTING}
    body = LONG[CHAT if path == CHAT else MESSAGES]
    with upstream() as fake, proxied(fake.root, **options) as (_, client):
        answer = client.post(path, json=body)
        kind = "server_error" if SHAPES[path] == "openai" else "api_error"
        assert_error(
            SHAPES[path],
            answer,
            500,
            kind,
            "could not compact this request: could not read session",
        )
        assert fake.requests == []


# -- the inbound token -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "shape"),
    [("POST", CHAT, "openai"), ("POST", MESSAGES, "anthropic"), ("GET", "/v1/models", "openai")],
)
@pytest.mark.parametrize("given", [None, "wrong", "s3cre", "s3cret2"])
def test_without_the_inbound_token_a_request_is_a_401(
    guarded: Rig, method: str, path: str, shape: str, given: str | None
) -> None:
    headers = {} if given is None else {"x-synopsis-token": given}
    before = guarded.errors("unauthorized")
    answer = guarded.client.request(method, path, json=BODIES.get(path), headers=headers)
    kind = "authentication_error" if shape == "anthropic" else "invalid_request_error"
    assert_error(shape, answer, 401, kind, "x-synopsis-token")
    assert guarded.fake.requests == []
    assert guarded.errors("unauthorized") == before + 1


@pytest.mark.parametrize(
    ("method", "path"), [("POST", CHAT), ("POST", MESSAGES), ("GET", "/v1/models")]
)
def test_with_the_inbound_token_a_request_passes_without_it(
    guarded: Rig, method: str, path: str
) -> None:
    headers = {
        "x-synopsis-token": "s3cret",
        "authorization": "Bearer sk-client",
        "x-synopsis-session": "mine",
    }
    answer = guarded.client.request(method, path, json=BODIES.get(path), headers=headers)
    assert answer.status_code == 200
    (forwarded,) = guarded.fake.requests
    assert forwarded.path == path
    assert forwarded.headers["authorization"] == "Bearer sk-client"
    assert not [h for h in forwarded.headers if h.startswith("x-synopsis-")]


# -- count_tokens ------------------------------------------------------------------------------


def test_count_tokens_is_the_upstreams_count_of_the_compacted_body() -> None:
    body = LONG[MESSAGES]
    with upstream() as fake, proxied(fake.root, **COMPACTING) as (_, client):
        answer = client.post(COUNT, json=body)
        assert answer.status_code == 200
        assert answer.headers["x-synopsis-compacted"] == "true"
        (forwarded,) = fake.requests
        assert forwarded.path == COUNT
        sent = forwarded.body
        assert len(sent["messages"]) < len(body["messages"])
        upstream_count = sum(len(json.dumps(sent[k])) for k in ("system", "messages")) // 4
        assert answer.json() == {"input_tokens": upstream_count}


def test_against_an_upstream_without_count_tokens_the_proxy_counts_itself() -> None:
    body = LONG[MESSAGES]
    with (
        upstream() as fake,
        proxied(fake.root, fake.root + "/elsewhere", **COMPACTING) as (_, client),
    ):
        answer = client.post(COUNT, json=body)
        assert answer.status_code == 200
        assert [r.path for r in fake.requests] == ["/elsewhere" + COUNT]
        after = int(answer.headers["x-synopsis-tokens"].split("/")[1])
        assert answer.json() == {"input_tokens": after}
        assert after < 8000


def test_an_upstream_without_count_tokens_is_relayed_when_nothing_was_compacted() -> None:
    body = {"model": "claude-sonnet-4-5", "messages": "hello"}  # no history to compact
    with upstream() as fake, proxied(fake.root, fake.root + "/elsewhere") as (_, client):
        answer = client.post(COUNT, json=body)
        assert answer.status_code == 404
        assert answer.json()["error"]["type"] == "not_found"
        assert "x-synopsis-tokens" not in answer.headers


# -- where requests go -------------------------------------------------------------------------


def test_an_upstream_base_ending_in_v1_gets_no_second_v1() -> None:
    with upstream() as fake, proxied(fake.base_url) as (_, client):
        assert client.post(CHAT, json=BODIES[CHAT]).status_code == 200
        assert client.get("/v1/models", params={"limit": "2"}).status_code == 200
        assert [(r.method, r.path, r.query) for r in fake.requests] == [
            ("POST", CHAT, ""),
            ("GET", "/v1/models", "limit=2"),
        ]


@pytest.mark.parametrize(
    ("headers", "side"),
    [
        ({}, "openai"),
        ({"authorization": "Bearer sk-1"}, "openai"),
        ({"anthropic-version": "2023-06-01"}, "anthropic"),
        ({"x-api-key": "sk-ant-1"}, "anthropic"),
    ],
)
def test_other_paths_go_to_the_upstream_their_headers_point_to(
    headers: dict[str, str], side: str
) -> None:
    with (
        upstream() as openai,
        upstream() as anthropic,
        proxied(openai.root, anthropic.root) as (_, client),
    ):
        answer = client.get("/v1/models", headers=headers)
        assert answer.status_code == 200
        assert answer.json()["data"][0]["id"] == "gpt-test"
        chosen, other = (openai, anthropic) if side == "openai" else (anthropic, openai)
        assert [r.path for r in chosen.requests] == ["/v1/models"]
        assert other.requests == []
        for name, value in headers.items():
            assert chosen.requests[0].headers[name] == value


def test_an_upstream_error_is_relayed_with_its_status_and_body(plain: Rig) -> None:
    plain.fake.error(429, "slow down")
    answer = plain.client.post(CHAT, json=BODIES[CHAT])
    assert answer.status_code == 429
    assert answer.json() == {"error": {"type": "error", "message": "slow down"}}
    assert answer.headers["x-synopsis-session"].startswith("auto:")


def test_a_request_with_no_history_to_shorten_is_forwarded_as_it_came(plain: Rig) -> None:
    continued = {"model": "gpt-4o", "previous_response_id": "resp_1", "input": HELLO}
    for body in (continued, {"model": "gpt-4o", "input": "hello"}):
        raw = json.dumps(body).encode()
        answer = plain.client.post(
            "/v1/responses", content=raw, headers={"content-type": "application/json"}
        )
        assert answer.status_code == 200
        assert "x-synopsis-session" not in answer.headers
        assert "x-synopsis-tokens" not in answer.headers
        assert plain.fake.requests[-1].raw == raw


RESPONSES_OVERFLOW = {
    "error": {
        "message": "Your input exceeds the context window of this model. Please adjust your "
        "input and try again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }
}


def test_an_overflow_naming_no_window_is_retried_and_teaches_no_window() -> None:
    with upstream() as fake, proxied(fake.root) as (served, client):
        fake.add(RESPONSES_OVERFLOW, status=400)
        answer = client.post(CHAT, json=LONG[CHAT])
        assert answer.status_code == 200
        assert answer.headers["x-synopsis-retried"] == "overflow"
        first, second = fake.requests
        assert len(first.body["messages"]) == len(HISTORY)  # under the trigger: as it came
        assert len(second.body["messages"]) < len(HISTORY)
        # Nothing named, nothing learnt: the forced compaction was enough.
        assert "x-synopsis-window" not in answer.headers
        assert served.state.compactors.window("gpt-4o", fake.root) == 128_000


def test_a_huge_upstream_error_is_relayed_cut_and_never_as_if_whole(
    plain: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="synopsis.proxy")
    plain.fake.error(500, "x" * (3 << 19))  # 1.5 MiB
    got = bytearray()
    with plain.client.stream("POST", CHAT, json=BODIES[CHAT]) as answer:
        assert answer.status_code == 500
        assert "content-length" not in answer.headers

        def drain() -> None:
            for chunk in answer.iter_raw():
                got.extend(chunk)

        with pytest.raises(httpx2.RemoteProtocolError):
            drain()
    assert len(got) == 1 << 20
    assert got.startswith(b'{"error": {"type": "error", "message": "xxx')
    (line,) = [r.getMessage() for r in caplog.records if r.name == "synopsis.proxy"]
    assert "relayed cut" in line


# -- an upstream that is not there or does not answer ----------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", CHAT), ("POST", MESSAGES), ("POST", COUNT), ("GET", "/v1/models")],
)
def test_an_unreachable_upstream_is_a_502(method: str, path: str) -> None:
    with refusing() as dead, proxied(dead) as (served, client):
        answer = client.request(method, path, json=BODIES.get(path))
        kind = "api_error" if SHAPES.get(path) == "anthropic" else "upstream_error"
        assert_error(
            SHAPES.get(path, "openai"), answer, 502, kind, "the upstream could not be reached"
        )
        errors = served.state.metrics.registry.get_sample_value(
            "synopsis_proxy_errors_total", {"kind": "upstream_unreachable"}
        )
        assert errors == 1


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", CHAT), ("POST", MESSAGES), ("POST", COUNT), ("GET", "/v1/models")],
)
def test_an_upstream_that_does_not_answer_in_time_is_a_504(method: str, path: str) -> None:
    with silent() as url, proxied(url, timeout=0.3) as (served, client):
        answer = client.request(method, path, json=BODIES.get(path))
        kind = "timeout_error" if SHAPES.get(path) == "anthropic" else "timeout"
        assert_error(SHAPES.get(path, "openai"), answer, 504, kind, "the upstream did not answer")
        errors = served.state.metrics.registry.get_sample_value(
            "synopsis_proxy_errors_total", {"kind": "upstream_timeout"}
        )
        assert errors == 1


def test_an_overflow_naming_a_larger_window_than_used_teaches_nothing() -> None:
    # A server whose own window is larger, refusing for another reason it words as too long.
    larger = {
        "error": {
            "message": "This model's maximum context length is 500000 tokens.",
            "type": "invalid_request_error",
            "param": None,
            "code": "context_length_exceeded",
        }
    }
    with upstream() as fake, proxied(fake.root) as (served, client):
        fake.add(larger, status=400)
        answer = client.post(CHAT, json=LONG[CHAT])
        assert answer.status_code == 200
        assert answer.headers["x-synopsis-retried"] == "overflow"
        assert "x-synopsis-window" not in answer.headers
        assert served.state.compactors.window("gpt-4o", fake.root) == 128_000
