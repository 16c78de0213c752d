"""What the fake server sends: answer bodies as each API gives them, and those answers as
server-sent events in each API's own streaming format."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "Event",
    "anthropic_message",
    "chat_completion",
    "embeddings",
    "models",
    "response",
    "split",
    "stream_events",
]


def chat_completion(text: str, *, model: str = "gpt-test", usage: bool = True) -> dict[str, Any]:
    """A ``/v1/chat/completions`` answer whose message is ``text``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": 900,
            "completion_tokens": 80,
            "total_tokens": 980,
            "prompt_tokens_details": {"cached_tokens": 100},
            "completion_tokens_details": {"reasoning_tokens": 30},
        }
    return body


def response(text: str, *, model: str = "gpt-test", usage: bool = True) -> dict[str, Any]:
    """A ``/v1/responses`` answer whose output text is ``text``."""
    body: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1700000000,
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
    }
    if usage:
        body["usage"] = {
            "input_tokens": 900,
            "input_tokens_details": {"cached_tokens": 100},
            "output_tokens": 80,
            "output_tokens_details": {"reasoning_tokens": 30},
            "total_tokens": 980,
        }
    return body


def anthropic_message(text: str, *, model: str = "claude-test") -> dict[str, Any]:
    """A ``/v1/messages`` answer whose text block is ``text``."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 800,
            "output_tokens": 80,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": None,
        },
    }


def models() -> dict[str, Any]:
    """The ``GET /v1/models`` answer: one model, the one the scripted answers name."""
    return {
        "object": "list",
        "data": [{"id": "gpt-test", "object": "model", "created": 0, "owned_by": "fake"}],
    }


def embeddings(request: dict[str, Any]) -> dict[str, Any]:
    """The ``POST /v1/embeddings`` answer to ``request``: one vector per input (a string, or a
    list of token ids), of ``dimensions`` numbers (8 unless asked), made from a hash of the
    input so the same text always gets the same vector. Each number is a multiple of 1/256, so
    it is the same as a 32-bit float: as ``encoding_format="base64"`` (what the OpenAI SDK
    asks by default) sends it, little-endian."""
    given = request.get("input", "")
    tokens = isinstance(given, list) and bool(given) and all(isinstance(t, int) for t in given)
    inputs = given if isinstance(given, list) and not tokens else [given]
    size = request.get("dimensions") or 8
    data = []
    for index, item in enumerate(inputs):
        digest = hashlib.sha256(json.dumps(item).encode()).digest()
        vector = [digest[i % len(digest)] / 256 for i in range(size)]
        packed: list[float] | str = vector
        if request.get("encoding_format") == "base64":
            packed = base64.b64encode(struct.pack(f"<{size}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": packed})
    used = len(json.dumps(given)) // 4
    return {
        "object": "list",
        "data": data,
        "model": request.get("model", "text-embedding-test"),
        "usage": {"prompt_tokens": used, "total_tokens": used},
    }


# -- streaming ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One server-sent event: its ``event:`` name (None: a bare ``data:`` line), its data, and
    whether it carries a piece of the answer's text (what ``Reply.cut_after`` counts)."""

    name: str | None
    data: dict[str, Any] | str
    delta: bool = False

    def encode(self) -> bytes:
        data = self.data if isinstance(self.data, str) else json.dumps(self.data)
        head = f"event: {self.name}\n" if self.name is not None else ""
        return f"{head}data: {data}\n\n".encode()


def split(text: str, pieces: int = 3) -> list[str]:
    """``text`` in up to ``pieces`` consecutive, non-empty parts (none for an empty text)."""
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _chat_events(body: dict[str, Any], request: dict[str, Any]) -> list[Event]:
    """Chunks as ``/v1/chat/completions`` streams them: the role, the content deltas, the
    finish reason, then (with ``stream_options.include_usage``) a usage chunk, then ``[DONE]``."""
    include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
    head = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    if include_usage:
        head["usage"] = None

    def chunk(choices: list[dict[str, Any]], **fields: object) -> dict[str, Any]:
        return head | {"choices": choices} | fields

    events: list[Event] = []
    for choice in body["choices"]:
        index, text = choice["index"], choice["message"]["content"] or ""
        delta: dict[str, Any] = {"role": "assistant", "content": ""}
        events.append(Event(None, chunk([{"index": index, "delta": delta}])))
        for piece in split(text):
            piece_choice = {"index": index, "delta": {"content": piece}, "finish_reason": None}
            events.append(Event(None, chunk([piece_choice]), delta=True))
        end = {"index": index, "delta": {}, "finish_reason": choice["finish_reason"]}
        events.append(Event(None, chunk([end])))
    if include_usage:
        events.append(Event(None, chunk([], usage=body.get("usage"))))
    return [*events, Event(None, "[DONE]")]


def _responses_events(body: dict[str, Any]) -> list[Event]:
    """Events as ``/v1/responses`` streams them, each with its ``sequence_number``: created,
    in progress, per message its item and part, the text deltas and their ends, and the final
    ``response.<status>`` event carrying the whole response."""
    events: list[Event] = []

    def event(name: str, data: dict[str, Any], *, delta: bool = False) -> None:
        events.append(Event(name, {"type": name, "sequence_number": len(events), **data}, delta))

    pending = body | {"status": "in_progress", "output": [], "usage": None}
    event("response.created", {"response": pending})
    event("response.in_progress", {"response": pending})
    for out_index, item in enumerate(body["output"]):
        added = item | {"status": "in_progress", "content": []}
        event("response.output_item.added", {"output_index": out_index, "item": added})
        for content_index, part in enumerate(item.get("content", [])):
            at = {"item_id": item["id"], "output_index": out_index, "content_index": content_index}
            event("response.content_part.added", at | {"part": part | {"text": ""}})
            for text in split(part["text"]):
                event(
                    "response.output_text.delta", at | {"delta": text, "logprobs": []}, delta=True
                )
            event("response.output_text.done", at | {"text": part["text"], "logprobs": []})
            event("response.content_part.done", at | {"part": part})
        event("response.output_item.done", {"output_index": out_index, "item": item})
    event(f"response.{body['status']}", {"response": body})
    return events


def _anthropic_events(body: dict[str, Any]) -> list[Event]:
    """Events as ``/v1/messages`` streams them: ``message_start`` (the input usage and one
    output token), a ping, per text block its start, deltas and stop, ``message_delta`` (the
    stop reason and the output tokens) and ``message_stop``."""
    events: list[Event] = []

    def event(name: str, data: dict[str, Any] | None = None, *, delta: bool = False) -> None:
        events.append(Event(name, {"type": name, **(data or {})}, delta))

    usage = body["usage"]
    empty: dict[str, Any] = {"content": [], "stop_reason": None, "stop_sequence": None}
    event("message_start", {"message": body | empty | {"usage": usage | {"output_tokens": 1}}})
    event("ping")
    for index, block in enumerate(body["content"]):
        event("content_block_start", {"index": index, "content_block": block | {"text": ""}})
        for text in split(block["text"]):
            piece = {"type": "text_delta", "text": text}
            event("content_block_delta", {"index": index, "delta": piece}, delta=True)
        event("content_block_stop", {"index": index})
    stop = {"stop_reason": body["stop_reason"], "stop_sequence": body["stop_sequence"]}
    event("message_delta", {"delta": stop, "usage": {"output_tokens": usage["output_tokens"]}})
    event("message_stop")
    return events


def stream_events(path: str, body: dict[str, Any], request: dict[str, Any]) -> list[Event]:
    """The events that stream ``body`` (a scripted answer for ``path``) to ``request``."""
    if path == "/v1/chat/completions":
        return _chat_events(body, request)
    if path == "/v1/responses":
        return _responses_events(body)
    return _anthropic_events(body)


def cut_events(events: list[Event], cut_after: int | None) -> Iterator[Event]:
    """The events up to the cut: all of them, or, with ``cut_after``, those before the delta
    after that many."""
    deltas = 0
    for event in events:
        if cut_after is not None and event.delta:
            if deltas == cut_after:
                return
            deltas += 1
        yield event
