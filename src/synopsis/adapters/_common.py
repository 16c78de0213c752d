"""What every adapter shares: the option check that builds its :class:`~synopsis.Compactor`,
the bounded cache of the conversations it serves, and, per conversation, the framework
messages it has converted (:class:`History`), compared with the next call's by one aligner
(:func:`leading`).

A framework hands its hook the whole history on every model call, as a new list of the same
message objects plus what was appended. Converting all of it each time costs more than the
compaction decides (tens of milliseconds at a thousand messages). :class:`History` converts
each framework message once and gives synopsis *the same list*, grown in place, while the
framework's list only grows, so that the :class:`~synopsis.Compactor`'s incremental skip reads
only the new items. A list that changed otherwise (a message edited or removed, the framework's
own compaction) is converted again from the first message that differs, into a new list.

Synopsis gives back the items it kept as the very objects it was given, so :meth:`History.back`
returns each kept one as the framework's own message (ids, metadata, signatures, usage
intact), and makes new framework messages only for the summary and what the reductions
shortened.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from synopsis import Compactor
from synopsis.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

__all__ = ["CONVERSATIONS", "Conversations", "History", "compactor_from", "leading"]

CONVERSATIONS = 32
"""How many conversations an adapter keeps converted by default: as many as a
:class:`~synopsis.Compactor`'s fast path remembers (``remembered_sessions``)."""

T = TypeVar("T")
C = TypeVar("C")
"""What an adapter keeps for one conversation."""
F = TypeVar("F")
"""A framework's message."""
I = TypeVar("I")  # noqa: E741 - the item synopsis reads
"""What synopsis reads for it: a wire item, or a :class:`~synopsis.Message`."""


# -- the option check ----------------------------------------------------------------------


def compactor_from(
    compactor: Compactor | None,
    options: dict[str, Any],
    *,
    conversations: int | None = None,
    session_id: object = None,
    defaults: Mapping[str, object] | None = None,
) -> Compactor:
    """The Compactor an adapter runs: ``compactor`` as given, or one built from ``options``
    (every option of :class:`~synopsis.config.Settings` and the objects ``Compactor`` takes,
    passed on as they are) over the adapter's ``defaults``. Refuses both at once.

    A built one's fast path remembers at least as many sessions as the adapter keeps
    ``conversations``, and a fixed conversation name (``session_id`` as text) is its default
    session, so that the store keeping the summaries exists from the start."""
    if compactor is None:
        given = dict(defaults or {})
        if isinstance(session_id, str):
            given["session_id"] = session_id
        built = Compactor(**{**given, **options})
        if conversations is not None:
            built.remembered_sessions = max(built.remembered_sessions, conversations)
        return built
    if options:
        raise ConfigurationError(
            f"pass a Compactor or its options, not both (got compactor= and "
            f"{', '.join(sorted(options))})"
        )
    if not isinstance(compactor, Compactor):
        raise ConfigurationError(f"compactor must be a synopsis.Compactor, got {compactor!r}")
    return compactor


# -- the conversations ---------------------------------------------------------------------


def _bound(conversations: object) -> int:
    if isinstance(conversations, bool) or not isinstance(conversations, int):
        raise ConfigurationError(f"conversations must be a whole number, got {conversations!r}")
    if conversations < 1:
        raise ConfigurationError(f"conversations must be at least 1, got {conversations}")
    return conversations


class Conversations(Mapping[str | None, C]):
    """What an adapter keeps for each conversation it serves, for the ``bound`` used most
    recently: :meth:`use` makes a new one for a conversation not kept, and drops the one used
    least recently past the bound (its next call converts its history again). Read as a
    mapping, the least recently used first, it changes nothing. Safe to call from several
    threads: a LangGraph agent runs threads side by side."""

    def __init__(self, bound: int, make: Callable[[], C]) -> None:
        self.bound = _bound(bound)
        self._make = make
        self._kept: OrderedDict[str | None, C] = OrderedDict()
        self._lock = threading.Lock()

    def use(self, key: str | None) -> C:
        """What is kept for conversation ``key``, made now if it is not; it is the most
        recently used from now on."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                found = self._kept[key] = self._make()
                while len(self._kept) > self.bound:
                    self._kept.popitem(last=False)
            else:
                self._kept.move_to_end(key)
            return found

    def __getitem__(self, key: str | None) -> C:
        return self._kept[key]

    def __len__(self) -> int:
        return len(self._kept)

    def __iter__(self) -> Iterator[str | None]:
        return iter(list(self._kept))


# -- one conversation's messages -----------------------------------------------------------


def leading(known: list[T], given: Sequence[T]) -> int:
    """How many of ``given``'s first items are ``known``'s, in order (the same object, or an
    equal one): ``len(known)`` when ``given`` starts with all of them."""
    n = len(known)
    if len(given) >= n:
        # One comparison of two lists, in C: it tries identity before equality, so it reads
        # only the two lists while their items are the same objects (a Python loop over
        # 10,000 items cost more than the Compactor's whole call). Growing ``known`` for
        # the comparison spares copying ``given``'s first n items.
        known.extend(given[n:])
        grown = known == (given if type(given) is list else list(given))
        del known[n:]
        if grown:
            return n
    same = 0
    for old, new in zip(known, given, strict=False):
        if old is not new and old != new:
            break
        same += 1
    return same


class History(Generic[F, I]):
    """One conversation's converted messages. ``convert`` turns one framework message into
    one item; ``make`` turns an item synopsis made (a summary, a shortened message) into a
    framework message. Not thread-safe: an adapter keeps one per conversation and calls it
    from that conversation's model calls, which a framework makes one at a time."""

    def __init__(self, convert: Callable[[F], I], make: Callable[[I], F]) -> None:
        self._convert = convert
        self._make = make
        self._messages: list[F] = []
        self._items: list[I] = []
        self._current: Sequence[F] = ()

    def items(self, messages: Sequence[F]) -> list[I]:
        """The items for ``messages``: the list given last time, grown by the new messages'
        items, when ``messages`` starts with the messages seen last time (the same objects, or
        equal copies: a checkpoint read back); else a new list, converted again from the first
        message that differs."""
        known = self._messages
        n = len(known)
        same = leading(known, messages)
        if same == n:
            fresh = [self._convert(m) for m in messages[n:]]
            if n and (known[0] is not messages[0] or known[n - 1] is not messages[n - 1]):
                self._messages = list(messages)  # copies: the same objects from now on
            else:
                known.extend(messages[n:])
            self._items.extend(fresh)
            self._current = messages
            return self._items
        fresh = [self._convert(m) for m in messages[same:]]
        self._messages = list(messages)
        self._items = [*self._items[:same], *fresh]
        self._current = messages
        return self._items

    def back(self, items: Sequence[object]) -> list[F]:
        """Framework messages for what synopsis returned: each item it was given comes back as
        the framework message of the last call it was converted for (that call's own object);
        any other is made anew."""
        where = {id(item): n for n, item in enumerate(self._items)}
        current = self._current
        out: list[F] = []
        for item in items:
            n = where.get(id(item))
            out.append(current[n] if n is not None else self._make(item))  # type: ignore[arg-type]
        return out

    def reset(self) -> None:
        """Forget what was converted (the next call converts every message again)."""
        self._messages = []
        self._items = []
        self._current = ()
