"""What Anthropic's answer says of its context management, added to the upstream's answer
(:mod:`.native_anthropic` did the work): ``context_management.applied_edits`` on the message
(in a stream, on its ``message_delta``), and a ``compaction`` block holding synopsis's
summary at the start of the assistant content (in a stream, its ``content_block_start``, one
``compaction_delta`` and ``content_block_stop`` at index 0, the upstream's blocks one index
later). A stream's other events go on byte for byte as the upstream sent them.

With ``pause_after_compaction`` the proxy answers alone (:func:`paused`): the block, with
``stop_reason: "compaction"``, and no upstream call.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import Response, StreamingResponse

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from synopsis.proxy.native_anthropic import Native

__all__ = ["DATA", "EVENT_END", "amended", "answered", "paused"]

EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
"""Where one server-sent event ends."""
DATA = re.compile(rb"^data: ?(.*)$", re.MULTILINE)
_BLOCK_EVENTS = frozenset({"content_block_start", "content_block_delta", "content_block_stop"})


def _management(native: Native) -> dict[str, Any]:
    return {"applied_edits": native.applied}


def amended(
    response: Response,
    stream: Callable[[AsyncIterator[bytes]], AsyncIterator[bytes]],
    amend: Callable[[dict[str, Any]], bool],
) -> Response:
    """The upstream's successful answer told what the proxy did in its place: a stream
    through ``stream``, a JSON body changed by ``amend`` (which says False for a body not in
    the answer's shape, left as it came); any other answer as it came."""
    if response.status_code != 200:
        return response
    if isinstance(response, StreamingResponse):
        response.body_iterator = stream(response.body_iterator)  # type: ignore[arg-type]
        return response
    try:
        body = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        return response  # not an answer: nothing to add to
    if not isinstance(body, dict) or not amend(body):
        return response
    out = Response(orjson.dumps(body), status_code=200)
    out.raw_headers.extend(h for h in response.raw_headers if h[0] != b"content-length")
    return out


def answered(native: Native, response: Response) -> Response:
    """The upstream's successful answer with what the edits did; any other as it came."""

    def amend(body: dict[str, Any]) -> bool:
        if not isinstance(body.get("content"), list):
            return False
        if native.summary is not None:
            body["content"] = [native.block(), *body["content"]]
        body["context_management"] = _management(native)
        return True

    return amended(response, lambda chunks: _rewritten(native, chunks), amend)


async def _rewritten(native: Native, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream, event by event: those that must say more rewritten, the rest as sent."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        start = 0
        for end in EVENT_END.finditer(pending):
            yield _event(native, pending[start : end.end()])
            start = end.end()
        pending = pending[start:]
    if pending:
        yield pending


def _event(native: Native, raw: bytes) -> bytes:
    found = DATA.search(raw)
    if found is None:
        return raw
    try:
        data = orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return raw
    kind = data.get("type") if isinstance(data, dict) else None
    if kind in _BLOCK_EVENTS and native.summary is not None and isinstance(data.get("index"), int):
        data["index"] += 1
    elif kind == "message_delta":
        data["context_management"] = _management(native)
    elif kind == "message_start" and native.summary is not None:
        return raw + b"".join(_sse(e) for e in _block_events(native))
    else:
        return raw
    rewritten: bytes = orjson.dumps(data)
    return raw[: found.start(1)] + rewritten + raw[found.end(1) :]


def _sse(data: dict[str, Any]) -> bytes:
    return b"event: " + str(data["type"]).encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def _block_events(native: Native) -> list[dict[str, Any]]:
    start = {**native.block(), "content": None}
    delta = {
        "type": "compaction_delta",
        "content": native.summary,
        "encrypted_content": native.kept,
    }
    return [
        {"type": "content_block_start", "index": 0, "content_block": start},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
    ]


def paused(native: Native, model: str, *, stream: bool) -> Response:
    """The answer to a request that compacted with ``pause_after_compaction``: the block
    alone, ``stop_reason: "compaction"``; its usage is the compaction's."""
    iteration = {
        "type": "compaction",
        "input_tokens": native.tokens_before,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    usage = {"input_tokens": 0, "output_tokens": 0, "iterations": [iteration]}
    message: dict[str, Any] = {
        "id": f"msg_synopsis_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [native.block()],
        "stop_reason": "compaction",
        "stop_sequence": None,
        "usage": usage,
        "context_management": _management(native),
    }
    if not stream:
        return Response(orjson.dumps(message), media_type="application/json")
    opening = {**message, "content": [], "stop_reason": None}
    del opening["context_management"]
    ending = {
        "type": "message_delta",
        "delta": {"stop_reason": "compaction", "stop_sequence": None},
        "usage": {"output_tokens": 0},
        "context_management": _management(native),
    }
    events = [
        {"type": "message_start", "message": opening},
        *_block_events(native),
        ending,
        {"type": "message_stop"},
    ]
    return Response(b"".join(map(_sse, events)), media_type="text/event-stream")
