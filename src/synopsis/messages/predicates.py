"""What kind of message a message is: the questions several layers ask, answered once.

"A user message" means two things to two readers, so each meaning has its own name:
:func:`is_person_message` (a user message with no tool result at all: something a person
wrote, where a history may be cut and a turn counted) and :func:`opens_turn` (a user message
that is more than tool results: a provider reads it as the start of a new turn, as with an
Anthropic user message holding a tool result *and* text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.messages.model import (
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolResultPart,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "SUMMARY_TAG",
    "after_compaction",
    "has_results",
    "holds_compaction",
    "is_person_message",
    "is_reasoning_only",
    "is_summary",
    "is_summary_text",
    "keeps_shape",
    "only_results",
    "opens_turn",
]

SUMMARY_TAG = "<synopsis-summary"
"""How the text of a summary message that synopsis writes begins."""


def is_summary_text(text: str) -> bool:
    """Whether ``text`` is a summary synopsis wrote."""
    return text.lstrip().startswith(SUMMARY_TAG)


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary synopsis wrote (recognised by its text, which survives a
    round trip through the caller's own format)."""
    for part in message.parts:
        if isinstance(part, TextPart):
            return is_summary_text(part.text)
    return False


def has_results(message: Message) -> bool:
    """Whether ``message`` carries at least one tool result."""
    return any(isinstance(p, ToolResultPart) for p in message.parts)


def only_results(message: Message) -> bool:
    """Whether ``message`` carries tool results and nothing else."""
    return bool(message.parts) and all(isinstance(p, ToolResultPart) for p in message.parts)


def is_person_message(message: Message) -> bool:
    """A user message a person wrote: one that carries no tool result at all."""
    return message.role is Role.USER and not has_results(message)


def opens_turn(message: Message) -> bool:
    """A user message that is more than tool results: the provider reads it as a new turn."""
    return message.role is Role.USER and not only_results(message)


def is_reasoning_only(message: Message) -> bool:
    """Whether ``message`` holds reasoning and nothing else."""
    return bool(message.parts) and all(isinstance(p, ReasoningPart) for p in message.parts)


def holds_compaction(message: Message) -> bool:
    """Whether ``message`` holds a provider's own compaction: an OpenAI Responses
    ``compaction`` item or an Anthropic ``compaction`` block. Opaque (or signed) and sent back
    exactly, it stands for everything before it, as a summary synopsis wrote does."""
    # analyze() asks this of every message: any()'s generator cost more than the test itself
    for part in message.parts:  # noqa: SIM110 - a loop, for speed
        if isinstance(part, OpaquePart) and part.kind == "compaction":
            return True
    return False


def after_compaction(messages: Sequence[Message]) -> int:
    """Where the part of ``messages`` a provider has not compacted begins: just after the last
    message holding its compaction (0 with none). Nothing before it is made smaller."""
    for i in range(len(messages) - 1, -1, -1):
        if holds_compaction(messages[i]):
            return i + 1
    return 0


def keeps_shape(part: ToolResultPart) -> bool:
    """Whether a tool result's output is an object the provider takes only in that shape (a
    Responses ``computer_call_output``'s screenshot), kept as it came: no text may stand in
    for it, so no reduction or clearing replaces it."""
    return "output" in part.extra
