"""What every adapter keeps for one conversation: the framework's messages it has converted,
and the list of converted items it gives synopsis.

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

from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["History"]

F = TypeVar("F")
"""A framework's message."""
I = TypeVar("I")  # noqa: E741 - the item synopsis reads
"""What synopsis reads for it: a wire item, or a :class:`~synopsis.Message`."""


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
        if len(messages) >= n:
            known.extend(messages[n:])
            # In C, and reading only the two lists while their messages are the same objects:
            # checking identity pair by pair touched every message, a cache miss each (1 ms at
            # 10,000 messages between two model calls), and a Python loop cost more than the
            # Compactor's whole call. An equal copy converts to an equal item.
            grown = known == (messages if type(messages) is list else list(messages))
            del known[n:]
            if grown:
                fresh = [self._convert(m) for m in messages[n:]]
                if n and (known[0] is not messages[0] or known[n - 1] is not messages[n - 1]):
                    self._messages = list(messages)  # copies: the same objects from now on
                else:
                    known.extend(messages[n:])
                self._items.extend(fresh)
                self._current = messages
                return self._items
        same = 0
        for old, new in zip(known, messages, strict=False):
            if old is not new and old != new:
                break
            same += 1
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
