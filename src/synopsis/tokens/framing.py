"""How many tokens each provider adds around the content: per message, per tool call, per tool
definition. Content itself is counted by a tokenizer; these are the wrappers around it.

Sources, per provider:

* ``openai``: the OpenAI cookbook's "How to count tokens with tiktoken" counts 3 tokens per
  message (``<|start|>{role}<|message|>``... ``<|end|>``), 1 more when a ``name`` is set, and 3
  for the reply priming (``<|start|>assistant<|message|>``); the same notebook counts function
  definitions with about 7 tokens per function and 12 to close the tool namespace.
* ``anthropic``: not published. A ``count_tokens`` probe of a user "hi" and an assistant "hi"
  gives 9 tokens on Claude Opus 4.6 (two one-token contents), which 3 per message plus 1 for
  the reply priming reproduces. With ``tools``, the API adds a tool-use system prompt of 346
  tokens on the Claude 4 models (``tool_choice`` auto; Anthropic's tool-use pricing table).
* ``gemini``: ``countTokens`` gives 10 for "The quick brown fox jumps over the lazy dog." and
  ``generateContent`` reports 11 prompt tokens for the same single turn (the Gemini API
  reference), so 1 per turn and no separate priming.

Tool calls and results carry a few tokens of wrapper (call id, ``to=functions.name``, block
type), estimated here as a small constant per part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, cast, get_args

from synopsis.errors import ConfigurationError

__all__ = ["FRAMING", "Framing", "Provider", "check_provider"]

Provider: TypeAlias = Literal["openai", "anthropic", "gemini"]


@dataclass(frozen=True, slots=True)
class Framing:
    """Constant token costs one provider adds around content."""

    per_message: int
    per_name: int
    reply_priming: int
    per_tool_call: int
    per_tool_result: int
    tools_preamble: int
    per_tool_definition: int


FRAMING: Final[dict[Provider, Framing]] = {
    "openai": Framing(
        per_message=3,
        per_name=1,
        reply_priming=3,
        per_tool_call=5,
        per_tool_result=2,
        tools_preamble=12,
        per_tool_definition=7,
    ),
    "anthropic": Framing(
        per_message=3,
        per_name=0,
        reply_priming=1,
        per_tool_call=8,
        per_tool_result=8,
        tools_preamble=346,
        per_tool_definition=5,
    ),
    "gemini": Framing(
        per_message=1,
        per_name=0,
        reply_priming=0,
        per_tool_call=3,
        per_tool_result=3,
        tools_preamble=10,
        per_tool_definition=5,
    ),
}


def check_provider(provider: str) -> Provider:
    """``provider`` as a :data:`Provider`, or :class:`ConfigurationError`."""
    if provider not in get_args(Provider):
        known = ", ".join(get_args(Provider))
        raise ConfigurationError(f"unknown provider {provider!r}; expected one of {known}")
    return cast("Provider", provider)
