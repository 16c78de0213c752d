"""Repetition read as what it is: a result the deduplication replaced by a reference is read as
the result it repeats, and identical calls are said once, with how many times they ran.

The deduplication (:data:`~synopsis.planning.reductions.DUPLICATE_MARKER`) puts
``[synopsis: identical to the result of tool call 'id'; 1,234 characters]`` where an old result
repeated an earlier one. Read as it stands, the note is a one-line success whatever the
original said; read through the original, a failing command rerun 33 times is 33 failures.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from synopsis.messages import ToolResultPart
from synopsis.planning.reductions import DUPLICATE_MARKER

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message
    from synopsis.summarizers.rules.exchanges import ToolFacts

__all__ = ["Originals", "Reference", "group_points", "reference_in", "repeated"]

_REFERENCE = re.compile(
    re.escape(DUPLICATE_MARKER)
    + r" (?P<id>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")(?:; (?P<size>\d[\d,]*) characters)?"
)
_COUNT = re.compile(r"^\[(?P<mark>\S+) (?P<tool>[^\s:\]]+)(?: x(?P<times>\d+)(?:, all failed)?)?")


@dataclass(frozen=True, slots=True)
class Reference:
    """What a deduplication note says: the call whose result it repeats, and that result's
    size in characters when the note gives it."""

    call_id: str
    chars: int | None


def reference_in(text: str) -> Reference | None:
    """The reference ``text`` is, if it is a deduplication note."""
    found = _REFERENCE.match(text)
    if found is None:
        return None
    try:
        call_id = ast.literal_eval(found.group("id"))
    except (ValueError, SyntaxError):  # a tool's own output that only looks like a note
        return None
    size = found.group("size")
    return Reference(str(call_id), int(size.replace(",", "")) if size else None)


class Originals:
    """The results of a part by call id, in order, to read a reference through the result it
    repeats: the latest earlier one of that id and, when the note gives it, that size (call
    ids are reused, so the id alone can name another result)."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self._by_id: dict[str, list[tuple[int, ToolResultPart]]] = {}
        for index, message in enumerate(messages):
            for part in message.parts:
                if isinstance(part, ToolResultPart) and reference_in(part.text) is None:
                    self._by_id.setdefault(part.call_id, []).append((index, part))

    def resolve(self, part: ToolResultPart, at: int) -> ToolResultPart:
        """``part`` read through the result it repeats (failed if either says so) when it is a
        reference to a result of this part, else ``part`` itself."""
        ref = reference_in(part.text)
        if ref is None:
            return part
        earlier = [p for i, p in self._by_id.get(ref.call_id, ()) if i < at]
        sized = [p for p in earlier if ref.chars is None or len(p.text) == ref.chars]
        if not sized:
            return part
        original = sized[-1]
        return replace(part, content=original.content, is_error=part.is_error or original.is_error)


def repeated(facts: ToolFacts, ref: Reference) -> ToolFacts:
    """A call whose result repeats one summarized before this part: what the call was, and
    that its result is that earlier one, neither a success nor a failure of its own."""
    size = f" ({ref.chars:,} characters)" if ref.chars is not None else ""
    said = tuple(f for f in facts.facts if f != "no result yet")
    note = f"Result: identical to an earlier one{size}, summarized before"
    return replace(facts, status="repeated", facts=(*said, note), notes=(), errors=())


def _times(point: str) -> int:
    found = _COUNT.match(point)
    times = found.group("times") if found else None
    return int(times) if times else 1


def _plain(point: str) -> str:
    """``point`` without its count, so that a group and a single call compare equal."""
    found = _COUNT.match(point)
    if found is None or not found.group("times"):
        return point
    return f"[{found.group('mark')} {found.group('tool')}" + point[found.end() :]


def _counted(point: str, times: int) -> str:
    if times == 1:
        return point
    found = _COUNT.match(point)
    assert found is not None  # a key point always opens with its mark and tool
    failed = ", all failed" if found.group("mark") == "❌" else ""
    return f"[{found.group('mark')} {found.group('tool')} x{times}{failed}" + point[found.end() :]


def group_points(points: Sequence[str]) -> list[str]:
    """Identical key points said once, where the last of them stands, with how many times
    (``[❌ bash x31, all failed: Command: pytest | …]``); a group carried from an earlier
    summary adds its count."""
    plain = [_plain(p) for p in points]
    times: Counter[str] = Counter()
    last: dict[str, int] = {}
    for index, (point, key) in enumerate(zip(points, plain, strict=True)):
        times[key] += _times(point)
        last[key] = index
    return [_counted(key, times[key]) for index, key in enumerate(plain) if last[key] == index]
