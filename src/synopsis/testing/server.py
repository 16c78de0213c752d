"""A fake OpenAI- and Anthropic-compatible HTTP server: scripted answers, recorded requests.

Standard library only: a :class:`~http.server.ThreadingHTTPServer` on ``127.0.0.1`` (a free
port) in a background thread. ``POST /v1/chat/completions``, ``/v1/responses`` and
``/v1/messages`` each pop the next :class:`Reply` from the queue (``script``); with none left
they answer 500. Every request is recorded (path, headers, JSON body) before it is answered.

A request whose body has ``"stream": true`` gets a successful reply as server-sent events in
that endpoint's own format, built from the scripted body (its text split into a few deltas;
see :func:`stream_events`), in a chunked HTTP/1.1 body. ``Reply.cut_after`` breaks such a
stream off after that many text deltas (``cut_cleanly``: ends the body there instead of
dropping the connection), ``Reply.chunk_delay`` paces its events and ``Reply.rewrite`` edits
them. An error status is answered with its JSON body, streamed or not, as the real APIs do.
``picky`` (a :class:`Picky`) refuses what servers of local models refuse, as they refuse it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import select
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "Event",
    "FakeLLMServer",
    "Picky",
    "Recorded",
    "Reply",
    "anthropic_message",
    "chat_completion",
    "response",
    "split",
    "stream_events",
]

PATHS = frozenset({"/v1/chat/completions", "/v1/responses", "/v1/messages"})


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a JSON body, its status, and how long to wait before sending it.

    For a streamed request: ``chunk_delay`` is the pause before each event; ``cut_after``
    stops the stream after that many text deltas, by dropping the connection in the middle of
    the chunked body or, with ``cut_cleanly``, by ending the body there as if it were whole;
    ``rewrite`` edits the events before they are sent (to insert an error event, say).
    """

    body: dict[str, Any]
    status: int = 200
    delay: float = 0.0
    cut_after: int | None = None
    cut_cleanly: bool = False
    chunk_delay: float = 0.0
    rewrite: Callable[[list[Event]], list[Event]] | None = None


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]  # names in lower case
    body: dict[str, Any]


@dataclass(frozen=True)
class Picky:
    """What a server refuses, as OpenAI-compatible servers of local models do (the status and
    the text of each body are those llama-cpp-python 0.3.36's server gave for the same
    request). A refused request is recorded but takes no scripted reply.

    ``json_schema``: a JSON-schema response format (500, a validation error: "Input should be
    'text' or 'json_object'"); ``schema_in_json_mode``: a schema given beside JSON mode (422,
    "Extra inputs are not permitted", as a server whose request model forbids unknown fields
    says it); ``json_mode``: any response format at all (400);
    ``null_content``: a message whose content is null (500, one validation error per way the
    message could have been read, for every message: tens of kilobytes); ``alternation``: two
    messages of one role in a row (500, the chat template's error); ``context_window``: a
    request whose messages take more tokens than this (counted as characters / 4; 400, the
    OpenAI-style context_length_exceeded error).
    """

    json_schema: bool = False
    schema_in_json_mode: bool = False
    json_mode: bool = False
    null_content: bool = False
    alternation: bool = False
    context_window: int | None = None
    counts_answer: bool = False
    """With ``context_window``: the request's ``max_tokens`` counts in the window too (as
    OpenAI's and vLLM's do; llama-cpp-python cuts the answer short instead)."""

    def refusal(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        messages = [m for m in body.get("messages") or body.get("input") or [] if "role" in m]
        kind = _format_kind(body)
        if kind is not None and self.json_mode:
            return 400, _error(
                f"response_format {kind!r} is not supported", "invalid_request_error"
            )
        if kind == "json_object" and self.schema_in_json_mode and _format_has_schema(body):
            detail: list[dict[str, Any]] = [
                {
                    "type": "extra_forbidden",
                    "loc": ("body", "response_format", "schema"),
                    "msg": "Extra inputs are not permitted",
                }
            ]
            return 422, _error(_validation(detail), "invalid_request_error")
        if kind == "json_schema" and self.json_schema:
            detail = [
                {
                    "type": "literal_error",
                    "loc": ("body", "response_format", "type"),
                    "msg": "Input should be 'text' or 'json_object'",
                    "input": "json_schema",
                    "ctx": {"expected": "'text' or 'json_object'"},
                }
            ]
            return 500, _error(_validation(detail), "internal_server_error")
        if self.null_content and any(m.get("content", "") is None for m in messages):
            # As pydantic reads a union: for each message whose content is null, a role
            # error from every kind of message it is not, and the content error of its own.
            detail = [
                {
                    "type": "string_type",
                    "loc": ("body", "messages", i, kind_of, "content"),
                    "msg": "Input should be a valid string",
                    "input": None,
                }
                if kind_of == _KIND_OF_ROLE.get(m["role"])
                else {
                    "type": "literal_error",
                    "loc": ("body", "messages", i, kind_of, "role"),
                    "msg": f"Input should be {_ROLE_OF_KIND[kind_of]!r}",
                    "input": m["role"],
                }
                for i, m in enumerate(messages)
                if m.get("content", "") is None
                for kind_of in _MESSAGE_KINDS
            ]
            return 500, _error(_validation(detail), "internal_server_error")
        if self.alternation and any(
            a["role"] == b["role"] for a, b in itertools.pairwise(messages)
        ):
            message = "Conversation roles must alternate user/assistant/user/assistant/..."
            return 500, _error(message, "internal_server_error")
        if self.context_window is not None:
            used = len(json.dumps(messages)) // 4
            answer = (body.get("max_tokens") or 0) if self.counts_answer else 0
            if used + answer > self.context_window:
                message = (
                    f"This model's maximum context length is {self.context_window} tokens. "
                    f"However, you requested {used} tokens ({used} in the messages, "
                    f"{body.get('max_tokens')} in the completion). Please reduce the length "
                    "of the messages or completion."
                )
                return 400, _error(message, "invalid_request_error", "context_length_exceeded")
        return None


_MESSAGE_KINDS = (
    "ChatCompletionRequestSystemMessage",
    "ChatCompletionRequestUserMessage",
    "ChatCompletionRequestAssistantMessage",
    "ChatCompletionRequestToolMessage",
    "ChatCompletionRequestFunctionMessage",
)


_ROLE_OF_KIND = dict(
    zip(_MESSAGE_KINDS, ("system", "user", "assistant", "tool", "function"), strict=True)
)
_KIND_OF_ROLE = {role: kind for kind, role in _ROLE_OF_KIND.items()}


def _format_kind(body: dict[str, Any]) -> str | None:
    """The response format a request asks for (Chat Completions or Responses), if any."""
    found = body.get("response_format") or (body.get("text") or {}).get("format")
    return found.get("type") if isinstance(found, dict) else None


def _format_has_schema(body: dict[str, Any]) -> bool:
    found = body.get("response_format") or (body.get("text") or {}).get("format")
    return isinstance(found, dict) and "schema" in found


def _validation(detail: list[dict[str, Any]]) -> str:
    """llama-cpp-python's text for a request its schema refused: the errors one per line,
    then where in the server it was raised."""
    count = f"{len(detail)} validation error{'s' if len(detail) > 1 else ''}"
    lines = "\n".join(f"  {error!r}" for error in detail)
    where = '  File "llama_cpp/server/app.py", line 376, in create_chat_completion'
    return f"{count}:\n{lines}\n\n{where}\n    POST /v1/chat/completions"


def _error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


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

    def chunk(choices: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
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


def _sent(events: list[Event], cut_after: int | None) -> Iterator[Event]:
    """The events up to the cut: all of them, or those before the delta after the last one."""
    deltas = 0
    for event in events:
        if cut_after is not None and event.delta:
            if deltas == cut_after:
                return
            deltas += 1
        yield event


@dataclass
class FakeLLMServer:
    """Start with :meth:`start`, stop with :meth:`stop`; ``base_url`` ends in ``/v1``."""

    script: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    picky: Picky = field(default_factory=Picky)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self,
        body: dict[str, Any],
        *,
        status: int = 200,
        delay: float = 0.0,
        cut_after: int | None = None,
        cut_cleanly: bool = False,
        chunk_delay: float = 0.0,
        rewrite: Callable[[list[Event]], list[Event]] | None = None,
    ) -> None:
        self.script.append(Reply(body, status, delay, cut_after, cut_cleanly, chunk_delay, rewrite))

    def error(self, status: int, message: str = "scripted failure", *, delay: float = 0.0) -> None:
        self.add({"error": {"type": "error", "message": message}}, status=status, delay=delay)

    @property
    def root(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            refused = self.picky.refusal(recorded.body)
            if refused is not None:
                return Reply(refused[1], refused[0])
            if self.script:
                return self.script.popleft()
        return Reply({"error": {"type": "error", "message": "no scripted reply left"}}, 500)

    def start(self) -> FakeLLMServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read ``requests`` instead."""

            def handle(self) -> None:
                # a client that hangs up with a stream unread resets the connection
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                # The client may have given up already (a timeout test).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _wait(self, seconds: float) -> bool:
                """Wait ``seconds``, or less if the client hangs up (a timeout test): then the
                answer is False, and this thread is free to end without keeping
                :meth:`FakeLLMServer.stop` waiting."""
                readable, _, _ = select.select([self.connection], [], [], seconds)
                with contextlib.suppress(OSError):
                    return not readable or self.connection.recv(1, socket.MSG_PEEK) != b""
                return False

            def _stream(self, events: list[Event], reply: Reply) -> None:
                """Server-sent events in a chunked body; a cut drops the connection before the
                last chunk, unless ``cut_cleanly`` ends the body there."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for event in _sent(events, reply.cut_after):
                        if reply.chunk_delay and not self._wait(reply.chunk_delay):
                            return
                        data = event.encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    if reply.cut_after is None or reply.cut_cleanly:
                        self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                # after a cut, the connection closes with the body unfinished
                self.close_connection = reply.cut_after is not None and not reply.cut_cleanly

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                if path not in PATHS:
                    self._send(404, {"error": {"type": "not_found", "message": path}})
                    return
                body = json.loads(raw or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = fake._next(Recorded(path, headers, body))
                if reply.delay and not self._wait(reply.delay):
                    return
                if body.get("stream") is True and reply.status < 400:
                    events = stream_events(path, reply.body, body)
                    self._stream(reply.rewrite(events) if reply.rewrite else events, reply)
                else:
                    self._send(reply.status, reply.body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
