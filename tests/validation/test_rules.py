from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synopsis.errors import ConfigurationError, ConversationError
from synopsis.formats import decode
from synopsis.messages import (
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.pairing import pair_tool_calls
from synopsis.validation import (
    ANTHROPIC,
    GEMINI,
    NOT_COMPLETED,
    OPENAI,
    OPENAI_STRICT,
    PROFILES,
    RESPONSES,
    check,
    get_profile,
    repair,
    repair_messages,
    validate,
)
from tests.strategies import any_history, assistant, user, valid_history

RESULT_ROLES: list[Literal["tool", "user"]] = ["tool", "user"]

TRANSCRIPTS = sorted((Path(__file__).parents[2] / "examples" / "transcripts").glob("*.jsonl"))


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def call(*ids: str, text: str | None = None) -> Message:
    parts: list[TextPart | ToolCallPart] = [TextPart(text)] if text else []
    parts += [ToolCallPart(i, "bash", "{}") for i in ids]
    return Message(Role.ASSISTANT, tuple(parts))


def tool(cid: str, content: str = "ok") -> Message:
    return Message(Role.TOOL, (ToolResultPart(cid, content),))


def rules(problems: list[Any]) -> list[str]:
    return [p.rule for p in problems]


# ---------------------------------------------------------------- pairing


def test_reused_ids_pair_with_nearest_open_call() -> None:
    msgs = [user("go"), call("a"), tool("a", "first"), call("a"), tool("a", "second")]
    pairing = pair_tool_calls(msgs)
    assert pairing.call_of == {(2, 0): (1, 0), (4, 0): (3, 0)}
    assert pairing.orphans == ()
    assert pairing.open_calls == ()


def test_duplicate_ids_in_one_turn_pair_by_position() -> None:
    msgs = [user("go"), call("a", "a"), tool("a", "1"), tool("a", "2")]
    pairing = pair_tool_calls(msgs)
    assert pairing.call_of == {(2, 0): (1, 0), (3, 0): (1, 1)}


def test_result_before_its_call_is_an_orphan() -> None:
    msgs = [user("go"), tool("a"), call("a")]
    pairing = pair_tool_calls(msgs)
    assert pairing.orphans == ((1, 0),)
    assert pairing.open_calls == ((2, 0),)


# ---------------------------------------------------------------- rules, one by one


def test_real_transcripts_are_valid_openai() -> None:
    assert TRANSCRIPTS, "bundled transcripts missing"
    for path in TRANSCRIPTS:
        assert validate(load(path), "openai") == [], path.name


def test_trailing_unfinished_call_is_valid() -> None:
    # openhands-4593 ends with a call that never got its result.
    items = load(next(p for p in TRANSCRIPTS if "4593" in p.name))
    assert items[-1]["tool_calls"]
    for name in PROFILES:
        assert not [p for p in validate(items, name) if p.rule.endswith(("C2", "A1", "R1"))]


def test_partial_results_of_trailing_parallel_call_are_valid() -> None:
    msgs = [user("go"), call("a", "b"), tool("a")]
    assert check(msgs, OPENAI) == []


def test_dangling_call_in_the_middle_is_c2() -> None:
    msgs = [user("go"), call("a", "b"), tool("a"), assistant("done"), user("more")]
    problems = check(msgs, OPENAI)
    assert rules(problems) == ["openai.C2"]
    assert problems[0].index == 1
    assert problems[0].part == 1
    assert "'b'" in problems[0].message


def test_orphan_result_is_c1_r2_a2_g2() -> None:
    msgs = [user("go"), tool("zzz"), assistant("ok")]
    expected = {
        "openai": "openai.C1",
        "responses": "responses.R2",
        "anthropic": "anthropic.A2",
        "gemini": "gemini.G2",
    }
    for prof in (OPENAI, RESPONSES, ANTHROPIC, GEMINI):
        assert expected[prof.family] in rules(check(msgs, prof))


def test_result_after_a_user_turn_is_misplaced_for_chat_but_fine_for_responses() -> None:
    msgs = [user("go"), call("a"), user("wait"), tool("a"), assistant("ok")]
    assert "openai.C1" in rules(check(msgs, OPENAI))
    assert check(msgs, RESPONSES) == []


def test_user_message_with_results_and_text_ends_the_openai_answer_block() -> None:
    # The converter sends result 'a' as a tool message and the note as a user message, so the
    # tool message for 'b' after it no longer follows the call.
    answer_and_note = Message(Role.USER, (ToolResultPart("a", "r"), TextPart("note")))
    msgs = [user("go"), call("a", "b"), answer_and_note, tool("b"), assistant("ok")]
    problems = check(msgs, OPENAI)
    assert [(p.index, p.part, p.rule) for p in problems] == [(3, 0, "openai.C1")]
    assert problems[0].message == (
        "tool result for 'b' is not in the turn right after its call (message 1)"
    )
    only_results = Message(Role.USER, (ToolResultPart("a", "r"),))
    assert check([user("go"), call("a", "b"), only_results, tool("b")], OPENAI) == []


def test_anthropic_merges_user_side_but_wants_results_first() -> None:
    ok = [user("go"), call("a"), tool("a"), user("and then?")]
    assert check(ok, ANTHROPIC) == []
    late = [user("go"), call("a"), user("note"), tool("a"), assistant("x")]
    assert rules(check(late, ANTHROPIC)) == ["anthropic.A3"]
    mixed = [
        user("go"),
        call("a"),
        Message(Role.USER, (TextPart("first"), ToolResultPart("a", "r"))),
    ]
    assert rules(check(mixed, ANTHROPIC)) == ["anthropic.A3"]


def test_gemini_needs_all_responses_in_one_turn() -> None:
    split = [
        user("go"),
        call("a", "b"),
        Message(Role.USER, (ToolResultPart("a", "1"),)),
        Message(Role.USER, (ToolResultPart("b", "2"),)),
        assistant("x"),
    ]
    assert "gemini.G2" in rules(check(split, GEMINI))
    assert check(split, ANTHROPIC) == []  # the API merges the two user turns


def test_gemini_call_turn_must_follow_user_or_response() -> None:
    msgs = [user("go"), assistant("thinking aloud"), call("a"), tool("a")]
    assert rules(check(msgs, GEMINI)) == ["gemini.G1"]
    assert rules(check([call("a"), tool("a")], GEMINI)) == ["gemini.G5", "gemini.G1"]


def test_duplicate_id_in_one_turn_is_c3() -> None:
    msgs = [user("go"), call("a", "a"), tool("a"), tool("a")]
    assert rules(check(msgs, OPENAI)) == ["openai.C3"]
    assert rules(check(msgs, ANTHROPIC)) == ["anthropic.duplicate_id"]


def test_empty_tool_calls_is_conservative_c4() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x", "tool_calls": []},
    ]
    problems = validate(items, "openai")
    assert rules(problems) == ["openai.C4"]
    assert problems[0].conservative


def test_system_position_per_profile() -> None:
    late = [user("go"), assistant("a"), Message(Role.SYSTEM, (TextPart("s"),)), user("b")]
    assert check(late, OPENAI) == []
    assert rules(check(late, OPENAI_STRICT)) == ["openai-strict.system_position"]
    assert rules(check(late, ANTHROPIC)) == ["anthropic.system_position"]
    after_user = [user("go"), Message(Role.SYSTEM, (TextPart("s"),)), assistant("a")]
    assert rules(check(after_user, ANTHROPIC)) == ["anthropic.system_position"]
    claude48 = dataclasses.replace(ANTHROPIC, mid_system=True)
    assert check(after_user, claude48) == []
    assert rules(check(late, claude48)) == ["anthropic.system_position"]


def test_strict_profile_rejects_developer_and_non_alternation() -> None:
    msgs = [
        Message(Role.DEVELOPER, (TextPart("d"),)),
        user("a"),
        user("b"),
        assistant("c"),
        assistant("d"),
    ]
    got = rules(check(msgs, OPENAI_STRICT))
    assert got == [
        "openai-strict.developer_role",
        "openai-strict.alternation",
        "openai-strict.alternation",
    ]
    assert rules(check([assistant("hi"), user("x")], OPENAI_STRICT)) == ["openai-strict.first_user"]


def test_tool_then_user_is_not_an_alternation_error() -> None:
    msgs = [user("go"), call("a"), tool("a"), user("interrupt")]
    assert check(msgs, OPENAI_STRICT) == []


def test_anthropic_empty_content_rules() -> None:
    msgs = [
        user("go"),
        Message(Role.ASSISTANT, ()),
        user("x"),
        Message(Role.ASSISTANT, (TextPart("  "), TextPart("y"))),
        user("z"),
        Message(Role.ASSISTANT, ()),
    ]
    got = check(msgs, ANTHROPIC)
    assert [(p.index, p.rule) for p in got] == [(1, "anthropic.A4"), (3, "anthropic.empty_text")]


def test_thinking_rules() -> None:
    think = ReasoningPart("hmm", signature="s")
    bad_first = Message(Role.ASSISTANT, (TextPart("a"), think, ToolCallPart("a", "bash", {})))
    ends_thinking = Message(Role.ASSISTANT, (think,))
    msgs = [user("go"), bad_first, tool("a"), ends_thinking, user("x")]
    assert rules(check(msgs, ANTHROPIC)) == ["anthropic.A6", "anthropic.A8"]
    final = [user("go"), Message(Role.ASSISTANT, (think, TextPart("x")))]
    assert check(final, ANTHROPIC) == []
    off = dataclasses.replace(ANTHROPIC, thinking=False)
    assert rules(check(final, off)) == ["anthropic.A7"]
    on = dataclasses.replace(ANTHROPIC, thinking=True)
    loop = [user("go"), call("a", text="no thinking"), tool("a")]
    assert rules(check(loop, on)) == ["anthropic.A6"]
    assert check([user("go"), assistant("done"), user("next")], on) == []


def test_thinking_tool_loop_that_opens_the_history_must_start_with_thinking() -> None:
    # No user turn before the loop (a history cut to its last tool loop): the scan runs to
    # message 0, and that call turn is where the loop starts.
    on = dataclasses.replace(ANTHROPIC, thinking=True)
    msgs = [call("a", text="no thinking"), tool("a"), assistant("done")]
    problems = check(msgs, on)
    assert [(p.index, p.part, p.rule) for p in problems] == [
        (0, None, "anthropic.A5"),
        (0, 0, "anthropic.A6"),
    ]
    assert problems[1].message == (
        "When `thinking` is enabled, a final `assistant` message must start with a thinking block."
    )
    think = ReasoningPart("plan", signature="s")
    thought = Message(Role.ASSISTANT, (think, ToolCallPart("a", "bash", "{}")))
    assert rules(check([thought, tool("a"), assistant("done")], on)) == ["anthropic.A5"]


def test_reasoning_item_needs_its_following_item() -> None:
    reasoning = Message(Role.ASSISTANT, (ReasoningPart(encrypted="e"),))
    assert check([user("go"), reasoning, call("a"), tool("a")], RESPONSES) == []
    assert rules(check([user("go"), reasoning, user("x")], RESPONSES)) == ["responses.R3"]
    assert rules(check([user("go"), reasoning], RESPONSES)) == ["responses.R3"]


def test_model_shape_problems() -> None:
    msgs = [
        Message(Role.USER, (ToolCallPart("a", "x", "{}"),)),
        Message(Role.ASSISTANT, (ToolResultPart("a", "r"),)),
        Message(Role.TOOL, (TextPart("loose"),)),
    ]
    got = rules(check(msgs, OPENAI))
    assert {"tool.call_role", "tool.result_role", "tool.tool_message"} <= set(got)


def test_empty_and_system_only_histories() -> None:
    assert rules(check([], OPENAI)) == ["history.empty"]
    only_system = [Message(Role.SYSTEM, (TextPart("s"),))]
    assert check(only_system, OPENAI) == []
    assert rules(check(only_system, ANTHROPIC)) == ["history.no_messages"]


def test_problem_str_names_place_and_rule() -> None:
    problem = check([user("go"), tool("zzz")], OPENAI)[0]
    assert str(problem) == (
        "message 1 part 0: tool result for 'zzz' answers no earlier tool call [openai.C1]"
    )
    assert str(check([], OPENAI)[0]).startswith("history: ")


def test_unknown_profile_and_bad_input() -> None:
    with pytest.raises(ConfigurationError, match="unknown provider profile"):
        get_profile("bedrock")
    with pytest.raises(ConversationError) as info:
        validate([{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}])
    assert info.value.index == 1
    assert info.value.rule == "message.role"
    with pytest.raises(ConversationError):
        validate("not a history")


# ---------------------------------------------------------------- repair


def test_repair_answers_dangling_call_with_synthetic_result() -> None:
    msgs = [user("go"), call("a", "b"), tool("a"), assistant("done"), user("more")]
    fixed = repair_messages(msgs, OPENAI)
    assert check(fixed.messages, OPENAI) == []
    synthetic = fixed.messages[3].parts[0]
    assert isinstance(synthetic, ToolResultPart)
    assert synthetic.call_id == "b"
    assert synthetic.is_error
    assert synthetic.content == NOT_COMPLETED
    assert [f.action for f in fixed.fixes] == ["answered dangling call"]


def test_repair_can_drop_dangling_call_instead() -> None:
    msgs = [user("go"), call("a", "b"), tool("a"), assistant("done"), user("more")]
    fixed = repair_messages(msgs, OPENAI, dangling="drop")
    assert check(fixed.messages, OPENAI) == []
    assert [c.call_id for c in fixed.messages[1].tool_calls] == ["a"]
    lone = [user("go"), call("b"), assistant("done"), user("more")]
    assert [m.role for m in repair_messages(lone, OPENAI, dangling="drop").messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
    ]


def test_repair_leaves_a_trailing_unfinished_call_alone() -> None:
    # Only the call in the middle is settled; the last one may still be running.
    msgs = [user("go"), call("a", text="checking"), assistant("hm"), user("more"), call("b")]
    for dangling in ("answer", "drop"):
        fixed = repair_messages(msgs, OPENAI, dangling=dangling)
        assert [(f.index, f.action) for f in fixed.fixes] == [
            (1, "answered dangling call" if dangling == "answer" else "dropped dangling call")
        ]
        assert fixed.messages[-1] == msgs[-1]
        assert check(fixed.messages, OPENAI) == []


def test_repair_in_user_style_puts_result_first_in_existing_turn() -> None:
    msgs = [
        user("go"),
        call("a", "b"),
        Message(Role.USER, (ToolResultPart("a", "r"), TextPart("note"))),
        assistant("x"),
    ]
    fixed = repair_messages(msgs, ANTHROPIC)
    assert check(fixed.messages, ANTHROPIC) == []
    parts = fixed.messages[2].parts
    assert [type(p).__name__ for p in parts] == ["ToolResultPart", "ToolResultPart", "TextPart"]
    no_turn = [user("go"), call("a"), assistant("x"), user("y")]
    fixed = repair_messages(no_turn, GEMINI)
    assert fixed.messages[2].role is Role.USER
    assert check(fixed.messages, GEMINI) == []


def test_repair_moves_misplaced_result_next_to_its_call() -> None:
    msgs = [user("go"), call("a"), user("wait"), tool("a", "late"), assistant("ok")]
    fixed = repair_messages(msgs, OPENAI)
    assert check(fixed.messages, OPENAI) == []
    assert [m.role for m in fixed.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.USER,
        Role.ASSISTANT,
    ]
    assert fixed.fixes[0].index == 3
    assert fixed.fixes[0].action == "moved result"


def test_repair_drops_orphans_and_empties() -> None:
    msgs = [user("go"), tool("zzz"), Message(Role.ASSISTANT, ()), assistant("ok")]
    fixed = repair_messages(msgs, OPENAI)
    assert [m.text for m in fixed.messages] == ["go", "ok"]
    assert {f.action for f in fixed.fixes} == {"dropped orphaned result", "dropped empty message"}


def test_repair_drops_blank_text_blocks_where_content_must_be_non_empty() -> None:
    items = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": " \n"}],
        },
        {"role": "assistant", "content": "hello"},
    ]
    problems = validate(items, "anthropic", format="anthropic")
    assert [(p.index, p.part, p.rule) for p in problems] == [(0, 1, "anthropic.empty_text")]
    fixed = repair(items, "anthropic", format="anthropic")
    assert list(fixed) == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}, items[1]]
    assert [str(f) for f in fixed.fixes] == [
        "message 0: dropped blank text: empty text block removed"
    ]
    assert validate(list(fixed), "anthropic", format="anthropic") == []
    assert repair(items, "openai", format="anthropic").fixes == ()


def test_gemini_takes_blank_text_and_refuses_only_empty_text() -> None:
    """Gemini answers "empty text parameter" to ``""`` alone; a single space is what clients
    send in its place. Anthropic refuses whitespace too (see the test above)."""
    blank = [
        {"role": "user", "parts": [{"text": " "}]},
        {"role": "model", "parts": [{"text": "\n"}]},
    ]
    assert validate([*blank, {"role": "user", "parts": [{"text": "go"}]}], "gemini") == []
    empty = [
        {"role": "user", "parts": [{"text": "hi"}, {"text": ""}]},
        {"role": "model", "parts": [{"text": "ok"}]},
        {"role": "user", "parts": [{"text": "go"}]},
    ]
    problems = validate(empty, "gemini", format="gemini")
    assert [(p.index, p.part, p.rule) for p in problems] == [(0, 1, "gemini.empty_text")]
    assert "empty text parameter" in problems[0].message
    fixed = repair(empty, "gemini", format="gemini")
    assert list(fixed) == [{"role": "user", "parts": [{"text": "hi"}]}, *empty[1:]]
    assert validate(list(fixed), "gemini", format="gemini") == []


def test_dropping_a_call_drops_the_thinking_it_leaves_alone() -> None:
    thought = Message(
        Role.ASSISTANT, (ReasoningPart("plan", signature="s"), ToolCallPart("a", "bash", "{}"))
    )
    msgs = [user("go"), thought, user("never mind"), assistant("ok")]
    fixed = repair_messages(msgs, ANTHROPIC, dangling="drop")
    assert [(f.index, f.action, f.detail) for f in fixed.fixes] == [
        (1, "dropped dangling call", "call id 'a'"),
        (1, "dropped message", "only thinking was left, with no turn"),
    ]
    assert [m.text for m in fixed.messages] == ["go", "never mind", "ok"]
    assert check(fixed.messages, ANTHROPIC) == []


def test_repair_never_merges_or_edits_thinking() -> None:
    think = ReasoningPart("deep", signature="sig-1")
    msgs = [user("go"), assistant("a"), Message(Role.ASSISTANT, (think, TextPart("b")))]
    fixed = repair_messages(msgs, OPENAI_STRICT)
    assert fixed.messages[2].parts[0] is think
    assert "openai-strict.alternation" in rules(check(fixed.messages, OPENAI_STRICT))


def test_repair_strict_lifts_and_merges_systems() -> None:
    msgs = [
        Message(Role.SYSTEM, (TextPart("one"),)),
        user("go"),
        Message(Role.DEVELOPER, (TextPart("two"),)),
        user("again"),
        assistant("x"),
    ]
    fixed = repair_messages(msgs, OPENAI_STRICT)
    assert check(fixed.messages, OPENAI_STRICT) == []
    assert fixed.messages[0] == Message(Role.SYSTEM, (TextPart("one\n\ntwo"),))
    assert fixed.messages[1].text == "go\n\nagain"


def test_repair_strict_merges_systems_that_hold_more_than_text() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}}
    second = [{"type": "text", "text": "two"}, image]
    items = [
        {"role": "system", "content": "one"},
        {"role": "system", "content": second},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "x"},
    ]
    assert [(p.index, p.rule) for p in validate(items, "openai-strict")] == [
        (1, "openai-strict.system_position")
    ]
    fixed = repair(items, "openai-strict")
    assert [(f.index, f.action) for f in fixed.fixes] == [(1, "merged system message")]
    # the parts are kept as they are, in order: joining the text would lose the image
    merged = {"role": "system", "content": [{"type": "text", "text": "one"}, *second]}
    assert list(fixed) == [merged, *items[2:]]
    assert validate(list(fixed), "openai-strict") == []


def test_repair_strict_merges_user_turns_that_hold_more_than_text() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    items = [
        {"role": "user", "content": "look"},
        {"role": "user", "content": [image]},
        {"role": "assistant", "content": "a cat"},
    ]
    assert rules(validate(items, "openai-strict")) == ["openai-strict.alternation"]
    fixed = repair(items, "openai-strict")
    assert [(f.index, f.action, f.detail) for f in fixed.fixes] == [
        (1, "merged message", "into the user message before")
    ]
    merged = {"role": "user", "content": [{"type": "text", "text": "look"}, image]}
    assert list(fixed) == [merged, items[2]]
    assert validate(list(fixed), "openai-strict") == []


def test_repair_keeps_a_function_response_turn_apart_from_user_text() -> None:
    # Gemini: same-role neighbours merge, but a function response turn stays its own turn.
    results = Message(Role.USER, (ToolResultPart("a", "ok"),))
    msgs = [user("go"), call("a"), results, user("more"), assistant("x"), user("y"), user("z")]
    fixed = repair_messages(msgs, GEMINI)
    assert [(f.index, f.action, f.detail) for f in fixed.fixes] == [
        (6, "merged message", "into the user message before")
    ]
    assert fixed.messages[:5] == tuple(msgs[:5])
    assert fixed.messages[5] == user("y\n\nz")
    assert check(fixed.messages, GEMINI) == []


def test_repair_keeps_allowed_mid_system() -> None:
    msgs = [user("go"), Message(Role.SYSTEM, (TextPart("s"),)), assistant("a")]
    claude48 = dataclasses.replace(ANTHROPIC, mid_system=True)
    assert repair_messages(msgs, claude48).fixes == ()
    assert repair_messages(msgs, OPENAI).fixes == ()


def test_repair_public_api_keeps_format_and_reports() -> None:
    items = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "ghost", "content": "stray"},
        {"role": "assistant", "content": "ok"},
    ]
    fixed = repair(items, "openai")
    assert isinstance(fixed, list)
    assert fixed == [items[0], items[2]]
    assert len(fixed.fixes) == 1
    assert "orphaned" in str(fixed.fixes[0])
    assert "message 1" in str(fixed.fixes[0])


def test_repair_anthropic_returns_system_separately() -> None:
    body = {
        "system": "be brief",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    fixed = repair(body, "anthropic")
    assert fixed.system == "be brief"
    assert fixed == body["messages"]


# ---------------------------------------------------------------- properties


@given(valid_history("tool"), st.sampled_from(list(PROFILES)))
def test_valid_tool_style_histories_pass_every_chat_profile(msgs, name) -> None:
    profile = get_profile(name)
    got = [p for p in check(msgs, profile) if not p.rule.endswith("alternation")]
    # A system prompt makes openai-strict happy too; nothing else may be reported.
    assert got == [] or all(p.rule.endswith(("first_user", "G1")) for p in got)


@given(valid_history("user"), st.sampled_from(["anthropic", "gemini", "responses"]))
def test_valid_user_style_histories_pass(msgs, name) -> None:
    assert check(msgs, get_profile(name)) == []


UNREPAIRABLE = (
    "first_user",
    "last_user",
    "A5",
    "A9",
    "G4",
    "G5",
    "R4",
    "R5",
    "A6",
    "A7",
    "A8",
    "R3",
    "C3",
    "duplicate_id",
    "G1",
    "alternation",
    "no_messages",
    "empty",
    "tool_message",
    "call_role",
    "result_role",
    "A3",
)


# Every profile, and the variants whose options switch on model-dependent rules.
VARIANTS = [
    *PROFILES.values(),
    dataclasses.replace(ANTHROPIC, mid_system=True, thinking=True),
    dataclasses.replace(ANTHROPIC, thinking=False),
    dataclasses.replace(RESPONSES, store=False, reasoning_required=True),
    dataclasses.replace(GEMINI, thought_signatures=True),
]


# Two result roles, nine variants and two ways to treat a dangling call make 36 cases: four
# times the profile's count leaves each of them a few examples.
@settings(max_examples=4 * settings().max_examples)
@given(
    st.sampled_from(RESULT_ROLES).flatmap(any_history),
    st.sampled_from(VARIANTS),
    st.sampled_from(["answer", "drop"]),
)
def test_repair_leaves_only_what_needs_a_guess_and_is_idempotent(msgs, profile, dangling) -> None:
    once = repair_messages(msgs, profile, dangling=dangling)
    left = check(once.messages, profile)
    assert all(p.rule.split(".")[-1] in UNREPAIRABLE for p in left), left
    # no pairing problem survives repair
    assert not [p for p in left if p.rule.split(".")[-1] in ("C1", "C2", "A1", "A2", "R1", "R2")]
    twice = repair_messages(once.messages, profile, dangling=dangling)
    assert twice.messages == once.messages
    assert twice.fixes == ()


@given(valid_history("tool", allow_pending=False), st.data())
def test_deleting_a_result_is_always_reported(msgs, data) -> None:
    tools = [i for i, m in enumerate(msgs) if m.role is Role.TOOL]
    if not tools:
        return
    victim = data.draw(st.sampled_from(tools))
    broken = msgs[:victim] + msgs[victim + 1 :]
    assert "openai.C2" in rules(check(broken, OPENAI))


@given(valid_history("tool"))
def test_validate_does_not_mutate_input(msgs) -> None:
    snapshot = list(msgs)
    check(msgs, OPENAI_STRICT)
    repair_messages(msgs, OPENAI_STRICT)
    assert msgs == snapshot


def test_calls_dropped_by_repair_leave_no_empty_tool_calls_to_report() -> None:
    items = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "trying",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "user", "content": "never mind"},
    ]
    fixed = repair(items, "openai", dangling="drop")
    assert "tool_calls" not in fixed[1]
    assert validate(fixed, "openai") == []
    model = decode(items, "openai").messages
    dropped = repair_messages(model, get_profile("openai"), dangling="drop").messages
    assert not [p for p in check(dropped, get_profile("openai")) if p.rule == "openai.C4"]


def test_strict_system_merge_keeps_the_fields_a_block_carries() -> None:
    cached = TextPart("rules", extra={"cache_control": {"type": "ephemeral"}})
    msgs = [
        Message(Role.SYSTEM, (cached,)),
        Message(Role.SYSTEM, (TextPart("style"),)),
        user("hi"),
    ]
    fixed = repair_messages(msgs, get_profile("openai-strict"))
    head = fixed.messages[0]
    assert head.role is Role.SYSTEM
    assert head.parts == (cached, TextPart("style"))
    assert check(fixed.messages, get_profile("openai-strict")) == []
