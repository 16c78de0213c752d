"""The effects the compaction plan yields: one to ask the summarizer, one per store operation.

The plan (:mod:`.pipeline`) never touches the summarizer or the store itself; a driver
(:mod:`.drivers`) carries each effect out, blocking or awaiting, and sends back its value or
the exception it raised. Each store effect knows the one method it stands for, in both modes,
so a driver needs no table of names.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast

if TYPE_CHECKING:
    from synopsis.messages import Message
    from synopsis.stores import AsyncStore, Compaction, SessionState, Store
    from synopsis.summarizers import SummaryRecord

__all__ = [
    "Effect",
    "LoadSession",
    "LoadSummaries",
    "LoadSummary",
    "Outcome",
    "SaveCompaction",
    "SaveSession",
    "StoreEffect",
    "Summarize",
]


@dataclass(frozen=True, slots=True)
class Summarize:
    """Ask the summarizer for a record of ``messages`` (updating ``previous``)."""

    messages: tuple[Message, ...]
    previous: SummaryRecord | None
    instructions: str | None
    max_tokens: int


async def _value(value: Any) -> Any:  # noqa: ANN401 - whatever the store's method returns
    # A store may declare its a-methods plainly (returning values) and still pass as AsyncStore.
    return await value if inspect.isawaitable(value) else value


@dataclass(frozen=True, slots=True)
class LoadSession:
    """Read the session's state (``None`` for a session the store has never seen)."""

    session_id: str

    def run(self, store: Store) -> SessionState | None:
        return store.session(self.session_id)

    async def arun(self, store: AsyncStore) -> SessionState | None:
        found: SessionState | None = await _value(store.asession(self.session_id))
        return found


class _ReadsOne(Protocol):
    def summary(self, session_id: str, summary_id: str) -> SummaryRecord | None: ...


class _AsyncReadsOne(Protocol):
    async def asummary(self, session_id: str, summary_id: str) -> SummaryRecord | None: ...


@dataclass(frozen=True, slots=True)
class LoadSummary:
    """Read one summary record of the session by its id (stores that offer it: the plan asks
    only those with a ``summary`` method, and reads the whole chain from the others)."""

    session_id: str
    summary_id: str

    def run(self, store: Store) -> SummaryRecord | None:
        return cast("_ReadsOne", store).summary(self.session_id, self.summary_id)

    async def arun(self, store: AsyncStore) -> SummaryRecord | None:
        reader = cast("_AsyncReadsOne", store)
        found: SummaryRecord | None = await _value(
            reader.asummary(self.session_id, self.summary_id)
        )
        return found


@dataclass(frozen=True, slots=True)
class LoadSummaries:
    """Read the session's summary chain, oldest record first."""

    session_id: str

    def run(self, store: Store) -> list[SummaryRecord]:
        return store.summaries(self.session_id)

    async def arun(self, store: AsyncStore) -> list[SummaryRecord]:
        found: list[SummaryRecord] = await _value(store.asummaries(self.session_id))
        return found


@dataclass(frozen=True, slots=True)
class SaveSession:
    """Write the session's state alone (a compaction that did not happen still moves the
    governor's memory on)."""

    state: SessionState

    def run(self, store: Store) -> None:
        store.save_session(self.state)

    async def arun(self, store: AsyncStore) -> None:
        await _value(store.asave_session(self.state))


@dataclass(frozen=True, slots=True)
class SaveCompaction:
    """Write a compaction's records, offloaded originals and new session state at once."""

    compaction: Compaction

    def run(self, store: Store) -> None:
        store.save(self.compaction)

    async def arun(self, store: AsyncStore) -> None:
        await _value(store.asave(self.compaction))


StoreEffect: TypeAlias = LoadSession | LoadSummary | LoadSummaries | SaveSession | SaveCompaction
Effect: TypeAlias = Summarize | StoreEffect
Outcome: TypeAlias = Any  # the effect's value, or the exception it raised
