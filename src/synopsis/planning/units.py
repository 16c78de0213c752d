"""Where a history may be cut without breaking a provider rule.

A *boundary* ``i`` cuts between ``messages[i - 1]`` and ``messages[i]``: everything before it may
be summarized, everything from it on is kept. A boundary is safe when no atomic unit crosses it:

- a tool call and every result that answers it (parallel calls, results that are not adjacent
  to their call, ids reused later: pairing follows :mod:`synopsis.pairing`);
- one model turn: consecutive assistant messages. Responses sends a turn as separate items
  (reasoning, then the message or the function calls it produced: rule R3), Anthropic and
  Gemini merge consecutive assistant turns into one; Anthropic thinking sits inside its own
  message, so it needs nothing more;
- an orphaned result (one that answers no earlier call, including a result recorded before its
  call) may never be kept, so every boundary at or before it is unsafe;
- the calls of the last model turn may still be running (a live agent mid-run) when only
  their results follow it, so every boundary after the start of that turn is unsafe: it is
  kept, never summarized.

It also notes the last message holding a provider's own compaction (``compacted``), which
stands for all before it: the split keeps it and everything before it as they are.

Everything here is linear in the number of parts and does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from synopsis.messages import Message, Role, ToolResultPart, holds_compaction, is_person_message
from synopsis.pairing import pair_tool_calls

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Structure", "analyze"]


@dataclass(frozen=True, slots=True)
class Structure:
    """The cut-relevant shape of a history.

    ``crossing[i]`` counts the units that a boundary at ``i`` would break (0 means safe as far
    as units go); ``unit_start[j]``/``unit_end[j]`` bound the unit holding message ``j`` (end
    exclusive); ``min_boundary`` is one past the last orphaned result; ``max_boundary`` is the
    start of a last model turn whose calls may still be running (else ``len``);
    ``dangling`` lists messages with calls that never got a result, other than that one;
    ``tied`` the messages that hold a unit together (calls, their results, reasoning items and
    what they produced): a message between them that is not tied, such as a system message,
    can be moved out of its unit without breaking it; ``compacted`` the last message holding
    a provider's compaction (an OpenAI ``compaction`` item, an Anthropic ``compaction`` block),
    if any.
    """

    length: int
    crossing: tuple[int, ...]
    unit_start: tuple[int, ...]
    unit_end: tuple[int, ...]
    orphans: tuple[int, ...]
    dangling: tuple[int, ...]
    running: int | None
    turn_starts: frozenset[int]
    tied: frozenset[int] = frozenset()
    compacted: int | None = None

    @property
    def min_boundary(self) -> int:
        return self.orphans[-1] + 1 if self.orphans else 0

    @property
    def max_boundary(self) -> int:
        return self.length if self.running is None else self.running

    def is_safe(self, boundary: int) -> bool:
        return self.min_boundary <= boundary <= self.max_boundary and self.crossing[boundary] == 0

    def unit(self, index: int) -> range:
        return range(self.unit_start[index], self.unit_end[index])


def _running_call(messages: Sequence[Message], open_at: set[int]) -> int | None:
    """The start of the last model turn when one of its calls is still open and nothing but
    results (or nothing at all) came after it."""
    i = len(messages) - 1
    while i >= 0 and _results_only(messages[i]):
        i -= 1
    if i < 0 or messages[i].role is not Role.ASSISTANT:
        return None
    end = i
    while i > 0 and messages[i - 1].role is Role.ASSISTANT:
        i -= 1
    return i if any(k in open_at for k in range(i, end + 1)) else None


def _results_only(message: Message) -> bool:
    return all(isinstance(p, ToolResultPart) for p in message.parts)


def analyze(messages: Sequence[Message]) -> Structure:
    n = len(messages)
    pairing = pair_tool_calls(messages)
    spans: list[tuple[int, int]] = []
    tied: set[int] = set()
    for call, results in pairing.result_of.items():
        if results:
            rows = {r[0] for r in results}
            last = max(rows)
            if last > call[0]:
                spans.append((call[0], last))
                tied.add(call[0])
                tied.update(rows)
    for i in range(n - 1):
        if messages[i].role is Role.ASSISTANT and messages[i + 1].role is Role.ASSISTANT:
            spans.append((i, i + 1))
            tied.update((i, i + 1))

    # A boundary b breaks span (a, c) when a < b <= c: count them with a difference array.
    diff = [0] * (n + 2)
    for a, c in spans:
        diff[a + 1] += 1
        diff[c + 1] -= 1
    crossing: list[int] = []
    running_total = 0
    for b in range(n + 1):
        running_total += diff[b]
        crossing.append(running_total)

    # Units are the maximal runs of messages that no safe boundary separates.
    unit_start = [0] * n
    unit_end = [0] * n
    start = 0
    for j in range(n):
        if j > 0 and crossing[j] == 0:
            start = j
        unit_start[j] = start
    end = n
    for j in range(n - 1, -1, -1):
        unit_end[j] = end
        if crossing[j] == 0:
            end = j

    open_at = {loc[0] for loc in pairing.open_calls}
    running = _running_call(messages, open_at)
    dangling = tuple(sorted(i for i in open_at if i != running))
    orphans = tuple(sorted({loc[0] for loc in pairing.orphans}))
    turn_starts = frozenset(i for i, m in enumerate(messages) if is_person_message(m))
    compacted = next((i for i in reversed(range(n)) if holds_compaction(messages[i])), None)
    return Structure(
        length=n,
        crossing=tuple(crossing),
        unit_start=tuple(unit_start),
        unit_end=tuple(unit_end),
        orphans=orphans,
        dangling=dangling,
        running=running,
        turn_starts=turn_starts,
        tied=frozenset(tied),
        compacted=compacted,
    )
