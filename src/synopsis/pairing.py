"""Which tool result answers which tool call.

Real transcripts reuse call ids: a later call can carry the id of an earlier, finished one.
So a result pairs with the nearest *open* call of the same id before it (the most recent
message holding such a call), and within one message with the first such call (parallel calls
that share an id are answered in order). Pure and linear in the number of parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from synopsis.messages import Message, ToolCallPart, ToolResultPart

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Location", "Pairing", "pair_tool_calls"]

Location = tuple[int, int]
"""(message index, part index)."""


@dataclass(frozen=True, slots=True)
class Pairing:
    """The pairing of a history's tool calls and results.

    ``result_of[call]`` holds the results answering a call (normally one); ``call_of[result]``
    is the call a result answers; ``orphans`` are results with no open call before them;
    ``open_calls`` are calls that no result answers, in order.
    """

    result_of: dict[Location, tuple[Location, ...]] = field(default_factory=dict)
    call_of: dict[Location, Location] = field(default_factory=dict)
    orphans: tuple[Location, ...] = ()
    open_calls: tuple[Location, ...] = ()
    calls: tuple[Location, ...] = ()

    def call_part(self, messages: Sequence[Message], loc: Location) -> ToolCallPart:
        part = messages[loc[0]].parts[loc[1]]
        assert isinstance(part, ToolCallPart)
        return part

    def result_part(self, messages: Sequence[Message], loc: Location) -> ToolResultPart:
        part = messages[loc[0]].parts[loc[1]]
        assert isinstance(part, ToolResultPart)
        return part


def pair_tool_calls(messages: Sequence[Message]) -> Pairing:
    # id -> open calls in order of appearance; the nearest message's first call wins. Most
    # ids are open once at a time: one location stands alone, a list only when they pile up
    # (a list per call was most of what a long history's pairing allocated). A call's results
    # are a tuple for the same reason: it holds only numbers, so the collector stops tracking it.
    waiting: dict[str, Location | list[Location]] = {}
    result_of: dict[Location, tuple[Location, ...]] = {}
    call_of: dict[Location, Location] = {}
    orphans: list[Location] = []
    calls: list[Location] = []
    for mi, message in enumerate(messages):
        for pi, part in enumerate(message.parts):
            if isinstance(part, ToolCallPart):
                loc = (mi, pi)  # one tuple for every place that names it
                queue = waiting.get(part.call_id)
                if queue is None:
                    waiting[part.call_id] = loc
                elif isinstance(queue, tuple):
                    waiting[part.call_id] = [queue, loc]
                else:
                    queue.append(loc)
                result_of[loc] = ()
                calls.append(loc)
            elif isinstance(part, ToolResultPart):
                queue = waiting.get(part.call_id)
                if not queue:
                    orphans.append((mi, pi))
                    continue
                if isinstance(queue, tuple):
                    call = queue
                    del waiting[part.call_id]
                else:
                    call = queue.pop(_nearest_first(queue))
                result_of[call] = (*result_of[call], (mi, pi))
                call_of[(mi, pi)] = call
    open_calls = tuple(c for c in calls if not result_of[c])
    return Pairing(result_of, call_of, tuple(orphans), open_calls, tuple(calls))


def _nearest_first(queue: list[Location]) -> int:
    """The open calls of the nearest message sit at the end of the queue: the index of the
    first of them. Scanning from the end keeps this independent of how many older calls with
    the same id were never answered."""
    latest = queue[-1][0]
    pick = len(queue) - 1
    while pick > 0 and queue[pick - 1][0] == latest:
        pick -= 1
    return pick
