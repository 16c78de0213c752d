"""synopsis: keep long-running LLM agents inside their model's context window.

The names most code needs, in one namespace: :func:`compact` / :func:`acompact` /
:class:`Compactor` (the pipeline), the message model, the provider formats, the validator and
repair, offline token counting, the model-window table, settings, events and stores. The
subpackages hold the rest, one concept each: ``synopsis.messages``, ``formats``, ``tokens``,
``validation``, ``planning`` (pure: where to cut, when to compact), ``summarizers``
(``rules`` offline, ``llm`` with a model), ``compaction`` (the pipeline and its drivers),
``stores``, ``config``, ``cli`` and ``testing`` (fakes for your own tests).

>>> import synopsis
>>> history = [{"role": "user", "content": "Fix the failing test in app.py"}]
>>> synopsis.compact(history, model="gpt-4o").compacted
False
"""

from __future__ import annotations

import logging

from synopsis._api import count_tokens
from synopsis.compaction import CompactionResult, Compactor, acompact, compact
from synopsis.config import Settings
from synopsis.errors import (
    BudgetUnreachableError,
    ConfigurationError,
    ConversationError,
    StoreError,
    SummarizerError,
    SynopsisError,
    TransportError,
    UnknownFormatError,
    UnknownModelWarning,
    VocabularyError,
)
from synopsis.events import (
    ChainInvalidated,
    CompactionCompleted,
    CompactionFailed,
    CompactionSkipped,
    CompactionStarted,
    Event,
    HistoryRepaired,
    RefillBreakerOpened,
    SummarizerFellBack,
    SummaryFilledIn,
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
from synopsis.stores import MemoryStore, PostgresStore, SQLiteStore
from synopsis.summarizers import LLMSummarizer, RuleBasedSummarizer, SummaryRecord
from synopsis.tokens import HeuristicCounter, TiktokenCounter, TokenCounter, counter_for_model
from synopsis.validation import Fix, Problem, Profile, repair, validate

__version__ = "0.1.0.dev0"

# A library writes nothing unless the application configured logging: without a handler of
# its own, Python's last resort would print every warning (a summarizer falling back) to stderr.
logging.getLogger("synopsis").addHandler(logging.NullHandler())

__all__ = [
    "BudgetUnreachableError",
    "ChainInvalidated",
    "CompactionCompleted",
    "CompactionFailed",
    "CompactionResult",
    "CompactionSkipped",
    "CompactionStarted",
    "Compactor",
    "ConfigurationError",
    "ConversationError",
    "Event",
    "Fix",
    "HeuristicCounter",
    "HistoryRepaired",
    "Keep",
    "LLMSummarizer",
    "MediaPart",
    "MemoryStore",
    "Message",
    "OpaquePart",
    "Part",
    "PostgresStore",
    "Problem",
    "Profile",
    "ReasoningPart",
    "RefillBreakerOpened",
    "Role",
    "RuleBasedSummarizer",
    "SQLiteStore",
    "Settings",
    "StoreError",
    "SummarizerError",
    "SummarizerFellBack",
    "SummaryFilledIn",
    "SummaryRecord",
    "SynopsisError",
    "TextPart",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCallPart",
    "ToolResultPart",
    "TransportError",
    "Trigger",
    "UnknownFormatError",
    "UnknownModelWarning",
    "VocabularyError",
    "__version__",
    "acompact",
    "compact",
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
