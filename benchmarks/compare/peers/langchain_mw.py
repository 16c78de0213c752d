"""LangChain 1.x ``SummarizationMiddleware``, driven as ``create_agent`` drives it.

``step`` makes the call the agent makes before each model request,
``before_model({"messages": messages}, runtime)``, and applies the update it returns with
LangGraph's own ``add_messages`` reducer (a ``RemoveMessage(REMOVE_ALL_MESSAGES)`` followed by
the summary and the kept messages, so the new history is what follows the removal).

Budget mapping: ``trigger=("tokens", budget.trigger)``, ``keep=("tokens", budget.keep)``; the
model's ``profile`` says ``max_input_tokens=budget.window`` (read only for ``"fraction"``
limits, which this mapping does not use). Tokens are counted with the middleware's default,
``count_tokens_approximately`` (about four characters a token, tuned by the model type; no
usage metadata here, so no scaling). Everything else is left at its default, as a user
would: in particular ``trim_tokens_to_summarize=4000``, so the summarizer is handed only the
last ~4000 tokens of what is being summarized.

Summarizer: ``summarizer=`` is a plain callable returning ``fake_summary(len(messages))``,
where ``messages`` is what the middleware hands it, i.e. the messages being summarized
*after* that 4000-token trim, not all of them. The ``model`` it still requires (for the
profile and the counter's tuning) is never called.

The system prompt: ``create_agent`` takes it as ``system_prompt=`` and keeps it out of the
state, so the middleware never sees it. By default the leading system messages of a history
are held out the same way and put back in front of the result. With
``system_prompt_in_state=True`` they are left in ``state["messages"]``, as when a converted
chat history is loaded into the state whole; the middleware then counts them and summarizes
them away with everything else before the cut.

Cached per :class:`Budget` (built on the first ``step`` with that budget, not timed after):
the ``SummarizationMiddleware`` instance, i.e. its fake model and retry wrapper, normalized
trigger clauses, tuned token counter and the summarizer coerced to a ``Runnable``. The
middleware keeps no state between calls, so the cache changes nothing but construction time.

Non-LLM path: ``SummarizationMiddleware`` has none of its own. It always replaces what it
cuts with a summary from ``model`` or from ``summarizer=``; the ``summarizer=`` hook (any
callable returning text) is the way to summarize without an LLM, and it is exactly what the
fake summary already uses, so the retention table uses this same path. (LangChain's separate
``ContextEditingMiddleware`` with ``ClearToolUsesEdit`` clears old tool outputs without an
LLM; it edits the model request rather than the history, and is compared on its own, alone
and stacked before this middleware, in :mod:`benchmarks.compare.peers.langchain_editing`.)
"""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING, Any, cast

from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.messages import SystemMessage
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime

from benchmarks.compare.peers._lc import FakeSummaryModel, to_items, to_messages
from benchmarks.compare.systems import Budget, Items, System, fake_summary

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_core.messages import AnyMessage


def _summarize(messages: Sequence[AnyMessage]) -> str:
    return fake_summary(len(messages))


class LangChainSummarization:
    """``SummarizationMiddleware`` with the fake summarizer, one instance per budget."""

    name = "langchain"

    def __init__(self, *, system_prompt_in_state: bool = False) -> None:
        self.label = f"LangChain SummarizationMiddleware {version('langchain')}"
        self.system_prompt_in_state = system_prompt_in_state
        self._middleware: dict[Budget, SummarizationMiddleware[Any, Any]] = {}
        self._runtime: Runtime[Any] = Runtime()

    def middleware(self, budget: Budget) -> SummarizationMiddleware[Any, Any]:
        """The middleware configured for ``budget`` (built once, then cached)."""
        built = self._middleware.get(budget)
        if built is None:
            model = FakeSummaryModel(profile={"max_input_tokens": budget.window})
            built = SummarizationMiddleware(
                model,
                trigger=("tokens", budget.trigger),
                keep=("tokens", budget.keep),
                summarizer=_summarize,
            )
            self._middleware[budget] = built
        return built

    def native(self, items: Items) -> list[AnyMessage]:
        """Messages with ids, as they sit in an agent's state."""
        return cast("list[AnyMessage]", to_messages(items))

    def step(self, history: list[AnyMessage], budget: Budget) -> list[AnyMessage] | None:
        middleware = self.middleware(budget)
        head = 0
        if not self.system_prompt_in_state:
            while head < len(history) and isinstance(history[head], SystemMessage):
                head += 1
        messages = history[head:] if head else history
        update = middleware.before_model({"messages": messages}, self._runtime)
        if update is None:
            return None
        # The agent's reducer: everything after RemoveMessage(REMOVE_ALL_MESSAGES) replaces the
        # state's messages (the summary message gets an id on the way).
        new = cast("list[AnyMessage]", add_messages(cast("Any", messages), update["messages"]))
        return history[:head] + new

    def items(self, history: list[AnyMessage]) -> Items:
        return to_items(history)


def create(*, system_prompt_in_state: bool = False) -> System:
    """The LangChain system as the benchmark runs it."""
    return LangChainSummarization(system_prompt_in_state=system_prompt_in_state)
