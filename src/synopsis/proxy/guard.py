"""The proxy's outermost layer: whatever a request does, its answer is the upstream's or an
error in its route's own JSON shape, counted and logged.

:class:`Guard` wraps the app (inside Starlette's own error layer, which would answer a plain
text 500). Before the app sees a request it refuses, in the route's shape: a path that could
climb out of the upstream's base path (a dot segment, an escaped slash, no leading slash) or
holds a control character once decoded (no route matches it: a plain-text 404), a method the
proxy does not relay, and a request past the concurrency limit (503). While the app runs it
limits how long a body may pause between two chunks (408), and turns what the app
raises into an answer: a client that left is logged as such (499, nothing sent), anything
else is a 500 counted as ``internal``. Once a response has started nothing can be said in it:
the connection is dropped (:class:`~synopsis.proxy.relay.ConnectionDropped`), and the
server's traceback of that is silenced, since the proxy's own log line says what happened.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import TYPE_CHECKING

import orjson
from starlette.requests import ClientDisconnect

from synopsis.proxy.bodies import ROUTES
from synopsis.proxy.errors import json_error
from synopsis.proxy.logs import Line
from synopsis.proxy.relay import ConnectionDropped

if TYPE_CHECKING:
    from collections.abc import Iterable

    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from synopsis.proxy.errors import Api
    from synopsis.proxy.state import ProxyState

__all__ = ["METHODS", "Guard", "api_of"]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
"""The methods the proxy relays (the compacting routes take POST only)."""
_UNLIMITED = frozenset({"/healthz", "/metrics"})
"""Answered however busy the proxy is: a health check that fails under load would have the
proxy restarted just when it is needed."""
_COMPACTING = {route.path: route.api for route in ROUTES}
_SEGMENTS = re.compile(r"[/\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def api_of(path: str, headers: Iterable[tuple[bytes, bytes]]) -> Api:
    """Whose error shape a request is answered in (and, relayed, whose upstream it goes to):
    Anthropic's for ``/v1/messages*`` or a request with an Anthropic header, else OpenAI's."""
    if path.startswith("/v1/messages"):
        return "anthropic"
    for key, _ in headers:
        if key.lower() in (b"anthropic-version", b"x-api-key"):
            return "anthropic"
    return "openai"


def _shape(scope: Scope) -> Api:
    path = scope["path"]
    if scope["method"] == "POST" and path in _COMPACTING:
        return _COMPACTING[path]
    return api_of(path, scope["headers"])


def _label(scope: Scope) -> str:
    """The route a request is counted under, as the app counts it."""
    path = scope["path"]
    return path if scope["method"] == "POST" and path in _COMPACTING else "other"


def _unsafe_path(scope: Scope) -> str | None:
    """Why a path is refused, or None: one whose meaning an upstream could read otherwise
    than the proxy, so that the request leaves the base path it is relayed under."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    if not raw.startswith(b"/"):
        return "the path must start with /"
    if _CONTROL.search(scope["path"]):
        return "the path holds a control character"
    lowered = raw.lower()
    if b"%2f" in lowered or b"%5c" in lowered:
        return "the path holds an escaped slash"
    # Dot segments as the upstream may resolve them: decoded once, either slash a separator.
    if any(s in (".", "..") for s in _SEGMENTS.split(scope["path"])):
        return "the path holds a dot segment (. or ..)"
    return None


class BodyTimeout(Exception):
    """The client paused longer than the body timeout between two chunks of its body."""


class Guard:
    """The ASGI middleware of this module (see its docstring). ``body_timeout``: seconds a
    request body may pause between two chunks; ``max_concurrent``: requests handled at once,
    beyond which each gets a 503 (health and metrics excepted)."""

    def __init__(self, app: ASGIApp, *, body_timeout: float, max_concurrent: int) -> None:
        self.app = app
        self.body_timeout = body_timeout
        self.max_concurrent = max_concurrent
        self.active = 0
        quiet_server_log()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await _no_websocket(scope, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: ProxyState = scope["app"].state.proxy
        line = Line(scope["method"], scope["path"])
        refused = self._refusal(scope)
        if refused is not None:
            response, kind = refused
            line.status = response.status_code
            why = orjson.loads(response.body)["error"]["message"]
            _count(state, line, kind, why, _label(scope))
            await response(scope, _unread, send)
            return
        limited = scope["path"] not in _UNLIMITED
        self.active += limited
        try:
            await self._run(scope, receive, send, line)
        finally:
            self.active -= limited

    def _refusal(self, scope: Scope) -> tuple[Response, str] | None:
        """The answer to a request the app must not see, and its kind of error."""
        api = _shape(scope)
        unsafe = _unsafe_path(scope)
        if unsafe is not None:
            return json_error(api, 400, unsafe), "bad_request"
        method = scope["method"]
        if method not in METHODS:
            why = f"the proxy does not relay {method} requests"
            return json_error(api, 405, why, allow=", ".join(METHODS)), "bad_request"
        if scope["path"] not in _UNLIMITED and self.active >= self.max_concurrent:
            why = f"the proxy is handling {self.max_concurrent} requests, its limit: retry soon"
            return json_error(api, 503, why, **{"retry-after": "1"}), "overloaded"
        return None

    async def _run(self, scope: Scope, receive: Receive, send: Send, line: Line) -> None:
        """The app's answer, or the guard's when the app raises."""
        state: ProxyState = scope["app"].state.proxy
        started = time.perf_counter()
        answered = 0
        """The status of the response started, once one has."""

        async def sending(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = message["status"]
            await send(message)

        try:
            await self.app(scope, self._timed(receive), sending)
        except ConnectionDropped:
            raise  # counted and logged where it was raised
        except Exception as error:
            line.ms_total = (time.perf_counter() - started) * 1000
            gone = isinstance(error, ClientDisconnect)
            if answered:
                # Counted under its status when it started: only the error is new.
                line.status = answered
                _count(state, line, "client_gone" if gone else "internal", _said(error))
                raise ConnectionDropped(line.error) from error
            # A client that leaves while sending its body is answered 499 where the body is
            # read (intake.read_body): what reaches here before an answer is the proxy's own.
            api = _shape(scope)
            if isinstance(error, BodyTimeout):
                why = f"the request body paused more than {self.body_timeout:g} s"
                response, kind = json_error(api, 408, why, connection="close"), "body_timeout"
            else:
                why = f"synopsis failed on this request: {_said(error)}"
                response, kind = json_error(api, 500, why), "internal"
            line.status = response.status_code
            _count(state, line, kind, why, _label(scope))
            await response(scope, receive, send)

    def _timed(self, receive: Receive) -> Receive:
        """``receive``, with the body timeout until the body has come whole (then the app's
        watch for a departure waits as long as the answer takes)."""
        reading = True

        async def timed() -> Message:
            nonlocal reading
            if not reading:
                return await receive()
            try:
                async with asyncio.timeout(self.body_timeout):
                    message = await receive()
            except TimeoutError:
                raise BodyTimeout from None
            reading = message["type"] == "http.request" and message.get("more_body", False)
            return message

        return timed


async def _no_websocket(scope: Scope, send: Send) -> None:
    """A WebSocket handshake: refused with a 400 in the route's shape where the server lets
    an app answer one with an HTTP response, else closed (the proxy relays HTTP only)."""
    state: ProxyState = scope["app"].state.proxy
    line = Line("GET", scope["path"], status=400)
    why = "the proxy relays HTTP requests only, not WebSocket"
    _count(state, line, "bad_request", why, "other")
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    response = json_error(api_of(scope["path"], scope["headers"]), 400, why)
    start = {"status": 400, "headers": response.raw_headers}
    await send({"type": "websocket.http.response.start", **start})
    await send({"type": "websocket.http.response.body", "body": response.body})


async def _unread() -> Message:  # pragma: no cover - a whole Response never receives
    return {"type": "http.disconnect"}


def _said(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _count(state: ProxyState, line: Line, kind: str, error: str, route: str | None = None) -> None:
    """An error the guard met: counted under its kind (and, when the guard answers it,
    ``route`` and the line's status), and logged."""
    state.metrics.errors.labels(kind).inc()
    if route is not None:
        state.metrics.requests.labels(route, str(line.status)).inc()
    line.error = line.error or error[:300]
    line.emit(state.log_json)


class _Dropped(logging.Filter):
    """Drops the server's report of a connection the proxy dropped on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, ConnectionDropped)


_DROPPED = _Dropped()


def quiet_server_log() -> None:
    """Silence uvicorn's traceback of a dropped connection (once, however many apps)."""
    logging.getLogger("uvicorn.error").addFilter(_DROPPED)
