"""The builders: OpenAI Chat Completions messages, and a coding session of any length."""

from __future__ import annotations

import json

import pytest

from synopsis import decode, encode, validate
from synopsis.errors import ConfigurationError
from synopsis.messages import Role
from synopsis.testing import (
    assistant,
    conversation,
    system,
    tool_call,
    tool_result,
    user,
)


def test_the_messages() -> None:
    call = tool_call("c1", "read_file", {"path": "a.py"})
    assert call == {
        "id": "c1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }
    assert tool_call("c2", "ls")["function"]["arguments"] == "{}"
    assert tool_call("c3", "ls", '{"all":true}')["function"]["arguments"] == '{"all":true}'
    assert assistant("done") == {"role": "assistant", "content": "done"}
    assert assistant(calls=[call]) == {"role": "assistant", "content": None, "tool_calls": [call]}
    assert tool_result("c1", "print(1)") == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "print(1)",
    }
    history = [system("Be brief."), user("Read a.py"), assistant(calls=[call])]
    history.append(tool_result("c1", "print(1)"))
    assert validate(history, "openai") == []
    roles = [m.role for m in decode(history).messages]
    assert roles == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL]


def test_a_conversation_with_tool_calls() -> None:
    items = conversation(turns=3, result_chars=1_000)
    assert len(items) == 1 + 3 * 4
    assert items[0] == system("You are a coding agent.")
    assert items[1] == user("Step 1: what does parse_1 in src/module_1.py do?")
    assert items[2]["tool_calls"][0]["id"] == "call_1"
    assert json.loads(items[2]["tool_calls"][0]["function"]["arguments"]) == {
        "path": "src/module_1.py"
    }
    assert all(len(item["content"]) == 1_000 for item in items if item["role"] == "tool")
    assert items[3]["content"].startswith("def parse_1(line):")
    assert items[-1] == assistant("parse_3 in src/module_3.py splits a line on commas (step 3).")
    assert validate(items, "openai") == []
    assert conversation(turns=3, result_chars=1_000) == items


def test_a_conversation_in_other_shapes() -> None:
    plain = conversation(turns=2, tool_calls=False, system_prompt=None)
    assert [item["role"] for item in plain] == ["user", "assistant"] * 2
    assert conversation(turns=0) == [system("You are a coding agent.")]
    short = conversation(turns=1, result_chars=10)
    assert short[3]["content"] == "def parse_"
    wire = encode(decode(conversation(turns=2)).messages, "anthropic")
    assert wire.system == "You are a coding agent."
    assert validate(wire.messages, "anthropic", system=wire.system) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"turns": -1}, "turns must be an int >= 0"),
        ({"turns": True}, "turns must be an int >= 0"),
        ({"result_chars": -5}, "result_chars must be an int >= 0"),
        ({"result_chars": 2.0}, "result_chars must be an int >= 0"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        conversation(**options)  # type: ignore[arg-type]
