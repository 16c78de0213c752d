"""Summarizers: the protocol, the summary record and its rendering, the rule-based summarizer
that works offline, and the LLM summarizer over any completion callable (with ready ones for
the openai and anthropic SDKs, which are imported only when such a completion is built).

>>> from synopsis.summarizers import RuleBasedSummarizer, render
>>> from synopsis.messages import Message, Role, TextPart
>>> record = RuleBasedSummarizer().summarize([Message(Role.USER, (TextPart("Fix app.py"),))])
>>> render(record).splitlines()[0]
'<synopsis-summary depth="0" messages="1">'
"""

from __future__ import annotations

from synopsis.errors import SummarizerError, TransportError
from synopsis.summarizers.llm.clients import (
    anthropic_completion,
    openai_chat_completion,
    openai_responses_completion,
)
from synopsis.summarizers.llm.completion import Completion, CompletionRequest, CompletionResponse
from synopsis.summarizers.llm.summarizer import LLMSummarizer
from synopsis.summarizers.protocols import AsyncSummarizer, Summarizer
from synopsis.summarizers.records import (
    ActionItem,
    Coverage,
    Covers,
    Entities,
    Facets,
    Sections,
    SummaryRecord,
    Usage,
    summary_schema,
)
from synopsis.summarizers.render import render, render_compact, summary_message
from synopsis.summarizers.rules.exchanges import Extractor, ToolExchange, ToolFacts
from synopsis.summarizers.rules.extractors import DEFAULT_EXTRACTORS, find_extractor
from synopsis.summarizers.rules.message_level import summarize_part
from synopsis.summarizers.rules.summarizer import RuleBasedSummarizer

__all__ = [
    "DEFAULT_EXTRACTORS",
    "ActionItem",
    "AsyncSummarizer",
    "Completion",
    "CompletionRequest",
    "CompletionResponse",
    "Coverage",
    "Covers",
    "Entities",
    "Extractor",
    "Facets",
    "LLMSummarizer",
    "RuleBasedSummarizer",
    "Sections",
    "Summarizer",
    "SummarizerError",
    "SummaryRecord",
    "ToolExchange",
    "ToolFacts",
    "TransportError",
    "Usage",
    "anthropic_completion",
    "find_extractor",
    "openai_chat_completion",
    "openai_responses_completion",
    "render",
    "render_compact",
    "summarize_part",
    "summary_message",
    "summary_schema",
]
