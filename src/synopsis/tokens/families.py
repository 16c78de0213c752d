"""Which encoding, framing and correction factor to use for a model name.

OpenAI models are counted exactly with their own encoding. Other providers keep their
tokenizers private (Claude, Gemini) or ship many different ones (open-weight models), so their
text is counted with ``o200k_base`` and multiplied by a family factor. The factors, and where
they come from:

* ``CLAUDE_FACTOR`` 1.18, Claude 3 through Opus 4.6: measured as 506 Claude tokens (Sonnet 4.5,
  ``count_tokens``) for 429 ``o200k_base`` tokens of the same input (sammcj/ingest pull
  request 65); in line with the 10 to 20 per cent other projects report (Arize-ai/phoenix
  pull request 2668: about 10 per cent; headroomlabs-ai/headroom pull request 2543: within
  10 to 20 per cent).
* ``CLAUDE_NEW_TOKENIZER_FACTOR`` 1.53, Claude Opus 4.7 and later: Anthropic's release notes
  for Opus 4.7 say its new tokenizer uses roughly 1.0 to 1.35 times the tokens of earlier
  models; independent ``count_tokens`` probes measure 1.2 to 1.46 times (English prose the
  highest, code 1.15 to 1.3), and the same ingest measurement gives 656 / 429 = 1.53 for
  Opus 5. A Claude name with no readable version gets this (larger, safer) factor.
* ``GEMINI_FACTOR`` 1.08: Google documents about 4 characters per Gemini token, while
  ``o200k_base`` gives about 4.3 to 4.5 characters per token on English text; an empirical
  1.08 Gemini correction over tiktoken counts is used by alehatsman/dex (issue 183).
* ``OPEN_WEIGHTS_FACTOR`` 1.10, Llama, Mistral, Qwen, DeepSeek and unknown models: their
  vocabularies (100k to 150k BPE) run close to OpenAI's (``cl100k_base`` and ``o200k_base``
  agree within 1 per cent on the bundled example transcripts; Llama 3's tokenizer is built on
  ``cl100k_base``), with older 32k SentencePiece vocabularies higher; public comparisons put
  Llama 4 about 10 per cent above GPT-5 on the same text.

Overestimating is the safe side for a context budget, so each factor sits at or above the
middle of what was reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from synopsis.errors import ConfigurationError

if TYPE_CHECKING:
    from synopsis.tokens._vocab import EncodingName
    from synopsis.tokens.framing import Provider

__all__ = [
    "CLAUDE_FACTOR",
    "CLAUDE_NEW_TOKENIZER_FACTOR",
    "FAMILIES",
    "GEMINI_FACTOR",
    "OPEN_WEIGHTS_FACTOR",
    "ModelFamily",
    "family_for_model",
]

CLAUDE_FACTOR: Final[float] = 1.18
CLAUDE_NEW_TOKENIZER_FACTOR: Final[float] = 1.53
GEMINI_FACTOR: Final[float] = 1.08
OPEN_WEIGHTS_FACTOR: Final[float] = 1.10

# The first Claude version on the tokenizer introduced with Opus 4.7.
_CLAUDE_NEW_TOKENIZER: Final[tuple[int, int]] = (4, 7)


@dataclass(frozen=True, slots=True)
class ModelFamily:
    """How to count one family of models."""

    name: str
    encoding: EncodingName
    provider: Provider
    factor: float


FAMILIES: Final[dict[str, ModelFamily]] = {
    "openai-o200k": ModelFamily("openai-o200k", "o200k_base", "openai", 1.0),
    "openai-cl100k": ModelFamily("openai-cl100k", "cl100k_base", "openai", 1.0),
    "claude": ModelFamily("claude", "o200k_base", "anthropic", CLAUDE_FACTOR),
    "claude-new-tokenizer": ModelFamily(
        "claude-new-tokenizer", "o200k_base", "anthropic", CLAUDE_NEW_TOKENIZER_FACTOR
    ),
    "gemini": ModelFamily("gemini", "o200k_base", "gemini", GEMINI_FACTOR),
    "open-weights": ModelFamily("open-weights", "o200k_base", "openai", OPEN_WEIGHTS_FACTOR),
}

# gpt-4o, gpt-4.1, gpt-4.5, gpt-5*, chatgpt-4o, gpt-oss, gpt-realtime, gpt-audio, o1/o3/o4...
_O200K = re.compile(
    r"^(?:gpt-4o|gpt-4\.[1-9]|gpt-[5-9]|gpt-oss|gpt-realtime|gpt-audio|gpt-image|chatgpt-"
    r"|o\d|codex-|computer-use)"
)
_CL100K = re.compile(r"^(?:gpt-4|gpt-3\.5|gpt-35|text-embedding-|davinci-002|babbage-002)")
_VERSION_PART = re.compile(r"[-.@:_]")


def _claude_version(name: str) -> tuple[int, int] | None:
    """``(major, minor)`` from names like claude-3-5-sonnet-20241022, claude-opus-4-7,
    claude-sonnet-4.5 or us.anthropic.claude-haiku-4-5-20251001-v1:0 (dates are skipped)."""
    numbers = [
        int(p)
        for p in _VERSION_PART.split(name[name.index("claude") + 6 :])
        if p.isdigit() and len(p) <= 2
    ]
    if not numbers:
        return None
    return numbers[0], numbers[1] if len(numbers) > 1 else 0


def family_for_model(model: str | None) -> ModelFamily:
    """The counting family for a model name (``None``: OpenAI's current ``o200k_base``)."""
    if model is None:
        return FAMILIES["openai-o200k"]
    if not isinstance(model, str):
        raise ConfigurationError(f"model must be a string such as 'gpt-4o', got {model!r}.")
    name = model.strip().lower().rsplit("/", 1)[-1].removeprefix("ft:")
    if "claude" in name:
        version = _claude_version(name)
        if version is not None and version < _CLAUDE_NEW_TOKENIZER:
            return FAMILIES["claude"]
        return FAMILIES["claude-new-tokenizer"]
    if "gemini" in name or name.startswith("gemma"):
        return FAMILIES["gemini"]
    if _O200K.match(name):
        return FAMILIES["openai-o200k"]
    if _CL100K.match(name):
        return FAMILIES["openai-cl100k"]
    return FAMILIES["open-weights"]
