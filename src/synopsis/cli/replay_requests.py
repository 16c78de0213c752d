"""The requests a replay sends, turn after turn, as tokens and as a prefix cache prices them.

A provider's cache reads the part of a request that repeats the start of the one before
(:mod:`synopsis.pricing`), message by message, compared by content: here each message is
its :func:`~synopsis.messages.content_hash` and its count, the system prompt first. Both
sides of a replay are followed: the transcript sent as it is, and what synopsis sends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synopsis.compaction.incremental import additive
from synopsis.formats import decode
from synopsis.messages import content_hash
from synopsis.pricing import PrefixCache

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.compaction import CompactionResult
    from synopsis.compaction.setup import Setup
    from synopsis.formats import FormatName
    from synopsis.messages import Message
    from synopsis.pricing import Prices, RequestCost

__all__ = ["Sent", "Uncompacted"]


def _keys(messages: Sequence[Message]) -> list[str]:
    return [content_hash(m) for m in messages]


class Uncompacted:
    """The transcript's first ``n`` items sent as they are, turn after turn, in time linear
    in the transcript: the whole is decoded once and, where each item is one message and the
    counter's total is a sum over messages, each turn adds the new message (its count, and
    to the cache, a request that is the last one grown by it). Otherwise each prefix is
    decoded, counted and compared again."""

    def __init__(
        self, setup: Setup, wire: Sequence[Any], fmt: FormatName, system: object, prices: Prices
    ) -> None:
        self.setup, self.wire, self.fmt, self.system = setup, wire, fmt, system
        self.messages = decode(list(wire), fmt, system=system).messages
        self.lead = len(self.messages) - len(wire)
        # OpenAI and Anthropic items decode one message each (after a system prompt kept
        # apart), whatever follows them: a prefix's messages are the whole's first ones.
        self.running = additive(setup.counter) and fmt in ("openai", "anthropic")
        self.cache = PrefixCache(prices)
        self.done = 0
        self.total = setup.counter.count_messages(self.messages[: self.lead])

    def message(self, index: int) -> Message:
        """The message of wire item ``index`` (where each item is one message)."""
        return self.messages[self.lead + index]

    def send(self, n: int) -> tuple[int, RequestCost]:
        """The tokens of the first ``n`` items, and their request priced."""
        counter = self.setup.counter
        if not self.running:
            raw = decode(list(self.wire[:n]), self.fmt, system=self.system).messages
            tokens = int(counter.count_messages(raw))
            counts = [counter.count_message(m) for m in raw]
            return tokens, self.cache.send(_keys(raw), counts, total=tokens)
        items = self.messages[self.lead + self.done : self.lead + n]
        counts = [counter.count_message(m) for m in items]
        keys = _keys(items)
        self.total += sum(counts)
        if self.done == 0:  # the first request opens with the system prompt
            head = self.messages[: self.lead]
            keys = _keys(head) + keys
            counts = [counter.count_message(m) for m in head] + counts
        self.done = n
        return int(self.total), self.cache.append(keys, counts, total=int(self.total))


class Sent:
    """What synopsis sends each turn: a turn that compacted nothing sends the last request
    with the new item appended (its message taken from :class:`Uncompacted`'s decoding); any
    other is decoded whole and compared with the last."""

    def __init__(self, setup: Setup, fmt: FormatName, prices: Prices, whole: Uncompacted) -> None:
        self.setup, self.fmt, self.whole = setup, fmt, whole
        self.cache = PrefixCache(prices)
        self.length: int | None = None
        """Items in the last request, none before the first."""

    def send(self, index: int, result: CompactionResult, system: object) -> RequestCost:
        """Turn ``index``'s request: ``result.messages`` with the system prompt ``system``."""
        sent = result.messages
        last, self.length = self.length, len(sent)
        if (
            self.whole.running
            and last is not None
            and not result.compacted
            and not result.fixes
            and len(sent) == last + 1
            and sent[-1] is self.whole.wire[index]
        ):
            message = self.whole.message(index)
            count = self.setup.counter.count_message(message)
            return self.cache.append([content_hash(message)], [count], total=result.tokens_after)
        return self.resend(result, system)

    def resend(self, result: CompactionResult, system: object) -> RequestCost:
        """The request decoded whole and compared with the last, message by message."""
        messages = decode(list(result.messages), self.fmt, system=system).messages
        counts = [self.setup.counter.count_message(m) for m in messages]
        return self.cache.send(_keys(messages), counts, total=result.tokens_after)
