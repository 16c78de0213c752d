"""LangChain 1.x ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])``, alone and stacked
before ``SummarizationMiddleware``, driven as ``create_agent`` drives them.

What is called
    ``ContextEditingMiddleware`` has one hook, ``wrap_model_call``: around the model call it
    copies ``request.messages``, lets each edit change the copy, and hands the model a request
    with the copy (``request.override(messages=...)``). ``step`` does what ``create_agent``'s
    model node does: it builds the ``ModelRequest`` from the agent's state (``messages`` without
    the system prompt, which ``create_agent`` holds as ``system_message``) and calls
    ``wrap_model_call(request, handler)`` with a handler that stands for the model: it keeps the
    request it is handed and answers with an empty ``AIMessage``. What that request holds, with
    the system prompt back in front, is what the model is sent.

    Stacked (``middleware=[ContextEditingMiddleware(...), SummarizationMiddleware(...)]``):
    ``create_agent`` runs every ``before_model`` hook on the state before the model node and
    every ``wrap_model_call`` around the model call, whatever their order in the list. So
    ``step`` first makes ``SummarizationMiddleware``'s call exactly as
    :mod:`benchmarks.compare.peers.langchain_mw` does (``before_model`` on the state, its update
    applied with LangGraph's ``add_messages``), then edits the request built from the state that
    leaves.

Nothing persists of the clearing
    The edit changes the request only: the state keeps every tool output whole, so the next
    request clears them again. ``persists`` is false, as for adk-deepagents: the replays keep
    the history they handed over. A summarization does change the state; :meth:`state` says
    what the state holds after a call, which the replays carry on.

Budget mapping, as a user would, defaults otherwise
    * ``ClearToolUsesEdit(trigger=budget.trigger)``: clear once the messages pass the trigger.
      ``keep`` (3 tool results, a count: there is no size of its own to give it),
      ``clear_at_least=0``, ``clear_tool_inputs=False``, ``exclude_tools=()`` and the
      ``"[cleared]"`` placeholder at their defaults; the middleware's default counter,
      ``count_tokens_approximately`` (the system prompt is not in ``request.messages`` and is
      not counted).
    * Stacked, ``SummarizationMiddleware(trigger=("tokens", budget.window), keep=("tokens",
      budget.keep))``, the rest as :mod:`~benchmarks.compare.peers.langchain_mw` has it. A user
      stacks them for the clearing to act first, so the summarization's trigger is above the
      clearing's; the one larger figure a budget has is the window: summarize when the
      history, its tool outputs whole (the summarization reads the state, which the clearing
      never changes), no longer fits it. At the same trigger as the clearing, the summary
      would bring the state under it every time and nothing would ever be cleared.

A call returns ``None`` when nothing was summarized and the edit changed no message (under the
trigger, or no tool result older than the newest three).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, cast

from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, SystemMessage
from langgraph.runtime import Runtime

from benchmarks.compare.peers._lc import FakeSummaryModel, to_items, to_messages
from benchmarks.compare.peers.langchain_mw import LangChainSummarization
from benchmarks.compare.systems import Budget, Items

if TYPE_CHECKING:
    from langchain_core.messages import AnyMessage


@dataclass
class Edited:
    """One call's outcome: the messages the model is sent, and the agent's state after the
    call when a summarization changed it (``None``: the state is what it was)."""

    sent: list[AnyMessage]
    state: list[AnyMessage] | None


class LangChainContextEditing:
    """``ContextEditingMiddleware`` with one ``ClearToolUsesEdit``, one instance per budget;
    with ``summarize``, stacked before ``SummarizationMiddleware``."""

    persists = False
    """The clearing edits the model request only; :meth:`state` says what a summarization
    left in the state."""

    def __init__(self, *, summarize: bool = False) -> None:
        version_ = version("langchain")
        self.summarization = LangChainSummarization() if summarize else None
        if summarize:
            self.name = "langchain-clear+summarize"
            self.label = f"LangChain ContextEditingMiddleware + SummarizationMiddleware {version_}"
        else:
            self.name = "langchain-clear"
            self.label = f"LangChain ContextEditingMiddleware {version_}"
        self._middleware: dict[Budget, ContextEditingMiddleware[Any, Any]] = {}
        self._model = FakeSummaryModel()
        self._runtime: Runtime[Any] = Runtime()

    def middleware(self, budget: Budget) -> ContextEditingMiddleware[Any, Any]:
        """The middleware configured for ``budget`` (built once, then cached)."""
        built = self._middleware.get(budget)
        if built is None:
            built = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=budget.trigger)])
            self._middleware[budget] = built
        return built

    def native(self, items: Items) -> list[AnyMessage]:
        """Messages with ids, as they sit in an agent's state."""
        return cast("list[AnyMessage]", to_messages(items))

    def step(self, history: list[AnyMessage], budget: Budget) -> Edited | None:
        state: list[AnyMessage] | None = None
        if self.summarization is not None:
            at_window = Budget(trigger=budget.window, keep=budget.keep, window=budget.window)
            state = self.summarization.step(history, at_window)
        current = history if state is None else state
        head = 0
        while head < len(current) and isinstance(current[head], SystemMessage):
            head += 1
        messages = current[head:]
        sent: list[ModelRequest[Any]] = []

        def model(request: ModelRequest[Any]) -> ModelResponse[Any]:
            sent.append(request)
            return ModelResponse(result=[AIMessage(content="")])

        request = ModelRequest(
            model=self._model,
            messages=messages,
            state={"messages": messages},
            runtime=self._runtime,
        )
        self.middleware(budget).wrap_model_call(request, model)
        edited = sent[0].messages
        if state is None and edited == messages:
            return None
        return Edited(sent=current[:head] + edited, state=state)

    def state(self, result: Edited) -> Items | None:
        """The agent's state after the call that returned ``result``, in OpenAI chat shape;
        ``None`` when the call left it as it was."""
        return None if result.state is None else to_items(result.state)

    def items(self, history: Edited) -> Items:
        """What the model was sent, in OpenAI chat shape."""
        return to_items(history.sent)


def create() -> LangChainContextEditing:
    """``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])`` alone."""
    return LangChainContextEditing()


def create_stacked() -> LangChainContextEditing:
    """The same, stacked before ``SummarizationMiddleware``."""
    return LangChainContextEditing(summarize=True)
