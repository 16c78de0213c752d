"""Making a history smaller without summarizing it: the cheap reductions, stale thinking, and
priority trimming (the last resort). Every message changed here keeps its original for the
store (:meth:`~synopsis.compaction.offload.Originals.adopt`)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from synopsis.compaction.rebuild import current_turn, without_thinking
from synopsis.messages import (
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    after_compaction,
    is_person_message,
    is_summary,
)
from synopsis.planning import TruncateArgs, reduce
from synopsis.planning.reductions import SUMMARY_MARKER, truncate_call
from synopsis.summarizers import summarize_part
from synopsis.summarizers.scanning import named_in

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence

    from synopsis.compaction.state import Opened, Run
    from synopsis.planning import Measure

__all__ = ["keep_reduced", "reduce_cheaply", "shrink_parts", "thin", "trim", "trim_args"]

_MIN_TRIM_TOKENS = 64
"""Parts smaller than this are not worth a part summary, even as the last resort."""
_TRIM_ARGS = TruncateArgs(max_length=200, prefix=40)
"""How priority trimming cuts a call's long string arguments."""
_NAMED_CHARS = 1200
"""How much of a trimmed argument's note may list what it named."""


def _named(text: str) -> str:
    """The note after a trimmed argument's marker: its size and what it named, so that a
    file the model wrote still tells which paths and functions it was about."""
    names = named_in(text, _NAMED_CHARS)
    listed = f"; it named: {', '.join(names)}" if names else ""
    return f" [{len(text):,} characters{listed}]"


def trim_args(part: ToolCallPart) -> ToolCallPart | None:
    """``part`` with its long string arguments cut to a prefix, a marker and what they named
    (``None`` when none is long enough)."""
    return truncate_call(part, _TRIM_ARGS, _named)


def _call_for(messages: Sequence[Message], call_id: str) -> ToolCallPart | None:
    """The call a result answers (the latest with its id), for the part summary to name."""
    calls = (p for m in reversed(messages) for p in m.tool_calls if p.call_id == call_id)
    return next(calls, None)


def reduce_cheaply(
    opened: Opened, messages: tuple[Message, ...], measure: Measure, *, emergency: bool = False
) -> tuple[Message, ...]:
    """The cheap tiers (planning.reductions): old arguments truncated, duplicate results
    referenced, oversized parts summarized on their own by the rules (no model call). A
    digest longer than its part is not used, and outside an ``emergency`` none is made in the
    tail a ``keep`` the caller sized asks to keep verbatim."""
    setup = opened.setup
    counts = [setup.counter.count_message(m) for m in messages]
    threshold = setup.trigger.token_threshold(setup.window) or setup.window
    # What a provider compacted is sent back exactly: nothing before its compaction changes.
    start = after_compaction(messages)
    reduced = reduce(
        messages[start:],
        counts[start:],
        measure=measure,
        threshold=threshold,
        config=setup.reductions,
        count_text=setup.counter.count_text,
    )
    out = [*messages[:start], *reduced.messages]
    for before, after in zip(messages, out, strict=True):
        if after is not before:
            opened.originals.adopt(before, after)
    first = next((i for i, m in enumerate(out) if is_person_message(m) and not is_summary(m)), None)
    keep = setup.keep
    verbatim = (
        len(out)
        if emergency or keep.kind == "auto"
        else keep.desired_boundary(counts, 0, setup.window)
    )
    for big in reduced.oversized:
        index = big.index + start
        message = out[index]
        if message.role is Role.SYSTEM or index in (first, *range(verbatim, len(out))):
            # The system prompt and the task as first stated are never made small here, nor
            # the tail the caller asked to keep verbatim; only the last resort (priority
            # trimming) may, when nothing else fits.
            continue
        part = message.parts[big.part]
        call = _call_for(out[:index], part.call_id) if isinstance(part, ToolResultPart) else None
        smaller = summarize_part(message, big.part, summarizer=setup.digester, call=call)
        if setup.counter.count_message(smaller) >= counts[index]:
            continue  # a digest that saves nothing is no reduction
        opened.originals.adopt(message, smaller)
        out[index] = smaller
    return tuple(out)


def _part_tokens(opened: Opened, part: TextPart | ToolCallPart | ToolResultPart) -> int:
    text = part.arguments_text if isinstance(part, ToolCallPart) else part.text
    return opened.setup.counter.count_text(text)


def _smaller(
    opened: Opened, messages: Sequence[Message], i: int, j: int, *, last_resort: bool = False
) -> Message | None:
    """Message ``i`` with part ``j`` made small: call arguments truncated (the JSON stays
    valid), a result or a text summarized on its own, and as the ``last_resort`` a digest
    made earlier cut to its first half; ``None`` when it cannot shrink."""
    message = messages[i]
    part = message.parts[j]
    if isinstance(part, ToolCallPart):
        cut = trim_args(part)
        if cut is None:
            return None
        parts = list(message.parts)
        parts[j] = cut
        return replace(message, parts=tuple(parts))
    if (
        last_resort
        and isinstance(part, TextPart | ToolResultPart)
        and part.text.startswith(SUMMARY_MARKER)
    ):
        # Already a digest (its original is in the store): only its first half can stay.
        return _halved(message, j)
    call = _call_for(messages[:i], part.call_id) if isinstance(part, ToolResultPart) else None
    return summarize_part(message, j, summarizer=opened.setup.digester, call=call)


_SHORTENED = "\n[… the rest of this digest was cut to fit the window]"


def _halved(message: Message, j: int) -> Message | None:
    """``message`` with the digest in part ``j`` cut to its first half, at a line's end;
    ``None`` when it has one line or was cut so already."""
    part = message.parts[j]
    assert isinstance(part, TextPart | ToolResultPart)
    text = part.text
    end = text.rfind("\n", 0, len(text) // 2)
    if end <= 0 or text.endswith(_SHORTENED):
        return None
    shorter = text[:end] + _SHORTENED
    new = (
        replace(part, text=shorter)
        if isinstance(part, TextPart)
        else replace(part, content=shorter)
    )
    parts = list(message.parts)
    parts[j] = new
    return replace(message, parts=tuple(parts))


_MIN_GAIN = 32
"""A part made small must save at least this many tokens to be worth its original's place in
the store."""


def shrink_parts(
    opened: Opened,
    messages: tuple[Message, ...],
    indices: Iterable[int],
    need: int,
    keep: Collection[int] = (),
) -> tuple[Message, ...] | None:
    """``messages`` with the largest parts of the messages at ``indices`` (but ``keep``) made
    small, tool results first, then call arguments, then what the model wrote, then what a
    person wrote, until ``need`` tokens are saved or nothing else can shrink; ``None`` when
    nothing did. The originals stay with their messages for the store."""
    count = opened.setup.counter.count_message
    out = list(messages)
    candidates = sorted(
        (_rank(m, part), -_part_tokens(opened, part), i, j)
        for i in indices
        if i not in keep and (m := out[i]).role is not Role.SYSTEM and not is_summary(m)
        for j, part in enumerate(m.parts)
        if isinstance(part, TextPart | ToolCallPart | ToolResultPart)
        and _part_tokens(opened, part) >= _MIN_TRIM_TOKENS
    )
    saved = 0
    for _, _, i, j in candidates:
        if saved >= need:
            break
        smaller = _smaller(opened, out, i, j)
        gain = count(out[i]) - count(smaller) if smaller is not None else 0
        if smaller is None or gain < _MIN_GAIN:
            continue
        opened.originals.adopt(out[i], smaller)
        out[i] = smaller
        saved += gain
    return tuple(out) if saved else None


def _rank(message: Message, part: TextPart | ToolCallPart | ToolResultPart) -> int:
    """The order parts are made small in: a tool's output, its arguments, the model's words,
    a person's."""
    if isinstance(part, ToolResultPart):
        return 0
    if isinstance(part, ToolCallPart):
        return 1
    return 3 if is_person_message(message) else 2


def trim(opened: Opened, messages: tuple[Message, ...], limit: int) -> tuple[Message, ...]:
    """Priority trimming, the last resort: the largest parts of the kept messages (results,
    then call arguments, then texts; never the system prompt or synopsis's summaries) made
    small one by one until the history fits ``limit``. The originals are in the store."""
    out = list(messages)
    rank = {ToolResultPart: 0, ToolCallPart: 1, TextPart: 2}
    candidates = sorted(
        (
            (rank[type(part)], -_part_tokens(opened, part), i, j)
            for i, m in enumerate(out)
            if not is_summary(m) and m.role is not Role.SYSTEM
            for j, part in enumerate(m.parts)
            if isinstance(part, TextPart | ToolCallPart | ToolResultPart)
            and _part_tokens(opened, part) >= _MIN_TRIM_TOKENS
        ),
    )
    for _, _, i, j in candidates:
        if opened.measure(out).tokens <= limit:
            break
        smaller = _smaller(opened, out, i, j, last_resort=True)
        count = opened.setup.counter.count_message
        if smaller is not None and count(smaller) < count(out[i]):
            opened.originals.adopt(out[i], smaller)
            out[i] = smaller
    return tuple(out)


def thin(opened: Opened, messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Stale thinking dropped here rather than in the rebuild, so that the messages it
    changes keep their originals for the store (one emptied is removed by the rebuild)."""
    # With preserved thinking, a block after the edit (the summary) no longer passes the
    # prefix check, so none is kept; otherwise only the current turn's are needed.
    start = len(messages) if opened.setup.preserved_thinking else current_turn(messages)
    out: list[Message] = []
    for index, message in enumerate(messages):
        thinned = without_thinking(message) if index < start else message
        if thinned is not message:
            opened.originals.adopt(message, thinned)
        out.append(thinned)
    return tuple(out)


def keep_reduced(run: Run, messages: Sequence[Message]) -> None:
    """The originals of kept messages that a reduction changed go to the store as well."""
    opened, ledger = run.opened, run.ledger
    if not opened.setup.keeps_originals:
        return
    changed = [
        m for m in messages if opened.originals.changed(m) and id(m) not in opened.kept_before
    ]
    if not changed:
        return
    head = ledger.head
    ledger.offload(
        opened.originals.stored(
            changed,
            session_id=opened.session_id or "",
            offset=ledger.position,
            compaction_id=head.id if head is not None else uuid.uuid4().hex,
            at=datetime.now(UTC),
        )
    )
