"""Fitting a summarizer's input into its cap: groups, clipping and trimming.

Pure functions over sizes already counted, so the LLM summarizer's planner can use them without
I/O. Everything here is deterministic: the same input and cap give the same chunks, the same
clipped text and the same trimmed transcript.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["clip_text", "group", "trim"]


def group(sizes: Sequence[int], budget: int) -> list[range]:
    """Consecutive runs of items whose sizes add up to at most ``budget`` each, greedily, in
    order. An item larger than ``budget`` is a run of its own (the caller clips it)."""
    runs: list[range] = []
    start, total = 0, 0
    for index, size in enumerate(sizes):
        if index > start and total + size > budget:
            runs.append(range(start, index))
            start, total = index, 0
        total += size
    if start < len(sizes):
        runs.append(range(start, len(sizes)))
    return runs


def _cut_marker(chars: int) -> str:
    return f"\n[… {chars} characters cut to fit the summarizer's input …]\n"


def clip_text(text: str, budget: int, count: Callable[[str], int]) -> str:
    """``text`` itself when ``count(text) <= budget``; else its head and tail, as long as
    possible (found by bisection over measured counts), around a marker saying how much was
    cut. The head is kept as long as the tail: the start of a message states what it is about,
    its end how it turned out."""
    if count(text) <= budget:
        return text

    def clipped(keep: int) -> str:
        head = keep - keep // 2
        tail = keep // 2
        return text[:head] + _cut_marker(len(text) - keep) + (text[-tail:] if tail else "")

    low, high = 0, len(text) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if count(clipped(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return clipped(low)


def trim(
    blocks: Sequence[str],
    sizes: Sequence[int],
    budget: int,
    count: Callable[[str], int],
    *,
    keep: int | None = None,
) -> list[str]:
    """The blocks that fit ``budget`` when the oldest must go: block ``keep`` (the user's first
    request, which a summary must never lose) and the newest blocks that fit, in order, each run
    of left-out blocks replaced by a line naming it. ``keep`` takes at most half of the budget;
    a newest block that does not fit alone is clipped."""
    if sum(sizes) <= budget:
        return list(blocks)
    chosen: dict[int, str] = {}
    room = budget - _MARKER_ROOM * 2
    if keep is not None:
        chosen[keep] = clip_text(blocks[keep], room // 2, count)
        room -= count(chosen[keep])
    for index in range(len(blocks) - 1, -1, -1):
        if index in chosen:
            continue
        if sizes[index] > room:
            if not any(i > (keep if keep is not None else -1) for i in chosen):
                chosen[index] = clip_text(blocks[index], max(room, 1), count)
            break
        chosen[index] = blocks[index]
        room -= sizes[index]
    out: list[str] = []
    gap: list[int] = []
    for index in range(len(blocks)):
        if index in chosen:
            if gap:
                out.append(_omitted(gap))
                gap = []
            out.append(chosen[index])
        else:
            gap.append(index)
    # No gap is left at the end: the newest block other than ``keep`` is always chosen.
    return out


_MARKER_ROOM = 30
"""Tokens a line naming omitted blocks takes, in any tokenizer."""


def _omitted(gap: list[int]) -> str:
    first, last = gap[0] + 1, gap[-1] + 1
    which = f"message {first}" if first == last else f"messages {first} to {last}"
    return f"[… {which} omitted: over the summarizer's input cap …]"
