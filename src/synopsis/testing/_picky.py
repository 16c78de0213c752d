"""What a fake server refuses, as the servers of local models refuse it (see :class:`Picky`),
and how it counts a request's prompt (characters of its JSON over four)."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Picky", "prompt_tokens"]


_OVERFLOWS = ("openai", "anthropic", "vllm", "llamacpp")


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
    request whose prompt takes more tokens than this (400). The prompt is counted as the
    characters of the JSON of its ``messages``, an Anthropic ``system`` and a Responses
    ``input`` and ``instructions``, divided by 4 (what ``POST /v1/messages/count_tokens``
    answers too).
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
    overflow: str = "openai"
    """Whose refusal a request over ``context_window`` gets, in that server's own body:
    ``"openai"`` (``context_length_exceeded``, as llama-cpp-python says it too),
    ``"anthropic"`` ("prompt is too long: N tokens > W maximum"; when only ``max_tokens``
    brings it over, "input length and `max_tokens` exceed context limit"), ``"vllm"`` (its
    ``BadRequestError`` body) or ``"llamacpp"`` (llama.cpp's own server:
    ``exceed_context_size_error`` with ``n_prompt_tokens`` and ``n_ctx``)."""

    def __post_init__(self) -> None:
        if self.overflow not in _OVERFLOWS:
            raise ValueError(f"overflow must be one of {_OVERFLOWS}, not {self.overflow!r}")

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
            used = prompt_tokens(body)
            answer = (body.get("max_tokens") or 0) if self.counts_answer else 0
            if used + answer > self.context_window:
                return 400, self._overflow(self.context_window, used, answer, body)
        return None

    def _overflow(
        self, window: int, used: int, answer: int, body: dict[str, Any]
    ) -> dict[str, Any]:
        """The body refusing a prompt of ``used`` tokens (and ``answer`` more, when the answer
        counts) over ``window``, as the server named by ``overflow`` words it."""
        if self.overflow == "anthropic":
            message = (
                f"prompt is too long: {used} tokens > {window} maximum"
                if used > window
                else f"input length and `max_tokens` exceed context limit: {used} + {answer} > "
                f"{window}, decrease input length or `max_tokens` and try again"
            )
            error = {"type": "invalid_request_error", "message": message}
            return {"type": "error", "error": error}
        if self.overflow == "vllm":
            message = (
                f"This model's maximum context length is {window} tokens. However, you "
                f"requested {used + answer} tokens ({used} in the messages, {answer} in the "
                "completion). Please reduce the length of the messages or completion."
            )
            return {
                "object": "error",
                "message": message,
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        if self.overflow == "llamacpp":
            message = "the request exceeds the available context size, try increasing it"
            return {
                "error": {
                    "code": 400,
                    "message": message,
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": used,
                    "n_ctx": window,
                }
            }
        message = (
            f"This model's maximum context length is {window} tokens. "
            f"However, you requested {used} tokens ({used} in the messages, "
            f"{body.get('max_tokens')} in the completion). Please reduce the length "
            "of the messages or completion."
        )
        return _error(message, "invalid_request_error", "context_length_exceeded")


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


def prompt_tokens(body: dict[str, Any]) -> int:
    """A request's prompt in tokens, at 4 characters of its JSON a token: its messages, and an
    Anthropic ``system`` or a Responses ``input`` and ``instructions`` beside them."""
    parts = (body.get(name) for name in ("system", "instructions", "messages", "input"))
    return sum(len(json.dumps(part)) for part in parts if part) // 4


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
