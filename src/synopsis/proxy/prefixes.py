"""What a request shares with its session's previous one, as a provider's prefix cache reads it:
the leading messages of the history sent upstream that the previous request sent too, and
their tokens; and the same for the client's own history.

Messages are compared whole, as :func:`synopsis.pricing.shared_prefix` compares them, by their
content: the wire items themselves, whose equality is that of their JSON (a client sends each
request decoded afresh, so they are never the same objects). The system prompt and the tools
come first, as the providers put them: when either changed, nothing is shared.

The cost is kept small. The usual request resends the last history with messages appended,
and then one comparison of the lists, in C, says so (a tenth of the time the body's parse
took), and the shared tokens are the previous request's count, already made by the
compaction. Only a history that changed inside (a compaction's rewrite, an edit) is counted
again, its shared part alone. Each session keeps the last request's lists (references to
what that request decoded, no copy), for as many sessions as the compactors remember.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from synopsis.pricing import shared_prefix

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Sequence


__all__ = ["Count", "Prefixes", "Seen", "Shared"]

Count: TypeAlias = "Callable[[list[Any], object, object], int | None]"
"""Counts the tokens of items with a system prompt and tools (None: it could not)."""


@dataclass(frozen=True, slots=True)
class Seen:
    """One request's history as sent (or as the client gave it): the system prompt, the tools
    and the items, and their tokens as synopsis counted them (None when not counted)."""

    system: object
    tools: object
    items: list[Any]
    tokens: int | None


@dataclass(frozen=True, slots=True)
class Shared:
    """What a request shared with the previous one (each None when there was none)."""

    messages: int | None = None
    tokens: int | None = None
    client_tokens: int | None = None


def _leading(previous: list[Any], current: list[Any]) -> int:
    """How many leading items ``current`` shares with ``previous``."""
    n = len(previous)
    if len(current) >= n and current[:n] == previous:  # appended to: the usual request
        return n
    return shared_prefix(cast("Sequence[Hashable]", previous), cast("Sequence[Hashable]", current))


def _shared(
    previous: Seen | None, current: Seen, count: Count, known: int | None = None
) -> tuple[int | None, int | None]:
    """The leading messages and tokens ``current`` shares with ``previous`` (``known``: how
    many leading items its items share with the previous ones, already compared)."""
    if previous is None:
        return None, None
    if previous.system != current.system or previous.tools != current.tools:
        return 0, 0
    n = _leading(previous.items, current.items) if known is None else known
    tokens: int | None
    if n == len(previous.items) and previous.tokens is not None:
        tokens = previous.tokens
    else:
        tokens = count(current.items[:n], current.system, current.tools)
    if tokens is None or current.tokens is None:
        return n, tokens
    # A count that is not a sum over messages can count the whole below its parts.
    return n, min(tokens, current.tokens)


class Prefixes:
    """Per session, the last request's histories (sent and the client's), for the next one to
    be compared with; the ``remembered`` sessions used last."""

    def __init__(self, remembered: int = 256) -> None:
        self.remembered = remembered
        self._last: OrderedDict[str, tuple[Seen, Seen]] = OrderedDict()

    def share(self, session: str, sent: Seen, client: Seen, count: Count) -> Shared:
        """What a request of ``session`` that sent ``sent`` upstream, given ``client`` by the
        client, shares with the session's last one; it is the session's last one from now
        on. ``count`` counts what is shared when it cannot be known otherwise."""
        previous = self._last.pop(session, None)
        self._last[session] = (sent, client)
        while len(self._last) > self.remembered:
            del self._last[next(iter(self._last))]
        try:
            messages, tokens = _shared(previous and previous[0], sent, count)
            # Sent as the client gave it, after a request sent so too: the items were compared.
            alike = previous is not None and _same(sent, client) and _same(*previous)
            known = messages if alike else None
            _, client_tokens = _shared(previous and previous[1], client, count, known)
        except RecursionError:  # items nested deeper than Python compares: not known
            return Shared()
        return Shared(messages, tokens, client_tokens)


def _same(sent: Seen, client: Seen) -> bool:
    return sent.items is client.items
