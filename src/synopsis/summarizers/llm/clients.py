"""Completions over the real SDKs: OpenAI (Chat Completions and Responses) and Anthropic.

Each function takes a client and returns a :data:`~synopsis.summarizers.llm.completion.Completion`
for :class:`~synopsis.summarizers.llm.LLMSummarizer`: a sync callable for ``OpenAI`` /
``Anthropic``, an async one for ``AsyncOpenAI`` / ``AsyncAnthropic``::

    from openai import OpenAI
    from synopsis.summarizers import LLMSummarizer
    from synopsis.summarizers.llm.clients import openai_chat_completion

    summarizer = LLMSummarizer(
        openai_chat_completion(OpenAI(max_retries=0)), models=["gpt-4.1-mini"]
    )

The provider's usage report is mapped onto :class:`~synopsis.summarizers.records.Usage`
(``prompt_tokens`` includes cached tokens, as OpenAI counts them). The SDK's failures become
:class:`~synopsis.errors.TransportError`: a timeout, a lost connection, a 429 or a 5xx is
retryable, any other status is not. Build the client with ``max_retries=0`` so that the
summarizer's retry policy is the only one that runs.

``stream=True`` (``openai_chat_completion(client, stream=True)``, and so on) asks for the answer
as server-sent events, with ``stream_options.include_usage`` for Chat Completions so that the
usage arrives too, and puts the text deltas and the usage report together into the
:class:`~synopsis.summarizers.llm.completion.CompletionResponse` the whole answer would give. A
stream that breaks off is a retryable ``TransportError``: a connection that drops or a read that
times out mid-stream, an error event from the provider, or a body that ends before the
provider's last event (a ``finish_reason``, ``response.completed``, ``message_stop``).

A cache-aligned request (one with a ``conversation``) sends that conversation unchanged, encoded
by :func:`synopsis.formats.encode` in the provider's format, before the request's own messages,
and its ``tools`` as given (in that provider's shape; never a ``tool_choice``), so that the
provider's prompt cache for the agent's prefix is hit. The system messages go where the format
puts them: in the list for Chat Completions and Responses, in ``system=`` for Anthropic. The
request's own ``system`` is sent only when it is not empty, before all of that (as
``instructions`` for Responses).

A server that refuses a request for what it cannot take (a JSON-schema response format, JSON
mode, a null content, two messages of one role in a row) is asked again the way it takes, and
that way is remembered for the server and model (:mod:`.dialects`); any other request it
refuses as invalid is not sent again unchanged.

The SDKs are optional: ``pip install "synopsis[openai]"`` or ``"synopsis[anthropic]"``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, overload

from synopsis.formats import FormatName, encode
from synopsis.messages import thaw
from synopsis.summarizers.llm.asking import (
    AsyncCompletion,
    Endpoint,
    Failures,
    SyncCompletion,
    completion,
    http_errors,
    missing,
    unfinished,
)
from synopsis.summarizers.llm.completion import CompletionRequest, CompletionResponse
from synopsis.summarizers.llm.dialects import Dialect, strict_messages
from synopsis.summarizers.records import Usage

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from anthropic import Anthropic, AsyncAnthropic
    from anthropic.types import Message as AnthropicMessage
    from anthropic.types import MessageDeltaUsage, RawMessageStreamEvent
    from anthropic.types import Usage as AnthropicUsage
    from openai import AsyncOpenAI, OpenAI
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent, ResponseUsage

__all__ = [
    "DEFAULT_ANTHROPIC_MAX_TOKENS",
    "anthropic_completion",
    "openai_chat_completion",
    "openai_responses_completion",
]

DEFAULT_ANTHROPIC_MAX_TOKENS = 4096
"""``max_tokens`` sent to Anthropic (which requires it) when the request leaves it unset."""

_SCHEMA_NAME = "summary"

# -- The request ------------------------------------------------------------------------------


def _messages(request: CompletionRequest) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in request.messages]


def _conversation(
    request: CompletionRequest, format: FormatName, dialect: Dialect, *, system: str = ""
) -> tuple[list[Any], Any]:
    """``system`` (when given) as a first message, the conversation in the provider's format,
    then the request's messages, strict when the dialect says so; and the top-level system
    prompt the format lifted out of the conversation (None when none)."""
    wire = encode(request.conversation, format)
    first = [{"role": "system", "content": system}] if system else []
    messages = [*first, *wire.messages, *_messages(request)]
    return (strict_messages(messages) if dialect.strict else messages), wire.system


def _json_mode(request: CompletionRequest, dialect: Dialect) -> dict[str, Any]:
    """JSON mode, with the schema beside it when the dialect says the server takes it there."""
    mode: dict[str, Any] = {"type": "json_object"}
    if dialect.structure == "json_object_schema" and request.json_schema is not None:
        mode["schema"] = dict(request.json_schema)
    return mode


def _tools(request: CompletionRequest) -> dict[str, Any]:
    """``tools`` as the request gives them (and no ``tool_choice``: it is part of the prefix
    that Anthropic caches)."""
    return {"tools": [thaw(tool) for tool in request.tools]} if request.tools else {}


# -- OpenAI Chat Completions ------------------------------------------------------------------


def _chat_arguments(request: CompletionRequest, dialect: Dialect) -> dict[str, Any]:
    messages, _ = _conversation(request, "openai", dialect, system=request.system)
    arguments: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "temperature": request.temperature,
        **_tools(request),
    }
    if request.max_tokens is not None:
        arguments["max_tokens"] = request.max_tokens
    if request.json_schema is not None and dialect.structure == "json_schema":
        arguments["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _SCHEMA_NAME, "schema": dict(request.json_schema)},
        }
    elif request.json_schema is not None and dialect.structure != "plain":
        arguments["response_format"] = _json_mode(request, dialect)
    return arguments


def _chat_usage(usage: CompletionUsage | None) -> Usage:
    if usage is None:
        return Usage()
    prompt = usage.prompt_tokens_details
    completion = usage.completion_tokens_details
    return Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
        cached_tokens=(prompt.cached_tokens or 0) if prompt else 0,
        reasoning_tokens=(completion.reasoning_tokens or 0) if completion else 0,
    )


def _chat_response(response: ChatCompletion, request: CompletionRequest) -> CompletionResponse:
    text = (response.choices[0].message.content or "") if response.choices else ""
    return CompletionResponse(
        text=text, usage=_chat_usage(response.usage), model=response.model or request.model
    )


def _chat_fold(
    chunks: Sequence[ChatCompletionChunk], request: CompletionRequest
) -> CompletionResponse:
    """The first choice's content deltas; the usage of the last chunk (the one that
    ``include_usage`` adds after the finish reason)."""
    if not any(choice.finish_reason for chunk in chunks for choice in chunk.choices):
        raise unfinished("openai", "a finish_reason")
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usage = next((c.usage for c in reversed(chunks) if c.usage is not None), None)
    model = next((c.model for c in chunks if c.model), request.model)
    return CompletionResponse(text=text, usage=_chat_usage(usage), model=model)


_CHAT = Endpoint(
    "openai",
    "chat/completions",
    True,
    _chat_arguments,
    _chat_response,
    _chat_fold,
    {"stream_options": {"include_usage": True}},
)


def _openai(client: OpenAI | AsyncOpenAI) -> tuple[Failures, bool]:
    """The failures an OpenAI client raises, and whether it is async."""
    try:
        import openai  # noqa: PLC0415 - optional dependency
    except ImportError as error:
        raise missing("openai") from error
    return (openai.APIError, *http_errors()), isinstance(client, openai.AsyncOpenAI)


@overload
def openai_chat_completion(
    client: OpenAI, *, stream: bool = False, strict: bool = False
) -> SyncCompletion: ...
@overload
def openai_chat_completion(
    client: AsyncOpenAI, *, stream: bool = False, strict: bool = False
) -> AsyncCompletion: ...
def openai_chat_completion(
    client: OpenAI | AsyncOpenAI, *, stream: bool = False, strict: bool = False
) -> SyncCompletion | AsyncCompletion:
    """A completion over ``client.chat.completions.create`` (the system prompt is the first
    message; a JSON schema is sent as ``response_format``); ``stream`` reads it streamed,
    ``strict`` sends strict messages from the first request (see :mod:`.dialects`)."""
    failures, is_async = _openai(client)
    create = client.chat.completions.create
    return completion(
        _CHAT, client, create, failures, is_async=is_async, stream=stream, strict=strict
    )


# -- OpenAI Responses -------------------------------------------------------------------------


def _responses_arguments(request: CompletionRequest, dialect: Dialect) -> dict[str, Any]:
    items, _ = _conversation(request, "responses", dialect)
    arguments: dict[str, Any] = {
        "model": request.model,
        "input": items,
        "temperature": request.temperature,
        **_tools(request),
    }
    if request.system:
        arguments["instructions"] = request.system
    if request.max_tokens is not None:
        arguments["max_output_tokens"] = request.max_tokens
    if request.json_schema is not None and dialect.structure == "json_schema":
        arguments["text"] = {
            "format": {
                "type": "json_schema",
                "name": _SCHEMA_NAME,
                "schema": dict(request.json_schema),
            }
        }
    elif request.json_schema is not None and dialect.structure != "plain":
        arguments["text"] = {"format": _json_mode(request, dialect)}
    return arguments


def _responses_usage(usage: ResponseUsage | None) -> Usage:
    if usage is None:
        return Usage()
    return Usage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
        cached_tokens=usage.input_tokens_details.cached_tokens,
        reasoning_tokens=usage.output_tokens_details.reasoning_tokens,
    )


def _responses_response(response: Response, request: CompletionRequest) -> CompletionResponse:
    return CompletionResponse(
        text=response.output_text,
        usage=_responses_usage(response.usage),
        model=response.model or request.model,
    )


def _responses_fold(
    events: Sequence[ResponseStreamEvent], request: CompletionRequest
) -> CompletionResponse:
    """The ``response.output_text.delta`` texts; the usage and model of the response that the
    last event (``response.completed``, or ``response.incomplete`` at the token limit) holds."""
    last = next(
        (e.response for e in events if e.type in ("response.completed", "response.incomplete")),
        None,
    )
    if last is None:
        raise unfinished("openai", "response.completed")
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    return replace(_responses_response(last, request), text=text)


_RESPONSES = Endpoint(
    "openai", "responses", True, _responses_arguments, _responses_response, _responses_fold
)


@overload
def openai_responses_completion(
    client: OpenAI, *, stream: bool = False, strict: bool = False
) -> SyncCompletion: ...
@overload
def openai_responses_completion(
    client: AsyncOpenAI, *, stream: bool = False, strict: bool = False
) -> AsyncCompletion: ...
def openai_responses_completion(
    client: OpenAI | AsyncOpenAI, *, stream: bool = False, strict: bool = False
) -> SyncCompletion | AsyncCompletion:
    """A completion over ``client.responses.create`` (the system prompt is ``instructions``; a
    JSON schema is sent as ``text.format``); ``stream`` reads it streamed, ``strict`` sends
    strict messages from the first request (see :mod:`.dialects`)."""
    failures, is_async = _openai(client)
    create = client.responses.create
    return completion(
        _RESPONSES, client, create, failures, is_async=is_async, stream=stream, strict=strict
    )


# -- Anthropic Messages -----------------------------------------------------------------------


def _anthropic_system(own: str, lifted: Any) -> Any:  # noqa: ANN401 - str or text blocks
    """The request's system prompt, then the one lifted out of the conversation."""
    if not own or lifted is None:
        return own or lifted
    blocks = [{"type": "text", "text": lifted}] if isinstance(lifted, str) else list(lifted)
    return [{"type": "text", "text": own}, *blocks]


def _anthropic_arguments(request: CompletionRequest, dialect: Dialect) -> dict[str, Any]:
    messages, lifted = _conversation(request, "anthropic", dialect)
    system = _anthropic_system(request.system, lifted)
    return {
        "model": request.model,
        **({"system": system} if system else {}),
        "messages": messages,
        "max_tokens": (
            request.max_tokens if request.max_tokens is not None else DEFAULT_ANTHROPIC_MAX_TOKENS
        ),
        **_tools(request),
        # Not every SDK version types ``temperature``; the API accepts it in every version.
        "extra_body": {"temperature": request.temperature},
    }


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _anthropic_counts(usage: AnthropicUsage | MessageDeltaUsage) -> dict[str, int]:
    """The token counts a usage report gives; one it leaves out (None) is unknown, not 0."""
    return {name: value for name in _COUNTS if (value := getattr(usage, name)) is not None}


def _anthropic_usage(counts: Mapping[str, int]) -> Usage:
    cached = counts.get("cache_read_input_tokens", 0)
    prompt = counts.get("input_tokens", 0) + cached + counts.get("cache_creation_input_tokens", 0)
    output = counts.get("output_tokens", 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=output,
        total_tokens=prompt + output,
        cached_tokens=cached,
    )


def _anthropic_response(
    response: AnthropicMessage, request: CompletionRequest
) -> CompletionResponse:
    text = "".join(block.text for block in response.content if block.type == "text")
    return CompletionResponse(
        text=text,
        usage=_anthropic_usage(_anthropic_counts(response.usage)),
        model=response.model or request.model,
    )


def _anthropic_fold(
    events: Sequence[RawMessageStreamEvent], request: CompletionRequest
) -> CompletionResponse:
    """The text deltas; the usage of ``message_start`` (the input), updated by each
    ``message_delta`` (whose counts are totals so far: the output, and any input it names)."""
    start = next((e.message for e in events if e.type == "message_start"), None)
    if start is None or not any(e.type == "message_stop" for e in events):
        raise unfinished("anthropic", "message_stop")
    counts = _anthropic_counts(start.usage)
    for event in events:
        if event.type == "message_delta":
            counts |= _anthropic_counts(event.usage)
    text = "".join(
        e.delta.text
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    return CompletionResponse(
        text=text, usage=_anthropic_usage(counts), model=start.model or request.model
    )


_ANTHROPIC = Endpoint(
    "anthropic", "messages", False, _anthropic_arguments, _anthropic_response, _anthropic_fold
)


@overload
def anthropic_completion(
    client: Anthropic, *, stream: bool = False, strict: bool = False
) -> SyncCompletion: ...
@overload
def anthropic_completion(
    client: AsyncAnthropic, *, stream: bool = False, strict: bool = False
) -> AsyncCompletion: ...
def anthropic_completion(
    client: Anthropic | AsyncAnthropic, *, stream: bool = False, strict: bool = False
) -> SyncCompletion | AsyncCompletion:
    """A completion over ``client.messages.create`` (``system=`` the system prompt;
    ``max_tokens`` defaults to :data:`DEFAULT_ANTHROPIC_MAX_TOKENS`); ``stream`` reads it
    streamed, ``strict`` sends strict messages from the first request (see :mod:`.dialects`).
    The JSON schema is not sent: the prompt asks for it, and the answer is validated either
    way."""
    try:
        import anthropic  # noqa: PLC0415 - optional dependency
    except ImportError as error:
        raise missing("anthropic") from error
    # while streaming, this SDK lets the HTTP library's errors through unwrapped
    failures: Failures = (anthropic.APIError, *http_errors())
    is_async = isinstance(client, anthropic.AsyncAnthropic)
    return completion(
        _ANTHROPIC,
        client,
        client.messages.create,
        failures,
        is_async=is_async,
        stream=stream,
        strict=strict,
    )
