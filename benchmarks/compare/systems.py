"""The interface every compared system implements, and the one fake summarizer they share.

A system is driven as an agent loop drives it: before each model request, hand it the whole
history and take back either nothing (no change) or the history to send instead. The
benchmark converts histories to and from the system's own message objects outside the timed
region, so that only the machinery is measured.

Budgets are in tokens and each system counts with its own counter, as it would in production;
the harness measures every output with one tokenizer (o200k) to report what each achieved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Items = list[dict[str, Any]]
"""A history in OpenAI Chat Completions shape: the common currency of the benchmark."""


@dataclass(frozen=True)
class Budget:
    """What the system is told to hold the history to.

    ``trigger``: compact once the history's tokens pass this. ``keep``: tokens of the most
    recent messages to keep word for word. ``window``: the model's context window the system
    believes it manages (at least ``trigger``); systems that take a fraction of the window
    derive it from these numbers.
    """

    trigger: int
    keep: int
    window: int


def fake_summary(messages: int) -> str:
    """The summary every system gets from its summarizer: deterministic, instant, and carrying
    nothing from the messages, so that speed and validity compare the machinery alone and
    retention counts only what the machinery itself keeps."""
    return f"Summary of {messages} earlier messages."


class System(Protocol):
    """One compared system, configured, with its summarizer replaced by :func:`fake_summary`
    (or, for the retention table, its own non-LLM path)."""

    name: str
    """Short, stable key: ``synopsis``, ``langchain``, ``zrb``, ``adk-deepagents``, ``langmem``,
    ``langchain-clear``, ``langchain-clear+summarize``."""
    label: str
    """What the table shows: the library, the part of it compared, and its version."""

    def native(self, items: Items) -> Any:
        """``items`` as the system's own history (not timed)."""
        ...

    def step(self, history: Any, budget: Budget) -> Any | None:
        """The call an agent makes before a model request (timed): decide, and if the budget
        says so, plan the cut and summarize with the fake summarizer. ``None`` when the
        history goes out unchanged, else the new history in the system's own objects."""
        ...

    def items(self, history: Any) -> Items:
        """A history of the system's own back in OpenAI chat shape (not timed). Tool-call ids,
        names, arguments and text must come back exactly as they went in."""
        ...


def carried(system: System, history: Items, sent: Items, result: Any) -> Items:
    """The history an agent loop holds after a call of ``system`` returned ``result`` for
    ``history`` and ``sent`` went to the model: ``sent`` for a system whose compaction
    persists; for one that rewrites only the outgoing request (its ``persists`` is false), the
    history it was handed, or the state its ``state(result)`` says a part of it that does
    persist left (LangChain's summarization stacked with its request-only context editing)."""
    if getattr(system, "persists", True):
        return sent
    state = getattr(system, "state", None)
    kept: Items | None = None if state is None else state(result)
    return history if kept is None else kept
