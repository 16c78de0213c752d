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
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from synopsis.errors import SummarizerError, TransportError
from synopsis.summarizers.records import Usage

if TYPE_CHECKING:
    from synopsis.messages import Message

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
    is the shape the answer must have, for providers with structured output.

    A cache-aligned request (``LLMSummarizer(cache_aligned=True)``) also carries
    ``conversation``: the agent's own history, to be sent *unchanged* (encoded in the
    provider's format, its system messages where that provider puts a system prompt) before
    ``messages``, with the agent's ``tools`` as they were, so that the provider's prompt cache
    for that prefix is hit. Such a request has an empty ``system`` and no ``json_schema``:
    either would change the prefix. A completion that cannot send a conversation must raise
    ``TransportError(..., retryable=False)`` rather than ignore it.
    """

    model: str
    system: str
    messages: Sequence[ChatMessage]
    temperature: float = 0.0
    max_tokens: int | None = None
    json_schema: Mapping[str, Any] | None = None
    conversation: Sequence[Message] = ()
    tools: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True, slots=True)
class CompletionResponse:
    """The answer's text, what it cost, and the model that answered (``""``: the one asked).

    A ``text`` of ``None`` is read as ``""``: SDKs give ``None`` for a message with no text
    (a refusal, a reply cut off before any text), and that is an empty answer, not a crash.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def __post_init__(self) -> None:
        if self.text is None:
            object.__setattr__(self, "text", "")


Completion: TypeAlias = Callable[
    [CompletionRequest], CompletionResponse | Awaitable[CompletionResponse]
]
"""A sync or async callable from a request to a response."""


def is_retryable(error: BaseException) -> bool:
    """Whether a completion that raised ``error`` is worth calling again."""
    if isinstance(error, TransportError):
        return error.retryable
    return isinstance(error, TimeoutError | ConnectionError)
