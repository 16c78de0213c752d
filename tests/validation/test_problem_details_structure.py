"""Each structural, pairing, system-placement and store rule reports exactly where and what:
the message, the part, the rule id and the sentence a caller reads."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from synopsis.messages import (
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.validation import (
    ANTHROPIC,
    GEMINI,
    OPENAI,
    OPENAI_STRICT,
    RESPONSES,
    Problem,
    Profile,
    check,
    repair_messages,
    validate,
)


def user(text: str = "go") -> Message:
    return Message(Role.USER, (TextPart(text),))


def assistant(text: str = "ok") -> Message:
    return Message(Role.ASSISTANT, (TextPart(text),))


def system(text: str = "be brief", role: Role = Role.SYSTEM) -> Message:
    return Message(role, (TextPart(text),))


def call(*ids: str) -> Message:
    return Message(Role.ASSISTANT, tuple(ToolCallPart(i, "bash", "{}") for i in ids))


def tool(cid: str) -> Message:
    return Message(Role.TOOL, (ToolResultPart(cid, "done"),))


def results(*ids: str) -> Message:
    return Message(Role.USER, tuple(ToolResultPart(i, "done") for i in ids))


# ---------------------------------------------------------------- the model's own shape

CALL_ROLE = "only an assistant message can call a tool"
RESULT_ROLE = "a tool result must be in a tool or user message"
TOOL_MESSAGE = "a tool message must hold tool results and nothing else"


def test_a_call_outside_an_assistant_message_names_its_part() -> None:
    msgs = [user(), Message(Role.USER, (TextPart("run it"), ToolCallPart("a", "bash", "{}")))]
    assert check(msgs, RESPONSES) == [Problem(1, "tool.call_role", CALL_ROLE, 1)]


def test_a_result_outside_a_tool_or_user_message_names_its_part() -> None:
    msgs = [user(), Message(Role.ASSISTANT, (TextPart("here"), ToolResultPart("a", "r")))]
    assert check(msgs, RESPONSES) == [
        Problem(1, "tool.result_role", RESULT_ROLE, 1),
        Problem(1, "responses.R2", "tool result for 'a' answers no earlier tool call", 1),
    ]


def test_a_tool_message_with_text_is_reported_on_the_message() -> None:
    msgs = [user(), Message(Role.TOOL, (TextPart("stray"),))]
    assert check(msgs, RESPONSES) == [Problem(1, "tool.tool_message", TOOL_MESSAGE)]


@pytest.mark.parametrize(
    ("profile", "rule"), [(OPENAI, "openai.C3"), (ANTHROPIC, "anthropic.duplicate_id")]
)
def test_a_call_id_used_twice_names_the_second_call(profile: Profile, rule: str) -> None:
    msgs = [user(), call("a", "b", "a"), tool("a"), tool("b"), tool("a")]
    assert check(msgs, profile) == [
        Problem(1, rule, "tool call id 'a' is used twice in one turn", 2)
    ]


def test_an_empty_tool_calls_array_is_reported_on_its_message() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x", "tool_calls": []},
    ]
    assert validate(items, "openai") == [
        Problem(
            1,
            "openai.C4",
            "'tool_calls' is an empty array; expected at least one call",
            conservative=True,
        )
    ]


# ---------------------------------------------------------------- the whole history


def test_an_empty_history_is_one_problem_of_the_whole_history() -> None:
    empty = [Problem(None, "history.empty", "the history has no messages")]
    assert check([], OPENAI) == empty
    assert validate([], "anthropic", format="anthropic") == empty
    assert validate([], "gemini", format="gemini") == empty
    assert repair_messages([], OPENAI).messages == ()


def test_problems_come_in_message_order_whatever_rule_found_them() -> None:
    # The shape rule finds message 3 before the pairing rule finds message 1.
    msgs = [user(), call("a"), user("more"), Message(Role.TOOL, (TextPart("stray"),))]
    assert [(p.index, p.rule) for p in check(msgs, OPENAI)] == [
        (1, "openai.C2"),
        (3, "tool.tool_message"),
    ]


def test_a_problem_of_the_whole_history_comes_before_one_of_message_0() -> None:
    msgs = [system("rules", Role.DEVELOPER)]
    assert [(p.index, p.rule) for p in check(msgs, OPENAI_STRICT)] == [
        (None, "history.no_messages"),
        (0, "openai-strict.developer_role"),
    ]


# ---------------------------------------------------------------- pairing


def test_a_missing_result_says_next_message_only_where_results_must_be_adjacent() -> None:
    msgs = [user(), call("a"), user("more"), assistant()]
    assert check(msgs, OPENAI) == [
        Problem(1, "openai.C2", "tool call 'a' has no result in the next message", 0)
    ]
    assert check(msgs, RESPONSES) == [Problem(1, "responses.R1", "tool call 'a' has no result", 0)]


def test_an_unknown_result_in_an_answer_block_is_an_orphan_outside_gemini() -> None:
    msgs = [user(), call("a"), tool("a"), tool("zzz"), assistant()]
    assert check(msgs, OPENAI) == [
        Problem(3, "openai.C1", "tool result for 'zzz' answers no earlier tool call", 0)
    ]


def g3(call_id: str, turn: int) -> str:
    return (
        f"function response {call_id!r} has no call left to answer in message {turn}: the "
        "number of function response parts must equal the number of function call parts of "
        "the function call turn"
    )


def test_gemini_reports_every_response_too_many_for_the_call_turn() -> None:
    msgs = [user(), call("a"), results("a", "zzz", "yyy")]
    assert check(msgs, GEMINI) == [
        Problem(2, "gemini.G3", g3("zzz", 1), 1),
        Problem(2, "gemini.G3", g3("yyy", 1), 2),
    ]


def test_gemini_finds_the_call_turn_behind_earlier_tool_messages() -> None:
    msgs = [user(), call("a", "b"), tool("a"), tool("zzz"), tool("b")]
    assert check(msgs, GEMINI) == [Problem(3, "gemini.G3", g3("zzz", 1), 0)]


def test_gemini_finds_a_call_turn_at_the_very_start() -> None:
    msgs = [call("a"), results("a", "zzz")]
    problems = check(msgs, GEMINI)
    assert Problem(1, "gemini.G3", g3("zzz", 0), 1) in problems


def test_gemini_orphan_with_no_assistant_before_it_answers_no_call() -> None:
    orphan = "tool result for 'zzz' answers no earlier tool call"
    msgs = [results("zzz"), call("a")]
    assert Problem(0, "gemini.G2", orphan, 0) in check(msgs, GEMINI)
    # A call in a user message is not a call turn to answer.
    odd = [Message(Role.USER, (ToolCallPart("a", "bash", "{}"),)), results("a", "zzz")]
    assert Problem(1, "gemini.G2", orphan, 1) in check(odd, GEMINI)


def test_a_later_tool_message_after_a_user_note_is_misplaced() -> None:
    msgs = [user(), call("a", "b"), tool("a"), user("note"), tool("b"), assistant()]
    assert check(msgs, OPENAI) == [
        Problem(
            4,
            "openai.C1",
            "tool result for 'b' is not in the turn right after its call (message 1)",
            0,
        )
    ]
    msgs[2] = results("a")
    assert [(p.index, p.rule) for p in check(msgs, OPENAI)] == [(4, "openai.C1")]


def test_gemini_answer_block_of_tool_messages_ends_at_a_user_note() -> None:
    msgs = [user(), call("a", "b"), tool("a"), user("note"), tool("b"), user()]
    assert Problem(
        4,
        "gemini.G2",
        "tool result for 'b' is not in the turn right after its call (message 1)",
        0,
    ) in check(msgs, GEMINI)


def test_an_empty_user_message_does_not_extend_the_answer_block() -> None:
    msgs = [user(), call("a"), Message(Role.USER, ())]
    assert [(p.index, p.part, p.rule) for p in check(msgs, OPENAI)] == [(1, 0, "openai.C2")]
    held = [user(), call("a"), Message(Role.ASSISTANT, (ToolResultPart("a", "r"),))]
    assert [(p.index, p.part, p.rule) for p in check(held, OPENAI)] == [
        (2, 0, "tool.result_role"),
        (2, 0, "openai.C1"),
    ]


# ---------------------------------------------------------------- system placement

INSIDE = (
    "a system message inside the message list is accepted only right after a user turn, and "
    "only by models that allow mid-conversation system messages; send it as the top-level "
    "system prompt"
)
MID_TEXT = "a mid-conversation system message must come right after a user turn"
OPEN_ONLY = "a system message may only open the history (it becomes the top-level system prompt)"

U = {"role": "user", "content": "u"}
Y = {"role": "assistant", "content": "y"}
MID = {"role": "system", "content": "mid"}
OPUS48 = dataclasses.replace(ANTHROPIC, mid_system=True)


@pytest.mark.parametrize(
    ("items", "profile", "expected"),
    [
        ([MID, U], ANTHROPIC, [Problem(0, "anthropic.system_position", INSIDE)]),
        ([MID, U], OPUS48, [Problem(0, "anthropic.system_position", INSIDE)]),
        ([U, Y, MID, U], ANTHROPIC, [Problem(2, "anthropic.system_position", OPEN_ONLY)]),
        ([U, Y, MID, U], OPUS48, [Problem(2, "anthropic.system_position", MID_TEXT)]),
        ([U, MID, Y, MID, U], OPUS48, [Problem(3, "anthropic.system_position", MID_TEXT)]),
    ],
)
def test_a_misplaced_anthropic_system_message_says_why(
    items: list[dict[str, Any]], profile: Profile, expected: list[Problem]
) -> None:
    assert validate(items, profile, format="anthropic") == expected


def test_strict_openai_wants_system_first_and_no_developer_role() -> None:
    msgs = [user(), system(), assistant(), system("x", Role.DEVELOPER), user()]
    assert check(msgs, OPENAI_STRICT) == [
        Problem(1, "openai-strict.system_position", "System message must be at the beginning."),
        Problem(
            3,
            "openai-strict.developer_role",
            "this target does not know the 'developer' role; use 'system'",
        ),
        Problem(3, "openai-strict.system_position", "System message must be at the beginning."),
    ]


# ---------------------------------------------------------------- Responses reasoning and store

NO_STORE = dataclasses.replace(RESPONSES, store=False)


def test_a_reasoning_item_without_the_item_it_produced_is_reported_on_itself() -> None:
    msgs = [user(), Message(Role.ASSISTANT, (ReasoningPart("hmm", encrypted="e"),)), user()]
    assert check(msgs, RESPONSES) == [
        Problem(
            1,
            "responses.R3",
            "Item of type 'reasoning' was provided without its required following item.",
        )
    ]


def test_without_store_a_reference_or_bare_reasoning_is_reported_on_its_part() -> None:
    ref = Message(Role.ASSISTANT, (TextPart("x"), OpaquePart("item_reference", {"id": "m"})))
    bare = Message(Role.ASSISTANT, (ReasoningPart("hmm"), TextPart("y")))
    msgs = [user(), ref, user(), bare]
    assert check(msgs, NO_STORE) == [
        Problem(
            1,
            "responses.R5",
            "Items are not persisted when `store` is set to false, so an item_reference "
            "cannot be resolved; replay the item in full",
            1,
        ),
        Problem(
            3,
            "responses.R5",
            "Items are not persisted when `store` is set to false, so a reasoning item must be "
            "replayed with its encrypted_content (request "
            "include=['reasoning.encrypted_content'])",
            0,
        ),
    ]


def test_a_call_turn_in_the_top_level_system_prompt_is_named_as_that_prompt() -> None:
    # Malformed, but decodable: the system prompt passed apart holds a tool_use block.
    body = {
        "system": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        ],
    }
    assert validate(body, "anthropic") == [
        Problem(None, "tool.call_role", f"the top-level system prompt: {CALL_ROLE}", 0),
        Problem(
            1,
            "anthropic.A3",
            "tool_result blocks must come first in the user turn answering the top-level "
            "system prompt",
            0,
        ),
    ]
