"""Each repair pass gives exactly the right history and reports exactly the right fixes: the
index it names, the action, the detail, and where each repaired message came from."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import synopsis
from synopsis.errors import ConfigurationError
from synopsis.formats import decode
from synopsis.messages import Role, TextPart, ToolResultPart
from synopsis.validation import (
    ANTHROPIC,
    NOT_COMPLETED,
    OPENAI,
    OPENAI_STRICT,
    Fix,
    get_profile,
    repair_messages,
)


def call(cid: str, name: str = "f") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def use(cid: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": "f", "input": {}}


def result(cid: str, content: str = "r") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": content}


def not_completed(cid: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": NOT_COMPLETED, "is_error": True}


# ---------------------------------------------------------------- Fix, policies, profiles


@pytest.mark.parametrize(
    ("fix", "text"),
    [
        (Fix(None, "added result", "for 'a'"), "new message: added result: for 'a'"),
        (Fix(3, "dropped message", "empty"), "message 3: dropped message: empty"),
        (
            Fix(0, "renamed role", "developer -> system"),
            "message 0: renamed role: developer -> system",
        ),
    ],
)
def test_a_fix_reads_as_where_what_and_why(fix: Fix, text: str) -> None:
    assert str(fix) == text


def test_an_unknown_dangling_policy_names_both_choices() -> None:
    with pytest.raises(ConfigurationError) as caught:
        synopsis.repair([{"role": "user", "content": "u"}], dangling="keep")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "dangling='keep' is not a repair policy; use 'answer' (give each dangling call a "
        "'not completed' result) or 'drop' (remove the call)"
    )


def test_an_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(ConfigurationError) as caught:
        get_profile("mistral")
    assert str(caught.value) == (
        "unknown provider profile 'mistral'; expected one of "
        "openai, openai-strict, responses, anthropic, gemini"
    )


# ---------------------------------------------------------------- Anthropic top-level system

LATE_SYSTEM: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "yo"},
    {"role": "system", "content": "extra"},
    {"role": "user", "content": "more"},
]
LIFTED_TOP = Fix(2, "lifted system message", "moved into the top-level system prompt")
CACHED = {"type": "text", "text": "base", "cache_control": {"type": "ephemeral"}}


@pytest.mark.parametrize(
    ("system", "merged"),
    [
        (None, "extra"),
        ("base", "base\n\nextra"),
        # The request's own prompt keeps its form: a list of blocks stays a list.
        ([{"type": "text", "text": "base"}], [{"type": "text", "text": "base\n\nextra"}]),
        # A block with fields of its own is kept as it is; the lifted text joins as a block.
        ([CACHED], [CACHED, {"type": "text", "text": "extra"}]),
    ],
)
def test_a_late_anthropic_system_message_joins_the_top_level_prompt(
    system: object, merged: object
) -> None:
    fixed = synopsis.repair(LATE_SYSTEM, "anthropic", format="anthropic", system=system)
    assert list(fixed) == [LATE_SYSTEM[0], LATE_SYSTEM[1], LATE_SYSTEM[3]]
    assert fixed.fixes == (LIFTED_TOP,)
    assert fixed.system == merged


def test_the_merged_top_level_prompt_keeps_the_first_origin() -> None:
    model = decode(LATE_SYSTEM, "anthropic", system="base").messages
    fixed = repair_messages(model, ANTHROPIC, offset=1)
    assert fixed.origins == (0, 1, 2, 4)
    assert fixed.fixes == (LIFTED_TOP,)
    assert [m.role for m in fixed.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER]
    assert fixed.messages[0].text == "base\n\nextra"


def test_leading_in_list_systems_are_lifted_after_the_request_prompt() -> None:
    wire = [
        {"role": "system", "content": "a"},
        {"role": "system", "content": "b"},
        {"role": "user", "content": "u"},
    ]
    lifted = "moved into the top-level system prompt"
    for system, text in ((None, "a\n\nb"), ("s", "s\n\na\n\nb")):
        fixed = synopsis.repair(wire, "anthropic", format="anthropic", system=system)
        assert list(fixed) == [wire[2]]
        assert fixed.system == text
        assert fixed.fixes == (
            Fix(0, "lifted system message", lifted),
            Fix(1, "lifted system message", lifted),
        )


def test_a_first_in_list_system_is_lifted_even_where_mid_systems_are_allowed() -> None:
    # Nothing comes before it, so it does not follow a user turn.
    model = decode(
        [{"role": "system", "content": "x"}, {"role": "user", "content": "u"}], "anthropic"
    ).messages
    fixed = repair_messages(model, replace(ANTHROPIC, mid_system=True))
    assert fixed.fixes == (
        Fix(0, "lifted system message", "moved into the top-level system prompt"),
    )
    assert fixed.messages[0].wire["system"] == "string"
    assert fixed.origins == (0, 1)


# ---------------------------------------------------------------- systems in the list

MID_SYSTEM: list[dict[str, Any]] = [
    {"role": "developer", "content": "a"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": "x"},
    {"role": "system", "content": "late"},
    {"role": "user", "content": "v"},
]


def test_strict_openai_lifts_renames_and_merges_into_one_leading_system() -> None:
    fixed = synopsis.repair(MID_SYSTEM, "openai-strict")
    assert list(fixed) == [
        {"role": "system", "content": "a\n\nlate"},
        MID_SYSTEM[1],
        MID_SYSTEM[2],
        MID_SYSTEM[4],
    ]
    assert fixed.fixes == (
        Fix(3, "lifted system message", "moved to the front"),
        Fix(0, "renamed role", "developer -> system"),
        Fix(3, "merged system message", "into the one leading system"),
    )


def test_strict_openai_origins_after_a_merge() -> None:
    model = decode(MID_SYSTEM, "openai").messages
    fixed = repair_messages(model, OPENAI_STRICT)
    assert fixed.origins == (0, 1, 2, 4)
    assert fixed.messages[0].role is Role.SYSTEM


def test_strict_openai_renames_a_lone_developer_message() -> None:
    model = decode([MID_SYSTEM[0], MID_SYSTEM[1]], "openai").messages
    fixed = repair_messages(model, OPENAI_STRICT)
    assert fixed.fixes == (Fix(0, "renamed role", "developer -> system"),)
    assert [m.role for m in fixed.messages] == [Role.SYSTEM, Role.USER]
    assert fixed.origins == (0, 1)


def test_a_leading_system_is_left_alone() -> None:
    wire = [{"role": "system", "content": "a", "name": "boss"}, {"role": "user", "content": "u"}]
    fixed = synopsis.repair(wire, "openai-strict")
    assert list(fixed) == wire
    assert fixed.fixes == ()


def test_the_merged_leading_system_keeps_the_first_ones_form() -> None:
    wire = [
        {"role": "system", "content": [{"type": "text", "text": "a"}]},
        {"role": "system", "content": "b"},
        {"role": "user", "content": "u"},
    ]
    fixed = synopsis.repair(wire, "openai-strict")
    assert list(fixed) == [
        {"role": "system", "content": [{"type": "text", "text": "a\n\nb"}]},
        wire[2],
    ]
    assert fixed.fixes == (Fix(1, "merged system message", "into the one leading system"),)
    model = repair_messages(decode(wire, "openai").messages, OPENAI_STRICT)
    assert model.origins == (0, 2)


def test_a_profile_that_allows_systems_anywhere_keeps_a_late_one() -> None:
    model = decode(MID_SYSTEM[1:], "openai").messages
    fixed = repair_messages(model, replace(OPENAI, developer_role=False))
    assert fixed.messages == model
    assert fixed.fixes == ()
    assert fixed.origins == (0, 1, 2, 3)


# ---------------------------------------------------------------- calls and results


def test_an_orphaned_result_leaves_the_rest_of_its_message() -> None:
    wire = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": [result("zz"), {"type": "text", "text": "more"}]},
    ]
    fixed = synopsis.repair(wire, "anthropic")
    assert list(fixed) == [
        *wire[:2],
        {"role": "user", "content": [{"type": "text", "text": "more"}]},
    ]
    assert fixed.fixes == (Fix(2, "dropped orphaned result", "no earlier call"),)


DANGLING: list[dict[str, Any]] = [
    {"role": "user", "content": "u"},
    {"role": "assistant", "tool_calls": [call("a")]},
    {"role": "user", "content": "v"},
]


def test_a_dropped_call_takes_its_emptied_message_with_it() -> None:
    fixed = synopsis.repair(DANGLING, "openai", dangling="drop")
    assert list(fixed) == [DANGLING[0], DANGLING[2]]
    assert fixed.fixes == (
        Fix(1, "dropped dangling call", "call id 'a'"),
        Fix(1, "dropped message", "nothing left after the fix"),
    )


def test_an_answered_call_gets_a_not_completed_result() -> None:
    fixed = synopsis.repair(DANGLING, "openai")
    assert list(fixed) == [
        *DANGLING[:2],
        {"role": "tool", "content": NOT_COMPLETED, "tool_call_id": "a"},
        DANGLING[2],
    ]
    assert fixed.fixes == (Fix(1, "answered dangling call", "'a' with a 'not completed' result"),)
    model = repair_messages(decode(DANGLING, "openai").messages, OPENAI)
    assert model.origins == (0, 1, None, 2)


def test_a_synthetic_gemini_response_carries_the_function_name() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "u"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "mk", "args": {}}}]},
        {"role": "user", "parts": [{"text": "v"}]},
    ]
    fixed = synopsis.repair(contents, "gemini")
    assert list(fixed) == [
        *contents[:2],
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "mk", "response": {"error": NOT_COMPLETED}}}],
        },
        contents[2],
    ]
    assert fixed.fixes == (
        Fix(1, "answered dangling call", "'gemini_1_mk_0' with a 'not completed' result"),
    )
    model = repair_messages(decode(contents, "gemini").messages, get_profile("gemini"))
    synthetic = model.messages[2].parts[0]
    assert isinstance(synthetic, ToolResultPart)
    assert synthetic.name == "mk"


def test_a_synthetic_result_goes_before_the_other_results_of_the_turn() -> None:
    wire = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": [use("a"), use("b")]},
        {"role": "user", "content": [result("a"), {"type": "text", "text": "note"}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "ok"},
    ]
    fixed = synopsis.repair(wire, "anthropic")
    assert list(fixed) == [
        *wire[:2],
        {
            "role": "user",
            "content": [result("a"), not_completed("b"), {"type": "text", "text": "note"}],
        },
        wire[3],
        wire[4],
    ]
    assert fixed.fixes == (Fix(1, "answered dangling call", "'b' with a 'not completed' result"),)


def test_a_synthetic_result_leads_a_turn_that_opens_with_text() -> None:
    wire = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": [use("a"), use("b")]},
        {"role": "user", "content": [{"type": "text", "text": "note"}, result("a")]},
        {"role": "assistant", "content": "done"},
    ]
    fixed = synopsis.repair(wire, "anthropic")
    assert fixed[2] == {
        "role": "user",
        "content": [not_completed("b"), {"type": "text", "text": "note"}, result("a")],
    }
    assert list(fixed)[3:] == [wire[3]]


def test_a_synthetic_result_joins_a_run_of_tool_messages_for_a_user_style_target() -> None:
    model = decode(
        [
            {"role": "user", "content": "u"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "content": "r", "tool_call_id": "a"},
            {"role": "user", "content": "v"},
        ],
        "openai",
    ).messages
    fixed = repair_messages(model, ANTHROPIC)
    assert [m.role for m in fixed.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,
        Role.USER,
    ]
    assert fixed.origins == (0, 1, 2, None, 3)
    assert fixed.messages[3].parts == (ToolResultPart("b", NOT_COMPLETED, is_error=True, name="f"),)


def test_a_result_moved_after_a_dropped_call_names_the_call_in_the_callers_list() -> None:
    wire = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("a")]},
        {"role": "user", "content": "wait"},
        {"role": "assistant", "content": [{"type": "text", "text": "hm"}, use("b")]},
        {"role": "user", "content": [result("a")]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "ok"},
    ]
    fixed = synopsis.repair(wire, "anthropic", format="anthropic", system="s", dangling="drop")
    assert list(fixed) == [
        *wire[:2],
        wire[4],
        wire[2],
        {"role": "assistant", "content": [{"type": "text", "text": "hm"}]},
        *wire[5:],
    ]
    # The move is worked out again on the history without the dropped call, and reported
    # once; the detail still counts from the caller's list, not from the system prompt
    # passed apart.
    assert list(fixed.fixes) == [
        Fix(3, "dropped dangling call", "call id 'b'"),
        Fix(4, "moved result", "next to its call in message 1"),
    ]


# ---------------------------------------------------------------- reasoning items


def test_a_reasoning_item_goes_when_the_item_it_produced_was_empty_and_last() -> None:
    items = [
        {"role": "user", "content": "u"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": []},
    ]
    fixed = synopsis.repair(items, "responses")
    assert list(fixed) == [items[0]]
    assert [f for f in fixed.fixes if f.action == "dropped reasoning item"] == [
        Fix(1, "dropped reasoning item", "the item it produced was removed")
    ]


def test_a_reasoning_item_without_summary_gets_an_empty_one() -> None:
    items = [
        {"role": "user", "content": "u"},
        {"type": "reasoning", "id": "rs_1"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
    ]
    fixed = synopsis.repair(items, "responses")
    assert fixed[1] == {"type": "reasoning", "id": "rs_1", "summary": []}
    assert fixed.fixes == (Fix(1, "added empty summary", "a reasoning item needs `summary`"),)


# ---------------------------------------------------------------- merging


def test_strict_openai_merges_two_assistant_texts() -> None:
    wire = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "x"},
        {"role": "assistant", "content": "y"},
    ]
    fixed = synopsis.repair(wire, "openai-strict")
    assert list(fixed) == [wire[0], {"role": "assistant", "content": "x\n\ny"}]
    assert fixed.fixes == (Fix(2, "merged message", "into the assistant message before"),)


def test_strict_openai_merges_text_into_the_call_message_after_it_not_before() -> None:
    wire = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "tool_calls": [call("a")]},
        {"role": "tool", "content": "r", "tool_call_id": "a"},
        {"role": "assistant", "content": "x"},
        {"role": "assistant", "tool_calls": [call("b")]},
    ]
    fixed = synopsis.repair(wire, "openai-strict")
    assert list(fixed) == [
        *wire[:3],
        {"role": "assistant", "content": "x", "tool_calls": [call("b")]},
    ]
    assert fixed.fixes == (Fix(4, "merged message", "into the assistant message before"),)


def test_a_mid_system_that_lost_its_user_turn_is_lifted_at_the_end() -> None:
    # Allowed where it stood, right after a user turn; that turn held only an orphaned result.
    wire = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": [result("zz")]},
        {"role": "system", "content": "note"},
        {"role": "user", "content": "more"},
    ]
    fixed = repair_messages(decode(wire, "anthropic").messages, replace(ANTHROPIC, mid_system=True))
    assert fixed.fixes == (
        Fix(2, "dropped orphaned result", "no earlier call"),
        Fix(3, "lifted system message", "moved into the top-level system prompt"),
    )
    assert fixed.origins == (3, 0, 1, 4)
    assert [(m.role, m.text) for m in fixed.messages] == [
        (Role.SYSTEM, "note"),
        (Role.USER, "go"),
        (Role.ASSISTANT, "x"),
        (Role.USER, "more"),
    ]


def test_a_lifted_block_with_fields_of_its_own_is_sent_as_a_block_list() -> None:
    wire = [{"role": "system", "content": [CACHED]}, {"role": "user", "content": "u"}]
    fixed = repair_messages(decode(wire, "anthropic").messages, ANTHROPIC)
    assert fixed.fixes == (
        Fix(0, "lifted system message", "moved into the top-level system prompt"),
    )
    top = fixed.messages[0]
    assert top.wire == {"format": "anthropic", "system": "list"}
    assert top.parts == (TextPart("base", extra={"cache_control": {"type": "ephemeral"}}),)
    assert synopsis.repair(wire, "anthropic", format="anthropic").system == [CACHED]


def test_a_synthetic_result_joins_the_results_already_there_before_the_text() -> None:
    wire = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("a"), use("b"), use("c")]},
        {"role": "user", "content": [result("a"), result("b"), {"type": "text", "text": "more"}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    fixed = synopsis.repair(wire, "anthropic", format="anthropic")
    assert fixed[2]["content"] == [
        result("a"),
        result("b"),
        not_completed("c"),
        {"type": "text", "text": "more"},
    ]
    assert list(fixed.fixes) == [
        Fix(1, "answered dangling call", "'c' with a 'not completed' result")
    ]
