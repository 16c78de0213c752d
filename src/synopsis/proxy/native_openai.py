"""OpenAI's Responses compaction done by the proxy, for an upstream that has none.

``POST /v1/responses/compact`` is answered here (:func:`compact_answer`), and a
``/v1/responses`` request's ``context_management: [{"type": "compaction",
"compact_threshold": N}]`` is applied here (:func:`prepare`): over the threshold its input is
compacted before it goes on, and the answer's output gains the ``compaction`` item
(:func:`answered`). Either way the item is synopsis's own: its ``encrypted_content`` is
``synopsis:`` and a JSON object a person can read (the summary, the store session holding the
originals, what it covers, the items kept whole before it), which the proxy reads back when
the client sends it in a later ``input`` (:func:`expanded`): everything before it dropped,
the item a user message holding the summary. OpenAI's own items, readable only by OpenAI,
are refused (:class:`~.native_edits.Refused`), never dropped.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import Response

from synopsis.formats import decode
from synopsis.messages import is_summary
from synopsis.proxy.bodies import Route
from synopsis.proxy.encoding import dumps, exact, inexact
from synopsis.proxy.native_answers import DATA, EVENT_END, amended
from synopsis.proxy.native_edits import Refused

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from synopsis.compaction import CompactionResult
    from synopsis.proxy.exchange import Exchange
    from synopsis.proxy.relay import Departure

__all__ = ["COMPACT", "MARK", "Native", "answered", "compact_answer", "expanded", "prepare"]

COMPACT = Route("/v1/responses/compact", "responses", "openai", "input")
"""The compact endpoint, read as a Responses body (its ``input`` and ``instructions``)."""
MARK = "synopsis:"
"""How a compaction item's ``encrypted_content`` says it is synopsis's."""
_AS_ASKED = {
    "context_window": 1_000_000_000,
    "trigger": "tokens:1",
    "truncate_args": False,
    "dedupe_results": False,
    "message_threshold": None,
    "keep": "messages:0",
    "protect_first_user": False,
}
"""A compaction of everything synopsis may summarize: the threshold (or the endpoint's call)
decides that it happens, not a window."""


@dataclass(slots=True)
class Native:
    """The compaction item made for one ``/v1/responses`` request, for its answer."""

    item: dict[str, Any]


# -- the items a client sends back ----------------------------------------------------------------


def _is_item(item: object) -> bool:
    return isinstance(item, dict) and item.get("type") == "compaction"


def _canon(items: list[Any]) -> str:
    """A digest of ``items`` that survives a client's replay: ids and statuses left out (the
    Agents SDK drops an assistant message's id when it stores the compacted window)."""
    plain = [
        {k: v for k, v in item.items() if k not in ("id", "status")}
        if isinstance(item, dict)
        else item
        for item in items
    ]
    return hashlib.sha256(dumps(plain, sort_keys=True)).hexdigest()[:16]


def _foreign(item: dict[str, Any]) -> bool:
    content = item.get("encrypted_content")
    return not isinstance(content, str) or not content.startswith(MARK)


def _read(item: dict[str, Any], where: str) -> dict[str, Any]:
    """The JSON a synopsis item carries; OpenAI's own is refused."""
    content = item.get("encrypted_content")
    if not isinstance(content, str) or _foreign(item):
        raise Refused(
            f"{where} is a compaction item of OpenAI's own: only OpenAI's API can read its "
            "encrypted_content, and this upstream is not it (compact with synopsis instead)"
        )
    try:
        mark = orjson.loads(content.removeprefix(MARK))
    except orjson.JSONDecodeError:
        mark = None
    if not isinstance(mark, dict) or not isinstance(mark.get("summary"), str):
        raise Refused(f"{where}.encrypted_content is not a compaction item synopsis wrote")
    return mark


def expanded(items: list[Any], *, strict: bool = True) -> list[Any]:
    """``items`` as the upstream can read them: everything before the last compaction item
    dropped but the items it says were kept whole (when the client still has them as they
    were), the item itself a user message holding its summary. ``items`` itself when it
    holds none, or (``strict`` false) when the last is OpenAI's own: an upstream that is not
    OpenAI's host may still be a gateway to it. ``strict``: OpenAI's own items, and its
    ``compaction_trigger``, are refused."""
    if strict and any(isinstance(i, dict) and i.get("type") == "compaction_trigger" for i in items):
        # The API compacts the context there, with no documented answer to emulate.
        raise Refused(
            "synopsis does not emulate the compaction_trigger item: compact with "
            "POST /v1/responses/compact, or context_management"
        )
    at = next((i for i in range(len(items) - 1, -1, -1) if _is_item(items[i])), None)
    if at is None or (not strict and _foreign(items[at])):
        return items
    mark = _read(items[at], f"input.{at}")
    kept: list[Any] = []
    count, place = mark.get("kept"), mark.get("at")
    if isinstance(count, int) and isinstance(place, int) and 0 < count <= at:
        candidates = items[at - count : at]
        if _canon(candidates) == mark.get("digest"):
            kept = candidates
    place = place if isinstance(place, int) and 0 <= place <= len(kept) else 0
    return [*kept[:place], _summary(mark["summary"]), *kept[place:], *items[at + 1 :]]


def _summary(text: str) -> dict[str, Any]:
    """The summary as synopsis's compaction gave it to the upstream (the same bytes each
    time: the upstream's prompt cache keeps it)."""
    return {"role": "user", "content": text}


# -- compacting -----------------------------------------------------------------------------------


async def _compacted(
    exchange: Exchange, departure: Departure, items: list[Any]
) -> tuple[list[Any], int, dict[str, Any], CompactionResult] | None:
    """``items`` summarized by synopsis (what it must keep whole kept), where the summary is
    in them, and the compaction item that stands for it; None when nothing was summarized."""
    session = f"{exchange.session}:compact"
    compactor = exchange.state.compactors.variant(exchange.model, **_AS_ASKED)
    result = await departure.race(
        compactor.acompact(
            items,
            system=exchange.system,  # type: ignore[arg-type]
            tools=exchange.tools,  # type: ignore[arg-type]
            session_id=session,
            format="responses",
            force=True,
            threaded="compaction",
        )
    )
    out = list(result.messages)
    decoded = decode(out, "responses").messages
    at = next((i for i, m in enumerate(decoded) if is_summary(m)), None)
    if at is None:
        return None
    kept = [*out[:at], *out[at + 1 :]]
    record = result.record
    covers = record.covers.ids if record is not None else ()
    mark = {
        "summary": decoded[at].text,
        "session": session,
        "record": record.id if record is not None else None,
        "covers": len(covers),
        "first": covers[0] if covers else None,
        "last": covers[-1] if covers else None,
        "kept": len(kept),
        "at": at,
        "digest": _canon(kept),
    }
    item = {
        "type": "compaction",
        "id": f"cmp_synopsis_{uuid.uuid4().hex[:24]}",
        "encrypted_content": MARK + dumps(mark).decode(),
    }
    return out, at, item, result


async def compact_answer(exchange: Exchange, departure: Departure) -> Response:
    """``POST /v1/responses/compact``, answered by the proxy: the window the client goes on
    with (the items synopsis kept whole, then the compaction item) and its usage."""
    if exchange.items is None:
        raise Refused(
            "synopsis compacts the input it is sent: previous_response_id names a response "
            "only OpenAI's API keeps (send the input, with store=false)"
        )
    items = expanded(exchange.items)
    made = await _compacted(exchange, departure, items)
    if made is None:
        raise Refused("the input holds nothing synopsis can summarize")
    out, at, item, result = made
    window = [*out[:at], *out[at + 1 :], item]
    used = {
        "input_tokens": result.tokens_before,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": result.tokens_after,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": result.tokens_before + result.tokens_after,
    }
    body = {
        "id": f"resp_synopsis_{uuid.uuid4().hex[:24]}",
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": window,
        "usage": used,
    }
    return Response(dumps(body), media_type="application/json")


# -- context_management on /v1/responses ----------------------------------------------------------


def _threshold(value: object) -> int:
    """The ``compact_threshold`` of a request's ``context_management``."""
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], dict):
        raise Refused('context_management must be [{"type": "compaction", ...}]')
    entry = value[0]
    if entry.get("type") != "compaction":
        raise Refused(f"synopsis emulates the compaction context_management, not {entry!r}")
    unknown = set(entry) - {"type", "compact_threshold"}
    if unknown:
        raise Refused(f"context_management.0.{min(unknown)} is not a field synopsis emulates")
    threshold = entry.get("compact_threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        # The API's default is undocumented: synopsis will not guess one.
        raise Refused("context_management.0.compact_threshold must be a whole number >= 1")
    return threshold


def _tokens(exchange: Exchange, items: list[Any]) -> int:
    counter = exchange.state.compactors.for_model(exchange.model, exchange.upstream).setup.counter
    messages = decode(items, "responses", system=exchange.system).messages
    tools = exchange.tools if isinstance(exchange.tools, list) else None
    return int(counter.count_messages(messages, tools=tools))


async def prepare(exchange: Exchange, departure: Departure, *, strict: bool) -> Native | None:
    """A ``/v1/responses`` request made readable by the upstream: its synopsis compaction
    item expanded, its ``context_management`` applied and taken off. None (the request goes
    on untouched) when it has neither. ``strict``: OpenAI's own compaction items are
    refused (else they go on as they came, with what follows them)."""
    body, items = exchange.body, exchange.items
    managed = "context_management" in body
    if items is None:
        if managed and body.get("previous_response_id") is not None:
            raise Refused(
                "synopsis cannot compact a response only OpenAI's API keeps: send the input "
                "itself (store=false) instead of previous_response_id"
            )
        if managed:
            _replace(exchange, None)
        return None
    out = expanded(items, strict=strict)
    native = None
    if managed:
        threshold = _threshold(body["context_management"])
        if _tokens(exchange, out) >= threshold:
            made = await _compacted(exchange, departure, out)
            if made is not None:
                out, _, item, _ = made
                native = Native(item)
    if out is items and not managed:
        return None
    _replace(exchange, out)
    return native


def _replace(exchange: Exchange, items: list[Any] | None) -> None:
    """``exchange`` without ``context_management``, with ``items`` for its input (None: the
    input as it came)."""
    source = exact(exchange.raw) if inexact(exchange.raw) else exchange.body
    body = {k: v for k, v in source.items() if k != "context_management"}
    if items is not None:
        body["input"] = items
        exchange.items = items
    exchange.body = body
    exchange.raw = dumps(body)


def answered(native: Native, response: Response) -> Response:
    """The upstream's answer with the compaction item first in its output, as OpenAI's API
    puts it (the compaction came before the model's reply); any other answer as it came."""

    def amend(body: dict[str, Any]) -> bool:
        if not isinstance(body.get("output"), list):
            return False
        body["output"] = [native.item, *body["output"]]
        return True

    return amended(response, lambda chunks: _rewritten(native, chunks), amend)


_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


async def _rewritten(native: Native, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream with the compaction item's ``response.output_item.added`` and ``.done``
    just after ``response.created`` (at output index 0), every later event's
    ``output_index`` and ``sequence_number`` moved on to make room, and the item first in
    the final response's output."""
    shift = [0]  # the sequence numbers inserted so far
    pending = b""
    async for chunk in chunks:
        pending += chunk
        start = 0
        for end in EVENT_END.finditer(pending):
            yield _event(native, pending[start : end.end()], shift)
            start = end.end()
        pending = pending[start:]
    if pending:
        yield pending


def _event(native: Native, raw: bytes, shift: list[int]) -> bytes:
    found = DATA.search(raw)
    if found is None:
        return raw
    try:
        data = orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return raw
    if not isinstance(data, dict):
        return raw
    kind, number = data.get("type"), data.get("sequence_number")
    if isinstance(number, int):
        data["sequence_number"] = number + shift[0]
    if isinstance(data.get("output_index"), int):
        data["output_index"] += 1
    final = data.get("response")
    if kind in _FINAL and isinstance(final, dict) and isinstance(final.get("output"), list):
        final["output"] = [native.item, *final["output"]]
    out = raw[: found.start(1)] + orjson.dumps(data) + raw[found.end(1) :]
    if kind != "response.created":
        return out
    base = data["sequence_number"] if isinstance(number, int) else 0
    shift[0] += 2
    added = {"type": "response.output_item.added", "output_index": 0, "item": native.item}
    done = {**added, "type": "response.output_item.done"}
    return out + b"".join(
        _sse({**event, "sequence_number": base + i}) for i, event in enumerate((added, done), 1)
    )


def _sse(data: dict[str, Any]) -> bytes:
    return b"event: " + str(data["type"]).encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
