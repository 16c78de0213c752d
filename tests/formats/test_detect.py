"""``synopsis.formats.detect`` / ``decode`` / ``encode``: each format's lists and request bodies
are named and decoded correctly, ambiguous shapes fall back sensibly, and bad input is named."""

from __future__ import annotations

from typing import Any

import pytest

from synopsis.errors import UnknownFormatError
from synopsis.formats import Wire, decode, detect, encode
from synopsis.messages import Message, Role, TextPart, ToolCallPart, ToolResultPart

OPENAI = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]
RESPONSES = [
    {"role": "developer", "content": "be brief"},
    {"role": "user", "content": "weather?"},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "function_call", "call_id": "c1", "name": "get", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
]
ANTHROPIC = [
    {"role": "user", "content": "weather?"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "get", "input": {}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "sunny"}]},
]
GEMINI = [
    {"role": "user", "parts": [{"text": "weather?"}]},
    {"role": "model", "parts": [{"functionCall": {"name": "get", "args": {}}}]},
    {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get", "response": {"output": "sunny"}}}],
    },
]


def _exchange(messages: tuple[Message, ...]) -> tuple[str, str, str]:
    """(call name, result text, system text) of the sample conversation."""
    call = next(p for m in messages for p in m.parts if isinstance(p, ToolCallPart))
    result = next(p for m in messages for p in m.parts if isinstance(p, ToolResultPart))
    first = messages[0]
    system = first.text if first.role in (Role.SYSTEM, Role.DEVELOPER) else ""
    return call.name, result.text, system


@pytest.mark.parametrize(
    ("data", "fmt", "system"),
    [
        (OPENAI, "openai", "be brief"),
        ({"model": "gpt-4.1", "messages": OPENAI}, "openai", "be brief"),
        (RESPONSES, "responses", "be brief"),
        ({"model": "gpt-5", "input": RESPONSES}, "responses", "be brief"),
        ({"model": "claude", "system": "be brief", "messages": ANTHROPIC}, "anthropic", "be brief"),
        (
            {"system": [{"type": "text", "text": "be brief"}], "messages": ANTHROPIC},
            "anthropic",
            "be brief",
        ),
        (ANTHROPIC, "anthropic", ""),
        (GEMINI, "gemini", ""),
        (
            {"contents": GEMINI, "systemInstruction": {"parts": [{"text": "be brief"}]}},
            "gemini",
            "be brief",
        ),
        (
            {"contents": GEMINI, "system_instruction": {"parts": [{"text": "be brief"}]}},
            "gemini",
            "be brief",
        ),
    ],
)
def test_samples_are_detected_and_decoded(data: Any, fmt: str, system: str) -> None:
    assert detect(data) == fmt
    decoded = decode(data)
    assert decoded.format == fmt
    assert _exchange(decoded.messages) == ("get", "sunny", system)


def test_request_body_round_trips_through_decode_and_encode() -> None:
    body = {"system": "be brief", "messages": ANTHROPIC}
    wire = encode(decode(body).messages, "anthropic")
    assert (wire.messages, wire.system) == (ANTHROPIC, "be brief")
    body = {"contents": GEMINI, "systemInstruction": "be brief"}
    wire = encode(decode(body).messages, "gemini")
    assert (wire.messages, wire.system) == (GEMINI, "be brief")
    assert encode(decode(RESPONSES).messages, "responses").messages == RESPONSES
    assert encode(decode(OPENAI).messages, "openai").messages == OPENAI


def test_responses_string_input_is_one_user_message() -> None:
    decoded = decode({"model": "gpt-5", "input": "hello"})
    assert decoded.format == "responses"
    assert decoded.messages == (Message(Role.USER, (TextPart("hello"),)),)


def test_system_passed_separately() -> None:
    decoded = decode(ANTHROPIC, "anthropic", system="sys")
    assert decoded.messages[0].text == "sys"
    decoded = decode(GEMINI, "gemini", system="sys")
    assert decoded.messages[0].text == "sys"


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        # a Responses input usually opens with easy-input system/developer messages
        (
            [
                {"role": "system", "content": "s"},
                {"type": "function_call_output", "call_id": "c", "output": ""},
            ],
            "responses",
        ),
        ([{"role": "user", "content": [{"type": "input_text", "text": "x"}]}], "responses"),
        ([{"type": "shell_call_output", "call_id": "c", "output": []}], "responses"),
        ([{"type": "future_tool_call", "call_id": "c"}], "responses"),
        # input_audio and refusal parts have the same shape in chat completions
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}
                    ],
                },
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
            ],
            "openai",
        ),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
            "openai",
        ),
        ([{"role": "assistant", "function_call": {"name": "f", "arguments": ""}}], "openai"),
        ([{"role": "function", "name": "f", "content": ""}], "openai"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "url", "url": "u"}}],
                }
            ],
            "anthropic",
        ),
        (
            [{"role": "user", "content": [{"type": "document", "source": {"type": "text"}}]}],
            "anthropic",
        ),
        (
            [{"role": "assistant", "content": [{"type": "bash_code_execution_tool_result"}]}],
            "anthropic",
        ),
        (
            [
                {
                    "role": "user",
                    "content": ["odd", {"text": "no type"}, {"type": "text", "text": "x"}],
                }
            ],
            "openai",
        ),
        ([{"parts": [{"text": "x"}]}], "gemini"),
        ([{"role": "model", "content": "x"}], "gemini"),
        ([{"role": "user", "content": "x"}], "openai"),
        ({"messages": [{"role": "user", "content": "x"}]}, "openai"),
        ({"system": "s", "messages": [{"role": "user", "content": "x"}]}, "anthropic"),
        ({"messages": [{"role": "user", "content": "x"}], "input": {}}, "openai"),
        ([], "openai"),
        ([Message(Role.USER, (TextPart("x"),))], "synopsis"),
    ],
)
def test_ambiguous_and_telling_shapes(data: Any, fmt: str) -> None:
    assert detect(data) == fmt


@pytest.mark.parametrize(
    ("data", "index"),
    [
        ("a string", None),
        (42, None),
        ({"model": "x"}, None),
        ([1], 0),
        ([{"role": "user", "content": "x"}, "oops"], 1),
        ([{"foo": 1}], None),
    ],
)
def test_unknown_shapes(data: Any, index: int | None) -> None:
    with pytest.raises(UnknownFormatError) as caught:
        detect(data)
    assert (caught.value.index, caught.value.rule) == (index, "format.detect")


def test_synopsis_format() -> None:
    messages = [Message(Role.USER, (TextPart("x"),))]
    assert decode(messages).messages == tuple(messages)
    assert encode(messages, "synopsis") == Wire(messages)  # type: ignore[arg-type]
    with pytest.raises(UnknownFormatError) as caught:
        decode([{"role": "user"}], "synopsis")
    assert (caught.value.index, caught.value.rule) == (0, "message.type")
    with pytest.raises(UnknownFormatError) as caught:
        decode("x", "synopsis")
    assert caught.value.rule == "history.type"


def test_unknown_format_names() -> None:
    with pytest.raises(UnknownFormatError) as caught:
        decode([], "bedrock")  # type: ignore[arg-type]
    assert caught.value.rule == "format.name"
    with pytest.raises(UnknownFormatError):
        encode([], "bedrock")  # type: ignore[arg-type]
