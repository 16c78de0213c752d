"""Completions over the real SDKs: OpenAI (Chat Completions and Responses) and Anthropic.

Each function takes a client and returns a :data:`~synopsis.summarizers.completion.Completion`
for :class:`~synopsis.summarizers.llm.LLMSummarizer`: a sync callable for ``OpenAI`` /
``Anthropic``, an async one for ``AsyncOpenAI`` / ``AsyncAnthropic``::

    from openai import OpenAI
    from synopsis.summarizers import LLMSummarizer
    from synopsis.summarizers.clients import openai_chat_completion

    summarizer = LLMSummarizer(
        openai_chat_completion(OpenAI(max_retries=0)), models=["gpt-4.1-mini"]
    )

The provider's usage report is mapped onto :class:`~synopsis.summarizers.records.Usage`
(``prompt_tokens`` includes cached tokens, as OpenAI counts them). The SDK's failures become
:class:`~synopsis.errors.TransportError`: a timeout, a lost connection, a 429 or a 5xx is
retryable, any other status is not. Build the client with ``max_retries=0`` so that the
summarizer's retry policy is the only one that runs.

The SDKs are optional: ``pip install "synopsis[openai]"`` or ``"synopsis[anthropic]"``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, overload

from synopsis.errors import TransportError
from synopsis.summarizers.completion import CompletionRequest, CompletionResponse
from synopsis.summarizers.records import Usage

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic
    from anthropic.types import Message as AnthropicMessage
    from openai import AsyncOpenAI, OpenAI
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

__all__ = [
    "DEFAULT_ANTHROPIC_MAX_TOKENS",
    "anthropic_completion",
    "openai_chat_completion",
    "openai_responses_completion",
]

DEFAULT_ANTHROPIC_MAX_TOKENS = 4096
"""``max_tokens`` sent to Anthropic (which requires it) when the request leaves it unset."""

_SCHEMA_NAME = "summary"

SyncCompletion = Callable[[CompletionRequest], CompletionResponse]
AsyncCompletion = Callable[[CompletionRequest], Awaitable[CompletionResponse]]


def _missing(package: str) -> ImportError:
    return ImportError(
        f"this completion needs the {package} SDK, which is not installed: "
        f'pip install "synopsis[{package}]"'
    )


def _transport_error(provider: str, error: Exception) -> TransportError:
    """A timeout, a lost connection (no status), a 429 or a 5xx is worth another try."""
    status: int | None = getattr(error, "status_code", None)
    retryable = status is None or status == 429 or status >= 500
    where = f" (HTTP {status})" if status is not None else ""
    return TransportError(
        f"{provider}: {type(error).__name__}{where}: {error}", retryable=retryable
    )


_Convert = Callable[[Any, CompletionRequest], CompletionResponse]


def _sync(
    provider: str,
    failures: tuple[type[Exception], ...],
    create: Callable[..., Any],
    arguments: Callable[[CompletionRequest], dict[str, Any]],
    convert: _Convert,
) -> SyncCompletion:
    """One SDK call per request, its failures as TransportError, its answer converted."""

    def complete(request: CompletionRequest) -> CompletionResponse:
        try:
            response = create(**arguments(request))
        except failures as error:
            raise _transport_error(provider, error) from error
        return convert(response, request)

    return complete


def _async(
    provider: str,
    failures: tuple[type[Exception], ...],
    create: Callable[..., Awaitable[Any]],
    arguments: Callable[[CompletionRequest], dict[str, Any]],
    convert: _Convert,
) -> AsyncCompletion:
    """:func:`_sync` for an async SDK client."""

    async def acomplete(request: CompletionRequest) -> CompletionResponse:
        try:
            response = await create(**arguments(request))
        except failures as error:
            raise _transport_error(provider, error) from error
        return convert(response, request)

    return acomplete


def _messages(request: CompletionRequest) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in request.messages]


# -- OpenAI Chat Completions ------------------------------------------------------------------


def _chat_arguments(request: CompletionRequest) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "model": request.model,
        "messages": [{"role": "system", "content": request.system}, *_messages(request)],
        "temperature": request.temperature,
    }
    if request.max_tokens is not None:
        arguments["max_tokens"] = request.max_tokens
    if request.json_schema is not None:
        arguments["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _SCHEMA_NAME, "schema": dict(request.json_schema)},
        }
    return arguments


def _chat_response(response: ChatCompletion, request: CompletionRequest) -> CompletionResponse:
    text = (response.choices[0].message.content or "") if response.choices else ""
    usage = Usage()
    if response.usage is not None:
        prompt = response.usage.prompt_tokens_details
        completion = response.usage.completion_tokens_details
        usage = Usage(
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            total_tokens=response.usage.total_tokens,
            cached_tokens=(prompt.cached_tokens or 0) if prompt else 0,
            reasoning_tokens=(completion.reasoning_tokens or 0) if completion else 0,
        )
    return CompletionResponse(text=text, usage=usage, model=response.model or request.model)


@overload
def openai_chat_completion(client: OpenAI) -> SyncCompletion: ...
@overload
def openai_chat_completion(client: AsyncOpenAI) -> AsyncCompletion: ...
def openai_chat_completion(client: OpenAI | AsyncOpenAI) -> SyncCompletion | AsyncCompletion:
    """A completion over ``client.chat.completions.create`` (the system prompt is the first
    message; a JSON schema is sent as ``response_format``)."""
    try:
        import openai  # noqa: PLC0415 - optional dependency
    except ImportError as error:
        raise _missing("openai") from error
    failures = (openai.APIConnectionError, openai.APIStatusError)

    if isinstance(client, openai.AsyncOpenAI):
        return _async(
            "openai", failures, client.chat.completions.create, _chat_arguments, _chat_response
        )
    return _sync(
        "openai", failures, client.chat.completions.create, _chat_arguments, _chat_response
    )


# -- OpenAI Responses -------------------------------------------------------------------------


def _responses_arguments(request: CompletionRequest) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "model": request.model,
        "instructions": request.system,
        "input": _messages(request),
        "temperature": request.temperature,
    }
    if request.max_tokens is not None:
        arguments["max_output_tokens"] = request.max_tokens
    if request.json_schema is not None:
        arguments["text"] = {
            "format": {
                "type": "json_schema",
                "name": _SCHEMA_NAME,
                "schema": dict(request.json_schema),
            }
        }
    return arguments


def _responses_response(response: Response, request: CompletionRequest) -> CompletionResponse:
    usage = Usage()
    if response.usage is not None:
        usage = Usage(
            prompt_tokens=response.usage.input_tokens,
            completion_tokens=response.usage.output_tokens,
            total_tokens=response.usage.total_tokens,
            cached_tokens=response.usage.input_tokens_details.cached_tokens,
            reasoning_tokens=response.usage.output_tokens_details.reasoning_tokens,
        )
    return CompletionResponse(
        text=response.output_text, usage=usage, model=response.model or request.model
    )


@overload
def openai_responses_completion(client: OpenAI) -> SyncCompletion: ...
@overload
def openai_responses_completion(client: AsyncOpenAI) -> AsyncCompletion: ...
def openai_responses_completion(
    client: OpenAI | AsyncOpenAI,
) -> SyncCompletion | AsyncCompletion:
    """A completion over ``client.responses.create`` (the system prompt is ``instructions``; a
    JSON schema is sent as ``text.format``)."""
    try:
        import openai  # noqa: PLC0415 - optional dependency
    except ImportError as error:
        raise _missing("openai") from error
    failures = (openai.APIConnectionError, openai.APIStatusError)

    if isinstance(client, openai.AsyncOpenAI):
        return _async(
            "openai", failures, client.responses.create, _responses_arguments, _responses_response
        )
    return _sync(
        "openai", failures, client.responses.create, _responses_arguments, _responses_response
    )


# -- Anthropic Messages -----------------------------------------------------------------------


def _anthropic_arguments(request: CompletionRequest) -> dict[str, Any]:
    return {
        "model": request.model,
        "system": request.system,
        "messages": _messages(request),
        "max_tokens": (
            request.max_tokens if request.max_tokens is not None else DEFAULT_ANTHROPIC_MAX_TOKENS
        ),
        # Not every SDK version types ``temperature``; the API accepts it in every version.
        "extra_body": {"temperature": request.temperature},
    }


def _anthropic_response(
    response: AnthropicMessage, request: CompletionRequest
) -> CompletionResponse:
    text = "".join(block.text for block in response.content if block.type == "text")
    usage = response.usage
    cached = usage.cache_read_input_tokens or 0
    prompt = usage.input_tokens + cached + (usage.cache_creation_input_tokens or 0)
    return CompletionResponse(
        text=text,
        usage=Usage(
            prompt_tokens=prompt,
            completion_tokens=usage.output_tokens,
            total_tokens=prompt + usage.output_tokens,
            cached_tokens=cached,
        ),
        model=response.model or request.model,
    )


@overload
def anthropic_completion(client: Anthropic) -> SyncCompletion: ...
@overload
def anthropic_completion(client: AsyncAnthropic) -> AsyncCompletion: ...
def anthropic_completion(client: Anthropic | AsyncAnthropic) -> SyncCompletion | AsyncCompletion:
    """A completion over ``client.messages.create`` (``system=`` the system prompt;
    ``max_tokens`` defaults to :data:`DEFAULT_ANTHROPIC_MAX_TOKENS`). The JSON schema is not
    sent: the prompt asks for it, and the answer is validated either way."""
    try:
        import anthropic  # noqa: PLC0415 - optional dependency
    except ImportError as error:
        raise _missing("anthropic") from error
    failures = (anthropic.APIConnectionError, anthropic.APIStatusError)

    if isinstance(client, anthropic.AsyncAnthropic):
        return _async(
            "anthropic", failures, client.messages.create, _anthropic_arguments, _anthropic_response
        )
    return _sync(
        "anthropic", failures, client.messages.create, _anthropic_arguments, _anthropic_response
    )
