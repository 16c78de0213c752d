"""synopsis as LangChain v1 agent middleware (``create_agent(..., middleware=[...])``).

Two forms, each with a blocking and an async hook, because LangGraph runs a sync-only hook
under ``invoke`` but refuses an async-only one there:

- :class:`SynopsisMiddleware` is persistent (``before_model``/``abefore_model``): when synopsis
  compacts, the agent's state, and so its checkpoint, holds the compacted history from then on,
  as with LangChain's own ``SummarizationMiddleware``.
- :class:`SynopsisRequestMiddleware` is per request (``wrap_model_call``/``awrap_model_call``):
  the model sees the compacted history; the state keeps every message. The store's summary is
  given back for the part already compacted, so a resent history is not summarized again.

Messages go to synopsis as OpenAI chat dicts (``convert_to_openai_messages``), each converted
once per conversation (:class:`~synopsis.adapters._common.History`); the ones synopsis keeps
come back as the agent's own message objects, ids and metadata intact, and only the summary
and the messages the reductions shortened are new (``convert_to_messages``). The conversation
is the LangGraph thread (``config["configurable"]["thread_id"]``) when there is one, else the
Compactor's ``session_id``.

Needs ``pip install "synopsis[langchain]"``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain_core.messages import (
        AnyMessage,
        BaseMessage,
        RemoveMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
except ImportError as error:
    raise ImportError(
        'synopsis.adapters.langchain needs LangChain v1: pip install "synopsis[langchain]"'
    ) from error

from synopsis.adapters._common import CONVERSATIONS, Conversations, History, compactor_from

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from synopsis import CompactionResult, Compactor
    from synopsis.stores import AsyncStore, Store

__all__ = ["SynopsisMiddleware", "SynopsisRequestMiddleware"]

Item = dict[str, Any]
"""One message as synopsis reads it: an OpenAI chat dict."""
Tools = list[Mapping[str, Any]]
Prompt = str | list[dict[str, Any]] | None
"""A system prompt as OpenAI chat content: text, or a list of content blocks."""


def _convert(message: BaseMessage) -> Item:
    # With its id, a message the store keeps, or the reductions shorten, comes back as itself.
    return convert_to_openai_messages(message, include_id=True)


def _make(item: Item) -> BaseMessage:
    return convert_to_messages([item])[0]


@dataclass
class _Conversation:
    """What the middleware keeps for one thread."""

    history: History[BaseMessage, Item] = field(default_factory=lambda: History(_convert, _make))
    system: Prompt = None
    """The system prompt its last request sent apart from the messages."""
    tools: Tools | None = None
    """The tool definitions its last request carried."""
    requested: bool = False
    """Whether a request of this thread was seen, so that ``system`` and ``tools`` are known."""


@dataclass
class _Call:
    conversation: _Conversation
    items: list[Item]
    session_id: str | None


class _Compacting(AgentMiddleware[AgentState[Any], Any, Any]):
    """What both forms share: the Compactor, a conversation per thread, the mapping back."""

    def __init__(
        self,
        *,
        compactor: Compactor | None = None,
        conversations: int = CONVERSATIONS,
        **options: Any,  # noqa: ANN401 - the Compactor's options, validated by it
    ) -> None:
        self._threads: Conversations[_Conversation] = Conversations(conversations, _Conversation)
        self.compactor: Compactor = compactor_from(compactor, options, conversations=conversations)
        self.conversations = conversations
        """How many threads keep their converted messages; the least recently used one is
        dropped first (its next call converts its history again)."""
        self.last: CompactionResult | None = None
        """The result of the last call, whatever its thread (its ``events`` tell what
        happened); pass ``listeners=`` to hear every event as it happens."""
        self._tool_cache: tuple[tuple[object, ...], Tools] = ((), [])

    @property
    def store(self) -> Store | AsyncStore | None:
        """The Compactor's store (where replaced messages are kept for ``recall``)."""
        return self.compactor.setup.store

    def recall(self, thread_id: str | None = None) -> list[BaseMessage]:
        """The messages compaction replaced in a thread (the Compactor's session without
        one), oldest first, as LangChain messages with their ids; the store's records are
        :meth:`synopsis.Compactor.recall`'s, and ``.compactor.search`` finds by words."""
        return [_make(json.loads(m.data)) for m in self.compactor.recall(thread_id)]

    # -- per call ------------------------------------------------------------------------

    def _conversation(self, thread_id: str | None) -> _Conversation:
        return self._threads.use(thread_id)

    def _call(self, messages: Sequence[BaseMessage], runtime: Runtime[Any]) -> _Call:
        thread_id = _thread(runtime)
        conversation = self._conversation(thread_id)
        return _Call(conversation, conversation.history.items(messages), thread_id)

    def _options(self, call: _Call) -> dict[str, Any]:
        conversation = call.conversation
        return {
            "format": "openai",
            "session_id": call.session_id,
            "system": conversation.system,
            "tools": conversation.tools,
        }

    def _back(self, call: _Call, result: CompactionResult) -> list[AnyMessage] | None:
        """The framework's messages for ``result``; None when synopsis kept every item as it
        was given (no compaction, no repair, no summary projected in)."""
        self.last = result
        out = result.messages
        items = call.items
        if out == items:  # in C, reading only the lists while they are the same items
            return None
        return call.conversation.history.back(out)  # type: ignore[return-value]

    def _compact(self, call: _Call) -> list[AnyMessage] | None:
        return self._back(call, self.compactor.compact(call.items, **self._options(call)))

    async def _acompact(self, call: _Call) -> list[AnyMessage] | None:
        return self._back(call, await self.compactor.acompact(call.items, **self._options(call)))

    def _learn(self, conversation: _Conversation, request: ModelRequest[Any]) -> bool:
        """Remember what ``request`` sends beside the messages (they count against the
        window); True when it differs from what the thread's last compaction counted."""
        system = request.system_message
        prompt = None if system is None else _convert(system)["content"]
        tools = self._tools(request.tools)
        changed = (
            not conversation.requested
            or prompt != conversation.system
            or tools != conversation.tools
        )
        conversation.system, conversation.tools = prompt, tools
        conversation.requested = True
        return changed

    def _tools(self, tools: Sequence[object]) -> Tools | None:
        if not tools:
            return None
        key = tuple(tools)
        cached_key, cached = self._tool_cache
        if len(key) == len(cached_key) and all(
            a is b for a, b in zip(key, cached_key, strict=True)
        ):
            return cached
        converted: Tools = [
            tool if isinstance(tool, Mapping) else convert_to_openai_tool(tool)  # type: ignore[arg-type]
            for tool in tools
        ]
        self._tool_cache = (key, converted)
        return converted


def _thread(runtime: Runtime[Any]) -> str | None:
    info = runtime.execution_info
    return info.thread_id if info is not None else None


def _update(messages: list[AnyMessage] | None) -> dict[str, Any] | None:
    if messages is None:
        return None
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}


class SynopsisMiddleware(_Compacting):
    """Compacts the agent's state before each model call, so that the state and the
    checkpoint keep the compacted history (LangChain's ``SummarizationMiddleware`` works the
    same way).

    Takes the :class:`~synopsis.Compactor`'s options by keyword (``model=``,
    ``context_window=``, ``store=``, ``listeners=``, ...), or ``compactor=``; ``conversations``
    bounds how many threads keep their converted messages. The system prompt and the tools
    are not in the state: the middleware counts the ones the thread's last request sent, and
    compacts a request again in ``wrap_model_call`` when they changed (the first call of a
    thread), so that no request exceeds the window.
    """

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        return _update(self._compact(self._call(state["messages"], runtime)))

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        return _update(await self._acompact(self._call(state["messages"], runtime)))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Any]
    ) -> Any:  # noqa: ANN401 - whatever the handler returns
        if self._learn(self._conversation(_thread(request.runtime)), request):
            new = self._compact(self._call(request.messages, request.runtime))
            if new is not None:
                request = request.override(messages=new)
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[Any]],
    ) -> Any:  # noqa: ANN401 - whatever the handler returns
        if self._learn(self._conversation(_thread(request.runtime)), request):
            new = await self._acompact(self._call(request.messages, request.runtime))
            if new is not None:
                request = request.override(messages=new)
        return await handler(request)


class SynopsisRequestMiddleware(_Compacting):
    """Compacts what each model call sends; the agent's state keeps every message.

    Options as :class:`SynopsisMiddleware`. Each call resends the whole state; once a part of
    it was compacted, synopsis gives back the stored summary for it (one summary per
    compaction), so the model sees the same prefix from call to call.
    """

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Any]
    ) -> Any:  # noqa: ANN401 - whatever the handler returns
        call = self._call(request.messages, request.runtime)
        self._learn(call.conversation, request)
        new = self._compact(call)
        return handler(request if new is None else request.override(messages=new))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[Any]],
    ) -> Any:  # noqa: ANN401 - whatever the handler returns
        call = self._call(request.messages, request.runtime)
        self._learn(call.conversation, request)
        new = await self._acompact(call)
        return await handler(request if new is None else request.override(messages=new))
