"""Hypothesis strategies for model-level histories with every tool shape: parallel calls,
results out of order, ids reused across turns (and within one turn), reasoning, a trailing
call still waiting, and corruptions (orphans, dangling calls, stray systems)."""

from __future__ import annotations

from typing import Literal

from hypothesis import strategies as st

from synopsis.messages import (
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

Style = Literal["tool", "user"]
IDS = st.sampled_from(["call_a", "call_b", "call_c", "toolu_1", "toolu_2"])
TEXT = st.text(alphabet="abcdefgh xyz.", min_size=1, max_size=30).filter(lambda s: s.strip())
NAMES = st.sampled_from(["read_file", "bash", "grep", "write_file"])


def user(text: str) -> Message:
    return Message(Role.USER, (TextPart(text),))


def assistant(text: str) -> Message:
    return Message(Role.ASSISTANT, (TextPart(text),))


@st.composite
def tool_turn(
    draw: st.DrawFn, style: Style, *, pending: bool = False, dup_ids: bool = False
) -> list[Message]:
    """An assistant message with 1-3 calls and its results (shuffled), or, when ``pending``,
    only some of them."""
    n = draw(st.integers(1, 3))
    if dup_ids and draw(st.booleans()):
        ids = [draw(IDS) for _ in range(n)]  # may repeat (invalid, C3): paired by position
    else:
        ids = draw(st.lists(IDS, min_size=n, max_size=n, unique=True))
    parts: list[ReasoningPart | TextPart | ToolCallPart] = []
    thinking = style == "user" and draw(st.booleans())
    if thinking:
        parts.append(ReasoningPart(text=draw(TEXT), signature="sig"))
    if draw(st.booleans()):
        parts.append(TextPart(draw(TEXT)))
    calls = [ToolCallPart(cid, draw(NAMES), '{"x": 1}') for cid in ids]
    parts.extend(calls)
    call_msg = Message(Role.ASSISTANT, tuple(parts))
    order = draw(st.permutations(range(n)))
    if pending:
        order = order[: draw(st.integers(0, n - 1))]
    # Results for a repeated id answer the calls in order, so keep relative order per id.
    by_id: dict[str, list[int]] = {}
    for k in sorted(order):
        by_id.setdefault(ids[k], []).append(k)
    seen: dict[str, int] = {}
    results: list[ToolResultPart] = []
    for k in order:
        cid = ids[k]
        idx = by_id[cid][seen.get(cid, 0)]
        seen[cid] = seen.get(cid, 0) + 1
        results.append(ToolResultPart(cid, f"result {idx}: " + draw(TEXT)))
    if not results:
        return [call_msg]
    if style == "tool":
        return [call_msg, *(Message(Role.TOOL, (r,)) for r in results)]
    return [call_msg, Message(Role.USER, tuple(results))]


@st.composite
def valid_history(
    draw: st.DrawFn, style: Style = "tool", *, allow_pending: bool = True, dup_ids: bool = False
) -> list[Message]:
    """A history every profile accepts (for its result style): system, user first, turns that
    alternate, tool turns, maybe a trailing call still running."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message(Role.SYSTEM, (TextPart(draw(TEXT)),)))
    out.append(user(draw(TEXT)))
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["tools", "answer"]))
        if kind == "tools":
            out.extend(draw(tool_turn(style, dup_ids=dup_ids)))
            out.append(assistant(draw(TEXT)))
        else:
            out.append(assistant(draw(TEXT)))
        out.append(user(draw(TEXT)))
    if allow_pending and draw(st.booleans()):
        out.extend(draw(tool_turn(style, pending=True, dup_ids=dup_ids)))
    return out


@st.composite
def any_history(draw: st.DrawFn, style: Style = "tool") -> list[Message]:
    """A valid history with up to three corruptions: a message deleted, two swapped, an
    orphan result, a stray system message, an empty message."""
    msgs = draw(valid_history(style, dup_ids=True))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["delete", "swap", "orphan", "system", "empty", "assist"]))
        pos = draw(st.integers(0, len(msgs)))
        if op == "delete" and len(msgs) > 1:
            del msgs[min(pos, len(msgs) - 1)]
        elif op == "swap" and len(msgs) > 2:
            p = min(pos, len(msgs) - 2)
            msgs[p], msgs[p + 1] = msgs[p + 1], msgs[p]
        elif op == "orphan":
            r = ToolResultPart("call_zzz", "stray")
            msgs.insert(pos, Message(Role.TOOL if style == "tool" else Role.USER, (r,)))
        elif op == "system":
            msgs.insert(pos, Message(Role.SYSTEM, (TextPart("late system"),)))
        elif op == "empty":
            msgs.insert(pos, Message(draw(st.sampled_from([Role.USER, Role.ASSISTANT])), ()))
        else:
            msgs.insert(pos, assistant("extra"))
    return msgs
