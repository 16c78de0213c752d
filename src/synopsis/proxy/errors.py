"""Errors as each API writes them, and the upstream errors that mean "the request is too long".

A client's SDK turns an error body into its own exception only when the body has its
provider's shape: OpenAI's ``{"error": {"message", "type", "param", "code"}}`` for chat and
Responses, Anthropic's ``{"type": "error", "error": {"type", "message"}}`` for Messages. The
proxy's own errors (a body it cannot read, an upstream it cannot reach) are written so.
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

import orjson
from starlette.responses import Response

__all__ = [
    "Api",
    "error_body",
    "fitting_window",
    "is_overflow",
    "json_error",
    "overflow_asked",
    "overflow_limit",
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


# The wordings of "too long" that OpenAI, Anthropic, vLLM, llama.cpp's server and
# llama-cpp-python's send (in a 400 or 413 body). Anthropic words it otherwise when the
# prompt fits but not with the answer's max_tokens: a shorter prompt helps there too.
_OVERFLOW = re.compile(
    rb"context_length_exceeded|prompt is too long|maximum context length|"
    rb"exceed_context_size_error|exceeds the available context size|"
    rb"context window|too many tokens|input is too long|exceed context limit",
    re.IGNORECASE,
)
_LIMITS = (
    re.compile(rb"maximum context length is (\d+)"),
    re.compile(rb"> (\d+)(?: maximum|, decrease)"),
    re.compile(rb'"n_ctx"\s*:\s*(\d+)'),
    re.compile(rb"context window of (\d+)"),
)


def is_overflow(status: int, body: bytes) -> bool:
    """Whether an upstream's error says the request did not fit the model's window."""
    return status in (400, 413, 422) and _OVERFLOW.search(body) is not None


_ASKED = (
    re.compile(rb"\((\d+) in the messages"),
    re.compile(rb"resulted in (\d+) tokens"),
    re.compile(rb"Requested tokens \((\d+)\)"),
    re.compile(rb"prompt is too long: (\d+) tokens"),
    re.compile(rb'"n_prompt_tokens"\s*:\s*(\d+)'),
    re.compile(rb"context limit: (\d+) \+"),
)


def overflow_asked(body: bytes) -> int | None:
    """The prompt tokens an overflow error says the request took, when it says."""
    for pattern in _ASKED:
        found = pattern.search(body)
        if found is not None:
            return int(found.group(1))
    return None


def fitting_window(body: bytes, sent: int | None) -> int | None:
    """The window, in synopsis's own count, that an overflow error shows would have fitted:
    the window it names scaled by how synopsis's count of what was sent (``sent``) compares
    with the upstream's (the two tokenizers differ); the window it names, when it gives no
    count; what was sent, when it names nothing (that much did not fit)."""
    limit, asked = overflow_limit(body), overflow_asked(body)
    if limit is not None and asked and sent:
        return limit * sent // asked
    return limit if limit is not None else sent


def overflow_limit(body: bytes) -> int | None:
    """The window an overflow error names, when it names one."""
    for pattern in _LIMITS:
        found = pattern.search(body)
        if found is not None:
            return int(found.group(1))
    return None
