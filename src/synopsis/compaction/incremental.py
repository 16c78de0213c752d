"""The skip of a :class:`~.compactor.Compactor` that has seen the history before.

An agent loop calls ``compact`` before every request with the history it had plus what was
appended since; most calls compact nothing. A :class:`Memo` of the last call that skipped
lets the next call read only what was appended (:func:`skip`), and it gives the very result
the full path would, or it is not used: a compaction is never made from the memo. Earlier
items are recognised by identity (or, in OpenAI chat, as equal copies of what was read), so
an item changed in place is not read again: ``Compactor.reset()``.

Why each condition is needed, and why together they give the full path's answer, is set out
in ``docs/architecture.md`` ("Why the incremental skip gives the full path's answer").
"""

from __future__ import annotations

import copy
import operator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from synopsis.compaction.effects import LoadSession, SaveSession
from synopsis.compaction.output import output_items
from synopsis.compaction.prefix import boundary, decode_appended
from synopsis.compaction.projection import Projection
from synopsis.compaction.result import CompactionResult, skip_event
from synopsis.events import emit
from synopsis.formats import gemini
from synopsis.messages import (
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    is_person_message,
    is_summary,
    is_summary_text,
)
from synopsis.planning import GovernorState, Measure, turn_key
from synopsis.tokens import MessageCounter
from synopsis.validation import check_between_turns

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping

    from synopsis.compaction.effects import Effect, Outcome
    from synopsis.compaction.setup import Setup
    from synopsis.compaction.state import Ended, Request
    from synopsis.formats import FormatName
    from synopsis.messages import Message
    from synopsis.stores import SessionState
    from synopsis.validation import Profile

__all__ = ["Memo", "additive", "remember", "skip"]

_ITEMWISE: frozenset[str] = frozenset({"openai", "anthropic", "responses", "synopsis", "gemini"})
"""Formats whose items decode one message each, whatever comes before them (but for the
legacy OpenAI ``function`` message, see :func:`~.prefix.decode_appended`), or, in Gemini,
given only where the decode of those before left off (:class:`~synopsis.formats.gemini.
Resume`)."""


@dataclass(frozen=True, slots=True)
class Memo:
    """What a call that skipped leaves for the next one (see the module docstring)."""

    setup: Setup
    items: list[Any]
    system: object
    system_copy: object
    """A copy of a ``system`` that is neither None nor text: a list of blocks the caller
    changes in place is noticed."""
    format_given: FormatName | None
    format: FormatName
    tools: tuple[Mapping[str, Any], ...] | None
    """The tool definitions of the call (the list's objects, as it held them then)."""
    count: int
    """How many messages the items decoded to (with a leading system message)."""
    tokens: int
    """The request's tokens as the full path measures them."""
    boundary: int
    window: tuple[Message, ...]
    """What the next call checks, with what it appends, against the provider's rules: the
    decoded messages from ``boundary`` on, shortened by :func:`checked` to the message that
    opened the turn and those from ``tail`` on."""
    tail: int
    """The index, among the decoded messages, of ``window[1]``."""
    session_id: str | None = None
    session: SessionState | None = None
    """With a store: the session as the call saved it. The next call reads it back and goes
    the fast way only while it is still that (no other call changed it) and the governor
    would leave it as it is (so there is nothing to save)."""
    snapshot: list[Any] | None = None
    """The items as they were when read (their containers copied), for a history whose
    items read the same from any equal copy (see :func:`_plain`): a history decoded afresh
    from JSON is then recognised by equality with what was read, not by identity."""
    output: tuple[list[Any], object] | None = None
    """With a projection: the call's result (its items and system prompt), which a skip
    grows by the appended items; ``count``, ``tokens`` and ``window`` are then those of the
    projected history, ``items`` the caller's whole list."""
    resume: gemini.Resume | None = None
    """For a Gemini history: where decoding the contents appended to ``items`` picks up."""


def additive(counter: object) -> bool:
    """Whether the counter's total is reply priming + each message's count + tools, so that
    an appended message adds its own count (a calibrated or foreign counter may not)."""
    if not isinstance(counter, MessageCounter):
        return False
    kind = type(counter)
    return (
        kind.count_messages is MessageCounter.count_messages
        and kind.count_message is MessageCounter.count_message
    )


def _merged(message: Message) -> bool:
    """Whether the full path would take a summary out of this message (``_unmerge``)."""
    flags = [isinstance(p, TextPart) and is_summary_text(p.text) for p in message.parts]
    return any(flags) and not all(flags)


def remember(ended: Ended, before: Measure) -> Memo | None:
    """The memo of a call that skipped, or of one that compacted (see
    :func:`_after_compaction`), when the next call may take the fast path from it."""
    opened = ended.opened
    if ended.raised:
        return None
    if ended.final is not None:
        return _after_compaction(ended, ended.final)
    setup, request = opened.setup, opened.request
    if (
        (opened.projected and opened.format != "openai")
        or type(request.data) is not list
        or (request.tools is not None and not isinstance(request.tools, list | tuple))
        or opened.format not in _ITEMWISE
        or not opened.clean
        or not additive(setup.counter)
        or len(opened.messages) != len(opened.given)
        or not all(map(operator.is_, opened.messages, opened.given))
    ):
        return None
    output = output_items(opened, opened.messages) if opened.projected else None
    return _memo(ended, opened.given, before.tokens, output)


def _after_compaction(ended: Ended, final: tuple[Message, ...]) -> Memo | None:
    """The memo of a compaction of an OpenAI chat history with a session, for a client that
    sends its whole uncompacted history again: its next call, that history grown, is the
    compaction's output grown by the same items once the session's projection is applied.
    Made only when applying the projection just saved to this very history gives back the
    output message for message, as the full path would find it."""
    opened = ended.opened
    setup, request = opened.setup, opened.request
    if (
        setup.store is None
        or opened.session_id is None
        or opened.format != "openai"
        or type(request.data) is not list
        or request.system is not None
        or (request.tools is not None and not isinstance(request.tools, list | tuple))
        or not opened.clean
        or not additive(setup.counter)
        or len(request.data) != len(opened.decoded)
        or any(map(is_summary, opened.decoded))
    ):
        return None
    found = Projection.of(ended.session.projection)
    applied = found.apply(opened.decoded, opened.format) if found is not None else None
    if applied is None or isinstance(applied, str) or applied[0] != final:
        return None
    # ``final`` is a history the compaction built, never the caller's list as it came.
    output = output_items(opened, final, fixed=True)
    return _memo(ended, final, opened.measure(final).tokens, output)


def _memo(
    ended: Ended,
    messages: tuple[Message, ...],
    tokens: int,
    output: tuple[list[Any], object] | None,
) -> Memo:
    """The memo of a call that ended as ``ended``, whose history as measured is ``messages``
    of ``tokens``."""
    opened = ended.opened
    setup, request = opened.setup, opened.request
    data = request.data
    assert isinstance(data, list)  # both callers take only a plain list
    stored = setup.store is not None
    b = (
        opened.boundary
        if messages is opened.decoded and opened.boundary is not None
        else boundary(messages)
    )
    window, start, tail = checked(messages[b:], b, b + 1, setup.profile_for(opened.format))
    return Memo(
        setup=setup,
        items=list(data),
        system=request.system,
        system_copy=_system_copy(request.system),
        format_given=request.format,
        format=opened.format,
        tools=_snapshot(request.tools),
        count=len(messages),
        tokens=tokens,
        boundary=start,
        window=window,
        tail=tail,
        session_id=opened.session_id if stored else None,
        session=ended.session if stored else None,
        snapshot=(
            list(map(_frozen, data))
            if opened.format == "openai" and all(map(_plain, opened.decoded))
            else None
        ),
        output=output,
        resume=(
            gemini.Resume().after(messages[len(messages) - len(data) :])
            if opened.format == "gemini"
            else None
        ),
    )


def _plain(message: Message) -> bool:
    """Whether the message holds only what reads the same from any equal item: text, calls
    whose arguments are JSON text and results that are text. Python's ``==`` does not tell
    ``1``, ``1.0`` and ``True`` apart; such values in other places are read (arguments given
    as an object are counted from their JSON, media from their fields), so a history that
    holds one is recognised by identity only."""
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            if not isinstance(part.arguments, str):
                return False
        elif isinstance(part, ToolResultPart):
            if not isinstance(part.content, str):
                return False
        elif not isinstance(part, TextPart):
            return False
    return True


def _frozen(value: Any) -> Any:  # noqa: ANN401 - an item of JSON
    """``value`` with its dicts and lists copied: what it is now, whatever the caller changes
    in place later."""
    if type(value) is dict:
        return {k: _frozen(v) for k, v in value.items()}
    if type(value) is list:
        return [_frozen(v) for v in value]
    return value


def _system_copy(system: object) -> object:
    return system if system is None or isinstance(system, str) else copy.deepcopy(system)


def _same_system(system: object, memo: Memo) -> bool:
    """The memo's ``system``: equal text, or the same object still equal to its copy."""
    if system is None or isinstance(system, str):
        return system == memo.system
    return system is memo.system and system == memo.system_copy


def _snapshot(tools: object) -> tuple[Mapping[str, Any], ...] | None:
    return tuple(tools) if isinstance(tools, list | tuple) else None


def _same_tools(tools: object, memo: Memo) -> bool:
    """The same tool definitions as the memo's call: the same objects in the same order (a
    list changed in place since is noticed; a definition changed in place is not)."""
    if tools is None or memo.tools is None:
        return tools is None and memo.tools is None
    return (
        isinstance(tools, list | tuple)
        and len(tools) == len(memo.tools)
        and all(map(operator.is_, tools, memo.tools))
    )


def _same_request(memo: Memo, setup: Setup, request: Request) -> bool:
    return (
        setup is memo.setup
        and request.session_id == memo.session_id
        and not request.force
        and request.instructions is None
        and type(request.data) is list
        and request.format == memo.format_given
        and _same_system(request.system, memo)
        and _same_tools(request.tools, memo)
    )


def skip(
    memo: Memo, setup: Setup, request: Request
) -> Generator[Effect, Outcome, tuple[CompactionResult, Memo] | None]:
    """The full path's result for ``request`` and the memo to keep, when the call is a skip
    that the memo proves the full path would make (see the module docstring); else None. A
    plan like the full path's: the session is read back and saved through effects, which
    either driver carries out."""
    if not _same_request(memo, setup, request):
        return None
    data = request.data
    assert isinstance(data, list)
    n = len(memo.items)
    if len(data) < n or not _same_items(data, memo):
        return None
    try:
        fresh = decode_appended(memo.format, memo.format_given, data[n:], memo.resume)
    except Exception:  # the full path says what is wrong, as it always does
        return None
    if fresh is None or any(_merged(m) for m in fresh):
        return None
    if memo.output is not None and any(map(is_summary, fresh)):
        return None  # the full path takes no projection over a history holding a summary
    window = (*memo.window, *fresh)
    if check_between_turns(window, setup.profile_for(memo.format)):
        return None
    session = yield from _unchanged(memo)
    if memo.session is not None and session is None:
        return None
    governor = GovernorState.from_json(session.governor) if session else GovernorState()
    tokens = memo.tokens + sum(map(setup.counter.count_message, fresh))
    before = Measure(tokens, memo.count + len(fresh), setup.window)
    decision = setup.decide(before, governor, turn_key(window))
    if decision.compact:
        return None  # compactions are made from the caller's items, never from the memo
    if session is not None and _material(decision.state) != _material(governor):
        # The governor's memory moves on: saved as the full path saves it.
        session = yield from _saved(session, decision.state)
        if session is None:
            return None
    # Taken before the listeners hear of the skip: one that appends to the list must not put
    # an item nobody decoded or counted into the memo.
    taken = list(data)
    appended = taken[n:]
    frozen = (
        list(map(_frozen, appended))
        if memo.snapshot is not None and all(map(_plain, fresh))
        else None
    )
    event = skip_event(memo.session_id, decision)
    request.collected.append(event)
    emit(event, request.listeners)
    # The memo's lists are its own and it is being replaced: they grow where they lie. At 10k
    # messages copying them was a fifth of a call on a history decoded afresh (each copy
    # touches every item's reference count, long out of the processor's cache).
    output = memo.output
    if output is not None:  # the projected history grown by the appended items, as they are
        output[0].extend(appended)
    memo.items.extend(appended)
    snapshot = memo.snapshot
    if snapshot is not None and frozen is not None:
        snapshot.extend(frozen)
    result = CompactionResult(
        messages=taken if output is None else list(output[0]),
        compacted=False,
        code=decision.code,
        reason=decision.reason,
        record=None,
        tokens_before=tokens,
        tokens_after=tokens,
        events=tuple(request.collected),
        system=request.system if output is None else output[1],
        format=memo.format,
        fixes=(),
        offloaded=(),
        session_id=memo.session_id,
    )
    moved = boundary(window)
    where = _Place(memo, len(memo.window))
    kept, start, tail = checked(
        window[moved:], where(moved), where(moved + 1), setup.profile_for(memo.format)
    )
    grown = Memo(
        setup=setup,
        # The objects the memo matched stay its own: an equal copy the caller sent is the
        # caller's to let go of, outside this call.
        items=memo.items,
        system=request.system,
        system_copy=memo.system_copy,
        format_given=request.format,
        format=memo.format,
        tools=memo.tools,
        count=before.messages,
        tokens=tokens,
        boundary=start,
        window=kept,
        tail=tail,
        session_id=memo.session_id,
        session=session,
        snapshot=snapshot if frozen is not None else None,
        output=output,
        resume=None if memo.resume is None else memo.resume.after(fresh),
    )
    return result, grown


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a message of ``(*memo.window, *fresh)`` stands among the decoded messages."""

    memo: Memo
    known: int

    def __call__(self, i: int) -> int:
        memo = self.memo
        if i == 0:
            return memo.boundary
        if i < self.known:
            return memo.tail + i - 1
        return memo.count + i - self.known


def checked(
    window: tuple[Message, ...], start: int, tail: int, profile: Profile
) -> tuple[tuple[Message, ...], int, int]:
    """``window`` (a valid history from a point no tool call is open across; its first
    message at ``start`` among the decoded messages, its second at ``tail``) as the next call
    checks it: the last message a person wrote before the last checkpoint, then the messages
    from that checkpoint on; with the places of both. A checkpoint is an assistant message
    after one that is not, with every call before it answered. In one long tool loop the
    window would otherwise hold the whole loop, and each call check all of it.

    Checking the shortened window with what is appended finds every problem the whole one
    would: the rules look at one message, at the messages of one call and its results, at
    neighbours, or at the running tool loop, turn or step, and none of those reaches back past
    the checkpoint, where no call is open and an assistant step begins (the person's message
    keeps the turn's opening, so the turn's key is the same). It may find one the whole window
    has not (the person's message right before the checkpoint's step), and the call then
    takes the full path. One rule does reach back: a turn that holds reasoning anywhere needs
    it with every output (Responses), so for such a target the window is kept whole."""
    if profile.reasoning_required:
        return window, start, tail
    waiting: dict[str, int] = {}
    open_calls = 0
    person: int | None = None
    found: tuple[int, int] | None = None
    for i, message in enumerate(window):
        if (
            i
            and not open_calls
            and person is not None
            and message.role is Role.ASSISTANT
            and window[i - 1].role is not Role.ASSISTANT
        ):
            found = (person, i)
        if is_person_message(message) and not is_summary(message):
            person = i
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                waiting[part.call_id] = waiting.get(part.call_id, 0) + 1
                open_calls += 1
            elif isinstance(part, ToolResultPart) and waiting.get(part.call_id):
                waiting[part.call_id] -= 1
                open_calls -= 1
    if found is None or found[1] == found[0] + 1:
        return window, start, tail
    anchor, k = found

    def place(i: int) -> int:
        return start if i == 0 else tail + i - 1

    return (window[anchor], *window[k:]), place(anchor), place(k)


def _same_items(data: list[Any], memo: Memo) -> bool:
    """Whether ``data`` starts with the memo's items: the very objects, or (for a history
    whose items read the same from any equal copy) copies equal to them as they were read,
    as a client that decodes its history from JSON again sends them."""
    if all(map(operator.is_, data, memo.items)):
        return True
    return memo.snapshot is not None and data[: len(memo.snapshot)] == memo.snapshot


def _material(state: GovernorState) -> GovernorState:
    """``state`` less what need not be saved: the turn it last saw while that turn had no
    compaction (a later call in any other turn starts its count at 0 all the same)."""
    return replace(state, turn=None) if state.turn_compactions == 0 else state


def _saved(
    session: SessionState, state: GovernorState
) -> Generator[Effect, Outcome, SessionState | None]:
    """``session`` with the governor's new ``state``, saved; None when the store fails (the
    full path then reports it, as it always does)."""
    moved = replace(session, governor=state.to_json(), updated_at=datetime.now(UTC))
    failed = yield SaveSession(moved)
    return None if isinstance(failed, BaseException) else moved


def _unchanged(memo: Memo) -> Generator[Effect, Outcome, SessionState | None]:
    """The session as the memo's call saved it, read back from the store, while it is still
    that; None without a session, or when it is not (another call moved it on, or the store
    failed: the full path reports a store that fails, as it always does)."""
    if memo.session is None or memo.session_id is None:
        return None
    current = yield LoadSession(memo.session_id)
    return cast("SessionState", current) if current == memo.session else None
