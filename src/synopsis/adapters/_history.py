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

import operator
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

    def items(self, messages: Sequence[F]) -> list[I]:
        """The items for ``messages``: the list given last time, grown by the new messages'
        items, when ``messages`` starts with the messages seen last time (the same objects);
        else a new list, converted again from the first message that differs."""
        known = self._messages
        if len(messages) >= len(known) and all(map(operator.is_, known, messages)):
            # The common case, checked in C: at 10,000 messages a Python loop over the pairs
            # cost more than the Compactor's whole call.
            same = len(known)
        else:
            same = 0
            for old, new in zip(known, messages, strict=False):
                if old is not new:
                    break
                same += 1
        fresh = [self._convert(m) for m in messages[same:]]
        if same == len(known):
            known.extend(messages[same:])
            self._items.extend(fresh)
        else:
            self._messages = [*known[:same], *messages[same:]]
            self._items = [*self._items[:same], *fresh]
        return self._items

    def back(self, items: Sequence[object]) -> list[F]:
        """Framework messages for what synopsis returned: each item it was given comes back as
        the framework message it was converted from; any other is made anew."""
        where = {id(item): n for n, item in enumerate(self._items)}
        out: list[F] = []
        for item in items:
            n = where.get(id(item))
            out.append(self._messages[n] if n is not None else self._make(item))  # type: ignore[arg-type]
        return out

    def reset(self) -> None:
        """Forget what was converted (the next call converts every message again)."""
        self._messages = []
        self._items = []
