"""Indices in what ``validate``, ``repair`` and the inspection report return are positions in
the caller's own list, also when the top-level system prompt (Anthropic ``system``, Gemini
``systemInstruction``) comes apart from it: that prompt is checked, but not counted."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import synopsis
from synopsis.cli.inspect import inspect_history
from synopsis.formats import FormatName, decode, encode
from synopsis.validation import Fix, Problem
from tests.strategies import any_history

SYSTEM = "You are a careful coding agent."

# Message 2 calls a tool and message 3 goes on without its result: A1 on message 2.
ANTHROPIC: list[dict[str, Any]] = [
    {"role": "user", "content": "fix the build"},
    {"role": "assistant", "content": "Looking."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "make", "input": {}}],
    },
    {"role": "user", "content": "any news?"},
]
DANGLING = 2

# Message 1 calls a function and message 2 goes on without its response: G3 on message 1.
GEMINI: list[dict[str, Any]] = [
    {"role": "user", "parts": [{"text": "fix the build"}]},
    {"role": "model", "parts": [{"functionCall": {"name": "make", "args": {}}}]},
    {"role": "user", "parts": [{"text": "any news?"}]},
]


def test_validate_names_a_problem_by_its_place_in_the_callers_list() -> None:
    expected = Problem(
        DANGLING, "anthropic.A1", "tool call 'toolu_1' has no result in the next message", 0
    )
    assert synopsis.validate(ANTHROPIC, "anthropic", system=SYSTEM) == [expected]
    assert synopsis.validate(ANTHROPIC, "anthropic") == [expected]
    body = {"system": [{"type": "text", "text": SYSTEM}], "messages": ANTHROPIC}
    assert synopsis.validate(body, "anthropic") == [expected]
    assert ANTHROPIC[expected.index or 0]["content"][0]["type"] == "tool_use"


def test_gemini_system_instruction_is_not_counted_either() -> None:
    problems = synopsis.validate(GEMINI, "gemini", system={"parts": [{"text": SYSTEM}]})
    assert [(p.index, p.rule) for p in problems] == [(1, "gemini.G3")]
    body = {"systemInstruction": {"parts": [{"text": SYSTEM}]}, "contents": GEMINI}
    assert synopsis.validate(body, "gemini") == problems


def test_a_message_a_problem_or_fix_refers_to_is_named_in_the_callers_list_too() -> None:
    late = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
        },
        {"role": "user", "content": "wait"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
    ]
    assert [str(p) for p in synopsis.validate(late, "anthropic", system=SYSTEM)] == [
        "message 4 part 0: tool result for 't1' is not in the turn right after its call "
        "(message 1) [anthropic.A1]"
    ]
    assert [str(f) for f in synopsis.repair(late, "anthropic", system=SYSTEM).fixes] == [
        "message 4: moved result: next to its call in message 1"
    ]
    text_first = [
        *late[:2],
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "also"},
                {"type": "tool_result", "tool_use_id": "t1"},
            ],
        },
    ]
    assert [str(p) for p in synopsis.validate(text_first, "anthropic", system=SYSTEM)] == [
        "message 2 part 1: tool_result blocks must come first in the user turn answering "
        "message 1 [anthropic.A3]"
    ]
    response = {"functionResponse": {"name": "make", "response": {}}}
    twice = [*GEMINI[:2], {"role": "user", "parts": [response, response]}]
    (problem,) = synopsis.validate(twice, "gemini", system=SYSTEM)
    assert problem.index == 2
    assert "has no call left to answer in message 1:" in problem.message


def test_a_problem_in_the_separate_system_prompt_names_no_index() -> None:
    system = {"parts": [{"functionCall": {"name": "make", "args": {}}}]}
    problems = synopsis.validate(GEMINI[:1], "gemini", system=system)
    assert problems
    for p in problems:
        assert p.index is None
        assert p.message.startswith("the top-level system prompt: ")
    assert "the top-level system prompt: " in str(problems[0])


def test_repair_names_each_fix_by_its_place_in_the_callers_list() -> None:
    fixed = synopsis.repair(ANTHROPIC, "anthropic", system=SYSTEM)
    assert (DANGLING, "answered dangling call") in [(f.index, f.action) for f in fixed.fixes]
    assert fixed.fixes == synopsis.repair(ANTHROPIC, "anthropic").fixes
    assert fixed.system == SYSTEM


def test_a_fix_of_the_separate_system_prompt_names_no_index() -> None:
    fixed = synopsis.repair(ANTHROPIC[:1], "anthropic", format="anthropic", system="")
    assert fixed.fixes == (
        Fix(None, "dropped empty message", "the top-level system prompt: system"),
    )


def test_the_inspection_report_uses_the_callers_indices() -> None:
    decoded = decode(ANTHROPIC, "anthropic", system=SYSTEM * 20)
    report = inspect_history(decoded.messages, fmt=decoded.format, provider="anthropic")
    assert [(p.index, p.rule) for p in report.problems] == [(DANGLING, "anthropic.A1")]
    # The long system prompt is the largest message, but it has no place in the list.
    assert report.largest[0].role == "system"
    assert report.largest[0].index is None
    assert sorted(m.index for m in report.largest[1:] if m.index is not None) == [0, 1, 2, 3]
    assert report.to_json()["problems"][0]["index"] == DANGLING
    assert report.message_count == len(ANTHROPIC) + 1


def test_the_inspection_report_of_message_values_counts_every_message() -> None:
    decoded = decode(ANTHROPIC, "anthropic", system=SYSTEM)
    report = inspect_history(decoded.messages, provider="anthropic")
    assert [p.index for p in report.problems] == [DANGLING + 1]
    assert sorted(m.index for m in report.largest if m.index is not None) == [0, 1, 2, 3, 4]


@given(any_history("user"), st.sampled_from(["anthropic", "gemini"]), st.booleans())
def test_every_index_is_a_place_in_the_callers_list(msgs, fmt: FormatName, body: bool) -> None:
    wire = encode(msgs, fmt)
    system = wire.system if wire.system is not None else SYSTEM
    items = list(wire.messages)
    problems = synopsis.validate(items, fmt, format=fmt, system=system)
    fixed = synopsis.repair(items, fmt, format=fmt, system=system)
    for index in [p.index for p in problems] + [f.index for f in fixed.fixes]:
        assert index is None or 0 <= index < len(items)
    # A system prompt apart from the list holds nothing the list's rules look at: the list's
    # problems are the ones it has on its own, at the same places.
    alone = synopsis.validate(items, fmt, format=fmt)
    assert [p for p in problems if p.index is not None] == [p for p in alone if p.index is not None]
    if body:
        key = "system" if fmt == "anthropic" else "systemInstruction"
        request = {key: system, "messages" if fmt == "anthropic" else "contents": items}
        assert synopsis.validate(request, fmt, format=fmt) == problems
