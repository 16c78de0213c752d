"""The opening of a compaction: the caller's history decoded and repaired (every fix an
event), the session read from the store, and the session's summary put in place of what it
stands for when the caller sent that part again (:mod:`.projection`); and the session's
summary chain, read when a compaction needs the record it updates."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from synopsis.compaction.effects import Effect, LoadSession, LoadSummaries, LoadSummary, Outcome
from synopsis.compaction.offload import Originals
from synopsis.compaction.prefix import Prefix, boundary, reread
from synopsis.compaction.projection import Projection
from synopsis.compaction.state import Request, Run
from synopsis.errors import ConversationError, StoreError
from synopsis.events import ChainInvalidated, HistoryRepaired
from synopsis.formats import decode, wire_items
from synopsis.messages import Message, Role, TextPart, is_summary, is_summary_text
from synopsis.stores import SessionState
from synopsis.validation import check, repair_messages
from synopsis.validation.rules import separate_system

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

    from synopsis.compaction.setup import Setup
    from synopsis.formats import FormatName
    from synopsis.summarizers import SummaryRecord
    from synopsis.validation import Problem, Profile

__all__ = ["chain", "open_run", "previous_record", "problems"]

_OPEN_END = ("G5", "last_user")
"""Rules about how a history ends: the caller appends the next turn before sending, so a
history between turns that ends with the model's answer is not at fault."""


def problems(messages: Sequence[Message], profile: Profile) -> list[Problem]:
    """What ``messages`` break for ``profile``, but for how a history between turns ends."""
    return [p for p in check(messages, profile) if not p.rule.endswith(_OPEN_END)]


def _normalise(
    setup: Setup, request: Request, prefix: Prefix | None
) -> tuple[FormatName, tuple[Message, ...], Originals, list[Any], int | None]:
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
    if not problems(messages[start:], profile):
        # From the last one on: no call is open across it (see prefix.boundary).
        return fmt, messages, originals, [], start + boundary(messages[start:])
    repaired = repair_messages(messages, profile, offset=separate_system(messages, fmt))
    if _spoken(messages) and not _spoken(repaired.messages):
        raise ConversationError(
            f"every message of the history is empty or blank text, which {profile.name} "
            "rejects, and nothing may stand in for what a person or a tool said",
            rule="history.empty",
        )
    left = problems(repaired.messages, profile)
    if left:
        first = left[0]
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        raise ConversationError(f"{first.message}{more}", index=first.index, rule=first.rule)
    # A repaired message still stands for the caller's item it came from.
    for message, origin in zip(repaired.messages, repaired.origins, strict=True):
        if origin is not None and message is not messages[origin]:
            originals.adopt(messages[origin], message, changed=False)
    return fmt, repaired.messages, originals, list(repaired.fixes), None


def _spoken(messages: Sequence[Message]) -> bool:
    """Whether any message is not a system prompt."""
    return any(m.role not in (Role.SYSTEM, Role.DEVELOPER) for m in messages)


def open_run(
    setup: Setup, request: Request, prefix: Prefix | None = None
) -> Generator[Effect, Outcome, Run]:
    fmt, messages, originals, fixes, last = _normalise(setup, request, prefix)
    # The Compactor names a session whenever there is a store (DEFAULT_SESSION at least).
    session_id = request.session_id or setup.default_session
    state = SessionState(session_id or "")
    if session_id is not None and setup.has_store:
        found = yield LoadSession(session_id)
        if isinstance(found, BaseException):
            raise StoreError(f"could not read session {session_id!r}: {found}") from found
        state = found or state
    given = messages
    messages = _unmerge(messages, originals)
    run = Run(
        setup, request, fmt, messages, originals, fixes, session_id, state, given, last is not None
    )
    run.boundary = last
    if fixes:
        run.emit(HistoryRepaired(session_id=session_id, fixes=tuple(str(f) for f in fixes)))
    run.decoded = tuple(originals.decoded)
    _project(run)
    return run


def _project(run: Run) -> None:
    """The session's summary in place of the part of the history it stands for, when the
    caller sent that part again as it was (see :mod:`.projection`); when it sent it changed,
    the chain it belonged to is given up, saying why."""
    found = Projection.of(run.state.projection)
    if found is None or not run.clean or any(is_summary(m) for m in run.messages):
        return
    applied = found.apply(run.messages, run.format)
    if isinstance(applied, str):
        run.emit(ChainInvalidated(session_id=run.session_id, reason=applied))
        run.state = replace(run.state, summary_id=None, projection={})
        return
    run.messages, swapped = applied
    for original, smaller in swapped:
        run.originals.adopt(original, smaller)
        run.kept_before.add(id(smaller))
    run.given = run.messages
    run.projected = True


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


def previous_record(run: Run) -> Generator[Effect, Outcome, SummaryRecord | None]:
    """The head of the session's summary chain, read alone when the store can (the rest of
    the chain is read only when needed, see :func:`chain`)."""
    if not (run.setup.has_store and run.session_id and run.state.summary_id):
        return None
    if not hasattr(run.setup.store, "summary"):
        found = yield from chain(run)
        return found[-1] if found else None
    head = yield LoadSummary(run.session_id, run.state.summary_id)
    if isinstance(head, BaseException):
        raise StoreError(f"could not read the summary of {run.session_id!r}: {head}") from head
    return cast("SummaryRecord | None", head)


def chain(run: Run) -> Generator[Effect, Outcome, tuple[SummaryRecord, ...]]:
    """The session's summary chain as the store has it, oldest record first: read only when
    a compaction needs more than its head (the session has one, see :func:`previous_record`)."""
    # Only a session whose state names a summary has a chain to read.
    records = yield LoadSummaries(cast("str", run.session_id))
    if isinstance(records, BaseException):
        raise StoreError(
            f"could not read the summaries of {run.session_id!r}: {records}"
        ) from records
    by_id = {r.id: r for r in records}
    walked: list[SummaryRecord] = []
    head = by_id.get(run.state.summary_id or "")
    while head is not None and len(walked) < len(records):
        walked.append(head)
        head = by_id.get(head.parent_id) if head.parent_id else None
    return tuple(reversed(walked))
