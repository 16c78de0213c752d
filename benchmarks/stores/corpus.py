"""What every part of the stores benchmark takes: the plan of a run, the messages (the
bundled transcripts repeated and decoded by synopsis) and the timings of its calls.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import synopsis
from benchmarks._harness import quantile
from benchmarks.compare.inputs import build_history, load_transcripts
from synopsis.stores import (
    MemoryStore,
    PostgresStore,
    SQLiteStore,
    StoredMessage,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from benchmarks.compare.systems import Items
    from synopsis import Message


Kept: TypeAlias = SQLiteStore | PostgresStore | MemoryStore
"""The stores measured here (each can list what it keeps)."""

RESULTS = Path(__file__).resolve().parents[1] / "results" / "stores.md"
FAST_WINDOW = 1_000_000
"""The fast path's window: far above its histories, so that no call compacts."""
POOL_RECORDS = 8
"""Summary records made for the load, each given to many compactions under a fresh id."""
SAMPLE_SESSIONS = 10
"""Sessions whose words are counted to pick the search queries."""
_WORD = re.compile(r"[^\W_]+")
"""Words as the stores cut them: letters and digits, lower-cased."""


@dataclass(frozen=True)
class Plan:
    """How much of each part to run; :data:`FULL` is ``make bench``'s."""

    sessions: int
    per_session: int
    saves: int
    """Timed saves per store."""
    reads: int
    """Timed recalls of each kind, and searches of each query, per store."""
    locks: int
    """Uncontended acquire-and-release, sync and async each."""
    holds: tuple[float, ...]
    """Seconds a holder keeps the lock while another waits."""
    contended_rounds: int
    fast_history: int
    """Messages a fast-path history starts with."""
    fast_calls: int
    proxy_sessions: int
    proxy_rounds: int
    """Requests per conversation."""
    proxy_concurrency: int
    proxy_start: int
    """Messages (besides the system prompt) a conversation's first request carries."""
    window: int
    """The replicas' window for the model, in tokens."""
    pairs: int
    """Conversations sent to both replicas at once."""
    batch: int = 30
    """Messages per compaction: the load's and each timed save's."""
    warmup: int = 5


FULL = Plan(
    sessions=100,
    per_session=1_000,
    saves=100,
    reads=200,
    locks=1_000,
    holds=(0.05, 0.5, 2.0),
    contended_rounds=5,
    fast_history=200,
    fast_calls=300,
    proxy_sessions=64,
    proxy_rounds=25,
    proxy_concurrency=16,
    proxy_start=40,
    window=16_000,
    pairs=20,
)
QUICK = Plan(
    sessions=10,
    per_session=300,
    saves=20,
    reads=20,
    locks=100,
    holds=(0.05,),
    contended_rounds=3,
    fast_history=100,
    fast_calls=40,
    proxy_sessions=16,
    proxy_rounds=10,
    proxy_concurrency=8,
    proxy_start=40,
    window=16_000,
    pairs=4,
)


# -- the messages -----------------------------------------------------------------------------


@dataclass
class Corpus:
    """The bundled transcripts repeated to ``size`` items (OpenAI chat), decoded by synopsis.
    ``ends``: where a request may end (nothing waits for a tool's result, and the last item is
    the user's or a tool's: what an agent sends for the model's next turn); ``starts``: user
    messages that a conversation may open with."""

    items: Items
    messages: Sequence[Message]
    ends: list[int]
    starts: list[int]

    def stored(
        self, session: str, first: int, positions: range, compaction_id: str
    ) -> list[StoredMessage]:
        """Items from ``first`` on as a session's offloaded messages at ``positions``, kept
        as the pipeline keeps them (the caller's item as JSON text)."""
        return [
            StoredMessage.of(
                session,
                self.messages[first + n],
                position=position,
                format="openai",
                data=json.dumps(self.items[first + n], ensure_ascii=False),
                compaction_id=compaction_id,
            )
            for n, position in enumerate(positions)
        ]

    def after(self, index: int, count: int) -> list[int]:
        """The first ``count`` ends at ``index`` or later (fewer near the corpus's end)."""
        at = bisect.bisect_left(self.ends, index)
        return self.ends[at : at + count]


def corpus(size: int) -> Corpus:
    items = build_history(load_transcripts(), size)
    messages = synopsis.decode(items, "openai").messages
    if len(messages) != len(items):
        raise RuntimeError("decoding did not give one message per item")
    ends: list[int] = []
    starts: list[int] = []
    pending: set[str] = set()
    for i, item in enumerate(items):
        if not pending and item.get("role") == "user":
            starts.append(i)
        if item.get("role") == "tool":
            pending.discard(item.get("tool_call_id", ""))
        for call in item.get("tool_calls") or ():
            pending.add(call["id"])
        if not pending and item.get("role") in ("user", "tool"):
            ends.append(i + 1)
    return Corpus(items, messages, ends, starts)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


# -- timings -----------------------------------------------------------------------------------


@dataclass
class Timing:
    """Seconds per call."""

    samples: list[float] = field(default_factory=list)

    def ms(self, q: float) -> float:
        return quantile(self.samples, q) * 1e3

    @property
    def count(self) -> int:
        return len(self.samples)
