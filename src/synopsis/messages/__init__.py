"""The provider-neutral message model (:mod:`.model`) and the questions asked of a message
(:mod:`.predicates`).

A converter (``synopsis.formats``) turns a provider's wire shape into these values and back.
"""

from __future__ import annotations

from synopsis.messages.model import (
    EMPTY,
    MediaPart,
    Message,
    OpaquePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    content_hash,
    derived,
    message_id,
    message_ids,
    message_text,
    thaw,
)
from synopsis.messages.predicates import (
    SUMMARY_TAG,
    after_compaction,
    has_results,
    holds_compaction,
    is_person_message,
    is_reasoning_only,
    is_summary,
    is_summary_text,
    keeps_shape,
    only_results,
    opens_turn,
)

__all__ = [
    "EMPTY",
    "SUMMARY_TAG",
    "MediaPart",
    "Message",
    "OpaquePart",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "after_compaction",
    "content_hash",
    "derived",
    "has_results",
    "holds_compaction",
    "is_person_message",
    "is_reasoning_only",
    "is_summary",
    "is_summary_text",
    "keeps_shape",
    "message_id",
    "message_ids",
    "message_text",
    "only_results",
    "opens_turn",
    "thaw",
]
