"""The proxy's ASGI app: :func:`create_app`.

Each compacting route reads the body, names the session (:mod:`.sessions`), compacts the
history through that session's projection for the model the body names, and forwards the
result; every other path is relayed untouched. The client keeps its own history and never
sees a summary: it gets the upstream's answer as the upstream sent it.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import time
from typing import TYPE_CHECKING, Any

import httpx2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount
from starlette.routing import Route as Endpoint

from synopsis.errors import BudgetUnreachableError, ConversationError
from synopsis.models import assumed_window
from synopsis.proxy.bodies import ROUTES, Route
from synopsis.proxy.compactors import Compactors
from synopsis.proxy.defaults import MAX_BODY_SIZE
from synopsis.proxy.defaults import UPSTREAMS as DEFAULT_UPSTREAMS
from synopsis.proxy.errors import json_error
from synopsis.proxy.exchange import Exchange, compared, opened
from synopsis.proxy.forward import (
    count,
    ended,
    forward,
    streamed,
    unreachable,
    upstream_url,
    why,
)
from synopsis.proxy.guard import METHODS, Guard, api_of
from synopsis.proxy.intake import TooLarge, read_body, too_large
from synopsis.proxy.logs import LOGGER, Line
from synopsis.proxy.metrics import Metrics
from synopsis.proxy.native_answers import answered, paused
from synopsis.proxy.native_anthropic import MODES, emulates, prepare
from synopsis.proxy.native_edits import Refused
from synopsis.proxy.native_openai import COMPACT, compact_answer
from synopsis.proxy.native_openai import answered as openai_answered
from synopsis.proxy.native_openai import prepare as openai_prepare
from synopsis.proxy.recorder import Recorder, noted
from synopsis.proxy.relay import (
    ClientGone,
    Departure,
    forwarded_headers,
    returned_headers,
)
from synopsis.proxy.state import ProxyState
from synopsis.proxy.tally import counting, heard, tallied
from synopsis.stores._base import StoreBase
from synopsis.stores.requests import RECORDS_MAX, RECORDS_RETENTION_DAYS
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from os import PathLike

    from starlette.requests import Request

    from synopsis.proxy.errors import Api
    from synopsis.proxy.native_anthropic import Mode

__all__ = ["create_app"]

TOKEN_HEADER = "x-synopsis-token"


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
    body_timeout: float = 60.0,
    max_concurrent: int = 1024,
    max_compactors: int = 64,
    max_body_size: int = MAX_BODY_SIZE,
    record_requests: bool = True,
    records_retention: float = RECORDS_RETENTION_DAYS,
    records_max: int = RECORDS_MAX,
    ui: bool = True,
    context_management: Mode = "auto",
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
    of a stream; ``max_body_size``: the largest request body read, in bytes (a larger one
    gets a 413 without being read whole); ``windows``: a window per model name, over the
    model table. ``body_timeout``: seconds a request body may pause between two chunks (then
    408); ``max_concurrent``: requests handled at once (beyond: 503); ``max_compactors``: the
    models whose compactor is kept (the least recently used is dropped).
    ``record_requests``: each request's figures are written to the store (off the request's
    path; a store that is not one of synopsis's own keeps none), the last
    ``records_retention`` days of them and ``records_max`` at most. ``ui``: the operator's
    page at ``/ui/`` (behind ``auth_token`` too; it needs Jinja2 and a store of synopsis's
    own). Any other
    keyword is a compaction option (``trigger``, ``keep``, ``summarizer``, ``store``, …) as
    ``Compactor`` takes it; sessions need a store, ``"memory"`` unless one is given.
    ``context_management``: who does the providers' own context management (Anthropic's
    ``context_management`` edits on ``/v1/messages``; OpenAI's Responses compaction,
    ``context_management`` and ``POST /v1/responses/compact``): the proxy (``"emulate"``),
    the upstream (``"pass"``), or the proxy unless the upstream is the provider's own API
    (``"auto"``).
    ``transport``: an httpx2 transport for the upstream (tests).
    """
    if auth_token == "":
        raise ValueError("auth_token is empty: give a token, or None for no authentication")
    if context_management not in MODES:
        raise ValueError(f"context_management must be one of {', '.join(MODES)}")
    metrics = Metrics()
    # Each compactor tells the current request's record what happened inside its compaction.
    options["listeners"] = (*options.get("listeners", ()), heard)
    state = ProxyState(
        compactors=Compactors(
            config=config,
            environ=environ,
            windows=windows,
            remembered_sessions=remembered_sessions,
            max_compactors=max_compactors,
            observe_summarizer=tallied(metrics.summarizer_call),
            unknown_model=functools.partial(_unknown_model, metrics),
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
        max_body_size=max_body_size,
        native_anthropic=emulates(context_management, upstream_anthropic),
        native_openai=emulates(context_management, upstream_openai, "openai"),
        strict_openai=context_management == "emulate",
    )
    store = state.compactors.store
    if record_requests and isinstance(store, StoreBase):
        state.recorder = Recorder(
            store,
            metrics,
            retention_days=records_retention,
            keep=records_max,
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
        if state.recorder is not None:
            state.recorder.start()
        try:
            yield
        finally:
            if state.recorder is not None:
                await state.recorder.stop()
            for client in state.clients.values():
                await client.aclose()
            state.compactors.close()

    routes: list[BaseRoute] = [
        Endpoint("/healthz", _health, methods=["GET"]),
        Endpoint("/metrics", _metrics, methods=["GET"]),
        *(Endpoint(r.path, _compacting(r), methods=["POST"]) for r in ROUTES),
    ]
    if state.native_openai:
        routes.append(Endpoint(COMPACT.path, _compacting(COMPACT), methods=["POST"]))
    if ui and isinstance(store, StoreBase):
        routes += _page(state, store, windows)
    routes.append(Endpoint("/{path:path}", _passthrough, methods=_METHODS))
    guard = Middleware(Guard, body_timeout=body_timeout, max_concurrent=max_concurrent)
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[guard])
    app.state.proxy = state
    return app


_METHODS = list(METHODS)


def _page(
    state: ProxyState, store: StoreBase, windows: Mapping[str, int] | None
) -> list[BaseRoute]:
    """The operator's page at ``/ui/``, over the proxy's own store, behind its token; it marks
    a session's chart with the window and trigger its compactor takes."""
    try:
        from synopsis.ui.app import create_ui  # noqa: PLC0415 - Jinja2 is needed only here
    except ImportError as error:
        raise ImportError(f"{error}; or serve without it: --no-ui") from None
    from synopsis.ui.data import limits_for  # noqa: PLC0415

    settings = state.compactors.settings
    limits = limits_for(
        settings.trigger_policy(), window=settings.context_window, windows=dict(windows or {})
    )
    page = create_ui(store, auth_token=state.auth_token, limits=limits)

    async def to_page(request: Request) -> Response:
        return RedirectResponse("/ui/", status_code=308)

    return [Endpoint("/ui", to_page, methods=["GET"]), Mount("/ui", app=page)]


def _unknown_model(metrics: Metrics, model: str) -> None:
    """A request named a model the table does not know: said once, where an operator looks."""
    metrics.unknown_model()
    shown = repr(model)[1:-1]  # a client's name: escaped, so it cannot forge a log line
    hint = f"--model-window {shown}=TOKENS, or --window TOKENS for every model"
    LOGGER.warning("%s", assumed_window(model, hint))


def _state(request: Request) -> ProxyState:
    found: ProxyState = request.app.state.proxy
    return found


async def _health(request: Request) -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")


async def _metrics(request: Request) -> Response:
    return Response(_state(request).metrics.render(), media_type="text/plain; version=0.0.4")


def _refused(state: ProxyState, request: Request, api: Api) -> Response | None:
    """401 without the inbound token, when one is configured."""
    if state.auth_token is None:
        return None
    given = request.headers.get(TOKEN_HEADER, "").encode("latin-1")  # the bytes as sent
    if hmac.compare_digest(given, state.auth_token.encode()):
        return None
    state.metrics.errors.labels("unauthorized").inc()
    return json_error(api, 401, f"this proxy needs its token in the {TOKEN_HEADER} header")


def _api_of(request: Request) -> Api:
    return api_of(request.url.path, request.headers.raw)


def _compacting(route: Route) -> Any:  # noqa: ANN401 - a Starlette endpoint
    async def endpoint(request: Request) -> Response:
        state = _state(request)
        refused = _refused(state, request, route.api)
        if refused is not None:
            return _finish(state, route.path, Line(request.method, request.url.path), refused)
        line, started = Line(request.method, request.url.path), time.perf_counter()
        try:
            raw = await read_body(request, state.max_body_size)
        except TooLarge:
            return _early(state, route.path, line, started, too_large(state, route.api, line))
        except ClientGone:
            return _early(state, route.path, line, started, _gone(state, line))
        exchange = opened(state, route, request, raw, line=line, started=started)
        if not isinstance(exchange, Exchange):
            return _early(state, route.path, line, started, exchange)
        counting(exchange.line, functools.partial(compared, exchange))
        # Watched only once the body is read: the watch reads the same channel.
        departure = Departure(request.receive)
        try:
            response = await _exchange(exchange, departure)
        except ClientGone:
            response = _gone(state, line)
        finally:
            await departure.stop()
        exchange.line.ms_total = (time.perf_counter() - exchange.started) * 1000
        return _finish(state, route.path, exchange.line, response)

    return endpoint


def _gone(state: ProxyState, line: Line) -> Response:
    """What is logged for a client that left before its answer started (it gets nothing)."""
    state.metrics.errors.labels("client_gone").inc()
    line.error = "the client went away"
    return Response(status_code=499)


def _early(
    state: ProxyState, label: str, line: Line, started: float, response: Response
) -> Response:
    """:func:`_finish` for an answer of the proxy's own (no upstream response to relay), with
    its time so far."""
    line.ms_total = (time.perf_counter() - started) * 1000
    return _finish(state, label, line, response)


def _finish(state: ProxyState, label: str, line: Line, response: Response) -> Response:
    """Count the answer under ``label`` (the route, or "other"); log it now, or, for a relayed
    stream, when the stream ends (with the usage it reported and its whole time)."""
    line.status = response.status_code
    state.metrics.requests.labels(label, str(response.status_code)).inc()
    if not isinstance(response, StreamingResponse):
        why(line, response)
        noted(state.recorder, line)
        line.emit(state.log_json)
    return response


async def _exchange(exchange: Exchange, departure: Departure) -> Response:
    state, route = exchange.state, exchange.route
    api = route.api
    try:
        counting = route.path.endswith("/count_tokens")
        if route is COMPACT:
            return await compact_answer(exchange, departure)
        native = (
            await prepare(exchange, departure, counting=counting)
            if state.native_anthropic and api == "anthropic"
            else None
        )
        compaction = (
            await openai_prepare(exchange, departure, strict=state.strict_openai)
            if state.native_openai and route.format == "responses"
            else None
        )
        if native is not None and native.pause:
            return paused(native, exchange.model, stream=exchange.line.stream)
        await exchange.compact(departure)
    except ConversationError as error:
        state.metrics.errors.labels("bad_request").inc()
        return json_error(api, 400, f"synopsis cannot read this history: {error}")
    except Refused as error:
        state.metrics.errors.labels("bad_request").inc()
        return json_error(api, 400, f"synopsis cannot emulate this context_management: {error}")
    except BudgetUnreachableError as error:
        # The upstream would refuse it as it is: said here, in its own shape, at no cost.
        # (--forward-unreachable sends it on unchanged instead.)
        state.metrics.errors.labels("budget_unreachable").inc()
        exchange.line.error = f"budget unreachable: {error}"[:300]
        return json_error(api, 400, f"synopsis cannot fit this request into the window: {error}")
    except ClientGone:
        raise
    except Exception as error:  # fail closed: compact() re-raised it
        return json_error(api, 500, f"synopsis could not compact this request: {error}")
    exchange.note()
    payload = exchange.payload()
    if state.log_bodies:
        exchange.line.body = payload.decode("utf-8", "replace")
    if counting:
        return await count(exchange, departure, payload)
    response = await forward(exchange, departure, payload)
    if compaction is not None:
        return openai_answered(compaction, response)
    return response if native is None else answered(native, response)


async def _passthrough(request: Request) -> Response:
    """Any other path, relayed as it is to the upstream its headers point to."""
    state = _state(request)
    api = _api_of(request)
    line = Line(request.method, request.url.path)
    started = time.perf_counter()
    refused = _refused(state, request, api)
    if refused is not None:
        return _early(state, "other", line, started, refused)
    try:
        content = await read_body(request, state.max_body_size)
    except TooLarge:
        return _early(state, "other", line, started, too_large(state, api, line))
    except ClientGone:
        return _early(state, "other", line, started, _gone(state, line))
    client = state.client(api)
    upstream = client.build_request(
        request.method,
        upstream_url(state.upstreams[api], request.scope),
        content=content,
        headers=forwarded_headers(request.headers.raw),
    )
    try:
        sent = await _raced(request, client, upstream)
    except httpx2.TransportError as error:
        return _early(state, "other", line, started, unreachable(state, api, line, error))
    except ClientGone:
        return _early(state, "other", line, started, _gone(state, line))
    line.ms_upstream = line.ms_total = (time.perf_counter() - started) * 1000

    def done(ends: bytes | None, failure: str | None) -> None:
        ended(state, line, started, ends, failure)

    return _finish(state, "other", line, streamed(sent, returned_headers(sent.headers), done))


async def _raced(
    request: Request, client: httpx2.AsyncClient, upstream: httpx2.Request
) -> httpx2.Response:
    """The upstream's response (its body not read yet), raced with the client's departure,
    as on the compacting routes: a client that leaves before the upstream's headers has the
    upstream request closed at once, not held (with its pooled connection) until --timeout."""
    departure = Departure(request.receive)
    try:
        return await departure.race(client.send(upstream, stream=True))
    finally:
        await departure.stop()
