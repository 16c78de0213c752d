"""Reading a request's body within ``--max-body-size``.

A body is read chunk by chunk as the server hands it over, and given up on the moment it
passes the limit, so that a client cannot make the proxy hold (or wait for) more than that;
a ``Content-Length`` over the limit is refused before a byte is read. The rest of such a body
is never read: the server closes the connection after the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import ClientDisconnect

from synopsis.proxy.errors import json_error
from synopsis.proxy.relay import ClientGone

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from synopsis.proxy.errors import Api
    from synopsis.proxy.logs import Line
    from synopsis.proxy.state import ProxyState

__all__ = ["TooLarge", "read_body", "too_large"]


class TooLarge(Exception):
    """The body is larger than the limit (said by its ``Content-Length``, or found reading)."""


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body; :class:`TooLarge` once it passes ``limit`` bytes, and
    :class:`~.relay.ClientGone` when the client leaves before its end."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge
    data = bytearray()
    try:
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise TooLarge
    except ClientDisconnect:
        raise ClientGone from None
    return bytes(data)


def too_large(state: ProxyState, api: Api, line: Line) -> Response:
    """The 413 a body over the limit gets, in the route's error shape, counted and logged."""
    state.metrics.errors.labels("too_large").inc()
    limit = state.max_body_size
    line.error = f"the request body is over --max-body-size ({limit} bytes)"
    return json_error(
        api, 413, f"the request body is larger than this proxy accepts ({limit} bytes)"
    )
