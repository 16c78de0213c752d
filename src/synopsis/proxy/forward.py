"""The upstream's side of a compacting request: sending it, reading what comes back,
the one retry after an overflow, ``count_tokens``, and the answers the client gets (a relayed
stream, a whole body, or an error in its provider's shape)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx2
import orjson
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from synopsis.errors import BudgetUnreachableError
from synopsis.overflows import read
from synopsis.proxy.errors import Api, json_error
from synopsis.proxy.exchange import unchanged
from synopsis.proxy.recorder import noted
from synopsis.proxy.relay import (
    ConnectionDropped,
    forwarded_headers,
    relayed,
    returned_headers,
    usage,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from starlette.types import Receive, Scope, Send

    from synopsis.overflows import Overflow
    from synopsis.proxy.exchange import Exchange
    from synopsis.proxy.logs import Line
    from synopsis.proxy.relay import Departure
    from synopsis.proxy.state import ProxyState

__all__ = [
    "count",
    "ended",
    "forward",
    "streamed",
    "unreachable",
    "upstream_url",
    "why",
]

_READ_ERROR_LIMIT = 1 << 20
"""An upstream's error body is read whole up to here (errors are small); a longer one is
relayed cut, its connection dropped (:class:`Cut`)."""
_LOCAL_COUNT = frozenset({404, 405, 501})
"""An upstream without ``count_tokens`` (a local server): the proxy answers it itself."""


def why(line: Line, response: Response) -> None:
    """An error's own message on its log line, when nothing said more already (both APIs'
    error bodies keep it at ``error.message``)."""
    if isinstance(response, Cut):
        line.error = f"{line.error}; its body passed {_READ_ERROR_LIMIT} bytes: relayed cut"
    elif line.error is None and response.status_code >= 400:
        # Every error the proxy answers without a reason already noted is one of its own.
        line.error = str(orjson.loads(response.body)["error"]["message"])[:300]


def ended(
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
    noted(state.recorder, line)
    line.emit(state.log_json)


def streamed(
    sent: httpx2.Response,
    headers: list[tuple[bytes, bytes]],
    done: Callable[[bytes | None, str | None], None],
) -> StreamingResponse:
    """The upstream's answer, relayed as it comes, with ``headers`` (repeats kept)."""
    response = StreamingResponse(
        relayed(sent, done),
        status_code=sent.status_code,
        background=BackgroundTask(sent.aclose),
    )
    response.raw_headers.extend(headers)
    return response


class Cut(Response):
    """An upstream error whose body passed :data:`_READ_ERROR_LIMIT`: its status, headers
    and the part read, then the connection dropped, so that the client cannot take the part
    for the whole (no ``content-length``: the body is chunked, and never ends)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        framed = (b"content-length", str(len(self.body)).encode())
        headers = [h for h in self.raw_headers if h != framed]
        await send({"type": "http.response.start", "status": self.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": self.body, "more_body": True})
        raise ConnectionDropped("an upstream error body relayed cut")


class _Partial(bytes):
    """The first :data:`_READ_ERROR_LIMIT` bytes of a longer error body."""


def _buffered(content: bytes, status: int, headers: list[tuple[bytes, bytes]]) -> Response:
    response = (Cut if isinstance(content, _Partial) else Response)(content, status_code=status)
    response.raw_headers.extend(headers)
    return response


async def _send(
    exchange: Exchange, departure: Departure, payload: bytes
) -> httpx2.Response | Response:
    """The upstream's response to ``payload`` (its body not read yet), or the error to give
    the client when the upstream cannot be reached or does not answer in time."""
    state, request, route = exchange.state, exchange.request, exchange.route
    client = state.client(route.api)
    upstream = client.build_request(
        request.method,
        upstream_url(state.upstreams[route.api], request.scope),
        content=payload,
        headers=forwarded_headers(request.headers.raw),
    )
    start = time.perf_counter()
    try:
        return await departure.race(client.send(upstream, stream=True))
    except httpx2.TransportError as error:
        return unreachable(state, route.api, exchange.line, error)
    finally:
        took = time.perf_counter() - start
        exchange.line.ms_upstream += took * 1000
        state.metrics.upstream_seconds.labels(route.path).observe(took)


def unreachable(state: ProxyState, api: Api, line: Line, error: httpx2.TransportError) -> Response:
    """The answer to a request the upstream did not take: 504 when it did not answer in
    time, 502 when it could not be reached."""
    if isinstance(error, httpx2.TimeoutException):
        state.metrics.errors.labels("upstream_timeout").inc()
        line.error = "the upstream did not answer in time"
        return json_error(api, 504, f"the upstream did not answer within {state.timeout:g} s")
    state.metrics.errors.labels("upstream_unreachable").inc()
    line.error = f"upstream unreachable: {error}"
    return json_error(api, 502, f"the upstream could not be reached: {error}")


async def forward(exchange: Exchange, departure: Departure, payload: bytes) -> Response:
    state, route = exchange.state, exchange.route
    sent = await _send(exchange, departure, payload)
    if isinstance(sent, Response):
        return sent
    if sent.status_code >= 400:
        error = await _read_error(sent, departure)
        if exchange.items is not None and not exchange.line.retried:
            overflow = read(sent.status_code, error, payload)
            retry = None if overflow is None else await _retry(exchange, departure, overflow)
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
            return json_error(route.api, 502, "the upstream broke off its answer")
        finally:
            await sent.aclose()
        _calibrate(exchange, data)
        return _buffered(data, sent.status_code, _headers(exchange, sent))

    def done(ends: bytes | None, failure: str | None) -> None:
        if ends is not None:
            _calibrate(exchange, ends)
        ended(state, exchange.line, exchange.started, ends, failure)

    return streamed(sent, _headers(exchange, sent), done)


async def _retry(exchange: Exchange, departure: Departure, overflow: Overflow) -> Response | None:
    """The upstream said the request is too long: learn the window it names, when its figures
    hold together with what was sent, compact harder (forced) and send once more; None when
    there is nothing more to do."""
    state, route, line = exchange.state, exchange.route, exchange.line
    state.metrics.retries.labels(route.path).inc()
    before = exchange.result
    fits = overflow.fitting(before.tokens_after if before is not None else None)
    compactors, model, upstream = state.compactors, exchange.model, exchange.upstream
    if fits is not None and compactors.learn_window(
        model, fits, upstream=upstream, limit=overflow.window
    ):
        line.window = compactors.window(model, upstream)
    # The first pass read this history, so a forced one does too.
    try:
        await exchange.compact(departure, force=True)
    except BudgetUnreachableError as unfit:
        # The window the upstream named is too small for what must be kept: its own refusal
        # says so best, as it came.
        exchange.result = None
        line.failed_open = type(unfit).__name__
        line.error = f"budget unreachable: {unfit}"[:300]
    result, items = exchange.result, exchange.items
    # Failed, or nothing left to cut (the client's own history back): sending again could
    # only be refused again, so the client gets the refusal as it came.
    if result is None or items is None or unchanged(result, items, exchange.system):
        exchange.result = before
        return None
    exchange.note()
    line.retried = True
    return await forward(exchange, departure, exchange.payload())


async def _read_error(response: httpx2.Response, departure: Departure) -> bytes:
    """An upstream error's body (errors are small): whole, or, past the limit, its start as
    a :class:`_Partial`, which the client gets :class:`Cut`."""
    data = bytearray()
    try:
        async for chunk in _bounded(response):
            data += chunk
    finally:
        await response.aclose()
    if len(data) > _READ_ERROR_LIMIT:
        return _Partial(data[:_READ_ERROR_LIMIT])
    return bytes(data)


async def _bounded(response: httpx2.Response) -> AsyncIterator[bytes]:
    """The body's chunks until one byte more than the limit has come (the sign that it is
    longer)."""
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        yield chunk
        if size > _READ_ERROR_LIMIT:
            return


def _headers(exchange: Exchange, response: httpx2.Response) -> list[tuple[bytes, bytes]]:
    """The upstream's headers (repeats kept, ``set-cookie`` say) and the proxy's own."""
    own = [(k.encode(), v.encode("latin-1")) for k, v in exchange.headers().items()]
    return [*returned_headers(response.headers), *own]


def _count_tokens(exchange: Exchange) -> None:
    result, metrics, path = exchange.result, exchange.state.metrics, exchange.route.path
    if result is not None:
        metrics.tokens_before.labels(path).inc(result.tokens_before)
        metrics.tokens_after.labels(path).inc(result.tokens_after)


def _calibrate(exchange: Exchange, ends: bytes) -> None:
    """The upstream's reported prompt tokens against synopsis's count of what was sent (and
    against a window learnt there, which the answer may show to be wrong)."""
    line, result, compactors = exchange.line, exchange.result, exchange.state.compactors
    reported = usage(ends, anthropic=exchange.route.api == "anthropic")
    line.usage = reported
    if reported is None:
        return
    counted = result.tokens_after if result is not None and not line.failed_open else None
    upstream = exchange.upstream
    if compactors.calibrate(exchange.model, reported, counted, upstream=upstream):
        line.window = compactors.window(exchange.model, upstream)


async def count(exchange: Exchange, departure: Departure, payload: bytes) -> Response:
    """``count_tokens`` for the body as it will be sent: the upstream's count of it, or
    synopsis's own when the upstream has no such endpoint."""
    sent = await _send(exchange, departure, payload)
    if isinstance(sent, Response):
        return sent
    data = await _read_error(sent, departure)
    if sent.status_code in _LOCAL_COUNT and exchange.result is not None:
        answer = orjson.dumps({"input_tokens": exchange.result.tokens_after})
        return Response(answer, media_type="application/json", headers=exchange.headers())
    if sent.status_code >= 400:
        exchange.line.error = f"the upstream answered {sent.status_code}"
    return _buffered(data, sent.status_code, _headers(exchange, sent))


def upstream_url(base: str, scope: Scope) -> str:
    """The request's path on the upstream, under ``base`` (a base that ends in ``/v1`` is not
    given a second one): the path as the client wrote it, percent-escapes and all, so that
    the upstream decodes it once, as the client meant (the guard has refused dot segments and
    escaped slashes, which could climb out of ``base``). The URL is absolute: a path that
    starts ``//`` stays a path on ``base``'s host."""
    path = quote(scope.get("raw_path") or scope["path"].encode(), safe=_PATH_SAFE)
    root = base.rstrip("/")
    if root.endswith("/v1") and path.startswith("/v1/"):
        path = path[3:]
    query = quote(scope["query_string"], safe=_QUERY_SAFE)
    return f"{root}{path}?{query}" if query else f"{root}{path}"


_PATH_SAFE = "/%!$&'()*+,;=:@-._~"
"""What a path keeps as it came (RFC 3986's path characters and escapes): anything else (a
byte outside ASCII, say) is escaped."""
_QUERY_SAFE = _PATH_SAFE + "?"
