"""A fake OpenAI- and Anthropic-compatible HTTP server: scripted answers, recorded requests.

Standard library only: a :class:`~http.server.ThreadingHTTPServer` on ``127.0.0.1`` (a free
port) in a background thread. ``POST /v1/chat/completions``, ``/v1/responses`` and
``/v1/messages`` each pop the next :class:`Reply` from the queue (``script``); with none left
they answer 500. Every request is recorded (path, headers, JSON body) before it is answered.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLLMServer", "Recorded", "Reply", "anthropic_message", "chat_completion", "response"]

PATHS = frozenset({"/v1/chat/completions", "/v1/responses", "/v1/messages"})


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a JSON body, its status, and how long to wait before sending it."""

    body: dict[str, Any]
    status: int = 200
    delay: float = 0.0


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]  # names in lower case
    body: dict[str, Any]


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


@dataclass
class FakeLLMServer:
    """Start with :meth:`start`, stop with :meth:`stop`; ``base_url`` ends in ``/v1``."""

    script: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, body: dict[str, Any], *, status: int = 200, delay: float = 0.0) -> None:
        self.script.append(Reply(body, status, delay))

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
            if self.script:
                return self.script.popleft()
        return Reply({"error": {"type": "error", "message": "no scripted reply left"}}, 500)

    def start(self) -> FakeLLMServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read ``requests`` instead."""

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                # The client may have given up already (a timeout test).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

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
                if reply.delay:
                    time.sleep(reply.delay)
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
