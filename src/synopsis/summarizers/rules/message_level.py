"""Summarizing one oversized part in place (zrb's message-level summarization).

The planner marks a text or tool-result part that is too large on its own
(:class:`~synopsis.planning.reductions.Oversized`); this replaces its content with a summary
that begins with :data:`~synopsis.planning.reductions.SUMMARY_MARKER`. The part keeps its call
id, error flag, name and provider fields, so the tool call and its result stay a pair; the
marker makes a second pass leave it alone.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from synopsis.errors import ConfigurationError
from synopsis.messages import Message, Role, TextPart, ToolCallPart, ToolResultPart
from synopsis.planning.reductions import SUMMARY_MARKER
from synopsis.summarizers.render import render_compact

if TYPE_CHECKING:
    from synopsis.summarizers.protocols import Summarizer

__all__ = ["summarize_part"]


def summarize_part(
    message: Message,
    part_index: int,
    *,
    summarizer: Summarizer,
    call: ToolCallPart | None = None,
    instructions: str | None = None,
    max_tokens: int | None = None,
) -> Message:
    """``message`` with part ``part_index`` summarized. ``call`` is the tool call a result
    answers, when the caller has it: with it, the summary says which tool ran on what."""
    if isinstance(part_index, bool) or not isinstance(part_index, int):
        raise ConfigurationError(f"part_index must be an int, got {part_index!r}")
    if not -len(message.parts) <= part_index < len(message.parts):
        raise ConfigurationError(
            f"part_index {part_index} is out of range for a message of {len(message.parts)} parts"
        )
    part = message.parts[part_index]
    if not isinstance(part, TextPart | ToolResultPart):
        raise ConfigurationError(
            f"only text and tool-result parts are summarized, part {part_index} is a "
            f"{type(part).__name__}"
        )
    if part.text.startswith(SUMMARY_MARKER):
        return message
    if isinstance(part, ToolResultPart):
        lead = Message(Role.ASSISTANT, (call,)) if call is not None else None
        alone = Message(Role.TOOL, (part,))
        source = [lead, alone] if lead is not None else [alone]
    else:
        source = [Message(message.role, (part,))]
    record = summarizer.summarize(source, instructions=instructions, max_tokens=max_tokens)
    text = f"{SUMMARY_MARKER} {render_compact(record)}".rstrip()
    new_part = (
        replace(part, content=text)
        if isinstance(part, ToolResultPart)
        else replace(part, text=text)
    )
    parts = list(message.parts)
    parts[part_index] = new_part
    return replace(message, parts=tuple(parts))
