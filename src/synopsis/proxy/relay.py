"""Talking to the upstream: which headers cross, racing the client's departure, relaying a
stream as bytes, and reading the usage the upstream reports.

Nothing the upstream sends is parsed and rebuilt: a stream is relayed chunk by chunk as it
arrives. Only its first and last few kilobytes are kept aside to read the usage from, which
every provider puts at a stream's start (Anthropic's ``message_start``) or end.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, TypeVar

import httpx2

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Coroutine, Iterable

    from starlette.types import Receive

__all__ = [
    "ClientGone",
    "ConnectionDropped",
    "Departure",
    "forwarded_headers",
    "relayed",
    "returned_headers",
    "usage",
]

T = TypeVar("T")

# Headers of one hop (RFC 9110 section 7.6.1) and framing the proxy redoes itself.
_HOP = frozenset(
    {
        b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
        b"trailer", b"trailers", b"transfer-encoding", b"upgrade", b"host", b"content-length",
        b"accept-encoding",
    }
)  # fmt: skip
_BACK = _HOP | {b"server", b"date"}
"""Not returned: the proxy's server writes its own ``server`` and ``date``, and a duplicate
makes strict clients refuse the response."""
_OWN = b"x-synopsis-"
_KEEP = 8192


def forwarded_headers(raw: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The client's headers (as the server read them, bytes) the upstream gets: all but
    those of this hop and the proxy's own (``x-synopsis-*``), a repeated one as often as it
    came; credentials pass unchanged. Each goes on as the bytes the client sent: a value
    outside ASCII is relayed, not re-encoded (nor refused). The upstream is asked not to
    compress, so that a stream's chunks are relayed as they come."""
    out = [(k, v) for k, v in raw if k.lower() not in _HOP and not k.lower().startswith(_OWN)]
    out.append((b"accept-encoding", b"identity"))
    return out


def returned_headers(headers: httpx2.Headers) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers the client gets (repeated ones kept), as the bytes
    the upstream sent."""
    return [(k.lower(), v) for k, v in headers.raw if k.lower() not in _BACK]


class ClientGone(Exception):
    """The client closed the connection before the response started."""


class ConnectionDropped(Exception):
    """Raised once a response has started and cannot end whole: the server drops the
    client's connection, so that a cut answer never looks complete. What went wrong is
    counted and logged already; the server's own report of it is silenced
    (:mod:`.guard`)."""


class Departure:
    """Watches for the client going away once its body is read (the ASGI ``receive``
    channel then says only ``http.disconnect``), so that compaction and the wait for the
    upstream can be abandoned at once. Stopped before a response streams: the server's own
    watch takes over then.

    The work runs in the request's own task; a departure while it runs cancels that task,
    which :meth:`race` turns into :class:`ClientGone` (no task per step: most steps take
    well under a millisecond)."""

    def __init__(self, receive: Receive) -> None:
        self._host = asyncio.current_task()
        self.gone = False
        self._guarding = False
        self._task: asyncio.Task[None] = asyncio.ensure_future(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.gone = True
        if self._guarding and self._host is not None:
            self._host.cancel()

    async def race(self, work: Coroutine[object, object, T]) -> T:
        """``work``'s value; if the client leaves first, ``work`` is cancelled and
        :class:`ClientGone` raised."""
        if self.gone:
            work.close()  # never started: nothing to cancel
            raise ClientGone
        self._guarding = True
        try:
            return await work
        except asyncio.CancelledError:
            host = self._host
            if not (self.gone and host is not None and host.cancelling()):
                raise  # not the departure's: the server is stopping, say
            host.uncancel()
            raise ClientGone from None
        finally:
            self._guarding = False

    async def stop(self) -> None:
        self._task.cancel()
        # Waited for, not awaited: awaiting it here and swallowing its CancelledError loses
        # coverage's tracer (Python 3.11) for the rest of the coroutine that called stop().
        await asyncio.wait([self._task])


async def relayed(
    response: httpx2.Response, done: Callable[[bytes | None, str | None], None]
) -> AsyncIterator[bytes]:
    """The upstream's bytes as they arrive. However the stream ends, ``done`` hears of it:
    with its first and last few kilobytes (for :func:`usage`) when it ended whole; with
    ``None`` and why when the upstream broke off (the error is raised again, so that the
    client's connection drops rather than end as if the answer were whole); with ``None``
    twice when the client left. The upstream response is closed in every case."""
    head = bytearray()
    tail = b""
    ends: bytes | None = None
    failure: str | None = None
    try:
        async for chunk in response.aiter_raw():
            if len(head) < _KEEP:
                head += chunk[: _KEEP - len(head)]
            tail = (tail + chunk)[-_KEEP:]
            yield chunk
        ends = bytes(head) + b"\n" + tail
    except httpx2.HTTPError as error:
        said = f": {error}" if str(error) else ""
        failure = f"the upstream broke off its answer: {type(error).__name__}{said}"
        raise ConnectionDropped(failure) from error
    finally:
        await response.aclose()
        done(ends, failure)


_USAGE = re.compile(
    rb'"(prompt_tokens|input_tokens|cache_read_input_tokens|cache_creation_input_tokens)"'
    rb"\s*:\s*(\d+)"
)


def usage(data: bytes, *, anthropic: bool) -> int | None:
    """The prompt tokens an upstream reported in a response (or a stream's kept ends): the
    largest count of each kind, Anthropic's cache reads and writes added to its input."""
    found: dict[bytes, int] = {}
    for match in _USAGE.finditer(data):
        key, value = match.group(1), int(match.group(2))
        found[key] = max(found.get(key, 0), value)
    if not found:
        return None
    if anthropic:
        return sum(
            found.get(k, 0)
            for k in (b"input_tokens", b"cache_read_input_tokens", b"cache_creation_input_tokens")
        )
    return found.get(b"prompt_tokens") or found.get(b"input_tokens")
