"""Replay a recorded history message by message, as a live agent would have sent it.

:func:`replay` keeps a growing history: for each item of the input it appends the item, asks
one :class:`~synopsis.Compactor` to compact the history, and carries the result on as the next
history. The :class:`ReplayReport` says, turn by turn, how many tokens went out with synopsis
and how many would have gone out without it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from synopsis.compaction import Compactor
from synopsis.errors import BudgetUnreachableError
from synopsis.formats import decode
from synopsis.summarizers import render

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from synopsis.formats import FormatName

__all__ = ["ReplayReport", "Turn", "replay"]

SESSION = "replay"


@dataclass(frozen=True, slots=True)
class Turn:
    """One call to the compactor: after the input's item ``index`` was appended."""

    index: int
    tokens_before: int
    tokens_after: int
    tokens_without: int
    messages_before: int
    messages_after: int
    compacted: bool
    code: str
    reason: str
    summary: str | None = None


@dataclass(slots=True)
class ReplayReport:
    """Every turn of a replay and the totals over the session."""

    model: str | None
    window: int
    reserve: int
    trigger_tokens: int | None
    items: int
    turns: list[Turn] = field(default_factory=list)
    unreachable: str | None = None
    """Why the replay stopped early: the history could not be made to fit."""

    @property
    def compactions(self) -> list[Turn]:
        return [t for t in self.turns if t.compacted]

    @property
    def summarizer_calls(self) -> int:
        return sum(1 for t in self.turns if t.summary is not None)

    @property
    def tokens_with(self) -> int:
        """Tokens sent over the whole session with synopsis."""
        return sum(t.tokens_after for t in self.turns)

    @property
    def tokens_without(self) -> int:
        """Tokens the same session would have sent with nothing compacted."""
        return sum(t.tokens_without for t in self.turns)

    @property
    def completed(self) -> bool:
        return self.unreachable is None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the totals, then every turn."""
        return {
            "model": self.model,
            "window": self.window,
            "reserve": self.reserve,
            "trigger_tokens": self.trigger_tokens,
            "items": self.items,
            "completed": self.completed,
            "unreachable": self.unreachable,
            "compactions": len(self.compactions),
            "summarizer_calls": self.summarizer_calls,
            "tokens_with": self.tokens_with,
            "tokens_without": self.tokens_without,
            "turns": [asdict(t) for t in self.turns],
        }


def replay(
    items: Sequence[Any],
    *,
    fmt: FormatName | None = None,
    system: object = None,
    progress: Callable[[int, int], None] | None = None,
    **compactor_options: Any,  # noqa: ANN401 - Compactor validates each option
) -> ReplayReport:
    """Play ``items`` one by one through one :class:`~synopsis.Compactor` (built from
    ``compactor_options``; a memory store and one session by default, so the governor's memory
    carries from turn to turn). ``progress(done, total)`` is called after each turn. A
    history that cannot be made to fit ends the replay, recorded in the report."""
    compactor_options.setdefault("store", "memory")
    compactor_options.setdefault("session_id", SESSION)
    compactor = Compactor(**compactor_options)
    setup = compactor.setup
    report = ReplayReport(
        model=compactor.settings.model,
        window=setup.window,
        reserve=setup.reserve,
        trigger_tokens=setup.trigger.token_threshold(setup.window),
        items=len(items),
    )
    fmt = fmt or decode(list(items)).format
    history: list[Any] = []
    for index, item in enumerate(items):
        history.append(item)
        raw = decode(list(items[: index + 1]), fmt, system=system).messages
        without = setup.counter.count_messages(raw)
        try:
            result = compactor.compact(history, system=system, format=fmt)
        except BudgetUnreachableError as error:
            report.unreachable = f"turn {index}: {error}"
            break
        record = result.record if result.compacted else None
        report.turns.append(
            Turn(
                index=index,
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
                tokens_without=without,
                messages_before=len(history),
                messages_after=len(result.messages),
                compacted=result.compacted,
                code=result.code,
                reason=result.reason,
                summary=render(record) if record is not None else None,
            )
        )
        history = list(result.messages)
        system = result.system if result.system is not None else system
        if progress is not None:
            progress(index + 1, len(items))
    return report
