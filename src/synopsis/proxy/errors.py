"""Errors as each API writes them.

A client's SDK turns an error body into its own exception only when the body has its
provider's shape: OpenAI's ``{"error": {"message", "type", "param", "code"}}`` for chat and
Responses, Anthropic's ``{"type": "error", "error": {"type", "message"}}`` for Messages. The
proxy's own errors (a body it cannot read, an upstream it cannot reach) are written so.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import orjson
from starlette.responses import Response

__all__ = [
    "Api",
    "error_body",
    "json_error",
]

Api: TypeAlias = Literal["openai", "anthropic"]
"""Whose error shape a route answers in."""

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    502: "api_error",
    504: "timeout_error",
}
_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    502: "upstream_error",
    504: "timeout",
}


def error_body(api: Api, status: int, message: str, code: str | None = None) -> dict[str, object]:
    """The body ``api`` sends for an error of ``status`` saying ``message``."""
    if api == "anthropic":
        kind = _ANTHROPIC_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = _OPENAI_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def json_error(api: Api, status: int, message: str, **headers: str) -> Response:
    """An error of ``status`` saying ``message``, as ``api`` writes it."""
    body = orjson.dumps(error_body(api, status, message))
    return Response(body, status_code=status, media_type="application/json", headers=headers)
