from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConfigurationError
from synopsis.formats import decode, encode
from synopsis.messages import Message, ReasoningPart, Role, TextPart, ToolCallPart
from synopsis.validation import (
    ANTHROPIC,
    GEMINI,
    RESPONSES,
    check,
    repair,
    repair_messages,
    validate,
)
from tests.strategies import Style, any_history, assistant, user, valid_history

STYLES: list[Style] = ["tool", "user"]


def rules(problems: list[Any]) -> list[str]:
    return [p.rule for p in problems]


# ---------------------------------------------------------------- Anthropic system messages

U = {"role": "user", "content": "u"}
Y = {"role": "assistant", "content": "y"}
MID = {"role": "system", "content": "mid"}


def test_anthropic_system_inside_messages_is_reported() -> None:
    problems = validate([U, MID, Y], "anthropic", format="anthropic")
    assert [(p.index, p.rule) for p in problems] == [(1, "anthropic.system_position")]
    leading = validate([MID, U, Y], "anthropic", format="anthropic")
    assert [(p.index, p.rule) for p in leading] == [(0, "anthropic.system_position")]
    assert "top-level system" in leading[0].message


def test_anthropic_system_inside_messages_is_lifted_into_system() -> None:
    fixed = repair([U, MID, Y], "anthropic", format="anthropic")
    assert list(fixed) == [U, Y]
    assert fixed.system == "mid"
    assert [(f.index, f.action) for f in fixed.fixes] == [(1, "lifted system message")]
    assert validate(list(fixed), "anthropic", format="anthropic", system=fixed.system) == []
    again = repair(list(fixed), "anthropic", format="anthropic", system=fixed.system)
    assert again.fixes == ()
    assert again.system == "mid"


def test_lifted_system_text_is_merged_into_the_existing_system() -> None:
    fixed = repair([U, MID, Y], "anthropic", format="anthropic", system="top")
    assert list(fixed) == [U, Y]
    assert fixed.system == "top\n\nmid"
    cached = [{"type": "text", "text": "top", "cache_control": {"type": "ephemeral"}}]
    fixed = repair([MID, U, Y], "anthropic", format="anthropic", system=cached)
    assert fixed.system == [*cached, {"type": "text", "text": "mid"}]
    assert list(fixed) == [U, Y]


def test_mid_conversation_system_is_a_profile_option() -> None:
    opus48 = dataclasses.replace(ANTHROPIC, mid_system=True)
    assert validate([U, MID, Y], opus48, format="anthropic") == []
    kept = repair([U, MID, Y], opus48, format="anthropic")
    assert (list(kept), kept.fixes, kept.system) == ([U, MID, Y], (), None)
    # only right after a user turn
    late = validate([U, Y, MID, U], opus48, format="anthropic")
    assert [(p.index, p.rule) for p in late] == [(2, "anthropic.system_position")]
    fixed = repair([U, Y, MID, U], opus48, format="anthropic")
    assert (list(fixed), fixed.system) == ([U, Y, U], "mid")


def test_systems_built_by_hand_merge_with_a_lifted_one_into_one_system() -> None:
    # Two leading system messages built in code, then a history decoded from Anthropic whose
    # list holds a system message: all three become the one top-level system prompt.
    own = [Message(Role.SYSTEM, (TextPart(t),)) for t in ("rules", "style")]
    msgs = [*own, *decode([U, MID, Y], "anthropic").messages]
    fixed = repair_messages(msgs, ANTHROPIC)
    assert [(f.index, f.action, f.detail) for f in fixed.fixes] == [
        (3, "lifted system message", "moved into the top-level system prompt"),
        (1, "merged system message", "into the top-level system prompt"),
    ]
    assert check(fixed.messages, ANTHROPIC) == []
    wire = encode(fixed.messages, "anthropic")
    assert wire.system == "rules\n\nstyle\n\nmid"
    assert wire.messages == [U, Y]


@given(any_history("user"), st.booleans())
def test_anthropic_repair_leaves_no_system_in_the_list_unless_allowed(msgs, mid) -> None:
    profile = dataclasses.replace(ANTHROPIC, mid_system=mid)
    wire = encode(repair_messages(msgs, profile).messages, "anthropic").messages
    roles = [m["role"] for m in wire]
    for k, role in enumerate(roles):
        if role == "system":
            assert mid
            assert k > 0
            assert roles[k - 1] == "user"


# ---------------------------------------------------------------- Responses reasoning (R3)

RS = {"type": "reasoning", "id": "rs_1", "summary": []}
FC = {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}
FCO = {"type": "function_call_output", "call_id": "a", "output": "ok"}
MSG = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "d"}]}


def test_dropping_a_call_drops_its_reasoning_item() -> None:
    fixed = repair([U, RS, FC, U], "responses", format="responses", dangling="drop")
    assert list(fixed) == [U, U]
    assert [(f.index, f.action) for f in fixed.fixes] == [
        (2, "dropped dangling call"),
        (2, "dropped message"),
        (1, "dropped reasoning item"),
    ]
    assert validate(list(fixed), "responses", format="responses") == []
    # the next response's reasoning item is not what this one produced
    rs2 = {**RS, "id": "rs_2"}
    fixed = repair([U, RS, FC, rs2, MSG], "responses", format="responses", dangling="drop")
    assert list(fixed) == [U, rs2, MSG]


def test_answering_a_call_keeps_its_reasoning_item() -> None:
    fixed = repair([U, RS, FC, U], "responses", format="responses")
    assert list(fixed)[:3] == [U, RS, FC]
    assert validate(list(fixed), "responses", format="responses") == []


def test_reasoning_stranded_in_the_input_is_reported_not_dropped() -> None:
    fixed = repair([U, RS, U], "responses", format="responses")
    assert (list(fixed), fixed.fixes) == ([U, RS, U], ())
    assert rules(validate(list(fixed), "responses", format="responses")) == ["responses.R3"]


@given(valid_history("tool", allow_pending=False, reasoning=True), st.data())
def test_dropping_calls_never_strands_a_reasoning_item(msgs, data) -> None:
    results = [i for i, m in enumerate(msgs) if m.role is Role.TOOL]
    if results:
        del msgs[data.draw(st.sampled_from(results))]
    fixed = repair_messages(msgs, RESPONSES, dangling="drop")
    assert check(fixed.messages, RESPONSES) == []
    # a reasoning item right before another one lost what it produced
    kinds = [m.wire.get("item") for m in fixed.messages]
    assert ("reasoning", "reasoning") not in itertools.pairwise(kinds)


@given(
    st.sampled_from(STYLES).flatmap(lambda s: any_history(s, reasoning=True)),
    st.sampled_from(["answer", "drop"]),
)
def test_repair_adds_no_stranded_reasoning(msgs, dangling) -> None:
    before = rules(check(msgs, RESPONSES)).count("responses.R3")
    fixed = repair_messages(msgs, RESPONSES, dangling=dangling)
    assert rules(check(fixed.messages, RESPONSES)).count("responses.R3") <= before


@given(valid_history("tool", reasoning=True))
def test_valid_reasoning_histories_pass_responses_with_every_option(msgs) -> None:
    strict = dataclasses.replace(RESPONSES, store=False, reasoning_required=True)
    assert check(msgs, strict) == []


# ---------------------------------------------------------------- dangling policy


def test_unknown_dangling_policy_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"'answer'.*'drop'"):
        repair([U, RS, FC, U], "responses", format="responses", dangling="bogus")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="dangling='bogus'"):
        repair_messages([user("go")], RESPONSES, dangling="bogus")  # type: ignore[arg-type]


# ---------------------------------------------------------------- R4, R5, R6

NEWER = dataclasses.replace(RESPONSES, reasoning_required=True)


def test_output_message_without_its_reasoning_is_r4_when_the_model_needs_it() -> None:
    items = [U, RS, FC, FCO, MSG]
    problems = validate(items, NEWER, format="responses")
    assert [(p.index, p.rule) for p in problems] == [(4, "responses.R4")]
    assert validate(items, "responses", format="responses") == []


def test_r4_stays_narrow() -> None:
    rs2 = {**RS, "id": "rs_2"}
    fine = [
        [U, RS, MSG],  # its own reasoning right before it
        [U, RS, FC, MSG, FCO],  # the same response produced both
        [U, MSG, U, MSG],  # no reasoning model in sight
        [U, RS, MSG, U, MSG],  # a turn without reasoning at all
        [U, RS, FC, FCO, rs2, MSG],
    ]
    for items in fine:
        assert validate(items, NEWER, format="responses") == [], items


def test_r4_accepts_reasoning_that_leads_the_same_message() -> None:
    # The converter sends such a message as its reasoning item, then its message item.
    head = list(decode([U, RS, FC, FCO], "responses").messages)
    think, text = ReasoningPart(encrypted="e2"), TextPart("done")
    own = {"format": "responses"}
    before = Message(Role.ASSISTANT, (think, text), wire=own)
    assert check([*head, before], NEWER) == []
    sent = encode([*head, before], "responses").messages
    assert sent[-2:] == [
        {"type": "reasoning", "summary": [], "encrypted_content": "e2"},
        {"role": "assistant", "content": "done"},
    ]
    assert validate(sent, NEWER, format="responses") == []
    after = Message(Role.ASSISTANT, (text, think), wire=own)
    assert [(p.index, p.rule) for p in check([*head, after], NEWER)] == [(4, "responses.R4")]


def test_store_false_needs_items_in_full() -> None:
    no_store = dataclasses.replace(RESPONSES, store=False)
    ref = {"type": "item_reference", "id": "msg_1"}
    sealed = {**RS, "encrypted_content": "gAAA"}
    items = [U, ref, RS, FC, FCO, sealed, MSG]
    problems = validate(items, no_store, format="responses")
    assert [(p.index, p.rule) for p in problems] == [(1, "responses.R5"), (2, "responses.R5")]
    assert "encrypted_content" in problems[1].message
    assert validate(items, "responses", format="responses") == []


def missing_summary() -> Message:
    wire = {"format": "responses", "item": "reasoning", "missing_summary": True}
    return Message(Role.ASSISTANT, (ReasoningPart(encrypted="e"),), id="rs_9", wire=wire)


def test_reasoning_without_summary_is_r6_and_repair_restores_it() -> None:
    msgs = [user("go"), missing_summary(), assistant("done")]
    problems = check(msgs, RESPONSES)
    assert [(p.index, p.rule) for p in problems] == [(1, "responses.R6")]
    fixed = repair_messages(msgs, RESPONSES)
    assert [(f.index, f.action) for f in fixed.fixes] == [(1, "added empty summary")]
    assert check(fixed.messages, RESPONSES) == []
    assert encode(fixed.messages, "responses").messages[1]["summary"] == []
    assert repair_messages(fixed.messages, RESPONSES).fixes == ()


# ---------------------------------------------------------------- Anthropic A5, A9


def test_leading_assistant_is_conservative_a5() -> None:
    problems = validate([Y, U], "anthropic", format="anthropic")
    assert rules(problems) == ["anthropic.A5"]
    assert problems[0].conservative


def thinking(block: dict[str, Any]) -> list[dict[str, Any]]:
    body = [block, {"type": "text", "text": "x"}]
    return [U, {"role": "assistant", "content": body}, U]


def test_thinking_without_signature_is_a9() -> None:
    problems = validate(thinking({"type": "thinking", "thinking": "hmm"}), "anthropic")
    assert [(p.index, p.part, p.rule) for p in problems] == [(1, 0, "anthropic.A9")]
    signed = {"type": "thinking", "thinking": "hmm", "signature": "EqQB"}
    assert validate(thinking(signed), "anthropic") == []
    redacted = {"type": "redacted_thinking", "data": "EmwK"}
    assert validate(thinking(redacted), "anthropic") == []


def test_reasoning_from_another_provider_is_not_a9() -> None:
    # the Anthropic converter drops it, so it never reaches the API
    foreign = Message(
        Role.ASSISTANT,
        (ReasoningPart("plan"), TextPart("x")),
        wire={"format": "responses", "item": "message"},
    )
    assert check([user("go"), foreign, user("ok")], ANTHROPIC) == []


# ---------------------------------------------------------------- Gemini G3, G4, G5


def g_user(text: str = "go") -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def g_call(*names: str, signed: bool = True) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"functionCall": {"name": n, "args": {}}} for n in names]
    if signed:
        parts[0]["thoughtSignature"] = "c2ln"
    return {"role": "model", "parts": parts}


def g_response(*names: str) -> dict[str, Any]:
    parts = [{"functionResponse": {"name": n, "response": {"output": "ok"}}} for n in names]
    return {"role": "user", "parts": parts}


G_TEXT = {"role": "model", "parts": [{"text": "done"}]}


def test_extra_function_response_is_g3() -> None:
    problems = validate([g_user(), g_call("f"), g_response("f", "f"), G_TEXT, g_user()], "gemini")
    assert [(p.index, p.part, p.rule) for p in problems] == [(2, 1, "gemini.G3")]
    # a response with no call turn before it at all is still G2
    stray = validate([g_user(), g_response("f"), G_TEXT, g_user()], "gemini")
    assert rules(stray) == ["gemini.G2"]


def test_history_ending_on_a_model_turn_is_conservative_g5() -> None:
    problems = validate([g_user(), G_TEXT], "gemini")
    assert [(p.index, p.rule, p.conservative) for p in problems] == [(1, "gemini.G5", True)]
    assert validate([g_user(), g_call("f")], "gemini") == []  # an agent mid-run
    assert validate([g_user(), g_call("f"), g_response("f")], "gemini") == []
    assert validate([U, Y], "anthropic") == []  # a final assistant message is a prefill there


GEMINI3 = dataclasses.replace(GEMINI, thought_signatures=True)


def test_calls_of_the_current_turn_need_their_thought_signature() -> None:
    signed = [g_user(), g_call("f", "g"), g_response("f", "g"), g_call("h")]
    assert validate(signed, GEMINI3) == []
    unsigned = [g_user(), g_call("f"), g_response("f"), g_call("h", signed=False)]
    problems = validate(unsigned, GEMINI3)
    assert [(p.index, p.part, p.rule) for p in problems] == [(3, 0, "gemini.G4")]
    assert validate(unsigned, "gemini") == []


def test_only_the_current_turn_needs_thought_signatures() -> None:
    old = [g_user(), g_call("f", signed=False), g_response("f"), G_TEXT, g_user("next")]
    assert validate([*old, g_call("g")], GEMINI3) == []
    assert rules(validate([*old, g_call("g", signed=False)], GEMINI3)) == ["gemini.G4"]


def test_calls_from_another_format_carry_no_thought_signature() -> None:
    call = Message(Role.ASSISTANT, (ToolCallPart("a", "f", {}, extra={"thoughtSignature": "x"}),))
    assert rules(check([user("go"), call], GEMINI3)) == ["gemini.G4"]
