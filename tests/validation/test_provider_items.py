"""The providers' own items under their rules: Anthropic's server tools paired with their
results in one assistant turn, Responses' custom, local shell and computer calls with their
outputs, and a compaction block ahead of a turn's thinking."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from synopsis.validation import ANTHROPIC, validate

U = {"role": "user", "content": "find it"}
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
FOUND = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
SAID = {"type": "text", "text": "found"}


def said(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def places(items: list[Any], provider: str = "anthropic") -> list[tuple[int | None, Any, str]]:
    problems = validate(items, provider, format=provider)  # type: ignore[arg-type]
    return [(p.index, p.part, p.rule) for p in problems]


# ---------------------------------------------------------------- Anthropic server tools


@pytest.mark.parametrize(
    ("use", "result"),
    [
        (SEARCH, FOUND),
        (
            {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_fetch", "input": {}},
            {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_2", "content": {}},
        ),
        (
            {"type": "server_tool_use", "id": "srvtoolu_3", "name": "code_execution", "input": {}},
            {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_3", "content": {}},
        ),
        (
            {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "read", "server_name": "fs"},
            {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": "body"},
        ),
    ],
)
def test_a_server_tool_use_answered_in_its_turn_is_valid(
    use: dict[str, Any], result: dict[str, Any]
) -> None:
    assert places([U, said(use, result, SAID), U]) == []
    # a turn the client sent back in two messages (after a pause) is still one turn
    assert places([U, said(use), said(result, SAID), U]) == []


def test_a_server_tool_use_without_its_result_is_reported() -> None:
    assert places([U, said(SAID, SEARCH), U, said(SAID), U]) == [(1, 1, "anthropic.A1")]


def test_a_result_without_its_use_in_the_turn_is_reported() -> None:
    assert places([U, said(FOUND, SAID), U]) == [(1, 0, "anthropic.A2")]
    # a later turn's result does not answer an earlier turn's use
    late = [U, said(SEARCH), U, said(FOUND, SAID), U]
    assert places(late) == [(1, 0, "anthropic.A1"), (3, 0, "anthropic.A2")]
    # nor does a result the client moved into its own message
    moved = [U, said(SEARCH, SAID), {"role": "user", "content": [FOUND, SAID]}]
    assert places(moved) == [(1, 0, "anthropic.A1"), (2, 0, "anthropic.A2")]
    problem = validate([U, said(FOUND, SAID), U], "anthropic", format="anthropic")[0]
    assert "web_search_tool_result" in problem.message
    assert "'srvtoolu_1'" in problem.message


def test_a_use_answered_once_leaves_its_second_use_open() -> None:
    assert places([U, said(SEARCH, SEARCH, FOUND, SAID), U]) == [(1, 1, "anthropic.A1")]
    assert places([U, said(SEARCH, FOUND, FOUND, SAID), U]) == [(1, 2, "anthropic.A2")]


def test_a_turn_the_server_paused_is_sent_back_open() -> None:
    # stop_reason "pause_turn": the client sends the turn back as it came, the server goes on
    assert places([U, said(SAID, SEARCH)]) == []
    assert places([U, said(SAID), said(SEARCH)]) == []


def test_server_items_of_another_format_pair_with_nothing() -> None:
    # Responses items have no block in Anthropic: they are sent as text, which no rule binds
    items = [
        {"role": "user", "content": "find it"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"role": "assistant", "content": "found"},
    ]
    assert validate(items, "anthropic", format="responses") == []


# ---------------------------------------------------------------- Anthropic compaction blocks

COMPACTION = {"type": "compaction", "content": "Summary of the conversation: ...", "signature": "s"}
THINK = {"type": "thinking", "thinking": "plan", "signature": "sig"}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}


def test_a_compaction_block_may_open_a_turn_ahead_of_its_thinking() -> None:
    assert places([U, said(COMPACTION, THINK, SAID), U]) == []
    assert places([U, said(COMPACTION, SAID, THINK, SAID), U]) == [(1, 2, "anthropic.A6")]
    thinking = dataclasses.replace(ANTHROPIC, thinking=True)
    loop = [U, said(COMPACTION, THINK, CALL), RESULT]
    assert validate(loop, thinking, format="anthropic") == []
    unthought = validate([U, said(COMPACTION, CALL), RESULT], thinking, format="anthropic")
    assert [(p.index, p.part, p.rule) for p in unthought] == [(1, 1, "anthropic.A6")]


# ---------------------------------------------------------------- Responses tool items

ASK = {"role": "user", "content": "patch it"}


@pytest.mark.parametrize(
    ("call", "output"),
    [
        (
            {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "***"},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done!"},
        ),
        (
            {
                "type": "local_shell_call",
                "id": "lsh_1",
                "call_id": "c1",
                "action": {"type": "exec", "command": ["ls"], "env": {}},
                "status": "completed",
            },
            {"type": "local_shell_call_output", "id": "c1", "output": "{}"},
        ),
        (
            {"type": "computer_call", "call_id": "c1", "action": {"type": "screenshot"}},
            {
                "type": "computer_call_output",
                "call_id": "c1",
                "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,"},
            },
        ),
    ],
)
def test_responses_tool_items_pair_like_function_calls(
    call: dict[str, Any], output: dict[str, Any]
) -> None:
    said_ = {"role": "assistant", "content": "done"}
    assert places([ASK, call, output, said_, ASK], "responses") == []
    assert places([ASK, call, said_, ASK], "responses") == [(1, 0, "responses.R1")]
    assert places([ASK, output, said_, ASK], "responses") == [(1, 0, "responses.R2")]
