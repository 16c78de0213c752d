"""A deadline for a request's headers, which uvicorn does not keep.

uvicorn closes a connection left idle after a response (``timeout_keep_alive``), but one that
opens and sends nothing, or half a request line or header block, it holds for as long as the
client likes: enough such connections and the proxy has no file descriptors left. The server's
HTTP protocol is given a timer: from the connection's opening, and again from each response's
end, the next request's headers must have come whole within ``seconds``, else the connection
is closed. (A body's pauses are the app's to time: :mod:`.guard`.) Bytes that are not HTTP
get their 400 in OpenAI's JSON shape, as every other error of the proxy; with ``--log-json``
the server's own log lines are JSON too (:func:`log_config`).
"""

from __future__ import annotations

import copy
import json
import logging
from typing import TYPE_CHECKING, Any

import orjson
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from synopsis.proxy.errors import error_body

if TYPE_CHECKING:
    import asyncio

__all__ = ["ServerLines", "header_timed", "log_config"]


def header_timed(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (``http=`` in its config), closing a connection whose next
    request's headers have not come whole ``seconds`` after it opened or its last response
    ended."""
    base: Any = AutoHTTPProtocol

    class HeaderTimed(base):  # type: ignore[misc]
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            super().data_received(data)
            if self.cycle is not cycle:  # a request's headers came whole
                self._disarm()

        def send_400_response(self, msg: str) -> None:
            """Bytes that are not an HTTP request: a 400 in OpenAI's shape (no route is known
            yet), where uvicorn writes plain text."""
            said = orjson.dumps(error_body("openai", 400, f"not a valid HTTP request: {msg}"))
            self.transport.write(
                b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(said), said)
            )
            self.transport.close()

        def on_response_complete(self) -> None:
            cycle = self.cycle
            super().on_response_complete()
            # A request read from the same data already (pipelined) has its headers.
            if self.cycle is cycle and not self.transport.is_closing():
                self._arm()

    return HeaderTimed


class ServerLines(logging.Formatter):
    """The server's own log records (uvicorn's warnings and errors) as JSON lines, beside
    the proxy's, so that ``--log-json`` output is JSON throughout."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "event": "server",
            "level": record.levelname.lower(),
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def log_config(as_json: bool) -> dict[str, Any]:
    """uvicorn's logging configuration (``log_config``): its own, or with ``as_json`` the
    same loggers writing :class:`ServerLines`."""
    config = copy.deepcopy(LOGGING_CONFIG)
    if as_json:
        for name in ("default", "access"):
            config["formatters"][name] = {"()": f"{__name__}.ServerLines"}
    return config
