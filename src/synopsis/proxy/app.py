"""The proxy's ASGI app: :func:`create_app`.

Each compacting route reads the body, names the session (:mod:`.sessions`), compacts the
history through that session's projection for the model the body names, and forwards the
result; every other path is relayed untouched. The client keeps its own history and never
sees a summary: it gets the upstream's answer as the upstream sent it.
"""

from __future__ import annotations

import contextlib
import hmac
import operator
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx2
import orjson
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route as Endpoint

from synopsis.errors import ConversationError
from synopsis.proxy.bodies import ROUTES, Route
from synopsis.proxy.compactors import Compactors
from synopsis.proxy.defaults import UPSTREAMS as DEFAULT_UPSTREAMS
from synopsis.proxy.errors import Api, error_body, fitting_window, is_overflow
from synopsis.proxy.logs import Line
from synopsis.proxy.metrics import Metrics
from synopsis.proxy.relay import (
    ClientGone,
    Departure,
    forwarded_headers,
    relayed,
    returned_headers,
    usage,
)
from synopsis.proxy.sessions import session_key
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from os import PathLike

    from starlette.requests import Request

    from synopsis.compaction import CompactionResult

__all__ = ["ProxyState", "create_app"]

TOKEN_HEADER = "x-synopsis-token"
_READ_ERROR_LIMIT = 1 << 20
_LOCAL_COUNT = frozenset({404, 405, 501})
"""An upstream without ``count_tokens`` (a local server): the proxy answers it itself."""


@dataclass
class ProxyState:
    """What the app holds while it runs (``app.state.proxy``)."""

    compactors: Compactors
    metrics: Metrics
    upstreams: dict[str, str]
    timeout: float
    connect_timeout: float
    auth_token: str | None
    fail_open: bool
    log_json: bool
    log_bodies: bool
    transport: httpx2.AsyncBaseTransport | None
    clients: dict[str, httpx2.AsyncClient] = field(default_factory=dict)
    stable: dict[str, tuple[object, object]] = field(default_factory=dict)
    """Per session, the system prompt and tools last seen: an equal copy is replaced by them,
    so that the fast path, which knows them by identity, recognises them. The sessions used
    last, in order of use."""
    remembered_sessions: int = 256
    """How many sessions ``stable`` keeps, as the compactors' fast path remembers."""

    def client(self, api: str) -> httpx2.AsyncClient:
        return self.clients[api]


def create_app(
    *,
    upstream_openai: str = DEFAULT_UPSTREAMS["openai"],
    upstream_anthropic: str = DEFAULT_UPSTREAMS["anthropic"],
    auth_token: str | None = None,
    fail_open: bool = True,
    timeout: float = 600.0,
    connect_timeout: float = 10.0,
    log_json: bool = False,
    log_bodies: bool = False,
    windows: Mapping[str, int] | None = None,
    remembered_sessions: int = 256,
    transport: httpx2.AsyncBaseTransport | None = None,
    config: str | PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    **options: Any,  # noqa: ANN401 - Settings options, validated there
) -> Starlette:
    """The proxy as an ASGI app, for ``uvicorn`` or to mount in your own.

    ``upstream_openai`` answers ``/v1/chat/completions``, ``/v1/responses`` and every other
    path; ``upstream_anthropic`` answers ``/v1/messages`` (and any request carrying an
    ``anthropic-version`` or ``x-api-key`` header). ``auth_token``: requests must carry it in
    ``x-synopsis-token``. ``fail_open``: a compaction that fails for a reason other than an
    unreadable history forwards the request unchanged (else the client gets a 500).
    ``timeout``: seconds the upstream may take to start answering, and between two chunks
    of a stream; ``windows``: a window per model name, over the model table. Any other
    keyword is a compaction option (``trigger``, ``keep``, ``summarizer``, ``store``, …) as
    ``Compactor`` takes it; sessions need a store, ``"memory"`` unless one is given.
    ``transport``: an httpx2 transport for the upstream (tests).
    """
    metrics = Metrics()
    state = ProxyState(
        compactors=Compactors(
            config=config,
            environ=environ,
            windows=windows,
            remembered_sessions=remembered_sessions,
            observe_summarizer=metrics.summarizer_call,
            **options,
        ),
        metrics=metrics,
        upstreams={"openai": upstream_openai, "anthropic": upstream_anthropic},
        timeout=timeout,
        connect_timeout=connect_timeout,
        auth_token=auth_token,
        fail_open=fail_open,
        log_json=log_json,
        log_bodies=log_bodies,
        transport=transport,
        remembered_sessions=remembered_sessions,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        limits = httpx2.Timeout(timeout, connect=connect_timeout)
        for api, url in state.upstreams.items():
            state.clients[api] = httpx2.AsyncClient(
                base_url=url.rstrip("/"), timeout=limits, transport=transport
            )
        # The vocabularies load on first use (about a second): not on a client's first request.
        for model in ("gpt-4o", "gpt-4"):
            counter_for_model(model).count_text("warm")
        try:
            yield
        finally:
            for client in state.clients.values():
                await client.aclose()
            state.compactors.close()

    routes = [
        Endpoint("/healthz", _health, methods=["GET"]),
        Endpoint("/metrics", _metrics, methods=["GET"]),
        *(Endpoint(r.path, _compacting(r), methods=["POST"]) for r in ROUTES),
        Endpoint("/{path:path}", _passthrough, methods=_METHODS),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.proxy = state
    return app


_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _state(request: Request) -> ProxyState:
    found: ProxyState = request.app.state.proxy
    return found


async def _health(request: Request) -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")


async def _metrics(request: Request) -> Response:
    return Response(_state(request).metrics.render(), media_type="text/plain; version=0.0.4")


def _json_error(api: Api, status: int, message: str, **headers: str) -> Response:
    body = orjson.dumps(error_body(api, status, message))
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _refused(state: ProxyState, request: Request, api: Api) -> Response | None:
    """401 without the inbound token, when one is configured."""
    if state.auth_token is None:
        return None
    given = request.headers.get(TOKEN_HEADER, "")
    if hmac.compare_digest(given.encode(), state.auth_token.encode()):
        return None
    state.metrics.errors.labels("unauthorized").inc()
    return _json_error(api, 401, f"this proxy needs its token in the {TOKEN_HEADER} header")


def _upstream_url(base: str, path: str, query: str) -> str:
    """``path`` on the upstream; a base that ends in ``/v1`` is not given a second one."""
    if base.rstrip("/").endswith("/v1") and path.startswith("/v1/"):
        path = path[3:]
    return f"{path}?{query}" if query else path


def _api_of(request: Request) -> Api:
    headers = request.headers
    path = request.url.path
    if path.startswith("/v1/messages") or "anthropic-version" in headers or "x-api-key" in headers:
        return "anthropic"
    return "openai"


def _unchanged(result: CompactionResult, items: list[Any], system: object) -> bool:
    """Whether the compaction gave back the client's very history (nothing to re-encode)."""
    return (
        len(result.messages) == len(items)
        and all(map(operator.is_, result.messages, items))
        and result.system is system
    )


class _Exchange:
    """One request on a compacting route, from its body to the upstream's response."""

    def __init__(self, state: ProxyState, route: Route, request: Request) -> None:
        self.state = state
        self.route = route
        self.request = request
        self.line = Line(request.method, request.url.path)
        self.started = time.perf_counter()
        self.result: CompactionResult | None = None
        self.items: list[Any] | None = None
        self.model = ""
        self.session = ""
        self.system: object = None
        self.tools: object = None
        self.headers: dict[str, str] = {}

    async def compact(
        self, departure: Departure, body: dict[str, Any], *, force: bool = False
    ) -> None:
        """Compact the body's history (``self.result``); a failure other than an unreadable
        history leaves ``self.result`` None (fail open) or raises (fail closed)."""
        state, route = self.state, self.route
        items = self.items
        if items is None:
            return
        start = time.perf_counter()
        try:
            compactor = state.compactors.for_model(self.model)
            self.result = await departure.race(
                compactor.acompact(
                    items,
                    system=self.system,  # type: ignore[arg-type]
                    tools=self.tools,  # type: ignore[arg-type]
                    session_id=self.session,
                    format=route.format,
                    force=force,
                )
            )
        except (ClientGone, ConversationError):
            raise
        except Exception as error:
            kind = type(error).__name__
            state.metrics.errors.labels("compaction_failed").inc()
            self.line.failed_open = kind
            self.line.error = str(error)[:300]
            if not state.fail_open:
                raise
            self.result = None
            self.headers["x-synopsis-failed-open"] = kind
        finally:
            took = time.perf_counter() - start
            self.line.ms_compaction += took * 1000
            state.metrics.compaction_seconds.labels(route.path).observe(took)

    def payload(self, raw: bytes, body: dict[str, Any]) -> bytes:
        """The body to forward: the client's bytes when the history is unchanged."""
        result, items = self.result, self.items
        if result is None or items is None or _unchanged(result, items, self.system):
            return raw
        return orjson.dumps(self.route.rebuilt(body, result))

    def note(self) -> None:
        result, line = self.result, self.line
        if result is None:
            return
        line.messages_out = len(result.messages)
        line.tokens_before, line.tokens_after = result.tokens_before, result.tokens_after
        line.compacted = line.compacted or result.compacted
        line.code = result.code
        self.headers["x-synopsis-compacted"] = str(line.compacted).lower()
        self.headers["x-synopsis-tokens"] = f"{result.tokens_before}/{result.tokens_after}"


def _stable(
    state: ProxyState, session: str, system: object, tools: object
) -> tuple[object, object]:
    """``system`` and ``tools``, or the equal objects the session's last request had."""
    last = state.stable.pop(session, None)
    if last is not None:
        system = last[0] if last[0] == system else system
        tools = last[1] if last[1] == tools else tools
    state.stable[session] = (system, tools)
    # A proxy that runs for months sees sessions without end, each with prompts and tools
    # of tens of kilobytes: only those the fast path can still use are kept.
    while len(state.stable) > state.remembered_sessions:
        del state.stable[next(iter(state.stable))]
    return system, tools


def _compacting(route: Route) -> Any:  # noqa: ANN401 - a Starlette endpoint
    async def endpoint(request: Request) -> Response:
        state = _state(request)
        refused = _refused(state, request, route.api)
        if refused is not None:
            return _finish(state, route, Line(request.method, request.url.path), refused)
        exchange = _Exchange(state, route, request)
        raw = await request.body()
        # Watched only once the body is read: the watch reads the same channel.
        departure = Departure(request.receive)
        try:
            response = await _exchange(exchange, departure, raw)
        except ClientGone:
            state.metrics.errors.labels("client_gone").inc()
            exchange.line.error = "the client went away"
            response = Response(status_code=499)
        finally:
            await departure.stop()
        exchange.line.ms_total = (time.perf_counter() - exchange.started) * 1000
        return _finish(state, route, exchange.line, response)

    return endpoint


def _finish(state: ProxyState, route: Route, line: Line, response: Response) -> Response:
    """Count the answer; log it now, or, for a relayed stream, when the stream ends (with the
    usage it reported and its whole time)."""
    line.status = response.status_code
    state.metrics.requests.labels(route.path, str(response.status_code)).inc()
    if not isinstance(response, StreamingResponse):
        _why(line, response)
        line.emit(state.log_json)
    return response


def _why(line: Line, response: Response) -> None:
    """An error's own message on its log line, when nothing said more already (both APIs'
    error bodies keep it at ``error.message``)."""
    if line.error is None and response.status_code >= 400:
        # Every error the proxy answers without a reason already noted is one of its own.
        line.error = str(orjson.loads(response.body)["error"]["message"])[:300]


def _ended(
    state: ProxyState, line: Line, started: float, ends: bytes | None, failure: str | None
) -> None:
    """A relayed stream ended: whole, broken off by the upstream, or left by the client."""
    line.ms_total = (time.perf_counter() - started) * 1000
    if failure is not None:
        state.metrics.errors.labels("upstream_broken").inc()
        line.error = failure
    elif ends is None:
        state.metrics.errors.labels("client_gone").inc()
        line.error = "the client went away during the answer"
    line.emit(state.log_json)


def _relay(
    sent: httpx2.Response,
    headers: list[tuple[str, str]],
    done: Callable[[bytes | None, str | None], None],
) -> StreamingResponse:
    """The upstream's answer, relayed as it comes, with ``headers`` (repeats kept)."""
    response = StreamingResponse(
        relayed(sent, done),
        status_code=sent.status_code,
        background=BackgroundTask(sent.aclose),
    )
    for key, value in headers:
        response.headers.append(key, value)
    return response


def _buffered(content: bytes, status: int, headers: list[tuple[str, str]]) -> Response:
    response = Response(content, status_code=status)
    for key, value in headers:
        response.headers.append(key, value)
    return response


async def _exchange(exchange: _Exchange, departure: Departure, raw: bytes) -> Response:
    state, route, request = exchange.state, exchange.route, exchange.request
    api = route.api
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        state.metrics.errors.labels("bad_request").inc()
        return _json_error(api, 400, f"the request body is not JSON: {error}")
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        state.metrics.errors.labels("bad_request").inc()
        return _json_error(api, 400, "the request body must be a JSON object naming a model")
    exchange.model = body["model"]
    exchange.line.model = exchange.model
    exchange.line.stream = body.get("stream") is True
    exchange.items = route.history(body)
    if exchange.items is not None:
        system, tools = route.system(body), body.get("tools")
        exchange.session = session_key(request.headers, exchange.items, system, tools)
        exchange.system, exchange.tools = _stable(state, exchange.session, system, tools)
        exchange.line.session = exchange.session
        exchange.line.messages_in = len(exchange.items)
        exchange.headers["x-synopsis-session"] = exchange.session
    try:
        await exchange.compact(departure, body)
    except ConversationError as error:
        state.metrics.errors.labels("bad_request").inc()
        return _json_error(api, 400, f"synopsis cannot read this history: {error}")
    except ClientGone:
        raise
    except Exception as error:  # fail closed: compact() re-raised it
        return _json_error(api, 500, f"synopsis could not compact this request: {error}")
    exchange.note()
    payload = exchange.payload(raw, body)
    if state.log_bodies:
        exchange.line.body = payload.decode("utf-8", "replace")
    if route.path.endswith("/count_tokens"):
        return await _count(exchange, departure, payload)
    return await _forward(exchange, departure, body, payload)


async def _send(
    exchange: _Exchange, departure: Departure, payload: bytes
) -> httpx2.Response | Response:
    """The upstream's response to ``payload`` (its body not read yet), or the error to give
    the client when the upstream cannot be reached or does not answer in time."""
    state, request, route = exchange.state, exchange.request, exchange.route
    client = state.client(route.api)
    upstream = client.build_request(
        request.method,
        _upstream_url(state.upstreams[route.api], request.url.path, request.url.query),
        content=payload,
        headers=forwarded_headers(request.headers),
    )
    start = time.perf_counter()
    try:
        return await departure.race(client.send(upstream, stream=True))
    except httpx2.TimeoutException:
        state.metrics.errors.labels("upstream_timeout").inc()
        exchange.line.error = "the upstream did not answer in time"
        return _json_error(
            route.api, 504, f"the upstream did not answer within {state.timeout:g} s"
        )
    except httpx2.TransportError as error:
        state.metrics.errors.labels("upstream_unreachable").inc()
        exchange.line.error = f"upstream unreachable: {error}"
        return _json_error(route.api, 502, f"the upstream could not be reached: {error}")
    finally:
        took = time.perf_counter() - start
        exchange.line.ms_upstream += took * 1000
        state.metrics.upstream_seconds.labels(route.path).observe(took)


async def _forward(
    exchange: _Exchange, departure: Departure, body: dict[str, Any], payload: bytes
) -> Response:
    state, route = exchange.state, exchange.route
    sent = await _send(exchange, departure, payload)
    if isinstance(sent, Response):
        return sent
    if sent.status_code >= 400:
        error = await _read_error(sent, departure)
        if (
            exchange.items is not None
            and not exchange.line.retried
            and is_overflow(sent.status_code, error)
        ):
            retry = await _retry(exchange, departure, body, error)
            if retry is not None:
                return retry
        exchange.line.error = f"the upstream answered {sent.status_code}"
        return _buffered(error, sent.status_code, _headers(exchange, sent))
    if exchange.result is not None and exchange.result.compacted:
        state.metrics.compactions.labels(route.path).inc()
    _count_tokens(exchange)
    if not exchange.line.stream:
        # One JSON answer: read whole and sent as one body, which spares the streamed
        # response's task group (a tenth of a millisecond a request).
        try:
            data = await departure.race(sent.aread())
        except httpx2.HTTPError as error:
            state.metrics.errors.labels("upstream_broken").inc()
            exchange.line.error = f"the upstream broke off its answer: {type(error).__name__}"
            return _json_error(route.api, 502, "the upstream broke off its answer")
        finally:
            await sent.aclose()
        _calibrate(exchange, data)
        return _buffered(data, sent.status_code, _headers(exchange, sent))

    def done(ends: bytes | None, failure: str | None) -> None:
        if ends is not None:
            _calibrate(exchange, ends)
        _ended(state, exchange.line, exchange.started, ends, failure)

    return _relay(sent, _headers(exchange, sent), done)


async def _retry(
    exchange: _Exchange, departure: Departure, body: dict[str, Any], error: bytes
) -> Response | None:
    """The upstream said the request is too long: learn the window it names, compact harder
    (forced) and send once more; None when there is nothing more to do."""
    state, route = exchange.state, exchange.route
    exchange.line.retried = True
    state.metrics.retries.labels(route.path).inc()
    before = exchange.result
    sent = before.tokens_after if before is not None else None
    fits = fitting_window(error, sent)
    if fits is not None and state.compactors.learn_window(exchange.model, fits):
        exchange.headers["x-synopsis-window"] = str(state.compactors.window(exchange.model))
    # The first pass read this history, so a forced one does too.
    await exchange.compact(departure, body, force=True)
    result, items = exchange.result, exchange.items
    # Failed, or nothing left to cut (the client's own history back): sending again could
    # only be refused again, so the client gets the refusal as it came.
    if result is None or items is None or _unchanged(result, items, exchange.system):
        exchange.result = before
        return None
    exchange.note()
    exchange.headers["x-synopsis-retried"] = "overflow"
    return await _forward(exchange, departure, body, exchange.payload(b"", body))


async def _read_error(response: httpx2.Response, departure: Departure) -> bytes:
    """An upstream error's body (errors are small; a huge one is cut)."""
    data = bytearray()
    try:
        async for chunk in _bounded(response):
            data += chunk
    finally:
        await response.aclose()
    return bytes(data)


async def _bounded(response: httpx2.Response) -> AsyncIterator[bytes]:
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        yield chunk
        if size >= _READ_ERROR_LIMIT:
            return


def _headers(exchange: _Exchange, response: httpx2.Response) -> list[tuple[str, str]]:
    """The upstream's headers (repeats kept, ``set-cookie`` say) and the proxy's own."""
    return [*returned_headers(response.headers), *exchange.headers.items()]


def _count_tokens(exchange: _Exchange) -> None:
    result, metrics, path = exchange.result, exchange.state.metrics, exchange.route.path
    if result is not None:
        metrics.tokens_before.labels(path).inc(result.tokens_before)
        metrics.tokens_after.labels(path).inc(result.tokens_after)


def _calibrate(exchange: _Exchange, ends: bytes) -> None:
    """The upstream's reported prompt tokens against synopsis's count of what was sent."""
    reported = usage(ends, anthropic=exchange.route.api == "anthropic")
    exchange.line.usage = reported
    result = exchange.result
    if reported is not None and result is not None and not exchange.line.failed_open:
        exchange.state.compactors.calibrate(exchange.model, reported, result.tokens_after)


async def _count(exchange: _Exchange, departure: Departure, payload: bytes) -> Response:
    """``count_tokens`` for the body as it will be sent: the upstream's count of it, or
    synopsis's own when the upstream has no such endpoint."""
    sent = await _send(exchange, departure, payload)
    if isinstance(sent, Response):
        return sent
    data = await _read_error(sent, departure)
    if sent.status_code in _LOCAL_COUNT and exchange.result is not None:
        answer = orjson.dumps({"input_tokens": exchange.result.tokens_after})
        return Response(answer, media_type="application/json", headers=exchange.headers)
    if sent.status_code >= 400:
        exchange.line.error = f"the upstream answered {sent.status_code}"
    return _buffered(data, sent.status_code, _headers(exchange, sent))


async def _passthrough(request: Request) -> Response:
    """Any other path, relayed as it is to the upstream its headers point to."""
    state = _state(request)
    api = _api_of(request)
    line = Line(request.method, request.url.path)
    started = time.perf_counter()
    refused = _refused(state, request, api)
    if refused is not None:
        return _finish_passthrough(state, line, refused, started)
    client = state.client(api)
    upstream = client.build_request(
        request.method,
        _upstream_url(state.upstreams[api], request.url.path, request.url.query),
        content=await request.body(),
        headers=forwarded_headers(request.headers),
    )
    try:
        sent = await client.send(upstream, stream=True)
    except httpx2.TimeoutException:
        state.metrics.errors.labels("upstream_timeout").inc()
        response: Response = _json_error(api, 504, "the upstream did not answer in time")
        return _finish_passthrough(state, line, response, started)
    except httpx2.TransportError as error:
        state.metrics.errors.labels("upstream_unreachable").inc()
        response = _json_error(api, 502, f"the upstream could not be reached: {error}")
        return _finish_passthrough(state, line, response, started)
    line.ms_upstream = (time.perf_counter() - started) * 1000

    def done(ends: bytes | None, failure: str | None) -> None:
        _ended(state, line, started, ends, failure)

    response = _relay(sent, returned_headers(sent.headers), done)
    return _finish_passthrough(state, line, response, started)


def _finish_passthrough(
    state: ProxyState, line: Line, response: Response, started: float
) -> Response:
    line.status = response.status_code
    line.ms_total = (time.perf_counter() - started) * 1000
    state.metrics.requests.labels("other", str(response.status_code)).inc()
    if not isinstance(response, StreamingResponse):
        _why(line, response)
        line.emit(state.log_json)
    return response
