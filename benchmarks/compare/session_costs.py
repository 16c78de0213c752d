"""What a replayed session cost a system, request by request, as ``synopsis replay`` reports it
for synopsis alone: its compactions, how many came within two requests of the one before (a
burst: the room the last one left was filled again at once), the share of the window each
landed at, its summarizer calls, and the input of every request priced with a provider's
prefix cache at OpenAI's and at Anthropic's list prices (:mod:`synopsis.pricing`: each
request's longest run of whole messages shared with the one before is read from the cache,
the rest written).

Messages are compared by :func:`benchmarks.compare.anchors.message_key` (role, text,
tool calls, the call a result answers), so that a system whose conversion gives ``None`` for
``""`` is not charged for it; sizes are o200k tokens, as every part of the benchmark measures.

Summarizer calls: every compared system's summarizer is the shared
:func:`~benchmarks.compare.systems.fake_summary`, which each module calls by its global name;
:func:`counting_summaries` puts a counting stand-in in its place for the replay. A system
with a summarizer of its own (synopsis's rule-based one in the retention replay) counts its
calls itself, in a ``summaries`` attribute.
"""

from __future__ import annotations

import functools
import statistics
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from benchmarks.compare import systems
from benchmarks.compare.anchors import message_key
from benchmarks.compare.judge import tokens
from synopsis.pricing import ANTHROPIC, OPENAI, PrefixCache

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from benchmarks.compare.systems import Items

NOT_CALLS = frozenset({"_part_candidates"})
"""Functions that call the fake summarizer without being a summarizer call: zrb's adapter
renders what its tool-result summarizer would have written, to tell which messages a chunk
holds."""
BURST = 2
"""A compaction this many model requests or fewer after the one before came in a burst."""
PRICES = (OPENAI, ANTHROPIC)


@functools.cache
def _priming() -> int:
    """What the counter adds to every request beyond its messages (the reply's priming)."""
    return tokens([])


class Meter:
    """One system's model requests over one session, with what each compaction did."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.caches = {p.name: PrefixCache(p) for p in PRICES}
        self.requests = 0
        self.compactions: list[int] = []
        """The request index of each compaction."""
        self.landed: list[float] = []
        self.bursts = 0
        self.summarizer_calls = 0
        self._seen: dict[int, tuple[dict[str, Any], str, int]] = {}

    def _measured(self, item: dict[str, Any]) -> tuple[str, int]:
        # The same dicts come back request after request; holding each one keeps its id
        # from being reused by another.
        found = self._seen.get(id(item))
        if found is None or found[0] is not item:
            found = (item, message_key(item), tokens([item]) - _priming())
            self._seen[id(item)] = found
        return found[1], found[2]

    def request(self, sent: Items, size: int, *, compacted: bool, calls: int = 0) -> None:
        """A model request of ``sent`` (``size`` tokens), after a call that compacted or not
        and made ``calls`` summarizer calls."""
        measured = [self._measured(item) for item in sent]
        keys, counts = [k for k, _ in measured], [c for _, c in measured]
        for cache in self.caches.values():
            cache.send(keys, counts, total=size)
        if compacted:
            if self.compactions and self.requests - self.compactions[-1] <= BURST:
                self.bursts += 1
            self.compactions.append(self.requests)
            self.landed.append(size / self.window)
        self.summarizer_calls += calls
        self.requests += 1

    def as_json(self) -> dict[str, Any]:
        return {
            "bursts": self.bursts,
            "landed": [round(share, 4) for share in self.landed],
            "summarizer_calls": self.summarizer_calls,
            "cost": {name: cost_json(cache) for name, cache in self.caches.items()},
        }


def cost_json(cache: PrefixCache) -> dict[str, Any]:
    session = cache.session
    return {
        "usd": session.cost,
        "cached_tokens": session.shared,
        "tokens": session.tokens,
        "hits": session.hits,
        "requests": len(session.requests),
    }


_COUNTS = ("cached_tokens", "tokens", "hits", "requests")


def merged(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """:meth:`Meter.as_json` of several sessions, pooled."""
    out: dict[str, Any] = {
        "bursts": sum(p["bursts"] for p in parts),
        "landed": [share for p in parts for share in p["landed"]],
        "summarizer_calls": sum(p["summarizer_calls"] for p in parts),
        "cost": {},
    }
    for prices in PRICES:
        costs = [p["cost"][prices.name] for p in parts]
        out["cost"][prices.name] = {
            "usd": sum(c["usd"] for c in costs),
            **{k: sum(c[k] for c in costs) for k in _COUNTS},
        }
    return out


def uncompacted(items: Items, window: int) -> dict[str, Any]:
    """The session with nothing compacted: the whole history at every model request (a
    request before each assistant message), as a baseline for the costs."""
    meter = Meter(window)
    history: Items = []
    sent = 0
    for item in items:
        if item.get("role") == "assistant" and history:
            size = tokens(history)
            sent += size
            meter.request(history, size, compacted=False)
        history = [*history, item]
    return {"tokens_sent": sent, **meter.as_json()}


@contextmanager
def counting_summaries() -> Iterator[Callable[[], int]]:
    """Within the block, every call of the shared fake summarizer is counted, whichever
    module makes it; the block gets a function that says how many so far."""
    original = systems.fake_summary
    count = [0]

    def counted(messages: int) -> str:
        if sys._getframe(1).f_code.co_name not in NOT_CALLS:
            count[0] += 1
        return original(messages)

    holders = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("benchmarks.") and getattr(module, "fake_summary", None) is original
    ]
    for module in holders:
        module.fake_summary = counted  # type: ignore[attr-defined]
    try:
        yield lambda: count[0]
    finally:
        for module in holders:
            module.fake_summary = original  # type: ignore[attr-defined]


def landed_text(shares: list[float]) -> str:
    """``48% (41-79%)``: the median share of the window compactions landed at, and the range."""
    if not shares:
        return "–"
    low, high = min(shares), max(shares)
    return f"{statistics.median(shares):.0%} ({low:.0%}–{high:.0%})"


def usd(cost: dict[str, Any]) -> str:
    return f"${cost['usd']:,.2f}" if cost["usd"] >= 1 else f"${cost['usd']:.4f}"


def cached_share(cost: dict[str, Any]) -> str:
    return f"{cost['cached_tokens'] / cost['tokens']:.0%}" if cost["tokens"] else "–"


# -- the report's tables ----------------------------------------------------------------------

NOTE = (
    "Within two requests: compactions that came two model requests or fewer after the one "
    "before. Landed: the share of the window a compaction left, median (range). Input cost: "
    "every request's input with a provider's prefix cache, each request's longest run of "
    "whole messages shared with the one before read at the cached price and the rest written, "
    "at list prices ({prices}; `synopsis.pricing`); cached: the share of the tokens sent read "
    "from the cache. Nothing compacted: the whole history at every request, as a baseline "
    "(over the window, so no provider would take it)."
)


def note() -> str:
    """What the cost tables' columns mean, with the prices they are at."""
    return NOTE.format(prices="; ".join(p.describe() for p in PRICES))


def table(rows: list[tuple[str, dict[str, Any]]], baseline: dict[str, Any]) -> list[str]:
    """What a replayed session cost each system: one row per ``(label, figures)``, the
    figures as :meth:`Meter.as_json` gives them (with ``compactions`` and ``tokens_sent``),
    then the session with nothing compacted; no table for results from before the costs were
    measured."""
    measured = [(label, r) for label, r in rows if "cost" in r]
    if not measured:
        return []
    if "cost" in baseline:
        measured.append(("nothing compacted", {**baseline, "compactions": 0}))
    lines = [
        "| system | compactions | within two requests | landed | summarizer calls "
        "| tokens sent | input cost, OpenAI | cached | input cost, Anthropic | cached |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, r in measured:
        openai, anthropic = r["cost"]["openai"], r["cost"]["anthropic"]
        lines.append(
            f"| {label} | {r['compactions']} | {r['bursts']} | {landed_text(r['landed'])} "
            f"| {r['summarizer_calls']} | {r['tokens_sent']:,} | {usd(openai)} "
            f"| {cached_share(openai)} | {usd(anthropic)} | {cached_share(anthropic)} |"
        )
    return lines


def replay_table(results: dict[str, Any]) -> list[str]:
    """:func:`table` for the replay part's session."""
    replay = results["replay"]
    rows = [(results["labels"][name], r) for name, r in replay["systems"].items()]
    return table(rows, replay.get("uncompacted", {}))
