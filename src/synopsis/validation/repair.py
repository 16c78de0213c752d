"""Repair: only the fixes whose right answer is not in doubt, each one reported.

Passes, in order: lift system messages where the target wants them first (into the top-level
system prompt where the target has one; again at the end, for a system message that lost the
user turn it was allowed after); drop orphaned results; move results that sit away
from their call into the call's answer turn; answer (or drop) calls left dangling in the
middle; drop empty messages; drop reasoning items that an earlier pass left without the item
they produced; give reasoning items back their ``summary``; merge same-role neighbours where
the target demands alternation. A trailing unfinished call (a live agent mid-run) is left as
it is, unless the caller says the run was interrupted (``close_trailing_calls=True``): then
each of its open calls gets an "interrupted" result, as an agent framework does when it
resumes a session that stopped mid-call. Thinking blocks are never edited, merged or
reordered, and a reasoning item that was already stranded in the input is left for
:func:`check` to report: which item it produced is a guess. Every pass works on
``(original index, message)`` pairs so each fix can name the message it touched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, get_args

from synopsis.errors import ConfigurationError
from synopsis.formats._common import hint
from synopsis.messages import (
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolResultPart,
)
from synopsis.pairing import pair_tool_calls
from synopsis.validation.rules import (
    SYSTEM_PROMPT,
    is_blank,
    list_index,
    place,
    reasoning_orphans,
    result_block,
    top_level_systems,
    trailing_call_message,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.validation.profiles import Profile

__all__ = [
    "INTERRUPTED",
    "NOT_COMPLETED",
    "Dangling",
    "Fix",
    "Repaired",
    "dangling_policy",
    "repair_messages",
]

NOT_COMPLETED = "[synopsis] This tool call was not completed; no result was recorded."
INTERRUPTED = "[synopsis] This tool call was interrupted; it has no result."

Dangling = Literal["answer", "drop"]

_SYSTEM_ROLES = (Role.SYSTEM, Role.DEVELOPER)
Item = tuple[int | None, Message]


@dataclass(frozen=True, slots=True)
class Fix:
    """One change repair made. ``index`` is the message's position in the input (``None`` for
    a message repair created, and for a top-level system prompt passed apart from the
    caller's list: ``detail`` says so)."""

    index: int | None
    action: str
    detail: str

    def __str__(self) -> str:
        where = "new message" if self.index is None else f"message {self.index}"
        return f"{where}: {self.action}: {self.detail}"


@dataclass(frozen=True, slots=True)
class Repaired:
    messages: tuple[Message, ...]
    fixes: tuple[Fix, ...]
    origins: tuple[int | None, ...] = ()
    """For each repaired message, the index of the input message it comes from (a merge
    keeps the first one's; ``None`` for one repair added, such as a synthetic result)."""


def dangling_policy(value: object) -> Dangling:
    """``value`` if it names a way to settle a dangling call; a typo must not quietly pick
    one, since the two change the history differently."""
    allowed: tuple[Dangling, ...] = get_args(Dangling)
    for policy in allowed:
        if value == policy:
            return policy
    raise ConfigurationError(
        f"dangling={value!r} is not a repair policy; use 'answer' (give each dangling call a "
        "'not completed' result) or 'drop' (remove the call)"
    )


def _text_only(m: Message) -> bool:
    return all(isinstance(p, TextPart) for p in m.parts)


def _top_level(head: list[Item], lifted: set[int | None], fixes: list[Fix]) -> list[Item]:
    """``head`` as one Anthropic top-level system prompt. The converter writes a system
    message that came from inside ``messages`` back there, so a lifted one must become (part
    of) the request's own ``system``."""
    own = next((m for _, m in head if hint(m, "anthropic", "system") is not None), None)
    form = hint(own, "anthropic", "system") if own is not None else "string"
    parts: tuple[Part, ...] = tuple(p for _, m in head for p in m.parts)
    if all(_text_only(m) for _, m in head) and not any(
        p.extra for p in parts if isinstance(p, TextPart)
    ):
        parts = (TextPart("\n\n".join(m.text for _, m in head)),)
    else:
        form = "list"
    merged = Message(Role.SYSTEM, parts, wire={"format": "anthropic", "system": form})
    for orig, _ in head[1:]:
        if orig not in lifted:
            fixes.append(Fix(orig, "merged system message", "into the top-level system prompt"))
    return [(head[0][0], merged)]


def _lift_systems(items: list[Item], profile: Profile, fixes: list[Fix]) -> list[Item]:
    if profile.system == "anywhere" and profile.developer_role:
        return items
    top = top_level_systems([m for _, m in items], profile)
    where = "into the top-level system prompt" if profile.system == "leading" else "to the front"
    head: list[Item] = []
    body: list[Item] = []
    lifted: set[int | None] = set()
    leading = True
    for k, (orig, m) in enumerate(items):
        if m.role not in _SYSTEM_ROLES:
            leading = False
            body.append((orig, m))
            continue
        after_user = k > 0 and items[k - 1][1].role in (Role.USER, Role.TOOL)
        if leading and (profile.system != "leading" or k < top):
            head.append((orig, m))
        elif profile.system == "anywhere" or (profile.mid_system and after_user):
            body.append((orig, m))
        else:
            fixes.append(Fix(orig, "lifted system message", f"moved {where}"))
            lifted.add(orig)
            head.append((orig, m))
    if not profile.developer_role:
        for n, (orig, m) in enumerate(head):
            if m.role is Role.DEVELOPER:
                fixes.append(Fix(orig, "renamed role", "developer -> system"))
                head[n] = (orig, replace(m, role=Role.SYSTEM))
    if profile.system == "leading" and top_level_systems([m for _, m in head], profile) < len(head):
        head = _top_level(head, lifted, fixes)
    if profile.system == "first_only" and len(head) > 1:
        # Joining text into one string is the plainest system prompt, but it would drop the
        # fields a block carries (cache_control); keep the blocks whenever any has one.
        plain = all(all(isinstance(p, TextPart) and not p.extra for p in m.parts) for _, m in head)
        if plain:
            text = "\n\n".join(m.text for _, m in head)
            merged = Message(Role.SYSTEM, (TextPart(text),), wire=head[0][1].wire)
        else:
            merged = Message(Role.SYSTEM, tuple(p for _, m in head for p in m.parts))
        for orig, _ in head[1:]:
            fixes.append(Fix(orig, "merged system message", "into the one leading system"))
        head = [(head[0][0], merged)]
    return head + body


def _drop_parts(
    items: list[Item], drop: set[tuple[int, int]], fixes: list[Fix], action: str
) -> list[Item]:
    out: list[Item] = []
    for mi, (orig, m) in enumerate(items):
        if not any(loc[0] == mi for loc in drop):
            out.append((orig, m))
            continue
        kept: list[Part] = []
        for pi, part in enumerate(m.parts):
            if (mi, pi) in drop:
                cid = getattr(part, "call_id", "")
                fixes.append(Fix(orig, action, f"call id {cid!r}"))
            else:
                kept.append(part)
        if kept and not all(isinstance(p, ReasoningPart) for p in kept):
            out.append((orig, replace(m, parts=tuple(kept))))
        elif kept:
            fixes.append(Fix(orig, "dropped message", "only thinking was left, with no turn"))
        else:
            fixes.append(Fix(orig, "dropped message", "nothing left after the fix"))
    return out


def _settle_calls(
    items: list[Item],
    profile: Profile,
    fixes: list[Fix],
    dangling: Dangling,
    *,
    close_trailing_calls: bool,
    offset: int,
) -> list[Item]:
    """Orphans out; misplaced results moved next to their call; dangling calls answered, and
    with ``close_trailing_calls`` the open calls of a trailing call message too."""
    msgs = [m for _, m in items]
    pairing = pair_tool_calls(msgs)
    remove = set(pairing.orphans)
    # This pass's fixes are reported only if it is the last: dropping calls starts it again
    # on the shorter history, which finds the same orphans and misplaced results once more.
    found: list[Fix] = []
    for loc in pairing.orphans:
        found.append(Fix(items[loc[0]][0], "dropped orphaned result", "no earlier call"))
    pending: dict[int, list[ToolResultPart]] = {}

    def answer(loc: tuple[int, int], text: str, action: str, what: str) -> None:
        """A synthetic result of ``text`` for the call at ``loc``, after the message it is in."""
        waiting = pairing.call_part(msgs, loc)
        synthetic = ToolResultPart(waiting.call_id, text, is_error=True, name=waiting.name)
        pending.setdefault(loc[0], []).append(synthetic)
        found.append(Fix(items[loc[0]][0], action, f"{waiting.call_id!r} with {what} result"))

    if profile.results_adjacent:
        blocks: dict[int, range] = {}
        for call, results in pairing.result_of.items():
            ci = call[0]
            block = blocks.setdefault(ci, result_block(msgs, ci, profile))
            call_at = items[ci][0]
            assert call_at is not None  # repair adds results, never a call
            for loc in results:
                if loc[0] not in block:
                    remove.add(loc)
                    pending.setdefault(ci, []).append(pairing.result_part(msgs, loc))
                    found.append(
                        Fix(
                            items[loc[0]][0],
                            "moved result",
                            f"next to its call in {place(call_at, offset)}",
                        )
                    )
    trailing = trailing_call_message(msgs, profile)
    drop_calls: set[tuple[int, int]] = set()
    closing: list[tuple[int, int]] = []
    for loc in pairing.open_calls:
        if loc[0] == trailing:
            if close_trailing_calls:
                closing.append(loc)
            continue
        if dangling == "drop":
            drop_calls.add(loc)
        else:
            answer(loc, NOT_COMPLETED, "answered dangling call", "a 'not completed'")
    if not remove and not pending and not drop_calls and not closing:
        return items
    if drop_calls:
        items = _drop_parts(items, drop_calls, fixes, "dropped dangling call")
        # Indices moved; recompute everything on the shorter history (the trailing calls are
        # closed there, once).
        return _settle_calls(
            items,
            profile,
            fixes,
            dangling,
            close_trailing_calls=close_trailing_calls,
            offset=offset,
        )
    for loc in closing:
        # Its results (those that came) already sit right after it: the synthetic ones join
        # them there, so each open call gets exactly one answer in its own turn.
        answer(loc, INTERRUPTED, "closed interrupted call", "an 'interrupted'")
    fixes.extend(found)
    # Only result parts go here; a message left empty by that goes too, so renumber.
    kept: list[Item] = []
    new_index: dict[int, int] = {}
    for mi, (orig, m) in enumerate(items):
        parts = tuple(p for pi, p in enumerate(m.parts) if (mi, pi) not in remove)
        if parts or not m.parts:
            new_index[mi] = len(kept)
            kept.append((orig, m if len(parts) == len(m.parts) else replace(m, parts=parts)))
    insert_at = {new_index[ci]: parts for ci, parts in pending.items()}
    return _insert_results(kept, insert_at, profile)


def _insert_results(
    items: list[Item], pending: dict[int, list[ToolResultPart]], profile: Profile
) -> list[Item]:
    out: list[Item] = []
    msgs = [m for _, m in items]
    n = 0
    while n < len(items):
        out.append(items[n])
        results = pending.get(n)
        n += 1
        if not results:
            continue
        # Follow the shape the answer already has; else the target's own style.
        follows_tool = n < len(items) and msgs[n].role is Role.TOOL
        if follows_tool or profile.result_style == "tool":
            while n < len(items) and msgs[n].role is Role.TOOL:
                out.append(items[n])
                n += 1
            out.extend((None, Message(Role.TOOL, (r,))) for r in results)
        elif n < len(items) and msgs[n].role is Role.USER and msgs[n].tool_results:
            orig, m = items[n]
            lead = 0
            while lead < len(m.parts) and isinstance(m.parts[lead], ToolResultPart):
                lead += 1
            parts = (*m.parts[:lead], *results, *m.parts[lead:])
            out.append((orig, replace(m, parts=parts)))
            n += 1
        else:
            out.append((None, Message(Role.USER, tuple(results))))
    return out


def _is_empty(m: Message, profile: Profile) -> bool:
    if not m.parts:
        return True
    return profile.nonempty and all(is_blank(p, profile) for p in m.parts)


def _drop_empty(items: list[Item], profile: Profile, fixes: list[Fix]) -> list[Item]:
    out: list[Item] = []
    for orig, m in items:
        if _is_empty(m, profile):
            fixes.append(Fix(orig, "dropped empty message", m.role.value))
            continue
        kept = m
        if profile.nonempty and any(is_blank(p, profile) for p in m.parts):
            parts = tuple(p for p in m.parts if not is_blank(p, profile))
            fixes.append(Fix(orig, "dropped blank text", "empty text block removed"))
            kept = replace(m, parts=parts)
        out.append((orig, kept))
    return out


def _drop_stranded_reasoning(
    items: list[Item], produced: dict[int, int], fixes: list[Fix]
) -> list[Item]:
    """Drop reasoning items whose produced item (``produced``: input index of a reasoning item
    -> input index of the item right after it) no longer follows them (R3): sent without it
    they are rejected, and nothing else can stand in for what they produced. A reasoning item
    stranded already in the input stays for :func:`check` to report."""
    while True:
        drop = {
            k
            for k, (orig, _) in enumerate(items)
            if orig in produced and (k + 1 == len(items) or items[k + 1][0] != produced[orig])
        }
        if not drop:
            return items
        for k in sorted(drop):
            fixes.append(
                Fix(items[k][0], "dropped reasoning item", "the item it produced was removed")
            )
        items = [item for k, item in enumerate(items) if k not in drop]


def _restore_summaries(items: list[Item], fixes: list[Fix]) -> list[Item]:
    """Clear the converter's note that a reasoning item came without ``summary`` (R6), so the
    item goes back with ``summary: []``."""
    out: list[Item] = []
    for orig, m in items:
        if not hint(m, "responses", "missing_summary"):
            out.append((orig, m))
            continue
        wire = {k: v for k, v in m.wire.items() if k != "missing_summary"}
        out.append((orig, replace(m, wire=wire)))
        fixes.append(Fix(orig, "added empty summary", "a reasoning item needs `summary`"))
    return out


def _mergeable(a: Message, b: Message) -> bool:
    if a.role is not b.role or a.role not in (Role.USER, Role.ASSISTANT):
        return False
    if a.tool_results or b.tool_results:
        return False
    if a.role is Role.ASSISTANT:
        return not a.tool_calls and not b.has_reasoning
    return True


def _merge_neighbours(items: list[Item], profile: Profile, fixes: list[Fix]) -> list[Item]:
    if not profile.merge_same_role:
        return items
    out: list[Item] = []
    for orig, m in items:
        if out and _mergeable(out[-1][1], m):
            prev_orig, prev = out[-1]
            parts = (*prev.parts, *m.parts)
            if (
                _text_only(prev)
                and _text_only(m)
                and not any(p.extra for p in parts if isinstance(p, TextPart))
            ):
                parts = (TextPart(f"{prev.text}\n\n{m.text}"),)
            out[-1] = (prev_orig, replace(prev, parts=parts))
            fixes.append(Fix(orig, "merged message", f"into the {m.role.value} message before"))
            continue
        out.append((orig, m))
    return out


def _in_list(fix: Fix, offset: int) -> Fix:
    if fix.index is not None and fix.index < offset:
        return replace(fix, index=None, detail=f"{SYSTEM_PROMPT}: {fix.detail}")
    return replace(fix, index=list_index(fix.index, offset))


def repair_messages(
    messages: Sequence[Message],
    profile: Profile,
    *,
    dangling: Dangling = "answer",
    close_trailing_calls: bool = False,
    offset: int = 0,
) -> Repaired:
    """Apply every unambiguous fix for ``profile``. What cannot be fixed without guessing
    (a history that opens with the assistant, say) is left for :func:`check` to report.

    ``close_trailing_calls=True`` answers each open call of a trailing call message (one whose
    results are still awaited) with an :data:`INTERRUPTED` result: for a run that stopped
    mid-call and will not get those results. By default such a call is left waiting.

    ``offset`` is how many leading ``messages`` are not in the caller's own list (a system
    prompt passed apart from it): the fixes name messages by their index in that list, and a
    fix of those messages has ``index=None`` and says where it is. ``origins`` stay indices
    into ``messages``.

    Raises ``ConfigurationError`` when ``dangling`` is neither ``"answer"`` nor ``"drop"``.
    """
    dangling = dangling_policy(dangling)
    fixes: list[Fix] = []
    items: list[Item] = list(enumerate(messages))
    items = _lift_systems(items, profile, fixes)
    stranded = set(reasoning_orphans(messages))
    produced = {
        i: i + 1
        for i, m in enumerate(messages)
        if i not in stranded and m.parts and all(isinstance(p, ReasoningPart) for p in m.parts)
    }
    items = _settle_calls(
        items, profile, fixes, dangling, close_trailing_calls=close_trailing_calls, offset=offset
    )
    items = _drop_empty(items, profile, fixes)
    if profile.reasoning_followed:
        items = _drop_stranded_reasoning(items, produced, fixes)
        items = _restore_summaries(items, fixes)
    # A system message allowed where it stood (right after a user turn) may have lost that
    # turn to the passes above.
    items = _lift_systems(items, profile, fixes)
    items = _merge_neighbours(items, profile, fixes)
    return Repaired(
        tuple(m for _, m in items),
        tuple(_in_list(f, offset) for f in fixes),
        tuple(o for o, _ in items),
    )
