"""What the last full call of a :class:`~.compactor.Compactor` decoded, so that the next full
call decodes and checks only what was appended since.

An agent loop sends the history it sent before grown at its end. The fast skip
(:mod:`.incremental`) covers the calls that compact nothing; a call that compacts, or one the
skip cannot prove, goes the full path, which decoded and validated the whole history again:
at 10k messages that was half of a compaction's cost. A :class:`Prefix` keeps the caller's
items and the messages they decoded to, and gives them back when a later call's list starts
with the very same item objects: a message is frozen, and an OpenAI chat item decodes to the
same message whatever comes before it (but for a legacy ``function`` message, whose id is that
of an earlier ``function_call``; such appended items are decoded with the whole list).

Checking the rules again is cut the same way as the skip's: the earlier history broke none,
and from its last :func:`boundary` on, each rule decides the same on that window as on the
whole (see :mod:`.incremental` for why). Anything the window breaks sends the whole history
through the checks and repairs as before.

Only OpenAI chat histories given as a plain list, by a call whose history broke no rule, are
kept: the format a proxy and most agent loops use, and one whose items decode one by one.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.formats import decode, detect, gemini
from synopsis.messages import ToolCallPart, ToolResultPart, is_person_message, is_summary

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.compaction.setup import Setup
    from synopsis.compaction.state import Opened, Request
    from synopsis.formats import FormatName
    from synopsis.messages import Message

__all__ = ["Prefix", "boundary", "decode_appended", "reread"]


@dataclass(frozen=True, slots=True)
class Prefix:
    """A history a full call decoded, and found breaking no rule."""

    setup: Setup
    format_given: FormatName | None
    items: list[Any]
    """The caller's items (a shallow copy of the list): matched by identity."""
    messages: tuple[Message, ...]
    """One decoded message per item."""
    boundary: int
    """Their last :func:`boundary`."""

    @classmethod
    def of(cls, opened: Opened) -> Prefix | None:
        """The prefix of a call whose history broke no rule, when a later call can use it."""
        data, messages = opened.request.data, opened.decoded
        if (
            opened.boundary is None
            or opened.format != "openai"
            or type(data) is not list
            or len(data) != len(messages)
        ):
            return None
        return cls(opened.setup, opened.request.format, list(data), messages, opened.boundary)


def reread(
    prefix: Prefix | None, setup: Setup, request: Request
) -> tuple[tuple[Message, ...], int] | None:
    """The messages ``request``'s history decodes to, and the index from which the rules must
    still be checked, when it is ``prefix``'s history grown at its end; else None."""
    data = request.data
    if (
        prefix is None
        or setup is not prefix.setup
        or type(data) is not list
        or request.format != prefix.format_given
        or request.system is not None  # a prefix is made only of a list alone (see of)
    ):
        return None
    n = len(prefix.items)
    if len(data) < n or not all(map(operator.is_, data, prefix.items)):
        return None
    try:
        fresh = decode_appended("openai", request.format, data[n:])
    except Exception:  # the full decode says what is wrong, as it always does
        return None
    if fresh is None:
        return None
    return (*prefix.messages, *fresh), prefix.boundary


def decode_appended(
    fmt: FormatName,
    format_given: FormatName | None,
    items: list[Any],
    resume: gemini.Resume | None = None,
) -> tuple[Message, ...] | None:
    """``items``, appended to a history read as ``fmt``, decoded as the whole list would
    decode them, or None when they must be decoded with it. A Gemini history needs where its
    decode left off (``resume``): its ids without a call id count contents."""
    if not items:
        return ()
    if fmt == "openai":
        if format_given is None and detect(items) != "openai":
            return None  # the whole list would be read as another format
        if any(isinstance(i, Mapping) and i.get("role") == "function" for i in items):
            return None  # its id is that of an earlier function_call
    if fmt == "gemini":
        # Detection stops at the earlier contents' first Gemini item: the appended ones are
        # Gemini's whatever they look like alone.
        assert resume is not None  # a Gemini memo keeps where its decode left off
        return gemini.decode(items, resume=resume)
    return decode(items, fmt).messages


def boundary(messages: Sequence[Message]) -> int:
    """The last index of a user message a person wrote (no tool results, not a summary)
    before which every tool call is answered, counting as :func:`~synopsis.pairing.
    pair_tool_calls` pairs: a result takes an open call of its id. 0 when there is none:
    ``messages`` starts at a boundary itself (the history's start, or the last boundary)."""
    waiting: dict[str, int] = {}
    open_calls = 0
    found = 0
    for i, message in enumerate(messages):
        if not open_calls and is_person_message(message) and not is_summary(message):
            found = i
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                waiting[part.call_id] = waiting.get(part.call_id, 0) + 1
                open_calls += 1
            elif isinstance(part, ToolResultPart) and waiting.get(part.call_id):
                waiting[part.call_id] -= 1
                open_calls -= 1
    return found
