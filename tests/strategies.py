"""Hypothesis strategies for model-level histories with every tool shape: parallel calls,
results out of order, ids reused across turns (and within one turn), reasoning (Anthropic
thinking inside a call message, or Responses reasoning items ahead of what they produced), a
trailing call still waiting, and corruptions (orphans, dangling calls, stray systems, a
system message from inside Anthropic's list, thinking that lost its signature)."""

from __future__ import annotations

from dataclasses import replace
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


def reasoning_item(encrypted: str | None = "enc") -> Message:
    """A Responses reasoning item, as the converter decodes one."""
    part = ReasoningPart(text="plan", encrypted=encrypted, extra={"summary": []})
    return Message(Role.ASSISTANT, (part,), wire={"format": "responses", "item": "reasoning"})


def anthropic_system(text: str) -> Message:
    """A system message decoded from inside Anthropic's ``messages`` list (not its top-level
    ``system``): the converter writes it back into the list."""
    return Message(
        Role.SYSTEM, (TextPart(text),), wire={"format": "anthropic", "content": "string"}
    )


@st.composite
def tool_turn(
    draw: st.DrawFn,
    style: Style,
    *,
    pending: bool = False,
    dup_ids: bool = False,
    reasoning: bool = False,
) -> list[Message]:
    """An assistant message with 1-3 calls and its results (shuffled), or, when ``pending``,
    only some of them; with ``reasoning``, a reasoning item ahead of the calls."""
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
    lead = [reasoning_item()] if reasoning else []
    if not results:
        return [*lead, call_msg]
    if style == "tool":
        return [*lead, call_msg, *(Message(Role.TOOL, (r,)) for r in results)]
    return [*lead, call_msg, Message(Role.USER, tuple(results))]


@st.composite
def valid_history(
    draw: st.DrawFn,
    style: Style = "tool",
    *,
    allow_pending: bool = True,
    dup_ids: bool = False,
    reasoning: bool = False,
) -> list[Message]:
    """A history every profile accepts (for its result style): system, user first, turns that
    alternate, tool turns, maybe a trailing call still running. ``reasoning`` lets a turn
    come from a reasoning model: a Responses reasoning item right before each call message and
    answer of that turn (valid for Responses only)."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message(Role.SYSTEM, (TextPart(draw(TEXT)),)))
    out.append(user(draw(TEXT)))
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["tools", "answer"]))
        reasoned = reasoning and draw(st.booleans())
        if kind == "tools":
            out.extend(draw(tool_turn(style, dup_ids=dup_ids, reasoning=reasoned)))
        if reasoned:
            out.append(reasoning_item())
        out.append(assistant(draw(TEXT)))
        out.append(user(draw(TEXT)))
    if allow_pending and draw(st.booleans()):
        reasoned = reasoning and draw(st.booleans())
        out.extend(draw(tool_turn(style, pending=True, dup_ids=dup_ids, reasoning=reasoned)))
    return out


@st.composite
def any_history(
    draw: st.DrawFn, style: Style = "tool", *, reasoning: bool | None = None
) -> list[Message]:
    """A valid history with up to three corruptions: a message deleted, two swapped, an
    orphan result, a stray system message (plain, or one from inside Anthropic's list), an
    empty message, an extra assistant message, a thinking block stripped of its signature.
    ``reasoning`` (drawn when ``None``) adds Responses reasoning items."""
    with_reasoning = draw(st.booleans()) if reasoning is None else reasoning
    msgs = draw(valid_history(style, dup_ids=True, reasoning=with_reasoning))
    ops = ["delete", "swap", "orphan", "system", "list_system", "empty", "assist", "unsign"]
    ops += ["no_summary"]
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(ops))
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
        elif op == "list_system":
            msgs.insert(pos, anthropic_system("list system"))
        elif op == "no_summary":
            items = [i for i, m in enumerate(msgs) if m.wire.get("item") == "reasoning"]
            if items:
                i = items[min(pos, len(items) - 1)]
                msgs[i] = replace(msgs[i], wire={**msgs[i].wire, "missing_summary": True})
        elif op == "unsign":
            signed = [i for i, m in enumerate(msgs) if _signed(m)]
            if signed:
                i = signed[min(pos, len(signed) - 1)]
                msgs[i] = _unsigned(msgs[i])
        elif op == "empty":
            msgs.insert(pos, Message(draw(st.sampled_from([Role.USER, Role.ASSISTANT])), ()))
        else:
            msgs.insert(pos, assistant("extra"))
    return msgs


def _signed(m: Message) -> bool:
    return any(isinstance(p, ReasoningPart) and p.signature for p in m.parts)


def _unsigned(m: Message) -> Message:
    parts = tuple(
        ReasoningPart(text=p.text, extra=p.extra) if isinstance(p, ReasoningPart) else p
        for p in m.parts
    )
    return replace(m, parts=parts)
