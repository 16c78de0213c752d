"""What ``compact`` returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.events import CompactionSkipped

if TYPE_CHECKING:
    from synopsis.events import Event
    from synopsis.formats import FormatName
    from synopsis.planning import Code, Decision
    from synopsis.summarizers import SummaryRecord
    from synopsis.validation import Fix

__all__ = ["CompactionResult", "skip_event"]


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """The history to send next, in the caller's own format, and what happened to it.

    ``messages`` is a new list (the caller's items themselves when nothing changed);
    ``system`` the system prompt to send apart from the list (Anthropic's and Gemini's, or
    the one given apart for OpenAI formats). ``compacted`` says
    whether anything was summarized or reduced, ``code`` and ``reason`` why (the governor's
    decision, or why it was skipped). ``record`` is the newest summary, ``offloaded`` the ids
    of the messages saved to the store, ``fixes`` what was repaired on the way in or out.
    """

    messages: list[Any]
    compacted: bool
    code: Code
    reason: str
    record: SummaryRecord | None
    tokens_before: int
    tokens_after: int
    events: tuple[Event, ...]
    system: object = None
    format: FormatName = "openai"
    fixes: tuple[Fix, ...] = ()
    offloaded: tuple[str, ...] = ()
    session_id: str | None = None

    @property
    def saved_tokens(self) -> int:
        return self.tokens_before - self.tokens_after


def skip_event(session_id: str | None, decision: Decision) -> CompactionSkipped:
    """The event that tells why ``decision`` compacts nothing."""
    m = decision.measure
    return CompactionSkipped(
        session_id=session_id,
        reason=decision.code,
        detail=decision.reason,
        messages=m.messages,
        tokens=m.tokens,
    )
