"""What a session's requests cost in input tokens with a provider's prefix cache.

OpenAI (automatically) and Anthropic (where a request marks it) charge less for the part of
a request that repeats the start of an earlier one. This module prices a session under a
simple model of that cache: each request's longest run of leading messages equal to the
previous request's is read from the cache at the cached price, and the rest is written at the
write price (the input price plus the provider's write premium, where it charges one).
Messages are compared whole, by a key given for each (a content hash, a wire item's canonical
JSON); the system prompt and the tool definitions come first, as the providers put them.

It is the most a cache can give: no minimum cacheable length, no expiry between requests, no
limit on cache breakpoints. A compaction rewrites the start of the history, so the request
after it shares only what came before its summary: what a compaction costs in cache writes is
what this measures, beside the tokens it saves.

:data:`OPENAI` and :data:`ANTHROPIC` are list prices of one model each (see
``docs/cli.md``); every price is an option. Pure: no I/O, no knowledge of any wire format.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from synopsis.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Sequence

__all__ = [
    "ANTHROPIC",
    "OPENAI",
    "PRESETS",
    "PrefixCache",
    "Prices",
    "RequestCost",
    "SessionCost",
    "session_cost",
    "shared_prefix",
]

MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Prices:
    """US dollars per million input tokens: ``input`` uncached, ``cached`` read from the
    cache, and ``write_premium`` on top of ``input`` for a token written to the cache (0
    where the provider charges none). ``name`` says where the prices come from."""

    input: float
    cached: float
    write_premium: float = 0.0
    name: str = "custom"

    def __post_init__(self) -> None:
        for label in ("input", "cached", "write_premium"):
            value = getattr(self, label)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ConfigurationError(
                    f"the {label} price must be a number of dollars, 0 or more, got {value!r}"
                )

    @property
    def write(self) -> float:
        """Dollars per million tokens written to the cache."""
        return self.input + self.write_premium

    def cost(self, *, read: int, written: int) -> float:
        """Dollars for ``read`` tokens from the cache and ``written`` tokens to it."""
        return (read * self.cached + written * self.write) / MILLION

    def uncached(self, tokens: int) -> float:
        """Dollars for ``tokens`` with no cache at all."""
        return tokens * self.input / MILLION

    def describe(self) -> str:
        """``openai: $1.25/M input, $0.125/M cached`` (and the write premium, if any)."""
        premium = f", +${self.write_premium:g}/M to write" if self.write_premium else ""
        return f"{self.name}: ${self.input:g}/M input, ${self.cached:g}/M cached{premium}"


OPENAI = Prices(name="openai", input=1.25, cached=0.125)
"""GPT-5's list prices: cached input a tenth of the input price, no charge to write."""
ANTHROPIC = Prices(name="anthropic", input=3.0, cached=0.30, write_premium=0.75)
"""Claude Sonnet 4.5's list prices with the five-minute cache: reads a tenth of the input
price, writes 1.25 times it."""
PRESETS = {p.name: p for p in (OPENAI, ANTHROPIC)}


def shared_prefix(previous: Sequence[Hashable], current: Sequence[Hashable]) -> int:
    """How many leading keys ``current`` has in common with ``previous``."""
    count = 0
    for old, new in zip(previous, current, strict=False):
        if old != new:
            break
        count += 1
    return count


@dataclass(frozen=True, slots=True)
class RequestCost:
    """One request: its ``tokens``, the ``shared`` ones of its longest prefix of whole
    messages shared with the request before (read from the cache), and its ``cost`` in
    dollars."""

    tokens: int
    shared: int
    cost: float

    @property
    def written(self) -> int:
        """Tokens written to the cache (every token not read from it)."""
        return self.tokens - self.shared

    @property
    def hit(self) -> bool:
        """Whether any of the request was read from the cache."""
        return self.shared > 0


@dataclass(frozen=True, slots=True)
class SessionCost:
    """Every request of a session, priced, and the totals."""

    prices: Prices
    requests: tuple[RequestCost, ...] = ()

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.requests)

    @property
    def shared(self) -> int:
        """Tokens read from the cache over the session."""
        return sum(r.shared for r in self.requests)

    @property
    def cost(self) -> float:
        return sum(r.cost for r in self.requests)

    @property
    def hits(self) -> int:
        """Requests that read part of themselves from the cache."""
        return sum(r.hit for r in self.requests)

    @property
    def uncached(self) -> float:
        """What the same requests cost with no cache."""
        return self.prices.uncached(self.tokens)


@dataclass(slots=True)
class PrefixCache:
    """A session's requests sent one after the other, each priced against the one before.

    :meth:`send` compares a request with the last one, message by message; :meth:`append`
    takes a request that is the last one with messages added at its end, and compares
    nothing (a session that grows by appending costs time linear in its length)."""

    prices: Prices
    requests: list[RequestCost] = field(default_factory=list, init=False)
    _keys: list[Hashable] = field(default_factory=list, init=False, repr=False)
    _tokens: list[int] = field(default_factory=list, init=False, repr=False)
    _sum: int = field(default=0, init=False, repr=False)

    def send(
        self, keys: Sequence[Hashable], tokens: Sequence[int], *, total: int | None = None
    ) -> RequestCost:
        """Price a request of messages with these ``keys`` and ``tokens`` each; ``total`` is
        the whole request's tokens where it is more than the messages' (a counter's framing),
        their sum by default."""
        same = shared_prefix(self._keys, keys)
        shared = sum(self._tokens[:same]) if same < len(self._keys) else self._sum
        self._keys, self._tokens, self._sum = list(keys), list(tokens), sum(tokens)
        return self._priced(shared, total)

    def append(
        self, keys: Sequence[Hashable], tokens: Sequence[int], *, total: int | None = None
    ) -> RequestCost:
        """Price the last request with messages of these ``keys`` and ``tokens`` appended."""
        shared = self._sum
        self._keys.extend(keys)
        self._tokens.extend(tokens)
        self._sum += sum(tokens)
        return self._priced(shared, total)

    def _priced(self, shared: int, total: int | None) -> RequestCost:
        size = self._sum if total is None else total
        # A counter that is not a sum over messages (a calibrated one) can count the whole
        # below its parts: the cache never reads more than the request holds.
        shared = min(shared, size)
        request = RequestCost(
            tokens=size,
            shared=shared,
            cost=self.prices.cost(read=shared, written=size - shared),
        )
        self.requests.append(request)
        return request

    @property
    def session(self) -> SessionCost:
        return SessionCost(self.prices, tuple(self.requests))


def session_cost(
    requests: Iterable[Sequence[tuple[Hashable, int]]], prices: Prices = OPENAI
) -> SessionCost:
    """Each request, a sequence of ``(key, tokens)`` per message, priced against the one
    before it."""
    cache = PrefixCache(prices)
    for request in requests:
        cache.send([key for key, _ in request], [tokens for _, tokens in request])
    return cache.session
