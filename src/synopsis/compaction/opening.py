"""The opening of a compaction: the caller's history decoded and repaired (every fix an
event), the session read from the store, and the session's summary put in place of what it
stands for when the caller sent that part again (:mod:`.projection`); and the session's
summary chain, read when a compaction needs the record it updates."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, cast

from synopsis.compaction.effects import Effect, LoadSession, LoadSummaries, LoadSummary, Outcome
from synopsis.compaction.offload import Originals
from synopsis.compaction.prefix import Prefix, boundary, reread
from synopsis.compaction.projection import Projection
from synopsis.compaction.state import Opened, Request
from synopsis.errors import ConversationError, StoreError
from synopsis.events import ChainInvalidated, HistoryRepaired
from synopsis.formats import decode, wire_items
from synopsis.messages import Message, Role, TextPart, is_summary, is_summary_text
from synopsis.stores import SessionState
from synopsis.validation import check_between_turns, repair_messages
from synopsis.validation.rules import separate_system

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

    from synopsis.compaction.setup import Setup
    from synopsis.formats import FormatName
    from synopsis.summarizers import SummaryRecord
    from synopsis.validation import Fix

__all__ = ["chain", "open_run", "previous_record"]


def _normalise(
    setup: Setup, request: Request, prefix: Prefix | None
) -> tuple[FormatName, tuple[Message, ...], Originals, tuple[Fix, ...], int | None]:
    """The format, the messages to work on, the caller's items behind them, the fixes made,
    and, when the history broke no rule (its messages are the decoded ones, unrepaired), its
    last :func:`~.prefix.boundary`. What ``prefix`` already read is not decoded or checked
    again."""
    known = reread(prefix, setup, request)
    if known is not None:
        fmt: FormatName = "openai"
        messages, start = known
    else:
        decoded = decode(request.data, request.format, system=request.system)
        fmt, messages, start = decoded.format, decoded.messages, 0
    originals = Originals(messages, wire_items(request.data, fmt), fmt)
    profile = setup.profile_for(fmt)
    if not check_between_turns(messages[start:], profile):
        # From the last one on: no call is open across it (see prefix.boundary).
        return fmt, messages, originals, (), start + boundary(messages[start:])
    repaired = repair_messages(messages, profile, offset=separate_system(messages, fmt))
    if _spoken(messages) and not _spoken(repaired.messages):
        raise ConversationError(
            f"every message of the history is empty or blank text, which {profile.name} "
            "rejects, and nothing may stand in for what a person or a tool said",
            rule="history.empty",
        )
    left = check_between_turns(repaired.messages, profile)
    if left:
        first = left[0]
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        raise ConversationError(f"{first.message}{more}", index=first.index, rule=first.rule)
    # A repaired message still stands for the caller's item it came from.
    for message, origin in zip(repaired.messages, repaired.origins, strict=True):
        if origin is not None and message is not messages[origin]:
            originals.adopt(messages[origin], message, changed=False)
    return fmt, repaired.messages, originals, tuple(repaired.fixes), None


def _spoken(messages: Sequence[Message]) -> bool:
    """Whether any message is not a system prompt."""
    return any(m.role not in (Role.SYSTEM, Role.DEVELOPER) for m in messages)


def open_run(
    setup: Setup, request: Request, prefix: Prefix | None = None
) -> Generator[Effect, Outcome, Opened]:
    fmt, messages, originals, fixes, last = _normalise(setup, request, prefix)
    # The Compactor names a session whenever there is a store (DEFAULT_SESSION at least).
    session_id = request.session_id or setup.default_session
    state = SessionState(session_id or "")
    if session_id is not None and setup.has_store:
        found = yield LoadSession(session_id)
        if isinstance(found, BaseException):
            raise StoreError(f"could not read session {session_id!r}: {found}") from found
        state = found or state
    opened = Opened(
        setup,
        request,
        fmt,
        messages=_unmerge(messages, originals),
        given=messages,
        decoded=tuple(originals.decoded),
        originals=originals,
        session_id=session_id,
        session=state,
        fixes=fixes,
        clean=last is not None,
        boundary=last,
    )
    if fixes:
        opened.emit(HistoryRepaired(session_id=session_id, fixes=tuple(str(f) for f in fixes)))
    return _project(opened)


def _project(opened: Opened) -> Opened:
    """The session's summary in place of the part of the history it stands for, when the
    caller sent that part again as it was (see :mod:`.projection`); when it sent it changed,
    the chain it belonged to is given up, saying why."""
    found = Projection.of(opened.session.projection)
    if found is None or not opened.clean or any(is_summary(m) for m in opened.messages):
        return opened
    applied = found.apply(opened.messages, opened.format)
    if isinstance(applied, str):
        opened.emit(ChainInvalidated(session_id=opened.session_id, reason=applied))
        return replace(opened, session=replace(opened.session, summary_id=None, projection={}))
    messages, swapped = applied
    for original, smaller in swapped:
        opened.originals.adopt(original, smaller)
    return replace(
        opened,
        messages=messages,
        given=messages,
        projected=True,
        kept_before=frozenset(id(smaller) for _, smaller in swapped),
    )


def _unmerge(messages: tuple[Message, ...], originals: Originals) -> tuple[Message, ...]:
    """A summary that an earlier call merged into a user turn (for a provider that wants
    alternation) taken out again as a message of its own, so that the next compaction can
    replace it rather than keep it inside a protected turn, and never drops the user's words
    with it. The pieces still stand for the caller's item."""
    out: list[Message] = []
    for message in messages:
        flags = [isinstance(p, TextPart) and is_summary_text(p.text) for p in message.parts]
        if not any(flags) or all(flags):
            out.append(message)
            continue
        start = 0
        for index in range(1, len(flags) + 1):
            if index == len(flags) or flags[index] != flags[start]:
                piece = replace(message, parts=message.parts[start:index])
                if not flags[start]:
                    originals.adopt(message, piece, changed=False)
                out.append(piece)
                start = index
    return tuple(out)


def previous_record(opened: Opened) -> Generator[Effect, Outcome, SummaryRecord | None]:
    """The head of the session's summary chain, read alone when the store can (the rest of
    the chain is read only when needed, see :func:`chain`)."""
    session_id, summary_id = opened.session_id, opened.session.summary_id
    if not (opened.setup.has_store and session_id and summary_id):
        return None
    if not hasattr(opened.setup.store, "summary"):
        found = yield from chain(opened)
        return found[-1] if found else None
    head = yield LoadSummary(session_id, summary_id)
    if isinstance(head, BaseException):
        raise StoreError(f"could not read the summary of {session_id!r}: {head}") from head
    return cast("SummaryRecord | None", head)


def chain(opened: Opened) -> Generator[Effect, Outcome, tuple[SummaryRecord, ...]]:
    """The session's summary chain as the store has it, oldest record first: read only when
    a compaction needs more than its head (the session has one, see :func:`previous_record`)."""
    # Only a session whose state names a summary has a chain to read.
    records = yield LoadSummaries(cast("str", opened.session_id))
    if isinstance(records, BaseException):
        raise StoreError(
            f"could not read the summaries of {opened.session_id!r}: {records}"
        ) from records
    by_id = {r.id: r for r in records}
    walked: list[SummaryRecord] = []
    head = by_id.get(opened.session.summary_id or "")
    while head is not None and len(walked) < len(records):
        walked.append(head)
        head = by_id.get(head.parent_id) if head.parent_id else None
    return tuple(reversed(walked))
