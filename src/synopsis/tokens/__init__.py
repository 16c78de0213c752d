"""Offline token counting.

Exact ``o200k_base`` and ``cl100k_base`` counts through tiktoken, from vocabularies bundled
with synopsis (no network, no cache directory); calibrated estimates for Claude, Gemini and
open-weight models; provider framing, tool definitions and media; a per-message count
cache, provider calibration and an append-only ledger.

>>> from synopsis.tokens import counter_for_model
>>> counter_for_model("gpt-4o").count_text("hello world")
2
"""

from __future__ import annotations

from synopsis.tokens._vocab import ENCODINGS, EncodingName, get_encoding
from synopsis.tokens.calibration import Calibrated, Calibration
from synopsis.tokens.counters import (
    DEFAULT_CACHE_SIZE,
    CacheInfo,
    HeuristicCounter,
    MessageCounter,
    TiktokenCounter,
    TokenCounter,
    counter_for_model,
)
from synopsis.tokens.families import (
    CLAUDE_FACTOR,
    CLAUDE_NEW_TOKENIZER_FACTOR,
    FAMILIES,
    GEMINI_FACTOR,
    OPEN_WEIGHTS_FACTOR,
    ModelFamily,
    family_for_model,
)
from synopsis.tokens.framing import FRAMING, Framing, Provider
from synopsis.tokens.ledger import TokenLedger
from synopsis.tokens.media import estimate_media, image_size, image_tokens

__all__ = [
    "CLAUDE_FACTOR",
    "CLAUDE_NEW_TOKENIZER_FACTOR",
    "DEFAULT_CACHE_SIZE",
    "ENCODINGS",
    "FAMILIES",
    "FRAMING",
    "GEMINI_FACTOR",
    "OPEN_WEIGHTS_FACTOR",
    "CacheInfo",
    "Calibrated",
    "Calibration",
    "EncodingName",
    "Framing",
    "HeuristicCounter",
    "MessageCounter",
    "ModelFamily",
    "Provider",
    "TiktokenCounter",
    "TokenCounter",
    "TokenLedger",
    "counter_for_model",
    "estimate_media",
    "family_for_model",
    "get_encoding",
    "image_size",
    "image_tokens",
]
