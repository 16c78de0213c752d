"""synopsis itself, driven like the peers: a :class:`synopsis.Compactor` per budget, called
before each model request with the history in OpenAI chat shape (its native shape: no
conversion at all)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import weakref
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import synopsis
from benchmarks.compare.systems import Budget, Items, fake_summary
from synopsis.summarizers import Covers, SummaryRecord

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message


class FakeSummarizer:
    """:func:`fake_summary` as a synopsis summarizer: the record carries the same coverage
    lineage a real summarizer's does (that bookkeeping is synopsis's machinery, so it is
    timed), and a narrative with nothing from the messages."""

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        del instructions, max_tokens
        return SummaryRecord(
            depth=previous.depth + 1 if previous else 0,
            parent_id=previous.id if previous else None,
            narrative=fake_summary(len(messages)),
            covers=Covers.of(messages),
            model="fake",
        )


def strategy_name(strategy: Sequence[str]) -> str:
    """``("clear", "summarize")`` as the comparison names it: ``clear+summarize``."""
    return "+".join(strategy)


class SynopsisSystem:
    """``summarizer="fake"`` for speed and validity; ``"rules"`` (synopsis's default,
    rule-based and offline) for retention. With ``strategy``, the compactor's ``strategy``
    option (``("clear",)``, ``("summarize",)``, ``("clear", "summarize")``: what it does under
    pressure, in order), and the system is named ``synopsis:clear`` and so on; without, the
    default strategy."""

    def __init__(
        self,
        summarizer: str = "fake",
        *,
        sqlite: bool = False,
        fresh: bool = False,
        resent: bool = False,
        strategy: Sequence[str] | None = None,
    ) -> None:
        self.summarizer = summarizer
        self.sqlite = sqlite
        self.fresh = fresh
        self.resent = resent
        self.strategy = None if strategy is None else tuple(strategy)
        self.name = "synopsis"
        self.label = f"synopsis {version('synopsis')} Compactor"
        if self.strategy is not None:
            self.name += f":{strategy_name(self.strategy)}"
            self.label += f", strategy {strategy_name(self.strategy)}"
        if summarizer == "rules":
            self.label += " (rule-based summarizer)"
        if sqlite:
            self.label += ", SQLite store"
        if fresh:
            self.label += ", history decoded from JSON each call"
        if resent:
            self.label += ", whole history resent after a compaction"
        self._compactors: dict[Budget, synopsis.Compactor] = {}
        self.first_resent_ms: float | None = None
        self._stores: list[synopsis.SQLiteStore] = []
        self._folders: list[str] = []
        # The harness never says when it is done with a system: close its stores and remove
        # their folders when it is collected, as the last step, not by chance.
        weakref.finalize(self, _clean_up, self._stores, self._folders)

    def compactor(self, budget: Budget) -> synopsis.Compactor:
        found = self._compactors.get(budget)
        if found is None:
            stored: dict[str, Any] = {}
            if self.sqlite:
                # A session in a SQLite file, as a long-running agent keeps one.
                self._folders.append(tempfile.mkdtemp(prefix="synopsis-bench-"))
                self._stores.append(synopsis.SQLiteStore(Path(self._folders[-1]) / "sessions.db"))
                stored = {"store": self._stores[-1], "session_id": "bench"}
            if self.resent:
                # The session keeps the summary and where it lies in the caller's history.
                stored = {"store": synopsis.MemoryStore(), "session_id": "bench"}
            if self.strategy is not None:
                stored["strategy"] = self.strategy
            found = synopsis.Compactor(
                context_window=budget.window,
                trigger=synopsis.Trigger.tokens(budget.trigger),
                keep=synopsis.Keep.tokens(budget.keep),
                summarizer=FakeSummarizer() if self.summarizer == "fake" else "rules",
                **stored,
            )
            self._compactors[budget] = found
        return found

    def native(self, items: Items) -> Any:
        if self.fresh:
            # New objects with the same content, as an HTTP proxy or a per-request hook
            # decodes them: the earlier items are no longer the ones synopsis read.
            return json.loads(json.dumps(list(items)))
        return list(items)

    def step(self, history: Any, budget: Budget) -> Any | None:
        """With ``resent``, the first call for a budget is forced to compact, so that the later
        calls, which send the whole uncompacted history again, find a summary in the session
        to put in place of the part it covers; it then sends that history once more, as the
        client's next request would (timed in :attr:`first_resent_ms`, apart from the
        table). A call that only puts the summary in place compacts nothing and
        returns ``None``, so that the speed run counts it as deciding."""
        first = budget not in self._compactors
        compactor = self.compactor(budget)
        result = compactor.compact(history, format="openai", force=self.resent and first)
        if self.resent and first:
            started = time.perf_counter()
            compactor.compact(list(history), format="openai")
            self.first_resent_ms = (time.perf_counter() - started) * 1e3
        return result.messages if result.compacted else None

    def items(self, history: Any) -> Items:
        return list(history)


def _clean_up(stores: list[synopsis.SQLiteStore], folders: list[str]) -> None:
    for store in stores:
        store.close()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def create() -> SynopsisSystem:
    return SynopsisSystem("fake")


def create_non_llm() -> SynopsisSystem:
    return SynopsisSystem("rules")


def create_strategy(strategy: Sequence[str]) -> SynopsisSystem:
    """synopsis with the fake summarizer and ``strategy``."""
    return SynopsisSystem("fake", strategy=strategy)


def create_strategy_non_llm(strategy: Sequence[str]) -> SynopsisSystem:
    """synopsis with its rule-based summarizer and ``strategy``."""
    return SynopsisSystem("rules", strategy=strategy)


def create_sqlite() -> SynopsisSystem:
    """synopsis with a session in a SQLite file: what deciding costs with a store."""
    return SynopsisSystem("fake", sqlite=True)


def create_fresh() -> SynopsisSystem:
    """synopsis given the history decoded afresh from JSON on every call: equal copies, not
    the objects it read the call before."""
    return SynopsisSystem("fake", fresh=True)


def create_resent() -> SynopsisSystem:
    """synopsis with a session in memory, after one compaction, given the whole uncompacted
    history again on every call."""
    return SynopsisSystem("fake", resent=True)
