"""FixedCounter: counts a test can work out by hand."""

from __future__ import annotations

import pytest

from synopsis import Compactor, decode
from synopsis.errors import ConfigurationError
from synopsis.testing import FixedCounter, conversation, tool_call, user
from synopsis.testing import assistant as assistant_item
from synopsis.tokens import TokenCounter

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


def test_per_message() -> None:
    counter = FixedCounter(per_message=100)
    messages = decode(conversation(turns=3)).messages
    assert isinstance(counter, TokenCounter)
    assert counter.count_text("any text at all") == 0
    assert counter.count_messages(messages) == 100 * len(messages) == 1_300
    assert counter.count_messages(messages, tools=TOOLS) == 1_300


def test_per_characters_rounds_up() -> None:
    counter = FixedCounter(chars_per_token=4)
    assert [counter.count_text("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]
    (message,) = decode([user("12345678")]).messages
    assert counter.count_message(message) == 2
    assert counter.count_messages([]) == 0


def test_both_and_tool_definitions() -> None:
    counter = FixedCounter(10, chars_per_token=1)
    item = assistant_item(calls=[tool_call("c1", "ls", {})])
    (message,) = decode([item]).messages
    assert counter.count_message(message) == 10 + len("ls({})")
    tools = len('[{"type": "function", "function": {"name": "read_file", "parameters": {}}}]')
    assert counter.count_messages([message], tools=TOOLS) == 10 + len("ls({})") + tools
    assert repr(counter) == "FixedCounter(per_message=10, chars_per_token=1)"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs per_message or chars_per_token"),
        ({"per_message": -1}, "per_message must be an int >= 0"),
        ({"per_message": True}, "per_message must be an int >= 0"),
        ({"per_message": 1.5}, "per_message must be an int >= 0"),
        ({"chars_per_token": 0}, "chars_per_token must be an int >= 1"),
        ({"chars_per_token": False}, "chars_per_token must be an int >= 1"),
        ({"chars_per_token": 2.5}, "chars_per_token must be an int >= 1"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        FixedCounter(**options)  # type: ignore[arg-type]


def test_where_a_compaction_triggers_follows_from_the_numbers() -> None:
    # 100 tokens a message; 4 messages a turn, one system prompt: 20 turns are 8,100 tokens.
    compactor = Compactor(
        model="gpt-4o", context_window=10_000, counter=FixedCounter(per_message=100), environ={}
    )
    under = compactor.compact(conversation(turns=15))
    assert (under.code, under.tokens_before) == ("under-trigger", 6_100)
    over = compactor.compact(conversation(turns=20))
    assert (over.code, over.tokens_before) == ("triggered", 8_100)
    assert over.tokens_after == 100 * len(over.messages)
