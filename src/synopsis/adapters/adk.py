"""synopsis inside Google ADK: a ``before_model_callback`` and a plugin that compact each
request, and a summarizer for ADK's own events compaction.

Two ways in, as ADK offers them:

- **Per request** (:class:`SynopsisCallback` as an agent's ``before_model_callback``, or
  :class:`SynopsisPlugin` in ``App(plugins=[...])``): before every model call of the tool
  loop, synopsis decides whether the request is over its trigger, where to cut, and what the
  summary says, and rewrites ``llm_request.contents``. The session's events stay as they were;
  what a compaction replaced is kept in synopsis's store under the ADK session's id, and the
  next requests extend what the model was last sent (the summary is not written again), so
  the per-request hook costs a summarizer call once per compaction.
- **Persistent** (:class:`SynopsisEventsSummarizer` as ``EventsCompactionConfig(summarizer=
  ...)``): ADK chooses when and which events to replace and stores the summary event in the
  session; synopsis writes that summary (by the rules offline, or with an
  :class:`~synopsis.LLMSummarizer`).

ADK's ``Content`` is Gemini's own ``contents`` item, so it goes through synopsis as Gemini JSON
(``format="gemini"``) and comes back with ``Content.model_validate_json``: google-genai reads
base64 bytes (thought signatures, inline data) only from JSON, so ``model_validate`` of the
same dict would turn a signature into the bytes of its base64 text. Contents synopsis kept are
given back as the very ``Content`` objects ADK passed; only the summary and contents the cheap
reductions shortened are new.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import operator
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, NamedTuple

from synopsis import Compactor, decode
from synopsis.adapters._common import CONVERSATIONS, Conversations, compactor_from, leading
from synopsis.summarizers import AsyncSummarizer, RuleBasedSummarizer, render

try:
    from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
    from google.adk.events import Event
    from google.adk.events.event_actions import EventActions, EventCompaction
    from google.adk.plugins.base_plugin import BasePlugin
    from google.genai import types
except ImportError as error:
    raise ImportError(
        'synopsis.adapters.adk needs Google ADK: pip install "synopsis[adk]"'
    ) from error

if TYPE_CHECKING:
    from collections.abc import Sequence

    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse

    from synopsis.compaction import CompactionResult
    from synopsis.events import Listener
    from synopsis.stores import AsyncStore, Store
    from synopsis.summarizers import Summarizer, SummaryRecord
    from synopsis.summarizers.render import Style

__all__ = ["SynopsisCallback", "SynopsisEventsSummarizer", "SynopsisPlugin"]

_KEPT_SUMMARIES = 64
"""Summaries an events summarizer remembers, to extend rather than re-read the latest one."""


def to_wire(content: types.Content) -> dict[str, Any]:
    """A ``Content`` as Gemini's REST JSON (camelCase, bytes in base64)."""
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)


def from_wire(item: object) -> types.Content:
    """A ``Content`` from Gemini JSON, through JSON so that base64 bytes are decoded."""
    return types.Content.model_validate_json(json.dumps(item))


def _system(instruction: object) -> str | dict[str, Any] | None:
    """The system instruction as synopsis reads it: text, or a Gemini content object."""
    if instruction is None or isinstance(instruction, str):
        return instruction
    if isinstance(instruction, types.Content):
        return to_wire(instruction)
    given = instruction if isinstance(instruction, list) else [instruction]
    # Text for anything but a Part (a string, or a file reference: counted by its name).
    parts = [p if isinstance(p, types.Part) else types.Part(text=str(p)) for p in given]
    return to_wire(types.Content(parts=parts))


def _tools(config: types.GenerateContentConfig) -> list[dict[str, Any]] | None:
    tools = [
        t.model_dump(mode="json", by_alias=True, exclude_none=True)
        for t in config.tools or ()
        if isinstance(t, types.Tool)
    ]
    return tools or None


class _Conversation:
    """One session's contents as synopsis last read them.

    ``base`` is the list given to synopsis for the contents of the last request: their own
    items until a compaction, then what the model was last sent (the summary and the
    contents kept), so that the next request extends that, as a history that keeps its
    compaction would, and synopsis reads only what was appended. A request whose
    earlier contents differ from those covered (:class:`_Covered`) starts again from all of
    its contents.

    Synopsis gives Gemini items back as new dicts with equal JSON, so an item is traced to
    the request's ``Content`` by the hash of its canonical JSON, checked for equality."""

    def __init__(self) -> None:
        self.base: list[dict[str, Any]] = []
        self.projected = False
        # Items (by identity) to their position in the request, or to the Content made for
        # them.
        self._where: dict[int, int | types.Content] = {}
        self._covered = _Covered()
        self._instruction: object = None
        self._system: str | dict[str, Any] | None = None
        self._tool_defs: object = None
        self._tools: list[dict[str, Any]] | None = None

    def items(self, contents: Sequence[types.Content]) -> list[dict[str, Any]]:
        known = self._covered.cover(contents)
        if not known:
            self.base, self.projected = [], False
            self._where = {}
        for n in range(known, len(contents)):
            item = to_wire(contents[n])
            self._where[id(item)] = n
            self.base.append(item)
        return self.base

    def adopt(self, items: list[dict[str, Any]]) -> None:
        """Continue from ``items``: what synopsis made of the covered contents."""
        # The request's own contents among those given, by the hash of their JSON: made here,
        # once a compaction, not for every content on every call.
        filed_by = {
            _fingerprint(item): (item, found)
            for item in self.base
            if isinstance(found := self._where[id(item)], int)
        }
        where: dict[int, int | types.Content] = {}
        for item in items:
            filed = filed_by.get(_fingerprint(item))
            where[id(item)] = (
                filed[1] if filed is not None and filed[0] == item else from_wire(item)
            )
        self.base, self.projected, self._where = items, True, where

    def contents(self, current: Sequence[types.Content]) -> list[types.Content]:
        """The request's contents for ``base``: the request's own where an item stands for one,
        else the content made for it."""
        out: list[types.Content] = []
        for item in self.base:
            found = self._where[id(item)]
            out.append(current[found] if isinstance(found, int) else found)
        return out

    def system(self, instruction: object) -> str | dict[str, Any] | None:
        if instruction is not self._instruction and instruction != self._instruction:
            self._instruction = instruction
            self._system = _system(instruction)
        return self._system

    def tools(self, config: types.GenerateContentConfig) -> list[dict[str, Any]] | None:
        if config.tools is not self._tool_defs and config.tools != self._tool_defs:
            self._tool_defs = config.tools
            self._tools = _tools(config)
        return self._tools


class _Covered:
    """The contents a conversation has read, as a request's contents are compared with them:
    the very objects while each request passes the same ones, else their layout.

    ADK builds every request from fresh copies of the session's contents: shallow ones, each
    ``Content`` and ``Part`` copied and their fields shared. They are compared field by
    field in C (:func:`_layout`), not by pydantic's ``==`` (4 µs a content). The copies are
    not held, only the fields of those first read: the request's copies die with the
    request, not in the next call (dropping 10k copies took 9 ms)."""

    def __init__(self) -> None:
        self.count = 0
        self._held: list[types.Content] | None = []
        self._layout: _Layout | None = None

    def cover(self, contents: Sequence[types.Content]) -> int:
        """How many of ``contents`` were covered (all those read before, or none when they
        differ); from now on all of ``contents`` are."""
        known, held = self.count, self._held
        self.count = len(contents)
        if len(contents) < known:
            self._held, self._layout = list(contents), None
            return 0
        if held is not None and all(map(operator.is_, contents, held)):
            self._held = list(contents)
            return known
        mine = self._layout if held is None else _layout(held)
        before = _layout(contents[:known])
        if mine is not None and before is not None:
            same = before == mine
        else:  # a content without a list of parts, here or there: compared by pydantic
            same = held is not None and leading(held, contents) == known
        after = _layout(contents[known:])
        # The fields first read stay the ones compared with: a request's copies are let go of
        # with the request.
        base = mine if same else before
        if base is None or after is None:
            self._held, self._layout = list(contents), None
        else:
            self._held, self._layout = None, base.grown(after)
        return known if same else 0


_PARTS = operator.attrgetter("parts")
_ROLE = operator.attrgetter("role")
_FIELDS = operator.attrgetter("__dict__")


class _Layout(NamedTuple):
    """What a list of contents holds, in lists C compares: each content's role and number
    of parts, and every part's fields (the dict pydantic keeps them in)."""

    roles: list[str | None]
    sizes: list[int]
    fields: list[dict[str, Any]]

    def grown(self, more: _Layout) -> _Layout:
        """This layout followed by ``more``'s."""
        self.roles.extend(more.roles)
        self.sizes.extend(more.sizes)
        self.fields.extend(more.fields)
        return self


def _layout(contents: Sequence[types.Content]) -> _Layout | None:
    """The layout of ``contents``; None when one has no list of parts (compared by
    pydantic then)."""
    lists = list(map(_PARTS, contents))
    try:
        sizes = list(map(len, lists))
    except TypeError:
        return None
    return _Layout(
        list(map(_ROLE, contents)), sizes, list(map(_FIELDS, itertools.chain.from_iterable(lists)))
    )


def _fingerprint(item: dict[str, Any]) -> int:
    return hash(json.dumps(item, sort_keys=True, separators=(",", ":")))


def _changed(given: list[dict[str, Any]], result: CompactionResult) -> bool:
    """Whether synopsis changed the list. Unchanged, it gives back the caller's own items;
    changed (compacted, repaired, or the summary of an earlier call projected onto a resent
    history), it is flagged, or its length or its first or last item differs."""
    out = result.messages
    return (
        result.compacted
        or bool(result.fixes)
        or len(out) != len(given)
        or (bool(out) and (out[0] is not given[0] or out[-1] is not given[-1]))
    )


class SynopsisCallback:
    """An agent's ``before_model_callback`` that compacts each request in place.

    Takes the options of :class:`~synopsis.Compactor` by keyword, or a ``compactor=``. The
    ADK session's id is synopsis's session id, so one callback serves many sessions; it keeps
    the converted contents of the ``conversations`` used most recently (the least recently
    used one is dropped, and converted again if it comes back). ``listeners`` receive
    synopsis's events; :attr:`last` is the last call's result.
    """

    def __init__(
        self,
        *,
        compactor: Compactor | None = None,
        conversations: int = CONVERSATIONS,
        listeners: Sequence[Listener] = (),
        **options: Any,  # noqa: ANN401 - Compactor validates each option
    ) -> None:
        self._seen: Conversations[_Conversation] = Conversations(conversations, _Conversation)
        self.compactor = compactor_from(compactor, options, conversations=conversations)
        self.listeners = tuple(listeners)
        self.conversations = conversations
        self.last: CompactionResult | None = None

    @property
    def store(self) -> Store | AsyncStore | None:
        """The store holding the summaries and the contents they replaced (recall and search
        them through :attr:`compactor`)."""
        return self.compactor.setup.store

    async def compact(self, llm_request: LlmRequest, session_id: str) -> CompactionResult:
        """Compact ``llm_request.contents`` for ``session_id`` in place; the result says
        what happened."""
        conversation = self._seen.use(session_id)
        items = conversation.items(llm_request.contents)
        result = await self.compactor.acompact(
            items,
            format="gemini",
            system=conversation.system(llm_request.config.system_instruction),
            tools=conversation.tools(llm_request.config),
            session_id=session_id,
            listeners=self.listeners,
        )
        self.last = result
        if _changed(items, result):
            conversation.adopt(result.messages)
        if conversation.projected:
            llm_request.contents = conversation.contents(llm_request.contents)
        return result

    async def __call__(
        self, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        await self.compact(llm_request, callback_context.session.id)
        return None  # go on and call the model


class SynopsisPlugin(BasePlugin):
    """:class:`SynopsisCallback` as an ADK plugin, for every agent of an ``App`` or a
    ``Runner``: ``App(..., plugins=[SynopsisPlugin(model="gemini-2.5-flash")])``."""

    def __init__(
        self,
        *,
        name: str = "synopsis",
        compactor: Compactor | None = None,
        conversations: int = CONVERSATIONS,
        listeners: Sequence[Listener] = (),
        **options: Any,  # noqa: ANN401 - Compactor validates each option
    ) -> None:
        super().__init__(name)
        self.callback = SynopsisCallback(
            compactor=compactor, conversations=conversations, listeners=listeners, **options
        )

    @property
    def compactor(self) -> Compactor:
        return self.callback.compactor

    @property
    def conversations(self) -> int:
        return self.callback.conversations

    @property
    def store(self) -> Store | AsyncStore | None:
        return self.callback.store

    @property
    def last(self) -> CompactionResult | None:
        return self.callback.last

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        return await self.callback(callback_context, llm_request)


class SynopsisEventsSummarizer(BaseEventsSummarizer):
    """synopsis's summarizer behind ADK's ``EventsCompactionConfig``: ADK chooses the events,
    synopsis writes the summary event that replaces them in the session.

    ``summarizer`` is any synopsis summarizer (the rule-based one by default, offline; an
    :class:`~synopsis.LLMSummarizer` is awaited); ``style``, ``instructions`` and
    ``max_tokens`` go to it. When the range opens with a summary this object wrote (ADK's
    token-threshold compaction passes the last one along), the new summary extends that
    record instead of summarizing its text.
    """

    def __init__(
        self,
        summarizer: Summarizer | AsyncSummarizer | None = None,
        *,
        style: Style = "sections",
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> None:
        # BaseEventsSummarizer has no state to set up: its __init__ only warns that the
        # interface is experimental, which EventsCompactionConfig already does.
        self.summarizer = summarizer or RuleBasedSummarizer()
        self.style: Style = style
        self.instructions = instructions
        self.max_tokens = max_tokens
        self.last: SummaryRecord | None = None
        self._records: OrderedDict[str, SummaryRecord] = OrderedDict()

    async def _summarize(
        self, messages: Sequence[Any], previous: SummaryRecord | None
    ) -> SummaryRecord:
        options: dict[str, Any] = {
            "previous": previous,
            "instructions": self.instructions,
            "max_tokens": self.max_tokens,
        }
        summarizer = self.summarizer
        if isinstance(summarizer, AsyncSummarizer):
            return await summarizer.asummarize(messages, **options)
        # A blocking summarizer (a model behind a sync client) must not hold the event loop.
        return await asyncio.to_thread(summarizer.summarize, messages, **options)

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        contents = [e.content for e in events if e.content is not None and e.content.parts]
        if not contents:
            return None
        previous = None
        if (opening := _text(contents[0])) is not None and opening in self._records:
            previous = self._records[opening]
            contents = contents[1:]
        messages = decode([to_wire(c) for c in contents], format="gemini").messages
        record = await self._summarize(messages, previous)
        text = render(record, style=self.style)
        self._records[text] = record
        while len(self._records) > _KEPT_SUMMARIES:
            self._records.popitem(last=False)
        self.last = record
        return Event(
            author="user",
            invocation_id=Event.new_id(),
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=events[0].timestamp,
                    end_timestamp=events[-1].timestamp,
                    compacted_content=types.Content(role="user", parts=[types.Part(text=text)]),
                )
            ),
        )


def _text(content: types.Content) -> str | None:
    """The text of a content made of one text part (what a summary is)."""
    parts = content.parts or []
    return parts[0].text if len(parts) == 1 else None
