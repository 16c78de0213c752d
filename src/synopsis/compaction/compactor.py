"""The public entry points: :class:`Compactor`, :func:`compact` and :func:`acompact`.

A :class:`Compactor` holds its options once (resolved into a :class:`~.setup.Setup`) and runs
the plan of :mod:`.pipeline` with a blocking driver (``compact``) or an awaiting one
(``acompact``). A ``Compactor`` given a ``session_id`` but no store keeps its sessions in a
:class:`~synopsis.stores.MemoryStore` of its own, so that the governor's memory (cooldown,
hysteresis, the breaker) and the summary chain carry from one call to the next.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal, Self, TypeAlias

from synopsis.compaction.drivers import arun, run
from synopsis.compaction.gates import async_gate, gate
from synopsis.compaction.incremental import Memo, remember, skip
from synopsis.compaction.pipeline import DEFAULT_SESSION, Request, compaction
from synopsis.compaction.prefix import Prefix
from synopsis.compaction.setup import build_setup
from synopsis.config import Settings
from synopsis.errors import ConfigurationError
from synopsis.events import listening, span
from synopsis.planning import Keep, Trigger
from synopsis.stores import AsyncStore, MemoryStore, Store, export_markdown
from synopsis.stores.protocols import blocks
from synopsis.summarizers import AsyncSummarizer, Summarizer

if TYPE_CHECKING:
    from synopsis.compaction.result import CompactionResult
    from synopsis.compaction.setup import Setup
    from synopsis.compaction.state import Ended
    from synopsis.events import Listener
    from synopsis.formats import FormatName
    from synopsis.planning import Measure
    from synopsis.stores import SearchHit, StoredMessage
    from synopsis.tokens import TokenCounter

__all__ = [
    "Compactor",
    "StoreOption",
    "SummarizerOption",
    "SystemPrompt",
    "Threaded",
    "acompact",
    "compact",
]

SummarizerOption: TypeAlias = (
    Summarizer
    | AsyncSummarizer
    | Literal["rules", "openai", "openai-responses", "anthropic"]
    | None
)
"""A summarizer object, or the name of one the settings build (``None``: the settings')."""
StoreOption: TypeAlias = Store | AsyncStore | str | PathLike[str] | None
"""A store object, ``"memory"``, ``"sqlite"`` (the default file) or a SQLite file's path."""
Threaded: TypeAlias = Literal["compaction", "all"] | None
"""Where ``acompact`` does the plan's own work (decoding, counting, planning): on the event
loop (``None``); in a worker thread when it compacts, the fast path staying on the loop
(``"compaction"``); in a worker thread for the fast path too (``"all"``)."""
_THREADINGS = (None, "compaction", "all")
SystemPrompt: TypeAlias = str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None
"""A system prompt sent apart from the messages: text, Anthropic's list of blocks, or
Gemini's ``systemInstruction`` content."""


class Compactor:
    """Options held once; :meth:`compact` and :meth:`acompact` apply them to a history.

    Every option of :class:`~synopsis.config.Settings` may be given by keyword (``config=``
    names a TOML file; ``SYNOPSIS_*`` environment variables apply too), and the objects only
    code can give: ``trigger`` (a :class:`~synopsis.Trigger` or what Settings parses),
    ``keep`` (likewise), ``summarizer``, ``counter``, ``store`` (a store, or what Settings
    parses) and ``listeners``.

    A Compactor remembers, for each session it served lately (``remembered_sessions``), the
    last call that compacted nothing, and reads only what a next call appended to the same
    list (the result is the one the full path gives; see
    :mod:`synopsis.compaction.incremental`). Earlier items are recognised by identity, or in
    OpenAI chat as equal copies, so an item changed *in place* after it was passed is not
    read again: call :meth:`reset` after such a change, or pass a changed copy. It also
    keeps the messages it last decoded from an OpenAI chat list (about 0.6 KiB each), so
    that a call which must read the whole history decodes only the new items
    (:mod:`synopsis.compaction.prefix`).
    """

    def __init__(
        self,
        *,
        config: str | PathLike[str] | None = None,
        trigger: Trigger | float | str | None = None,
        keep: Keep | int | str | None = None,
        summarizer: SummarizerOption = None,
        counter: TokenCounter | None = None,
        store: StoreOption = None,
        listeners: Sequence[Listener] = (),
        environ: Mapping[str, str] | None = None,
        **options: Any,  # noqa: ANN401 - Settings validates each option
    ) -> None:
        objects: dict[str, Any] = {}
        if isinstance(trigger, Trigger):
            objects["trigger"] = trigger
        elif trigger is not None:
            options["trigger"] = trigger
        if isinstance(keep, Keep):
            objects["keep"] = keep
        elif keep is not None:
            options["keep"] = keep
        if isinstance(summarizer, str):  # "rules", "openai", …: built from the settings
            options["summarizer"] = summarizer
            summarizer = None
        if isinstance(store, str):
            options["store"] = store
        elif store is not None:
            objects["store"] = store
        self.settings = Settings.load(config, environ=environ, **options)
        self.setup: Setup = build_setup(
            self.settings, summarizer=summarizer, counter=counter, **objects
        )
        if self.setup.store is None and self.settings.session_id is not None:
            self.setup = _with_store(self.setup, MemoryStore())
        # A store the caller passed is the caller's to close; one opened here from a name, a
        # path or the settings is this Compactor's (see close()).
        self._owns_store = not isinstance(store, Store | AsyncStore)
        _check_call({"force": False, "listeners": listeners})
        self.listeners = tuple(listeners)
        self._incremental = True
        # Per session (None: calls without one), the memo of its last call and what that call
        # decoded; the sessions used least recently are forgotten first.
        self._memos: OrderedDict[str | None, Memo] = OrderedDict()
        self._prefixes: OrderedDict[str | None, Prefix] = OrderedDict()
        self._last: str | None = None
        # Taking a memo is one step for one thread: a skip grows the memo's lists where they
        # lie, so two calls must never both hold it.
        self._taking = threading.Lock()

    remembered_sessions: int = 32
    """How many conversations the fast path remembers at once (their last histories, about
    2 KiB per message each); the one used least recently is forgotten first and its next call
    reads its whole history again. Set it on an instance that serves many conversations."""

    @property
    def store(self) -> Store | AsyncStore | None:
        """Where this Compactor keeps each session's summaries and the originals it replaced:
        the store it opened from ``store="sqlite"``, a path or a URL, the object you passed,
        or the one it keeps of its own for a ``session_id``; None when it keeps none. The
        recall loop answers from it: ``handle_recall(compactor.store, session, arguments)``."""
        return self.setup.store

    def reset(self) -> None:
        """Forget the last calls, so that the next one reads the whole history again."""
        with self._taking:
            self._memos.clear()
            self._prefixes.clear()

    @property
    def _memo(self) -> Memo | None:
        """The memo of the session used last (what a test of one conversation looks at)."""
        return self._memos.get(self._last)

    @_memo.setter
    def _memo(self, memo: Memo | None) -> None:
        self._keep(self._memos, self._last, memo)

    @property
    def _prefix(self) -> Prefix | None:
        return self._prefixes.get(self._last)

    def _keep(self, kept: OrderedDict[str | None, Any], session: str | None, value: Any) -> None:  # noqa: ANN401 - a memo or a prefix
        with self._taking:
            if value is None:
                kept.pop(session, None)
                return
            kept[session] = value
            kept.move_to_end(session)
            while len(kept) > max(self.remembered_sessions, 1):
                kept.popitem(last=False)

    def close(self) -> None:
        """Close the store this Compactor opened itself (from ``store="sqlite"``, a path or
        the settings); a store object you passed stays open, yours to close. The Compactor
        is not used after this. ``with Compactor(...) as compactor:`` closes on leaving."""
        store = self.setup.store
        if self._owns_store and isinstance(store, Store):
            store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        s = self.setup
        store = type(s.store).__name__ if s.store is not None else None
        return (
            f"Compactor(window={s.window}, trigger={s.trigger}, keep={s.keep.describe()}, "
            f"summarizer={s.summarizer_name!r}, store={store})"
        )

    def _request(
        self, messages: object, options: dict[str, Any], *, asynchronous: bool = False
    ) -> tuple[Request, Setup]:
        setup = self.setup
        _check_call(options)
        if setup.store is not None and not blocks(setup.store) and not asynchronous:
            raise ConfigurationError(
                f"{type(setup.store).__name__} has only async methods: use acompact()"
            )
        options["format"] = options.get("format") or self.settings.format
        session = options.pop("session_id", None) or setup.default_session
        if session is None and setup.store is not None:
            session = DEFAULT_SESSION
        if session is not None and setup.store is None:
            setup = self.setup = _with_store(setup, MemoryStore())
            self._owns_store = True
        listeners = (*self.listeners, *options.pop("listeners", ()))
        return Request(messages, session_id=session, listeners=listeners, **options), setup

    def compact(
        self,
        messages: object,
        *,
        system: SystemPrompt = None,
        session_id: str | None = None,
        format: FormatName | None = None,
        force: bool = False,
        instructions: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        listeners: Sequence[Listener] = (),
    ) -> CompactionResult:
        """``messages`` compacted when the governor says so (or ``force``); see the package
        docstring for the steps. Raises ``ConversationError`` for input no provider would
        accept, ``BudgetUnreachableError`` when no compaction can make it fit, ``StoreError``
        when the originals could not be saved; the input is never changed."""
        request, setup = self._request(
            messages,
            {
                "system": system,
                "session_id": session_id,
                "format": format,
                "force": force,
                "instructions": instructions,
                "tools": tools,
                "listeners": listeners,
            },
        )
        with (
            span("synopsis.compact", session_id=request.session_id or ""),
            listening((*request.listeners, request.collected.append), request.session_id),
            gate(setup.store, request.session_id),
        ):
            memo = self._take(request)
            found = run(skip(memo, setup, request), setup) if memo is not None else None
            fast = self._skipped(request, found)
            if fast is not None:
                return fast
            memos: list[Memo] = []
            plan = compaction(
                setup, request, observe=self._observer(memos), prefix=self._prefix_of(request)
            )
            result = run(plan, setup)
            self._keep(self._memos, request.session_id, memos[0] if memos else None)
            return result

    async def acompact(
        self,
        messages: object,
        *,
        system: SystemPrompt = None,
        session_id: str | None = None,
        format: FormatName | None = None,
        force: bool = False,
        instructions: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        listeners: Sequence[Listener] = (),
        threaded: Threaded = None,
    ) -> CompactionResult:
        """:meth:`compact`, awaiting an async summarizer and store (a sync one runs in a
        thread). ``threaded``: the plan's own work in a worker thread too, so that a long
        history keeps the event loop free while it compacts (:data:`Threaded`); a task
        cancelled meanwhile ends at once, and the work's result is dropped. Listeners then
        hear some events from that thread."""
        request, setup = self._request(
            messages,
            {
                "system": system,
                "session_id": session_id,
                "format": format,
                "force": force,
                "instructions": instructions,
                "tools": tools,
                "listeners": listeners,
            },
            asynchronous=True,
        )
        if threaded not in _THREADINGS:
            raise ConfigurationError(
                f"threaded must be None, 'compaction' or 'all', got {threaded!r}"
            )
        with (
            span("synopsis.acompact", session_id=request.session_id or ""),
            listening((*request.listeners, request.collected.append), request.session_id),
        ):
            async with async_gate(setup.store, request.session_id):
                return await self._acompact(setup, request, threaded)

    async def _acompact(
        self, setup: Setup, request: Request, threaded: Threaded
    ) -> CompactionResult:
        memo = self._take(request)
        found = (
            await arun(skip(memo, setup, request), setup, threaded=threaded == "all")
            if memo is not None
            else None
        )
        fast = self._skipped(request, found)
        if fast is not None:
            return fast
        memos: list[Memo] = []
        plan = compaction(
            setup, request, observe=self._observer(memos), prefix=self._prefix_of(request)
        )
        result = await arun(plan, setup, threaded=threaded is not None)
        self._keep(self._memos, request.session_id, memos[0] if memos else None)
        return result

    # -- the incremental skip (see synopsis.compaction.incremental) ------------------------

    def _take(self, request: Request) -> Memo | None:
        """The memo of the request's session, taken: whatever happens next (an error, a
        compaction, a cancelled call) leaves none behind, and no other call can hold it."""
        with self._taking:
            self._last = request.session_id
            return self._memos.pop(request.session_id, None)

    def _skipped(
        self, request: Request, found: tuple[CompactionResult, Memo] | None
    ) -> CompactionResult | None:
        """The result of a skip the memo proved, its new memo kept; None when there was none."""
        if found is None:
            return None
        self._keep(self._memos, request.session_id, found[1])
        return found[0]

    def _prefix_of(self, request: Request) -> Prefix | None:
        with self._taking:
            return self._prefixes.get(request.session_id)

    def _observer(self, memos: list[Memo]) -> Callable[[Ended, Measure], None] | None:
        """What the full path tells of a call that skipped or compacted: its memo, into
        ``memos``, and what it decoded, for the next full call (see :mod:`.prefix`)."""
        if not self._incremental:
            return None

        def observe(ended: Ended, before: Measure) -> None:
            memo = remember(ended, before)
            if memo is not None:
                memos.append(memo)
            opened = ended.opened
            if opened.clean:
                self._keep(self._prefixes, opened.request.session_id, Prefix.of(opened))

        return observe

    # -- what the store keeps ------------------------------------------------------------

    def _store(self) -> Store:
        store = self.setup.store
        if store is None:
            raise ConfigurationError("this Compactor has no store: pass store=... or session_id")
        if not isinstance(store, Store):
            raise ConfigurationError(
                f"{type(store).__name__} has only async methods: call its own methods"
            )
        return store

    def _session(self, session_id: str | None) -> str:
        return session_id or self.setup.default_session or DEFAULT_SESSION

    def recall(
        self,
        session_id: str | None = None,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        """Offloaded messages of a session (the Compactor's own by default), by ids or by
        position range, in timeline order; each ``.data`` is the caller's item as it was."""
        return list(
            self._store().recall(self._session(session_id), ids=ids, start=start, stop=stop)
        )

    def search(
        self, query: str, session_id: str | None = None, *, limit: int = 10
    ) -> list[SearchHit]:
        """Offloaded messages of a session ranked by BM25 for ``query``, best first."""
        return list(self._store().search(self._session(session_id), query, limit=limit))

    def export(self, session_id: str | None = None) -> str:
        """A session's offloaded history as Markdown, a section per compaction."""
        return export_markdown(self._store(), self._session(session_id))


def _check_call(options: dict[str, Any]) -> None:
    """Arguments of one call that are of the wrong kind, refused with a sentence."""
    if not isinstance(options.get("force"), bool):
        raise ConfigurationError(f"force must be true or false, got {options.get('force')!r}")
    instructions = options.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ConfigurationError(f"instructions must be text, got {instructions!r}")
    listeners = options.get("listeners", ())
    if (
        isinstance(listeners, str | bytes)
        or not isinstance(listeners, Sequence)
        or not all(callable(listener) for listener in listeners)
    ):
        raise ConfigurationError(
            f"listeners must be a list of callables taking an event, got {listeners!r}"
        )


def _with_store(setup: Setup, store: Store | AsyncStore) -> Setup:
    return replace(setup, store=store)


def compact(
    messages: object,
    *,
    model: str | None = None,
    context_window: int | None = None,
    trigger: Trigger | float | str | None = None,
    keep: Keep | int | str | None = None,
    summarizer: SummarizerOption = None,
    counter: TokenCounter | None = None,
    store: StoreOption = None,
    session_id: str | None = None,
    format: FormatName | None = None,
    force: bool = False,
    instructions: str | None = None,
    listeners: Sequence[Listener] = (),
    system: SystemPrompt = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    **options: Any,  # noqa: ANN401 - any other Settings option
) -> CompactionResult:
    """Compact ``messages`` once (any other option of :class:`~synopsis.config.Settings` by
    keyword too). Without a ``store`` and ``session_id`` nothing is remembered between calls;
    hold a :class:`Compactor` for that."""
    with _one_shot(
        model, context_window, trigger, keep, summarizer, counter, store, options
    ) as compactor:
        return compactor.compact(
            messages,
            system=system,
            session_id=session_id,
            format=format,
            force=force,
            instructions=instructions,
            tools=tools,
            listeners=listeners,
        )


async def acompact(
    messages: object,
    *,
    model: str | None = None,
    context_window: int | None = None,
    trigger: Trigger | float | str | None = None,
    keep: Keep | int | str | None = None,
    summarizer: SummarizerOption = None,
    counter: TokenCounter | None = None,
    store: StoreOption = None,
    session_id: str | None = None,
    format: FormatName | None = None,
    force: bool = False,
    instructions: str | None = None,
    listeners: Sequence[Listener] = (),
    system: SystemPrompt = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    **options: Any,  # noqa: ANN401 - any other Settings option
) -> CompactionResult:
    """:func:`compact`, awaiting an async summarizer and store."""
    with _one_shot(
        model, context_window, trigger, keep, summarizer, counter, store, options
    ) as compactor:
        return await compactor.acompact(
            messages,
            system=system,
            session_id=session_id,
            format=format,
            force=force,
            instructions=instructions,
            tools=tools,
            listeners=listeners,
        )


def _one_shot(  # noqa: PLR0917 - the positional order of compact()'s own keywords
    model: str | None,
    context_window: int | None,
    trigger: Trigger | float | str | None,
    keep: Keep | int | str | None,
    summarizer: SummarizerOption,
    counter: TokenCounter | None,
    store: StoreOption,
    options: dict[str, Any],
) -> Compactor:
    """The Compactor of one :func:`compact` call. An argument left at ``None`` is not given,
    so a TOML file or a ``SYNOPSIS_*`` variable still sets it."""
    given = {"model": model, "context_window": context_window}
    options.update({k: v for k, v in given.items() if v is not None})
    compactor = Compactor(
        trigger=trigger, keep=keep, summarizer=summarizer, counter=counter, store=store, **options
    )
    compactor._incremental = False  # used once: nothing to remember for a next call
    return compactor
