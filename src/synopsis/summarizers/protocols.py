"""What a summarizer is: anything with these methods, injected by constructor (no registry).

``previous`` is the summary being updated: a summarizer carries its content forward into the
new record (depth + 1, ``parent_id`` set) rather than dropping it. ``max_tokens`` caps the
rendered summary for this call, on top of the summarizer's own limit. ``instructions`` are the
caller's extra guidance (what to keep); a summarizer that cannot use them ignores them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message
    from synopsis.summarizers.records import SummaryRecord

__all__ = ["AsyncSummarizer", "Summarizer"]


@runtime_checkable
class Summarizer(Protocol):
    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord: ...


@runtime_checkable
class AsyncSummarizer(Protocol):
    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord: ...
