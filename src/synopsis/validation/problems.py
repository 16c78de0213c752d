"""What a check finds: :class:`Problem`, where it is (an index into the caller's list, or the
system prompt passed apart from it), and :class:`Checking`, what every group of rules records
problems with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message
    from synopsis.validation.profiles import Profile

__all__ = ["SYSTEM_PROMPT", "Checking", "Problem", "list_index", "place"]

SYSTEM_PROMPT = "the top-level system prompt"
"""What a problem or fix in a system prompt passed apart from the list is said to be in."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One rule a history breaks. ``index`` is the message (``None`` for the whole history,
    and for a top-level system prompt passed apart from the list: the message says so),
    ``part`` the part within it when one part is at fault."""

    index: int | None
    rule: str
    message: str
    part: int | None = None
    conservative: bool = False

    def __str__(self) -> str:
        where = "history" if self.index is None else f"message {self.index}"
        if self.part is not None:
            where += f" part {self.part}"
        return f"{where}: {self.message} [{self.rule}]"


def list_index(index: int | None, offset: int) -> int | None:
    """``index`` (into decoded messages whose first ``offset`` are a system prompt passed
    apart from the caller's list, see :func:`separate_system`) as an index into that list;
    ``None`` for that system prompt, and for ``None``."""
    return None if index is None or index < offset else index - offset


def place(index: int, offset: int) -> str:
    """How a message that a problem or fix refers to is named to the caller."""
    where = list_index(index, offset)
    return SYSTEM_PROMPT if where is None else f"message {where}"


class Checking:
    """One check of a history for a profile: the problems it found so far."""

    def __init__(self, messages: Sequence[Message], profile: Profile, offset: int = 0) -> None:
        self.messages = messages
        self.profile = profile
        self.offset = offset
        self.fam = profile.family
        self.problems: list[Problem] = []

    def add(
        self,
        index: int | None,
        code: str,
        text: str,
        part: int | None = None,
        *,
        conservative: bool = False,
        family: str | None = None,
    ) -> None:
        rule = f"{family or self.fam}.{code}"
        if index is not None and index < self.offset:
            # Not in the caller's list, so no index of it: the text says where it is.
            text = f"{SYSTEM_PROMPT}: {text}"
        where = list_index(index, self.offset)
        self.problems.append(Problem(where, rule, text, part, conservative))

    def place(self, index: int) -> str:
        return place(index, self.offset)
