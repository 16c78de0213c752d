"""Rebuilding a history around its summary so that the target provider accepts it.

The summary is its own user turn by default: every provider accepts one anywhere a user may speak.
A system message mid-history only where the profile allows one (``mid_system``); otherwise that
request falls back to the user voice. Where the provider wants strict alternation or merges
same-role neighbours, the repair step merges the summary into the user turn next to it, without
mutating anything. For Anthropic, thinking blocks of turns before the current one are dropped once
the history was edited: the API strips them anyway, and a block sent after an edit may no longer
pass its signature check (see Anthropic thinking in docs/message-rules.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal, TypeAlias

from synopsis.messages import Message, ReasoningPart, Role, TextPart, is_person_message, is_summary
from synopsis.summarizers.render import Style, render
from synopsis.validation import repair_messages

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.summarizers.records import SummaryRecord
    from synopsis.validation import Fix, Profile

__all__ = [
    "SummaryRole",
    "current_turn",
    "drop_stale_thinking",
    "finish",
    "summary_for",
    "without_thinking",
]

SummaryRole: TypeAlias = Literal["auto", "user", "system", "merge"]


def summary_role(role: SummaryRole, profile: Profile) -> Role:
    """The role the summary message is written with for ``profile``: a system message where
    the provider accepts one mid-history (OpenAI itself; a profile with ``mid_system``)."""
    if role == "system" and (profile.mid_system or profile.system == "anywhere"):
        return Role.SYSTEM
    return Role.USER


def summary_for(
    record: SummaryRecord,
    *,
    profile: Profile,
    role: SummaryRole = "auto",
    style: Style = "sections",
    offload_ref: str | None = None,
) -> Message:
    """The message that stands for the summarized messages."""
    text = render(record, style=style, offload_ref=offload_ref)
    return Message(summary_role(role, profile), (TextPart(text),))


def _merge_into_next_user(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Each summary's parts put in front of the user turn after it, when there is one
    (``summary_role="merge"``); summaries in a row go in together, and a summary with no user
    turn after it stays as it is."""
    out = list(messages)
    index = 0
    while index < len(out) - 1:
        here, after = out[index], out[index + 1]
        if is_summary(here) and here.role is Role.USER and is_person_message(after):
            # ``after`` may be a summary too: the merge is then still a summary, and is
            # looked at again with what follows it.
            out[index : index + 2] = [replace(after, parts=(*here.parts, *after.parts))]
            continue
        index += 1
    return tuple(out)


def _join_summaries(messages: Sequence[Message]) -> tuple[Message, ...]:
    """For a provider that merges same-role neighbours: a run of user turns that holds a
    summary made one message, each text kept as a part of its own. The repair step would
    join the texts into one, and the next compaction could then no longer find the summary
    (to replace it) nor tell the user's words from it."""
    out: list[Message] = []
    run: list[Message] = []

    def flush() -> None:
        if len(run) > 1 and any(is_summary(m) for m in run):
            out.append(replace(run[0], parts=tuple(p for m in run for p in m.parts)))
        else:
            out.extend(run)
        run.clear()

    for message in messages:
        if message.role is Role.USER and not message.tool_results:
            run.append(message)
            continue
        flush()
        out.append(message)
    flush()
    return tuple(out)


def current_turn(messages: Sequence[Message]) -> int:
    """Where the current turn starts: the last message a person wrote (-1 when none)."""
    return max(
        (i for i, m in enumerate(messages) if is_person_message(m) and not is_summary(m)),
        default=-1,
    )


def without_thinking(message: Message) -> Message:
    """``message`` without its thinking blocks (itself when it has none; with no parts when
    nothing else was in it)."""
    if message.role is not Role.ASSISTANT or not message.has_reasoning:
        return message
    return replace(
        message, parts=tuple(p for p in message.parts if not isinstance(p, ReasoningPart))
    )


def drop_stale_thinking(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Thinking blocks before the current turn (the last message a person wrote) removed; an
    assistant message left with nothing is dropped. The current turn's blocks stay verbatim:
    with thinking on, the running tool loop must start with them (rule A6)."""
    start = current_turn(messages)
    out: list[Message] = []
    for index, message in enumerate(messages):
        thinned = without_thinking(message) if index < start else message
        if thinned.parts or thinned is message:
            out.append(thinned)
    return tuple(out)


def finish(
    messages: Sequence[Message], profile: Profile, *, role: SummaryRole = "auto"
) -> tuple[tuple[Message, ...], tuple[Fix, ...]]:
    """The compacted history made acceptable to ``profile``: the summary merged where asked,
    stale thinking dropped (Anthropic), and the profile's unambiguous repairs applied (merging
    same-role neighbours where alternation is required). Returns the history and the fixes."""
    out = tuple(messages)
    # Thinking first: once a summary is merged into a user turn, that turn reads as a summary
    # and no longer marks where the current turn starts.
    if profile.thinking_rules:
        out = drop_stale_thinking(out)
    if role == "merge":
        out = _merge_into_next_user(out)
    elif profile.merge_same_role:
        out = _join_summaries(out)
    repaired = repair_messages(out, profile)
    return repaired.messages, repaired.fixes
