"""Hostile clients and the limits an operator sets: connections that send nothing or half a
request, bodies that stall, more requests than the proxy takes at once, clients that leave
while sending, failures of the proxy's own, a model name that tries to forge a log line, and
compactors for models without end. Each on a real uvicorn; the command itself where what it
writes on stderr is the point."""

from __future__ import annotations

import json
import logging
import re
import socket
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING
from unittest.mock import ANY

import httpx2
import pytest
from starlette.responses import StreamingResponse
from starlette.routing import Route as Endpoint

from synopsis.cli import main
from synopsis.proxy import create_app
from synopsis.proxy.compactors import Compactors
from synopsis.proxy.connections import header_timed
from synopsis.testing.server import FakeLLMServer, chat_completion
from tests.cli.test_end_to_end import SCRIPT
from tests.cli.test_serve import serving
from tests.proxy.hostile import (
    CHAT,
    Lines,
    assert_shaped,
    listening,
    parse,
    read_all,
    request,
    rigged,
    send_raw,
    served_with,
)
from tests.proxy.sdk_clients import answer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request

HELLO = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}


def _kind(rig_state: object, kind: str) -> float:
    registry = rig_state.metrics.registry  # type: ignore[attr-defined]
    found = registry.get_sample_value("synopsis_proxy_errors_total", {"kind": kind})
    return float(found or 0.0)


# -- a body that stalls ------------------------------------------------------------------------


@pytest.mark.parametrize("path", [CHAT, "/v1/messages", "/v1/files"])
def test_a_body_that_stalls_is_a_408_in_shape(path: str) -> None:
    """Before: held open for as long as the client liked."""
    with rigged(body_timeout=0.3) as rig:
        head = request("POST", path, b"{" * 100).removesuffix(b"{" * 100)
        with socket.create_connection(("127.0.0.1", rig.port), timeout=10) as sock:
            sock.sendall(head + b'{"model": ')
            got = parse(read_all(sock))
        api = "anthropic" if path.startswith("/v1/messages") else "openai"
        error = assert_shaped(api, got.status, got.body)
        assert got.status == 408
        assert "paused more than 0.3 s" in error["message"]
        assert got.headers["connection"] == "close"
        assert _kind(rig.served.state, "body_timeout") == 1
        assert rig.lines.proxy()[-1].startswith(f"method=POST path={path} status=408 ")
        assert rig.fake.requests == []


def test_a_body_that_comes_slowly_but_steadily_is_read_whole() -> None:
    with rigged(body_timeout=0.5) as rig:
        data = json.dumps(HELLO).encode()
        with socket.create_connection(("127.0.0.1", rig.port), timeout=10) as sock:
            sock.sendall(request("POST", CHAT, data).removesuffix(data))
            for start in range(0, len(data), 20):
                time.sleep(0.05)
                sock.sendall(data[start : start + 20])
            got = parse(read_all(sock))
        assert got.status == 200
        assert rig.fake.requests[-1].body == HELLO


def test_a_client_that_leaves_while_sending_its_body_is_logged_and_counted() -> None:
    with rigged() as rig:
        with socket.create_connection(("127.0.0.1", rig.port), timeout=10) as sock:
            sock.sendall(request("POST", CHAT, b"x" * 100).removesuffix(b"x" * 100) + b"{")
            time.sleep(0.1)
        deadline = time.monotonic() + 5
        while not rig.lines.proxy() and time.monotonic() < deadline:
            time.sleep(0.01)
        (line,) = rig.lines.proxy()
        assert line.startswith(f"method=POST path={CHAT} status=499 ")
        assert _kind(rig.served.state, "client_gone") == 1
        assert not rig.lines.tracebacks()
        assert httpx2.get(f"{rig.served.url}/healthz").status_code == 200


# -- headers that never come whole ---------------------------------------------------------------


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closed ``sock`` (within ``seconds``) without answering."""
    sock.settimeout(seconds)
    try:
        return read_all(sock) == b""
    except TimeoutError:
        return False


@pytest.mark.parametrize("sent", [b"", b"GET /v1/mod", b"POST /v1/chat/completions HTTP/1.1\r\nho"])
def test_a_connection_that_sends_no_whole_headers_is_closed(sent: bytes) -> None:
    """Before: held open for as long as the client liked."""
    app = create_app(environ={})
    with served_with(app, http=header_timed(0.3)) as port:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(sent)
            assert _closed_within(sock, 5)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")  # whole: answered
            time.sleep(0.5)  # past the header timeout: the response ended it
            sock.sendall(b"GET /healthz HTTP/1.1\r\nho")  # the next, half sent
            sock.settimeout(5)
            first = sock.recv(1 << 16)
            assert first.startswith(b"HTTP/1.1 200 ")
            assert _closed_within(sock, 5)


def test_whole_requests_and_pipelined_ones_are_answered_within_the_header_timeout() -> None:
    app = create_app(environ={})
    with served_with(app, http=header_timed(0.3)) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            one = b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n"
            sock.sendall(one * 2 + one.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n"))
            got = read_all(sock)
        assert got.count(b"HTTP/1.1 200 ") == 3


def test_a_request_that_is_not_http_is_a_400_in_shape() -> None:
    app = create_app(environ={})
    with served_with(app, http=header_timed(5)) as port:
        got = send_raw(port, b"GET /v1/models HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n")
    error = assert_shaped("openai", got.status, got.body)
    assert got.status == 400
    assert "not a valid HTTP request" in error["message"]


# -- more requests than the proxy takes at once ----------------------------------------------------


def test_requests_past_the_concurrency_limit_are_a_503_in_shape_but_health_answers() -> None:
    with rigged(max_concurrent=1) as rig:
        rig.fake.add(chat_completion("slow"), delay=1.0)
        url = rig.served.url
        first: list[int] = []
        held = threading.Thread(
            target=lambda: first.append(httpx2.post(url + CHAT, json=HELLO).status_code)
        )
        held.start()
        rig.fake.wait_for(1)
        refused = httpx2.post(url + "/v1/messages", json=HELLO)
        error = assert_shaped("anthropic", refused.status_code, refused.content)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        assert "its limit" in error["message"]
        assert httpx2.get(url + "/healthz").status_code == 200
        assert httpx2.get(url + "/metrics").status_code == 200
        held.join(10)
        assert first == [200]
        assert httpx2.post(url + CHAT, json=HELLO).status_code == 200  # room again
        assert _kind(rig.served.state, "overloaded") == 1
        assert len(rig.fake.requests) == 2


# -- failures of the proxy's own -------------------------------------------------------------------


async def _raising(request: Request) -> StreamingResponse:
    if request.query_params.get("when") == "before":
        raise RuntimeError("a bug before the answer")

    async def body() -> AsyncIterator[bytes]:
        yield b"half"
        raise RuntimeError("a bug during the answer")

    return StreamingResponse(body())


@pytest.fixture
def buggy() -> tuple[Lines, object]:
    """A proxy with one more route, which fails as a bug would."""
    app = create_app(environ={})
    app.router.routes.insert(0, Endpoint("/v1/bug", _raising, methods=["GET"]))
    return app  # type: ignore[return-value]


@pytest.mark.parametrize(("headers", "api"), [({}, "openai"), ({"x-api-key": "k"}, "anthropic")])
def test_a_failure_before_the_answer_is_a_500_in_the_routes_shape(
    buggy: object, headers: dict[str, str], api: str
) -> None:
    """Before: Starlette's plain-text "Internal Server Error", no log line, no metric."""
    with listening() as lines, served_with(buggy) as port:  # type: ignore[arg-type]
        got = httpx2.get(f"http://127.0.0.1:{port}/v1/bug?when=before", headers=headers)
    error = assert_shaped(api, got.status_code, got.content)
    assert got.status_code == 500
    assert "RuntimeError: a bug before the answer" in error["message"]
    assert _kind(buggy.state.proxy, "internal") == 1  # type: ignore[attr-defined]
    (line,) = lines.proxy()
    assert line.startswith("method=GET path=/v1/bug status=500 ")
    assert not lines.tracebacks()


def test_a_failure_during_the_answer_drops_the_connection_quietly(buggy: object) -> None:
    with listening() as lines, served_with(buggy) as port:  # type: ignore[arg-type]
        got = send_raw(port, request("GET", "/v1/bug"))
    assert (got.status, got.body, got.whole) == (200, b"half", False)
    assert _kind(buggy.state.proxy, "internal") == 1  # type: ignore[attr-defined]
    (line,) = lines.proxy()
    assert line.startswith("method=GET path=/v1/bug status=200 ")
    assert "a bug during the answer" in line
    assert not lines.tracebacks()


def test_a_broken_upstream_stream_drops_the_connection_without_a_traceback() -> None:
    with rigged() as rig:
        rig.fake.add(chat_completion("one two three four"), cut_after=1)
        got = send_raw(
            rig.port, request("POST", CHAT, json.dumps({**HELLO, "stream": True}).encode())
        )
        assert (got.status, got.whole) == (200, False)
        assert _kind(rig.served.state, "upstream_broken") == 1
        assert not rig.lines.tracebacks()


def test_serve_writes_only_json_lines_when_a_stream_breaks_or_a_request_is_hostile() -> None:
    """Before: uvicorn's traceback of the broken stream, in the middle of --log-json output."""
    with (
        FakeLLMServer(default=answer) as upstream,
        serving("--upstream-openai", upstream.root, "--log-json") as (url, served),
    ):
        upstream.add(chat_completion("one two three four"), cut_after=1)
        port = int(url.rsplit(":", 1)[1])
        got = send_raw(port, request("POST", CHAT, json.dumps({**HELLO, "stream": True}).encode()))
        assert not got.whole
        assert send_raw(port, request("GET", "/v1/../admin")).status == 400
        assert send_raw(port, request("POST", CHAT, b"\xff")).status == 400
        assert send_raw(port, b"GET /v1/caf\xc3\xa9 HTTP/1.1\r\n\r\n").status == 400
        assert served.stop() == 0
        err = served.stderr
    lines = err.splitlines()
    assert len(lines) == 5
    started, *parsed = [json.loads(line) for line in lines]
    assert started["event"] == "proxy_started"
    assert [p.get("status") for p in parsed] == [200, 400, 400, None]
    assert "broke off" in parsed[0]["error"]
    assert parsed[3] == {"event": "server", "level": "warning", "message": ANY}


def test_serve_help_shows_each_limit_and_its_default() -> None:
    shown = subprocess.run([SCRIPT, "serve", "--help"], capture_output=True, text=True, check=True)
    text = " ".join(shown.stdout.split())
    for flag, default in [
        ("--header-timeout", "(30)"), ("--body-timeout", "(60)"),
        ("--max-concurrent", "(1024)"), ("--max-compactors", "(64)"),
    ]:  # fmt: skip
        assert flag in text
        assert default in text.split(flag, 2)[-1].split("--", 1)[0]


# -- what a client says cannot forge a log line ----------------------------------------------


def test_a_model_name_cannot_forge_a_log_line() -> None:
    """Before: the newline went into the log as it came, opening a line of the client's."""
    forged = "gpt-4o\n2026-01-01 00:00:00 method=GET path=/admin status=200"
    with rigged() as rig:
        body = {**HELLO, "model": forged}
        assert httpx2.post(rig.served.url + CHAT, json=body).status_code == 200
        send_raw(rig.port, request("GET", "/v1/%0a%0dforged%20status=200"))
        said = rig.lines.proxy()
    # The forged name is also a model the table does not know: said once, escaped too.
    (unknown,) = [line for line in said if line.startswith("unknown model")]
    assert "\n" not in unknown
    model_line, path_line = [line for line in said if line is not unknown]
    assert "\n" not in model_line
    assert "\r" not in path_line
    assert "\n" not in path_line
    assert path_line.startswith('method=GET path="/v1/\\n\\rforged status=200" status=400 ')
    pairs = re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|[^ ]*)(?: |$)', model_line)
    assert " ".join(f"{k}={v}" for k, v in pairs) == model_line  # every field, whole
    fields = dict(pairs)
    assert len(fields) == len(pairs)  # none forged twice
    assert json.loads(fields["model"]) == forged
    assert (fields["status"], fields["path"]) == ("200", CHAT)


def test_a_body_in_the_log_cannot_forge_a_line() -> None:
    with rigged(log_bodies=True) as rig:
        raw = b'{"model": "gpt-4o",\n"messages": [{"role": "user", "content": "hi"}]}'
        httpx2.post(rig.served.url + CHAT, content=raw)
        (line,) = rig.lines.proxy()
    assert line.count("\n") == 1  # the one before the body
    assert line.split("\nbody: ", 1)[1] == raw.decode().replace("\n", "\\n")


# -- options -----------------------------------------------------------------------------------


def test_an_empty_auth_token_is_refused_not_taken_as_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: ``--auth-token ""`` turned authentication off without a word."""
    with pytest.raises(ValueError, match="auth_token is empty"):
        create_app(auth_token="", environ={})
    assert main(["serve", "--auth-token", ""]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "an empty token would let anyone in" in err


def test_compactors_keep_the_models_used_last_and_drop_the_least_recent() -> None:
    """Before: one compactor per model name ever seen, never released."""
    compactors = Compactors(environ={}, max_compactors=2)
    try:
        a = compactors.for_model("model-a")
        b = compactors.for_model("model-b")
        assert compactors.for_model("model-a") is a  # used again: now the most recent
        compactors.for_model("model-c")  # one too many: b, the least recent, goes
        assert compactors.for_model("model-a") is a
        assert compactors.for_model("model-b") is not b
        for n in range(50):
            compactors.for_model(f"m{n}")
        assert len(compactors._by_model) == 2
        assert len(compactors._applied) <= 3  # and the probe made at the start
    finally:
        compactors.close()


def test_the_limits_reach_the_app_from_the_command() -> None:
    from synopsis.cli import build_parser  # noqa: PLC0415
    from synopsis.cli.serve import app_for  # noqa: PLC0415

    flags = ["--body-timeout", "7", "--max-concurrent", "3", "--max-compactors", "5"]
    app = app_for(build_parser().parse_args(["serve", *flags, "--auth-token", "t0ken"]))
    assert app.state.proxy.auth_token == "t0ken"
    guard = app.middleware_stack or app.build_middleware_stack()
    found = guard
    while type(found).__name__ != "Guard":
        found = found.app
    assert (found.body_timeout, found.max_concurrent) == (7.0, 3)
    assert app.state.proxy.compactors._max_compactors == 5
    app.state.proxy.compactors.close()


def test_uvicorns_own_errors_are_still_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="uvicorn.error")
    create_app(environ={})  # the filter is in place
    logging.getLogger("uvicorn.error").error("something else")
    assert [r.getMessage() for r in caplog.records] == ["something else"]


def test_the_servers_own_lines_are_json_with_log_json() -> None:
    from uvicorn.config import LOGGING_CONFIG  # noqa: PLC0415

    from synopsis.proxy.connections import ServerLines, log_config  # noqa: PLC0415

    assert log_config(False) == LOGGING_CONFIG
    assert log_config(True)["formatters"]["default"] == {
        "()": "synopsis.proxy.connections.ServerLines"
    }
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord(
            "uvicorn.error", logging.ERROR, __file__, 1, "failed: %s", ("x",), sys.exc_info()
        )
    line = json.loads(ServerLines().format(record))
    assert (line["event"], line["level"], line["message"]) == ("server", "error", "failed: x")
    assert "ValueError: boom" in line["exception"]


def test_unknown_models_are_said_once_each_and_their_memory_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import synopsis.proxy.compactors as module  # noqa: PLC0415

    monkeypatch.setattr(module, "_UNKNOWN_REMEMBERED", 2)
    said: list[str] = []
    compactors = Compactors(environ={}, unknown_model=said.append)
    try:
        for model in ("zz-a", "zz-a", "zz-b", "gpt-4o", "zz-c", "zz-a"):
            compactors.for_model(model)
        # a, b; c fills the memory past two, which starts again: a is new once more.
        assert said == ["zz-a", "zz-b", "zz-c"]
        compactors._by_model.clear()
        compactors.for_model("zz-a")
        assert said == ["zz-a", "zz-b", "zz-c", "zz-a"]
    finally:
        compactors.close()
