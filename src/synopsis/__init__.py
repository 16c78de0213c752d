"""synopsis: keep long-running LLM agents inside their model's context window.

One flat namespace over private modules: the message model, the provider formats, the
validator and repair, offline token counting and the model-window table.
"""

from __future__ import annotations

from synopsis._api import count_tokens
from synopsis.errors import (
    ConfigurationError,
    ConversationError,
    SummarizerError,
    SynopsisError,
    TransportError,
    UnknownFormatError,
    VocabularyError,
)
from synopsis.formats import decode, detect, encode
from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.models import context_window, max_output_tokens
from synopsis.planning import Keep, Trigger
from synopsis.tokens import HeuristicCounter, TiktokenCounter, TokenCounter, counter_for_model
from synopsis.validation import Fix, Problem, Profile, repair, validate

__version__ = "0.1.0.dev0"

__all__ = [
    "ConfigurationError",
    "ConversationError",
    "Fix",
    "HeuristicCounter",
    "Keep",
    "MediaPart",
    "Message",
    "OpaquePart",
    "Part",
    "Problem",
    "Profile",
    "ReasoningPart",
    "Role",
    "SummarizerError",
    "SynopsisError",
    "TextPart",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCallPart",
    "ToolResultPart",
    "TransportError",
    "Trigger",
    "UnknownFormatError",
    "VocabularyError",
    "__version__",
    "context_window",
    "count_tokens",
    "counter_for_model",
    "decode",
    "detect",
    "encode",
    "max_output_tokens",
    "repair",
    "validate",
]
