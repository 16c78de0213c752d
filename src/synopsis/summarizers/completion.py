"""The one thing :class:`~synopsis.summarizers.llm.LLMSummarizer` needs from a model: a completion.

A completion is any callable, sync or async, that takes a :class:`CompletionRequest` and returns
a :class:`CompletionResponse`. No SDK is imported here: an adapter for a provider's client is a
few lines that map these fields onto its request and its usage report back onto :class:`Usage`.

A transport failure (network, timeout, rate limit, a 5xx) is signalled by raising
:class:`TransportError` with ``retryable`` set; anything else a completion raises is treated as a
transport failure too, retryable only when it is a :class:`TimeoutError` or a
:class:`ConnectionError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from synopsis.errors import SummarizerError, TransportError
from synopsis.summarizers.records import Usage

__all__ = [
    "ChatMessage",
    "Completion",
    "CompletionRequest",
    "CompletionResponse",
    "SummarizerError",
    "TransportError",
    "Usage",
    "is_retryable",
]

ChatMessage: TypeAlias = Mapping[Literal["role", "content"], str]
"""One message of a completion request: ``{"role": "user", "content": "..."}``."""


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """What to ask: ``system`` goes first, ``messages`` after it; ``json_schema`` (when given)
    is the shape the answer must have, for providers with structured output."""

    model: str
    system: str
    messages: Sequence[ChatMessage]
    temperature: float = 0.0
    max_tokens: int | None = None
    json_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CompletionResponse:
    """The answer's text, what it cost, and the model that answered (``""``: the one asked)."""

    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""


Completion: TypeAlias = Callable[
    [CompletionRequest], CompletionResponse | Awaitable[CompletionResponse]
]
"""A sync or async callable from a request to a response."""


def is_retryable(error: BaseException) -> bool:
    """Whether a completion that raised ``error`` is worth calling again."""
    if isinstance(error, TransportError):
        return error.retryable
    return isinstance(error, TimeoutError | ConnectionError)
