"""synopsis inside the OpenAI Agents SDK: an input filter that compacts each model request,
and a session that compacts the history it stores.

Two ways in, as the SDK offers them:

- **Per request** (:class:`SynopsisInputFilter` as ``RunConfig(call_model_input_filter=...)``):
  before every model call of a run, synopsis decides whether the request is over its trigger,
  where to cut, and what the summary says. The run keeps its whole history
  (``result.to_input_list()``); the summary is kept in synopsis's store under the
  conversation's id and given back on the next requests (not written again), so the filter
  costs a summarizer call once per compaction. The agent's instructions are measured with the
  history (passed as the system prompt given apart) and sent unchanged.
- **Persistent** (:class:`SynopsisSession` wrapping any ``Session``): after the items of a
  turn are stored, and when a run reads the whole history, the stored history is compacted
  and written back, so later runs start from the summary. The requests inside a run are not
  compacted by it (the SDK reads a session once per run): for long tool loops use the filter.

The SDK's items already are Responses API input items, so they go through synopsis as they
are (``format="responses"``). The SDK builds new item dicts for every model call, so the
per-conversation cache recognises an item by equality, not identity: each conversation keeps
the first copy of every item and gives synopsis that same list, grown in place, while the
history only grows (the :class:`~synopsis.Compactor`'s incremental skip then reads only what
is new). Items synopsis kept come back as the SDK's own item objects of that call; only the
summary and items the cheap reductions shortened are new dicts.
"""

from __future__ import annotations

import asyncio
import operator
from typing import TYPE_CHECKING, Any, TypeAlias

from synopsis.adapters._common import CONVERSATIONS, Conversations, compactor_from, leading

try:
    from agents import FunctionTool, SessionABC
    from agents.run_config import CallModelData, ModelInputData
except ImportError as error:
    raise ImportError(
        'synopsis.adapters.agents needs the OpenAI Agents SDK: pip install "synopsis[agents]"'
    ) from error

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agents import TResponseInputItem
    from agents.memory import Session, SessionSettings

    from synopsis import Compactor
    from synopsis.compaction import CompactionResult
    from synopsis.events import Listener
    from synopsis.stores import AsyncStore, Store

__all__ = ["SessionIdOption", "SynopsisInputFilter", "SynopsisSession"]

SessionIdOption: TypeAlias = "str | Callable[[Any], str | None] | None"
"""A conversation id for the filter: a fixed one, or a function of the run's context (the
``context=`` given to ``Runner.run``) that returns one (``None``: the Compactor's own)."""

_WHOLE = 2_147_483_647
"""A limit that reads a session's whole history (the SDK's own choice for "every item")."""


class _Items:
    """One conversation's items as synopsis reads them: the first copy of each item, in a
    list that grows in place while the history only grows."""

    def __init__(self) -> None:
        self.items: list[TResponseInputItem] = []

    def align(self, given: Sequence[TResponseInputItem]) -> list[TResponseInputItem]:
        """The list for ``given``: the one kept, grown by the new items, when ``given`` starts
        with equal items; else a new list that keeps the equal leading copies."""
        known = self.items
        n = len(known)
        same = leading(known, given)
        if same == n:
            known.extend(given[n:])
            return known
        self.items = [*known[:same], *given[same:]]
        return self.items


def _restore(
    output: Sequence[Any], given: Sequence[TResponseInputItem], sent: Sequence[TResponseInputItem]
) -> list[TResponseInputItem]:
    """The items to send for synopsis's ``output``: an item equal to one of ``given`` (the
    list synopsis read) is that one's object in ``sent``; others (the summary, an item made
    shorter) are synopsis's own. Kept items keep their order, so one forward scan finds them."""
    out: list[TResponseInputItem] = []
    at = 0
    for item in output:
        k = at
        while k < len(given) and given[k] is not item and given[k] != item:
            k += 1
        if k < len(given):
            out.append(sent[k])
            at = k + 1
        else:
            out.append(item)
    return out


def _unchanged(result: CompactionResult, items: Sequence[TResponseInputItem]) -> bool:
    """Whether synopsis gave back the very items it read (nothing compacted or repaired)."""
    out = result.messages
    return len(out) == len(items) and all(map(operator.is_, out, items))


class _Conversation:
    """One conversation's items, and its instructions and tools as last given: the Compactor
    recognises an unchanged request by the identity of these objects."""

    def __init__(self) -> None:
        self.items = _Items()
        self._instructions: str | None = None
        self._tool_source: object = None
        self._tools: list[dict[str, Any]] | None = None

    def instructions(self, given: str | None) -> str | None:
        if given != self._instructions:
            self._instructions = given
        return self._instructions

    def tools(self, given: Sequence[object]) -> list[dict[str, Any]] | None:
        if given is not self._tool_source:
            self._tool_source = given
            # Function tools as the Responses API receives them; hosted tools have no schema
            # the model reads from the request.
            self._tools = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.params_json_schema,
                }
                for tool in given
                if isinstance(tool, FunctionTool)
            ] or None
        return self._tools


class SynopsisInputFilter:
    """A ``call_model_input_filter`` that compacts each model request of a run.

    Takes the options of :class:`~synopsis.Compactor` by keyword, or a ``compactor=``.
    ``session_id`` names the conversation: text, or a function of the run's context (so one
    filter serves many conversations; it keeps the items of the ``conversations`` used most
    recently, the least recently used one dropped and read again if it comes back).
    ``listeners`` receive synopsis's events; :attr:`last` is the last call's result.

    Do not combine it with server-managed history (``conversation_id``,
    ``previous_response_id``): the SDK then sends only the new items, and the history synopsis
    would compact lives on the server.
    """

    def __init__(
        self,
        *,
        compactor: Compactor | None = None,
        session_id: SessionIdOption = None,
        conversations: int = CONVERSATIONS,
        listeners: Sequence[Listener] = (),
        **options: Any,  # noqa: ANN401 - Compactor validates each option
    ) -> None:
        self._seen: Conversations[_Conversation] = Conversations(conversations, _Conversation)
        self.compactor = compactor_from(
            compactor, options, conversations=conversations, session_id=session_id
        )
        self.session_id = session_id
        self.conversations = conversations
        self.listeners = tuple(listeners)
        self.last: CompactionResult | None = None

    @property
    def store(self) -> Store | AsyncStore | None:
        """The store holding the summaries and the items they replaced (recall and search
        them through :attr:`compactor`)."""
        return self.compactor.setup.store

    def _session(self, context: object) -> str | None:
        chosen = self.session_id
        return chosen(context) if callable(chosen) else chosen

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        session_id = self._session(data.context)
        conversation = self._seen.use(session_id)
        sent = data.model_data.input
        if not sent:
            return data.model_data
        items = conversation.items.align(sent)
        result = await self.compactor.acompact(
            items,
            format="responses",
            system=conversation.instructions(data.model_data.instructions),
            tools=conversation.tools(data.agent.tools),
            session_id=session_id,
            listeners=self.listeners,
        )
        self.last = result
        if _unchanged(result, items):
            return data.model_data
        return ModelInputData(
            input=_restore(result.messages, items, sent),
            instructions=data.model_data.instructions,
        )


class SynopsisSession(SessionABC):
    """Any ``Session`` whose stored history synopsis compacts: after :meth:`add_items`, and
    when a run reads the whole history (``get_items()`` without a limit), the history is
    compacted and, if anything changed, written back to the wrapped session.

    Reads and writes otherwise go to the wrapped session as they are (its ``limit`` semantics,
    ``pop_item`` and ``clear_session``). The session's ``session_id`` is synopsis's session
    id. Takes the options of :class:`~synopsis.Compactor` by keyword, or a ``compactor=``.

    For long tool loops inside one run, use :class:`SynopsisInputFilter` with a plain session
    instead: a request that resends a history holding a summary this session wrote is not
    projected yet, so the filter would summarize again on every request of such a run.

    Writing back: when the wrapped session offers an atomic replacement of its stored items
    (the SDK's SQLite, async SQLite, SQLAlchemy and encrypted sessions do, for its own
    compaction), the compacted history replaces the stored one in one transaction, and only
    if the stored items are still those that were compacted; otherwise (a write in between)
    nothing is written and the next call compacts again. Any other session is cleared and
    refilled: two calls, not atomic. A failure between them puts the previous items back; a
    process that dies between them leaves the session empty (with a store, synopsis keeps the
    items it replaced: :meth:`~synopsis.Compactor.recall`).
    """

    def __init__(
        self,
        session: Session,
        *,
        compactor: Compactor | None = None,
        listeners: Sequence[Listener] = (),
        **options: Any,  # noqa: ANN401 - Compactor validates each option
    ) -> None:
        self.session = session
        self.session_id = session.session_id
        self.session_settings: SessionSettings | None = session.session_settings
        self.compactor = compactor_from(compactor, options, session_id=session.session_id)
        self.listeners = tuple(listeners)
        self.last: CompactionResult | None = None
        # The stored history as this wrapper last saw it (None: read it on the next compaction).
        self._items: _Items | None = None
        self._lock = asyncio.Lock()

    @property
    def store(self) -> Store | AsyncStore | None:
        """The store holding the summaries and the items they replaced."""
        return self.compactor.setup.store

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        if limit is None:
            async with self._lock:
                await self._compact(force=False)
        return await self.session.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        async with self._lock:
            await self.session.add_items(items)
            if self._items is not None:
                self._items.items.extend(items)
            await self._compact(force=False)

    async def pop_item(self) -> TResponseInputItem | None:
        async with self._lock:
            item = await self.session.pop_item()
            known = self._items
            if known is not None and known.items and known.items[-1] == item:
                known.items = known.items[:-1]
            else:
                self._items = None
            return item

    async def clear_session(self) -> None:
        async with self._lock:
            await self.session.clear_session()
            self._items = _Items()

    async def compact(self, *, force: bool = False) -> CompactionResult | None:
        """Compact the stored history now (``force``: even under the trigger, as a user's
        ``/compact`` would) and write it back if anything changed; ``None`` when the session
        holds nothing."""
        async with self._lock:
            return await self._compact(force=force)

    async def _read(self) -> list[TResponseInputItem]:
        return await self.session.get_items(_WHOLE)

    async def _compact(self, *, force: bool) -> CompactionResult | None:
        known = self._items
        if known is None:
            known = self._items = _Items()
            known.align(await self._read())
        if not known.items:
            return None
        result = await self._run(known, force=force)
        if not _unchanged(result, known.items):
            result = await self._write(known, result, force=force)
        return result

    async def _run(self, known: _Items, *, force: bool) -> CompactionResult:
        result = await self.compactor.acompact(
            known.items,
            format="responses",
            session_id=self.session_id,
            force=force,
            listeners=self.listeners,
        )
        self.last = result
        return result

    async def _write(
        self, known: _Items, result: CompactionResult, *, force: bool
    ) -> CompactionResult:
        """Replace the stored history with ``result``'s, if it still is what was compacted;
        if another writer changed it, compact what is stored now instead (once)."""
        snapshot_of = getattr(self.session, "_get_compaction_snapshot", None)
        snapshot = await snapshot_of(_WHOLE) if callable(snapshot_of) else None
        stored = snapshot.items if snapshot is not None else await self._read()
        if stored != known.items:
            known.align(stored)
            result = await self._run(known, force=force)
            if _unchanged(result, known.items):
                return result
        given = known.items
        new = _restore(result.messages, given, given)
        if snapshot is not None and snapshot.complete:
            if not await snapshot.replace_suffix(0, new):
                self._items = None  # written in between: read again next time
                return result
        else:
            await self._replace(new, previous=stored)
        self._items = _Items()
        self._items.items = list(new)
        return result

    async def _replace(
        self, new: list[TResponseInputItem], *, previous: list[TResponseInputItem]
    ) -> None:
        await self.session.clear_session()
        try:
            await self.session.add_items(new)
        except BaseException:
            # Not atomic: put back what was there, so a failed write loses nothing.
            await self.session.add_items(previous)
            raise
