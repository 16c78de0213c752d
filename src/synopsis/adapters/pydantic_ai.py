"""synopsis as a pydantic-ai capability: ``Agent(..., capabilities=[SynopsisCapability(...)])``.

Two forms, both taking the options of :class:`~synopsis.Compactor` (or ``compactor=``):

- :class:`SynopsisCapability` (a ``ProcessHistory``): the compacted history replaces the run's
  own, so ``result.all_messages()`` holds the summary and the next run continues from it.
- :class:`SynopsisRequestCapability` (``before_model_request``): only what the model receives
  is compacted; the run's history stays whole. The session's stored summary stands in for the
  part it summarized on every later request, so nothing is summarized twice.

Each ``ModelRequest`` and ``ModelResponse`` is one synopsis :class:`~synopsis.Message`, read
the way Anthropic reads a user and an assistant turn (tool returns inside the user turn), so
every part is counted: thinking with its signature, files and images as media, native tool
parts and provider compaction items as opaque blocks. Kept messages come back as the run's own
objects; only the summary (a ``ModelRequest`` holding one ``UserPromptPart``) and messages the
reductions shortened are new.

pydantic-ai names a conversation (``RunContext.conversation_id``: the one passed to the run, or
carried by its message history); ``session_id=`` overrides it with a fixed name or a function
of the ``RunContext`` (``lambda ctx: ctx.deps.thread_id``). Each conversation keeps what it
converted, so a model call under the trigger converts only the new messages.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeAlias

try:
    from pydantic_ai import messages as pm
    from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
    from pydantic_ai.tools import AgentDepsT, RunContext
except ImportError as error:  # pragma: no cover - exercised in a test with the package hidden
    raise ImportError(
        'synopsis.adapters.pydantic_ai needs pydantic-ai: pip install "synopsis[pydantic-ai]"'
    ) from error

from synopsis import (
    Compactor,
    Message,
    Role,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.adapters._common import CONVERSATIONS, Conversations, History, compactor_from
from synopsis.adapters._pydantic_ai_parts import from_message, shortened_part, to_message
from synopsis.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pydantic_ai.models import ModelRequestContext

    from synopsis import CompactionResult
    from synopsis.stores import AsyncStore, Store

__all__ = [
    "SessionOption",
    "SynopsisCapability",
    "SynopsisRequestCapability",
    "from_message",
    "to_message",
]

SessionOption: TypeAlias = "str | Callable[[RunContext[Any]], str | None] | None"
"""A fixed conversation name, a function of the run's context giving one, or ``None`` for
pydantic-ai's own ``conversation_id``."""


_DEFAULTS = {"provider": "anthropic"}
"""pydantic-ai's requests and responses have Anthropic's turn shape."""


# -- one conversation ----------------------------------------------------------------------


class _Conversation:
    """What the adapter keeps for one conversation: the converted history, and, by call id,
    the message each tool call and each result came from (to rebuild a shortened message from its
    original, keeping its metadata)."""

    def __init__(self) -> None:
        self.history: History[pm.ModelMessage, Message] = History(self._convert, self._make)
        self.calls: dict[tuple[str, bool], tuple[pm.ModelMessage, Message]] = {}
        self.tail: tuple[pm.ModelMessage, object] | None = None
        self.stamp: tuple[str | None, str | None] = (None, None)
        self.messages: Sequence[pm.ModelMessage] = ()
        self.converted: Sequence[Message] = ()

    def _convert(self, message: pm.ModelMessage) -> Message:
        converted = to_message(message)
        for part in converted.parts:
            if isinstance(part, ToolCallPart | ToolResultPart):
                self.calls[part.call_id, isinstance(part, ToolResultPart)] = (message, converted)
        return converted

    def _make(self, item: object) -> pm.ModelMessage:
        assert isinstance(item, Message)
        for part in item.parts:
            if isinstance(part, ToolCallPart | ToolResultPart):
                found = self.calls.get((part.call_id, isinstance(part, ToolResultPart)))
                if found is not None and len(found[1].parts) == len(item.parts) == len(
                    found[0].parts
                ):
                    original, old = found
                    parts = [
                        shortened_part(o, a, b, item.role is Role.ASSISTANT)
                        for o, a, b in zip(original.parts, old.parts, item.parts, strict=True)
                    ]
                    if isinstance(original, pm.ModelResponse):
                        return replace(original, parts=parts)
                    return replace(original, parts=parts)
                break
        else:
            piece = self._piece(item) if item.role is Role.USER else None
            if piece is not None:
                return piece
        made = from_message(item)
        run_id, conversation_id = self.stamp
        made.run_id = run_id
        made.conversation_id = conversation_id
        return made

    def _piece(self, item: Message) -> pm.ModelRequest | None:
        """The request ``item`` is a run of parts of, cut to those parts. pydantic-ai merges
        consecutive requests when a run starts, so the summary of a compaction and the task
        before it come back as one request; synopsis cuts the two apart again."""
        n = len(item.parts)
        for original, converted in zip(self.messages, self.converted, strict=False):
            parts = converted.parts
            if not isinstance(original, pm.ModelRequest) or len(parts) <= n:
                continue
            if len(original.parts) != len(parts):  # a prompt of several items: no 1:1 parts
                continue
            for start in range(len(parts) - n + 1):
                if parts[start : start + n] == item.parts:
                    return replace(original, parts=original.parts[start : start + n])
        return None

    def forget(self, kept: Sequence[pm.ModelMessage]) -> None:
        """Drop the call ids of messages a compaction left out: the summary stands for them
        from now on, and a long conversation would otherwise keep every message it ever had."""
        alive = {id(m) for m in kept}
        self.calls = {k: v for k, v in self.calls.items() if id(v[0]) in alive}

    def items(self, messages: Sequence[pm.ModelMessage]) -> list[Message]:
        tail = self.tail
        # The framework appends parts (tool-availability and settings deltas) to the request it
        # is about to send after the hooks ran, as a new list: a request converted last time
        # whose parts list changed is converted again.
        if tail is not None and tail[0].parts is not tail[1]:
            self.history.reset()
        if messages:
            self.tail = (messages[-1], messages[-1].parts)
        self.messages = messages
        self.converted = self.history.items(messages)
        return self.converted


# -- the adapter ---------------------------------------------------------------------------


@dataclass
class _Engine:
    compactor: Compactor
    session_id: SessionOption
    default_session: str
    conversations: Conversations[_Conversation]
    last_result: CompactionResult | None = None

    def session(self, ctx: RunContext[Any]) -> str:
        option = self.session_id
        found = option(ctx) if callable(option) else option
        return found or ctx.conversation_id or self.default_session

    async def compact(
        self,
        ctx: RunContext[Any],
        messages: Sequence[pm.ModelMessage],
        system: str | None,
    ) -> list[pm.ModelMessage] | None:
        """The compacted history, or ``None`` when it is to be sent as it is."""
        session = self.session(ctx)
        conversation = self.conversations.use(session)
        conversation.stamp = (ctx.run_id, ctx.conversation_id)
        items = conversation.items(messages)
        result = await self.compactor.acompact(
            items, format="synopsis", session_id=session, system=system
        )
        self.last_result = result
        if result.messages == items:  # in C, reading only the lists while they are the same
            return None
        out = conversation.history.back(result.messages)
        conversation.forget(out)
        return out


def _engine(
    compactor: Compactor | None,
    session_id: SessionOption,
    conversations: int,
    options: dict[str, Any],
) -> _Engine:
    kept = Conversations(conversations, _Conversation)
    if not (session_id is None or isinstance(session_id, str) or callable(session_id)):
        raise ConfigurationError(
            f"session_id must be a name, a function of the RunContext or None, got {session_id!r}"
        )
    compactor = compactor_from(
        compactor,
        options,
        conversations=conversations,
        session_id=session_id,
        defaults=_DEFAULTS,
    )
    return _Engine(compactor, session_id, f"pydantic-ai-{uuid.uuid4().hex[:12]}", kept)


def _instructions(request_context: ModelRequestContext) -> str | None:
    parts = request_context.model_request_parameters.instruction_parts or []
    text = "\n\n".join(p.content for p in parts if p.content)
    return text or None


class _Exposed(Generic[AgentDepsT]):
    """What both forms expose: the Compactor, its store and the last result."""

    _engine: _Engine

    @property
    def compactor(self) -> Compactor:
        """The :class:`~synopsis.Compactor` every call goes through (``recall``, ``search``)."""
        return self._engine.compactor

    @property
    def store(self) -> Store | AsyncStore | None:
        """The Compactor's store: the one given, or a ``MemoryStore`` of its own from the
        first model call on (every call names its conversation as the session), or from the
        start when ``session_id`` is a name (it is the Compactor's ``session_id`` too)."""
        return self._engine.compactor.setup.store

    @property
    def conversations(self) -> int:
        """How many conversations keep their converted history (the ``conversations=``
        given); the least recently used one is dropped first."""
        return self._engine.conversations.bound

    @property
    def last_result(self) -> CompactionResult | None:
        """The :class:`~synopsis.CompactionResult` of the last model call (its ``events``)."""
        return self._engine.last_result

    def session_for(self, ctx: RunContext[Any]) -> str:
        """The synopsis session a run's model calls go to."""
        return self._engine.session(ctx)


class SynopsisCapability(ProcessHistory[AgentDepsT], _Exposed[AgentDepsT]):
    """Compacts the run's history before each model request and keeps the result: the run's
    messages (``ctx.messages``) become the compacted ones, summary included.

    Takes :class:`~synopsis.Compactor`'s keyword options (``provider`` defaults to
    ``"anthropic"``, whose turn shape pydantic-ai's messages have), or ``compactor=``.
    ``conversations`` bounds how many conversations keep their converted history (the
    least recently used is dropped and converted again when it comes back).
    """

    def __init__(
        self,
        compactor: Compactor | None = None,
        *,
        session_id: SessionOption = None,
        conversations: int = CONVERSATIONS,
        **options: Any,  # noqa: ANN401 - Compactor validates each option
    ) -> None:
        self._engine = _engine(compactor, session_id, conversations, options)
        super().__init__(processor=self._process)

    async def _process(
        self, ctx: RunContext[AgentDepsT], messages: list[pm.ModelMessage]
    ) -> list[pm.ModelMessage]:
        compacted = await self._engine.compact(ctx, messages, None)
        return messages if compacted is None else compacted

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        compacted = await self._engine.compact(
            ctx, request_context.messages, _instructions(request_context)
        )
        if compacted is not None:
            request_context.messages = compacted.copy()
            ctx.messages[:] = compacted
        return request_context


class SynopsisRequestCapability(AbstractCapability[AgentDepsT], _Exposed[AgentDepsT]):
    """Compacts what each model request sends, and only that: the run's history stays whole
    (``result.all_messages()`` holds every message). Same options as
    :class:`SynopsisCapability`."""

    def __init__(
        self,
        compactor: Compactor | None = None,
        *,
        session_id: SessionOption = None,
        conversations: int = CONVERSATIONS,
        **options: Any,  # noqa: ANN401 - Compactor validates each option
    ) -> None:
        self._engine = _engine(compactor, session_id, conversations, options)

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        compacted = await self._engine.compact(
            ctx, request_context.messages, _instructions(request_context)
        )
        if compacted is not None:
            # A new list: the one the hook was given writes appends back to the history.
            request_context.messages = compacted
        return request_context

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a Compactor: not part of an agent spec
