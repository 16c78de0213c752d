"""``repair(..., close_trailing_calls=True)``: a run that stopped mid-call gets an
"interrupted" result for each call still open at the end, in the format's own shape, each one
reported; without the keyword a trailing call is left waiting, as before."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import synopsis
from synopsis.formats import FormatName, decode, encode
from synopsis.messages import Message, Role, TextPart, ToolCallPart, ToolResultPart
from synopsis.pairing import pair_tool_calls
from synopsis.validation import INTERRUPTED, NOT_COMPLETED, Fix, repair_messages
from synopsis.validation.profiles import OPENAI
from tests.strategies import tool_turn, user, valid_history

CLOSED = "closed interrupted call"

# (format, provider, the result style a history of that format is built with)
TARGETS: list[tuple[FormatName, str, Literal["tool", "user"]]] = [
    ("openai", "openai", "tool"),
    ("openai", "openai-strict", "tool"),
    ("anthropic", "anthropic", "user"),
    ("gemini", "gemini", "user"),
]
PAIRING_RULES = {
    "openai.C1",
    "openai.C2",
    "openai-strict.C1",
    "openai-strict.C2",
    "anthropic.A1",
    "anthropic.A2",
    "gemini.G2",
    "gemini.G3",
}


def calls(*ids: str, text: str = "on it") -> Message:
    return Message(Role.ASSISTANT, (TextPart(text), *(ToolCallPart(i, "bash", "{}") for i in ids)))


def tool(cid: str, content: str = "ok") -> Message:
    return Message(Role.TOOL, (ToolResultPart(cid, content),))


def interrupted() -> list[Message]:
    """A run that stopped while calls ``b`` and ``c`` were running (``a`` had answered)."""
    return [user("fix the build"), calls("a", "b", "c"), tool("a", "built")]


# ---------------------------------------------------------------- the format's own shape


def test_openai_gets_one_tool_message_per_open_call() -> None:
    wire = encode(interrupted(), "openai").messages
    fixed = synopsis.repair(wire, "openai", close_trailing_calls=True)
    assert list(fixed) == [
        *wire,
        {"role": "tool", "content": INTERRUPTED, "tool_call_id": "b"},
        {"role": "tool", "content": INTERRUPTED, "tool_call_id": "c"},
    ]
    assert fixed.fixes == (
        Fix(1, CLOSED, "'b' with an 'interrupted' result"),
        Fix(1, CLOSED, "'c' with an 'interrupted' result"),
    )
    assert synopsis.validate(list(fixed), "openai") == []


def test_anthropic_gets_error_tool_result_blocks_after_the_results_that_came() -> None:
    wire = encode(interrupted(), "anthropic").messages
    fixed = synopsis.repair(wire, "anthropic", close_trailing_calls=True)
    assert list(fixed[:-1]) == wire[:-1]
    assert fixed[-1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "built"},
            {"type": "tool_result", "tool_use_id": "b", "content": INTERRUPTED, "is_error": True},
            {"type": "tool_result", "tool_use_id": "c", "content": INTERRUPTED, "is_error": True},
        ],
    }
    assert [f.index for f in fixed.fixes] == [1, 1]
    assert synopsis.validate(list(fixed), "anthropic") == []


def test_anthropic_call_with_no_result_yet_gets_a_user_turn_of_its_own() -> None:
    wire = [
        {"role": "user", "content": "look"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}],
        },
    ]
    fixed = synopsis.repair(wire, "anthropic", system="be brief", close_trailing_calls=True)
    assert fixed[-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": INTERRUPTED,
                "is_error": True,
            }
        ],
    }
    # The index is the call's place in the caller's list, not counting ``system``.
    assert fixed.fixes == (Fix(1, CLOSED, "'toolu_1' with an 'interrupted' result"),)
    assert fixed.system == "be brief"


def test_gemini_gets_function_responses_that_report_an_error() -> None:
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "fix the build"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "make", "args": {}}},
                {"functionCall": {"name": "test", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "make", "response": {"output": "built"}}}],
        },
    ]
    fixed = synopsis.repair(contents, "gemini", close_trailing_calls=True)
    assert fixed[-1] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "make", "response": {"output": "built"}}},
            {"functionResponse": {"name": "test", "response": {"error": INTERRUPTED}}},
        ],
    }
    assert [(f.index, f.action) for f in fixed.fixes] == [(1, CLOSED)]
    assert synopsis.validate(list(fixed), "gemini") == []


def test_responses_gets_a_function_call_output() -> None:
    items = [
        {"role": "user", "content": "look"},
        {"type": "function_call", "call_id": "fc_1", "name": "ls", "arguments": "{}"},
    ]
    fixed = synopsis.repair(items, "responses", close_trailing_calls=True)
    assert list(fixed) == [
        *items,
        {"type": "function_call_output", "call_id": "fc_1", "output": INTERRUPTED},
    ]
    assert fixed.fixes == (Fix(1, CLOSED, "'fc_1' with an 'interrupted' result"),)


# ---------------------------------------------------------------- what it leaves alone


def test_by_default_a_trailing_call_is_still_left_waiting() -> None:
    wire = encode(interrupted(), "openai").messages
    for fixed in (synopsis.repair(wire), synopsis.repair(wire, close_trailing_calls=False)):
        assert list(fixed) == wire
        assert fixed.fixes == ()


def test_a_history_with_nothing_open_at_the_end_is_unchanged() -> None:
    wire = encode([*interrupted(), tool("b"), tool("c"), user("thanks")], "openai").messages
    fixed = synopsis.repair(wire, close_trailing_calls=True)
    assert list(fixed) == wire
    assert fixed.fixes == ()


@pytest.mark.parametrize("dangling", ["answer", "drop"])
def test_calls_in_the_middle_follow_dangling_and_the_trailing_ones_are_closed_once(
    dangling: Literal["answer", "drop"],
) -> None:
    msgs = [user("go"), calls("x"), user("and then?"), *interrupted()]
    fixed = repair_messages(msgs, OPENAI, dangling=dangling, close_trailing_calls=True)
    closed = [f for f in fixed.fixes if f.action == CLOSED]
    assert closed == [
        Fix(4, CLOSED, "'b' with an 'interrupted' result"),
        Fix(4, CLOSED, "'c' with an 'interrupted' result"),
    ]
    texts = [p.text for m in fixed.messages for p in m.parts if isinstance(p, ToolResultPart)]
    expected_middle = [NOT_COMPLETED] if dangling == "answer" else []
    assert texts == [*expected_middle, "built", INTERRUPTED, INTERRUPTED]
    assert pair_tool_calls(fixed.messages).open_calls == ()


def test_repair_has_the_pinned_signature() -> None:
    import inspect  # noqa: PLC0415

    parameters = inspect.signature(synopsis.repair).parameters
    assert list(parameters) == [
        "messages",
        "provider",
        "format",
        "system",
        "dangling",
        "close_trailing_calls",
    ]
    assert parameters["close_trailing_calls"].kind is inspect.Parameter.KEYWORD_ONLY
    assert parameters["close_trailing_calls"].default is False


# ---------------------------------------------------------------- the property


@st.composite
def stopped_mid_call(draw: st.DrawFn, style: Literal["tool", "user"]) -> list[Message]:
    """A valid history ending with a call message some (or none) of whose calls answered."""
    head = draw(valid_history(style, allow_pending=False))
    return [*head, *draw(tool_turn(style, pending=True))]


def _pairing_problems(history: Any, provider: str, system: object) -> list[str]:
    problems = synopsis.validate(history, provider, system=system)
    return [str(p) for p in problems if p.rule in PAIRING_RULES]


@given(st.sampled_from(TARGETS), st.data())
def test_every_trailing_call_gets_exactly_one_result(
    target: tuple[FormatName, str, Literal["tool", "user"]], data: st.DataObject
) -> None:
    fmt, provider, style = target
    wire = encode(data.draw(stopped_mid_call(style)), fmt)
    before = decode(wire.messages, fmt, system=wire.system).messages
    open_before = pair_tool_calls(before).open_calls
    assert open_before  # the strategy leaves at least one call open

    fixed = synopsis.repair(wire.messages, provider, system=wire.system, close_trailing_calls=True)

    after = decode(list(fixed), fmt, system=fixed.system).messages
    pairing = pair_tool_calls(after)
    assert pairing.open_calls == ()
    assert pairing.orphans == ()
    assert all(len(results) == 1 for results in pairing.result_of.values())
    assert len(pairing.calls) == len(pair_tool_calls(before).calls)
    closed = [f for f in fixed.fixes if f.action == CLOSED]
    assert len(closed) == len(open_before)
    # The run stopped at its last call message: that is the message each fix names.
    assert {f.index for f in closed} == {open_before[0][0] - (wire.system is not None)}
    synthetic = [
        p for m in after for p in m.parts if isinstance(p, ToolResultPart) and p.text == INTERRUPTED
    ]
    assert len(synthetic) == len(open_before)
    assert _pairing_problems(list(fixed), provider, fixed.system) == []

    # Without the keyword the same history keeps its trailing calls open, as it always did.
    default = synopsis.repair(wire.messages, provider, system=wire.system)
    assert not any(f.action == CLOSED for f in default.fixes)
    kept = decode(list(default), fmt, system=default.system).messages
    assert len(pair_tool_calls(kept).open_calls) == len(open_before)
