"""What the LLM summarizer's helpers read: one frozen :class:`Policy` per summary.

:class:`~synopsis.summarizers.llm.summarizer.LLMSummarizer` builds it from its options each
time it plans a summary, with the input cap in use then (the one given, or the smaller one a
server's window was found to need). :mod:`.contexts` and :mod:`.attempts` take it instead of
the summarizer: they cannot reach into the summarizer's state, and they do not import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.summarizers.render import render

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime

    from synopsis.summarizers.protocols import Summarizer
    from synopsis.summarizers.records import SummaryRecord
    from synopsis.tokens import TokenCounter

__all__ = ["Policy"]


@dataclass(frozen=True, slots=True)
class Policy:
    """The models to ask and how, the sizes a request and its answer must keep, and how
    records are counted and dated."""

    models: tuple[str, ...]
    system_prompt: str
    temperature: float
    tools: tuple[Mapping[str, Any], ...]
    """The agent's tools, sent with a cache-aligned request."""
    max_retries: int
    backoff: float
    """Seconds before the first retry of a transport failure, doubled for each next one."""
    input_cap: int
    """The most tokens one request's prompt may take."""
    reference: Summarizer | None
    """The rule-based summarizer whose summary of the same messages says what a model's
    summary must keep (see :mod:`.gaps`); ``None``: the model's summary is used as it is."""
    counter: TokenCounter
    clock: Callable[[], datetime]

    def measure(self, record: SummaryRecord) -> int:
        """Tokens of the longer of the record's two renderings."""
        return max(
            self.counter.count_text(render(record, style=style))
            for style in ("sections", "snapshot")
        )
