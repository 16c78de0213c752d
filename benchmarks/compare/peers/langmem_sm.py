"""langmem's ``summarize_messages`` (``langmem.short_term``), called as its docs call it before
each model request.

Budget mapping (langmem budgets whole outputs, not kept tails):

- ``max_tokens_before_summary = budget.trigger``: summarize once the messages after the
  system prompt reach this many tokens.
- ``max_summary_tokens = 256`` (langmem's default): only reserved out of ``max_tokens``,
  never passed to the summarizer.
- ``max_tokens = budget.keep + max_summary_tokens + the system prompt's tokens``: langmem
  keeps the longest tail that fits ``max_tokens`` minus the summary reservation minus the
  leading system message, so this makes the kept tail ``budget.keep``. (With
  ``max_tokens = keep + 256`` a system prompt larger than ``keep`` leaves no room for any
  tail and langmem never summarizes.) The system prompt is counted in ``step`` with langmem's
  counter, one message, inside the timed call. ``max_tokens`` also caps what is sent to the
  summarizer: langmem trims the messages to summarize to their last ``max_tokens`` tokens
  (starting on a user message); when that leaves nothing, which is common in tool-heavy
  histories with few user turns, it warns (``RuntimeWarning``) and sends them all.
- ``token_counter``: the default, ``count_tokens_approximately``.
- ``budget.window``: no langmem knob takes it.

Summarizer: ``model`` is :class:`~benchmarks.compare.peers._lc.FakeSummaryModel`; langmem
sends it the messages to summarize (after that trim) followed by one instruction message
("Create a summary of the conversation above:", or the "Extend this summary" one when a
running summary exists), so the reply is ``fake_summary(len(prompt) - 1)``: the number of
messages the summarizer was shown, which after the trim can be fewer than were summarized.

Running summary: langmem's documented use keeps the full history in the agent's state and
the returned ``running_summary`` next to it, passing both back on the next call; the returned
``messages`` only go to the model. The adapter keeps ``running_summary`` across calls in that
way, but passes it back only while the history handed to ``step`` still holds the message it
was last made from at the same position (an O(1) check), i.e. while the caller keeps handing
the same growing history. A history made afresh by ``native`` (new ids) or one that is a
previous output starts from no running summary, since langmem would otherwise prepend the old
summary a second time. ``keep_running_summary=False`` never passes one back.

``step`` returns ``None`` when langmem made no summary and was given none (its messages are
then the input as it was), else ``result.messages``: the system prompt, a new system message
"Summary of the conversation so far: ...", and the messages after the last summarized one.
langmem leaves that summary message without an id and refuses messages without one ("Messages
are required to have ID field."), so ``step`` gives it a uuid4, as LangGraph's reducer would
if the result were written back to the state; a caller that feeds the output back as the next
history then gets what langmem does with it rather than that error.

Non-LLM path: none. ``summarize_messages`` always calls ``model`` when something is to be
summarized, and the ``langmem.short_term`` module has no trimming-only mode, so the retention
table uses the fake summarizer path as well.
"""

from __future__ import annotations

import uuid
from importlib.metadata import version
from typing import TYPE_CHECKING, cast

from langchain_core.messages import SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langmem.short_term import (  # type: ignore[import-untyped]
    RunningSummary,
    SummarizationResult,
    summarize_messages,
)

from benchmarks.compare.peers._lc import FakeSummaryModel, to_items, to_messages

if TYPE_CHECKING:
    from langchain_core.messages import AnyMessage

    from benchmarks.compare.systems import Budget, Items, System

MAX_SUMMARY_TOKENS = 256
"""langmem's default ``max_summary_tokens``."""


class LangMemSummarize:
    """``summarize_messages`` with the fake summarizer and a running summary kept between
    calls on the same history."""

    name = "langmem"

    def __init__(self, *, keep_running_summary: bool = True) -> None:
        self.label = f"LangMem summarize_messages {version('langmem')}"
        self.keep_running_summary = keep_running_summary
        self._model = FakeSummaryModel(instructions=1)
        self._running: RunningSummary | None = None
        self._last_at = -1
        """Where in the history the running summary's last summarized message sat."""

    def native(self, items: Items) -> list[AnyMessage]:
        """Messages with ids (langmem requires them), as they sit in an agent's state."""
        return cast("list[AnyMessage]", to_messages(items))

    def _running_for(self, history: list[AnyMessage]) -> RunningSummary | None:
        running = self._running
        if running is None:
            return None
        at = self._last_at
        if 0 <= at < len(history) and history[at].id == running.last_summarized_message_id:
            return running
        return None

    def step(self, history: list[AnyMessage], budget: Budget) -> list[AnyMessage] | None:
        running = self._running_for(history) if self.keep_running_summary else None
        system = history[0] if history and isinstance(history[0], SystemMessage) else None
        system_tokens = count_tokens_approximately([system]) if system is not None else 0
        result = summarize_messages(
            history,
            running_summary=running,
            model=self._model,
            max_tokens=budget.keep + MAX_SUMMARY_TOKENS + system_tokens,
            max_tokens_before_summary=budget.trigger,
            max_summary_tokens=MAX_SUMMARY_TOKENS,
        )
        if self.keep_running_summary:
            self._remember(history, result)
        if result.running_summary is None:
            return None
        out = cast("list[AnyMessage]", result.messages)
        for message in out[:2]:  # the summary message; the rest are the input's own
            if message.id is None:
                message.id = str(uuid.uuid4())
        return out

    def _remember(self, history: list[AnyMessage], result: SummarizationResult) -> None:
        running = result.running_summary
        if running is None or running is self._running:
            return
        # result.messages is [system prompt (the same object)?, summary, *kept tail of history]
        out = result.messages
        kept = len(out) - 1 - (1 if out and history and out[0] is history[0] else 0)
        at = len(history) - kept - 1
        if not (0 <= at < len(history) and history[at].id == running.last_summarized_message_id):
            at = -1
        self._running, self._last_at = running, at

    def items(self, history: list[AnyMessage]) -> Items:
        return to_items(history)


def create(*, keep_running_summary: bool = True) -> System:
    """The langmem system as the benchmark runs it."""
    return LangMemSummarize(keep_running_summary=keep_running_summary)
