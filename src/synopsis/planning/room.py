"""How a compaction shares out the window: protected head, summary, verbatim tail.

A compaction aims to land at ``target_ratio`` of the window. The passes of a compaction stop
once the history is under the trigger and the reset ratio (the level below which the trigger
re-arms); the target keeps the same proportion to that line as ``target_ratio`` to
``reset_ratio`` (0.5 of the window under the default 0.8 trigger and 0.7 reset), so a trigger
set lower (``Trigger.tokens(…)``) lowers the target with it, and never leaves less than the
answer's reserve. The share is taken of what the fixed part leaves under that line, on top
of it. What the
fixed part (system prompt, tool definitions, framing, protected head) leaves of that is the
room. The summary takes ``summary_ratio`` of the room, between a floor and its summarizer's
ceiling, and the tail kept verbatim takes the rest; with a tail the caller sized (``keep``
given), the summary takes what that tail leaves, and at least its share, within the same
bounds. The person's requests
travel inside the summary's budget, first in its order of what to keep.

Landing near the target rather than as low as possible is the point: a compaction that keeps
six messages and 500 tokens out of a 128k window forgets what the window had room to carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from synopsis.errors import ConfigurationError

__all__ = ["Room", "lower_tail", "share_room", "summary_budget"]

_BELOW_AIM = 0.9


@dataclass(frozen=True, slots=True)
class Room:
    """Token budgets for one compaction's output. ``target`` is where it aims to land, of
    which ``fixed`` is taken (overhead and protected head), ``summary`` goes to the summary and
    ``tail`` to the messages kept verbatim."""

    target: int
    fixed: int
    summary: int
    tail: int


def _check(name: str, value: float, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low < value <= high:
        raise ConfigurationError(
            f"{name} must be above {low:g} and at most {high:g}, got {value!r}"
        )


def summary_budget(free: int, *, floor: int, ceiling: int) -> int:
    """``free`` within ``[floor, ceiling]`` (a ceiling under the floor wins: it is the
    summarizer's own limit)."""
    return min(max(free, floor), ceiling)


def share_room(
    *,
    window: int,
    limit: int,
    fixed: int,
    target_ratio: float,
    reset_ratio: float,
    summary_ratio: float,
    floor: int,
    ceiling: int,
    threshold: int | None = None,
    tail: int | None = None,
) -> Room:
    """The room of a compaction in ``window`` whose output must stay within ``limit`` (the
    window less the answer's reserve). ``fixed`` counts the tokens no summary can save;
    ``threshold`` is the trigger's (default: the window); ``tail`` is the caller's own tail
    size, if any (then the summary gets what it leaves)."""
    _check("target_ratio", target_ratio, 0, 1)
    _check("summary_ratio", summary_ratio, 0, 1)
    _check("reset_ratio", reset_ratio, 0, 1)
    # The passes go on until the history is under the trigger and the reset ratio (the aim);
    # the target sits as far below the aim as target_ratio sits below reset_ratio, and
    # always a little below it, or a summary a few tokens over its share costs another pass.
    aim = min(threshold or window, int(reset_ratio * window))
    share = min(target_ratio / reset_ratio, _BELOW_AIM)
    # The share is of what the fixed part leaves under the aim, on top of it: a 10k-token
    # system prompt in a 32k window would otherwise leave the summary almost nothing.
    target = min(fixed + int(share * max(0, aim - fixed)), limit)
    free = max(0, target - fixed)
    if tail is None:
        summary = summary_budget(int(summary_ratio * free), floor=floor, ceiling=ceiling)
        return Room(target, fixed, summary, max(0, free - summary))
    # A caller's tail that takes the whole room still leaves the summary its share: the
    # passes shorten what does not fit, and a summary cut to its floor forgets everything.
    summary = summary_budget(
        max(free - tail, int(summary_ratio * free)), floor=floor, ceiling=ceiling
    )
    return Room(target, fixed, summary, tail)


def lower_tail(room: Room, ceiling: int) -> Room:
    """``room`` aiming no higher than ``ceiling``, by a shorter verbatim tail alone: the
    summary keeps its share (what a session carries forward of what it summarized), and the
    tail goes no lower than nothing."""
    tail = max(0, min(room.tail, ceiling - room.fixed - room.summary))
    if tail == room.tail:
        return room
    return Room(room.fixed + room.summary + tail, room.fixed, room.summary, tail)
