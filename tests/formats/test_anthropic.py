"""Anthropic Messages <-> the message model: each block type, the top-level system prompt, each
error, and the shapes written for messages from other formats."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from synopsis.errors import ConversationError
from synopsis.formats import anthropic, openai_chat
from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    thaw,
)


def blocks(role: str, *content: dict[str, Any]) -> Message:
    """Decode one message of ``content`` blocks, checking that it comes back equal."""
    item = {"role": role, "content": list(content)}
    (message,) = anthropic.decode([item])
    assert anthropic.encode([message]).messages == [item]
    return message


# ---------------------------------------------------------------- decode


def test_string_content() -> None:
    (m,) = anthropic.decode([{"role": "user", "content": "hi"}])
    assert (m.role, m.parts, m.wire["content"]) == (Role.USER, (TextPart("hi"),), "string")


def test_text_keeps_citations_and_cache_control() -> None:
    block = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}, "citations": []}
    m = blocks("assistant", block)
    assert m.parts == (TextPart("x", {"cache_control": {"type": "ephemeral"}, "citations": []}),)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
            MediaPart(
                "image", media_type="image/png", data="iVBOR", extra={"source": {"type": "base64"}}
            ),
        ),
        (
            {"type": "url", "url": "https://x.test/a.png"},
            MediaPart("image", url="https://x.test/a.png", extra={"source": {"type": "url"}}),
        ),
        (
            {"type": "file", "file_id": "file_1"},
            MediaPart("image", extra={"source": {"type": "file", "file_id": "file_1"}}),
        ),
    ],
)
def test_image_sources(source: dict[str, Any], expected: MediaPart) -> None:
    assert blocks("user", {"type": "image", "source": source}).parts == (expected,)


def test_document_keeps_title_and_source() -> None:
    block = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "words"},
        "title": "Notes",
        "citations": {"enabled": True},
    }
    (part,) = blocks("user", block).parts
    assert isinstance(part, MediaPart)
    assert (part.kind, part.media_type, part.data) == ("document", "text/plain", "words")
    blocks("user", {"type": "document", "source": {"type": "content", "content": []}})


def test_tool_use_and_result() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}}
    assert blocks("assistant", use).parts == (ToolCallPart("toolu_1", "bash", {"cmd": "ls"}),)
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out", "is_error": True}
    m = blocks("user", result, {"type": "text", "text": "next"})
    assert m.role is Role.USER  # results stay in the user message
    assert m.parts == (ToolResultPart("toolu_1", "out", is_error=True), TextPart("next"))


def test_tool_result_content_forms() -> None:
    (absent,) = blocks("user", {"type": "tool_result", "tool_use_id": "a"}).parts
    assert absent == ToolResultPart("a", "")
    (empty,) = blocks("user", {"type": "tool_result", "tool_use_id": "a", "content": ""}).parts
    assert empty == ToolResultPart("a", "")
    listed = {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": [
            {"type": "text", "text": "t"},
            {"type": "image", "source": {"type": "url", "url": "https://x.test/i.png"}},
        ],
        "is_error": False,
    }
    (part,) = blocks("user", listed).parts
    assert isinstance(part, ToolResultPart)
    assert part.content[0] == TextPart("t")
    assert part.extra == {"is_error": False}


def test_tool_result_with_search_results_is_kept_whole() -> None:
    content = [
        {"type": "text", "text": "see"},
        {
            "type": "search_result",
            "source": "s",
            "title": "t",
            "content": [{"type": "text", "text": "hit"}],
        },
    ]
    (part,) = blocks("user", {"type": "tool_result", "tool_use_id": "a", "content": content}).parts
    assert isinstance(part, ToolResultPart)
    assert part.content == "see\nhit"


def test_thinking_and_redacted_thinking() -> None:
    m = blocks(
        "assistant",
        {"type": "thinking", "thinking": "hmm", "signature": "EqQB"},
        {"type": "redacted_thinking", "data": "EmwK"},
        {"type": "thinking", "thinking": "unsigned", "signature": None},
    )
    assert m.parts[:2] == (
        ReasoningPart("hmm", signature="EqQB"),
        ReasoningPart(redacted=True, encrypted="EmwK"),
    )
    assert m.parts[2] == ReasoningPart("unsigned", extra={"signature": None})


@pytest.mark.parametrize(
    "block",
    [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "code_execution_tool_result", "tool_use_id": "s", "content": {"stdout": "1"}},
        {
            "content": [{"type": "web_fetch_result", "url": "https://x.test"}],
            "tool_use_id": "srvtoolu_2",
            "type": "web_fetch_tool_result",
        },
        {
            "id": "mcptoolu_1",
            "input": {"path": "a"},
            "name": "read",
            "server_name": "files",
            "type": "mcp_tool_use",
        },
        {
            "type": "mcp_tool_result",
            "tool_use_id": "mcptoolu_1",
            "is_error": False,
            "content": [{"type": "text", "text": "file body"}],
        },
        {"type": "search_result", "source": "s", "title": "t", "content": []},
        {"type": "container_upload", "file_id": "f"},
        {"type": "compaction", "content": "summary so far"},
        {
            "content": "summary so far",
            "encrypted_content": None,
            "signature": "EuYBCkQY",
            "tool_changes": [{"type": "tool_addition", "name": "grep"}],
            "type": "compaction",
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "compaction", "content": None},
        {"type": "brand_new", "text": "shown"},
    ],
)
def test_server_and_unknown_blocks_are_opaque(block: dict[str, Any]) -> None:
    (part,) = blocks("assistant", block).parts
    assert isinstance(part, OpaquePart)
    assert (part.kind, thaw(part.raw)) == (block["type"], block)
    (message,) = anthropic.encode([blocks("assistant", block)]).messages
    assert json.dumps(message["content"]) == json.dumps([block])  # the same bytes
    if block["type"] == "compaction":
        assert part.text == ("summary so far" if block["content"] else "")


def test_unknown_message_keys_are_kept() -> None:
    item = {"role": "user", "content": "x", "x_meta": {"a": 1}}
    (m,) = anthropic.decode([item])
    assert m.extra == {"x_meta": {"a": 1}}
    assert anthropic.encode([m]).messages == [item]


# ---------------------------------------------------------------- system


@pytest.mark.parametrize(
    "system",
    [
        None,
        "be brief",
        "",
        [],
        [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}],
    ],
)
def test_system_round_trips_in_its_own_form(system: Any) -> None:
    items = [{"role": "user", "content": "hi"}]
    decoded = anthropic.decode(items, system=system)
    assert len(decoded) == (1 if system is None else 2)
    if system is not None:
        assert decoded[0].role is Role.SYSTEM
    wire = anthropic.encode(decoded)
    assert (wire.messages, wire.system) == (items, system)


def test_system_messages_inside_the_list_stay_there() -> None:
    items = [
        {"role": "system", "content": "inline first"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "mid"},
    ]
    decoded = anthropic.decode(items, system="top")
    assert [m.role for m in decoded] == [Role.SYSTEM, Role.SYSTEM, Role.USER, Role.SYSTEM]
    wire = anthropic.encode(decoded)
    assert (wire.messages, wire.system) == (items, "top")


def test_foreign_leading_system_and_developer_messages_are_lifted() -> None:
    chat = [
        {"role": "system", "content": "one"},
        {"role": "developer", "content": "two"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "late"},
    ]
    wire = anthropic.encode(openai_chat.decode(chat))
    assert wire.system == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert wire.messages == [
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "late"},
    ]
    single = anthropic.encode(openai_chat.decode(chat[:1] + chat[2:3]))
    assert single.system == "one"
    blank = Message(Role.SYSTEM, (TextPart(""), ReasoningPart("x")))
    assert anthropic.encode([blank]).system is None


def test_mixed_system_sources_give_a_block_list() -> None:
    (own,) = anthropic.decode([], system="mine")
    foreign = Message(Role.DEVELOPER, (TextPart("theirs"),))
    wire = anthropic.encode([own, foreign])
    assert wire.system == [{"type": "text", "text": "mine"}, {"type": "text", "text": "theirs"}]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("items", "index", "rule"),
    [
        ("x", None, "history.type"),
        ([3], 0, "message.type"),
        ([{"role": "tool", "content": "x"}], 0, "message.role"),
        ([{"role": "user"}], 0, "message.content"),
        ([{"role": "user", "content": {"type": "text"}}], 0, "message.content"),
        ([{"role": "user", "content": ["text"]}], 0, "message.content"),
        ([{"role": "user", "content": [{"text": "x"}]}], 0, "message.content"),
        ([{"role": "user", "content": [{"type": "text"}]}], 0, "message.content"),
        ([{"role": "user", "content": [{"type": "image"}]}], 0, "message.content"),
        (
            [{"role": "user", "content": [{"type": "image", "source": {"data": 1}}]}],
            0,
            "message.content",
        ),
        (
            [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}],
            0,
            "tool_use.id",
        ),
        (
            [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]}],
            0,
            "tool_use.name",
        ),
        (
            [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}],
            0,
            "tool_use.input",
        ),
        ([{"role": "user", "content": [{"type": "tool_result"}]}], 0, "tool_result.tool_use_id"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}],
                }
            ],
            0,
            "tool_result.is_error",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": 5}],
                }
            ],
            0,
            "tool_result.content",
        ),
        ([{"role": "assistant", "content": [{"type": "thinking"}]}], 0, "thinking.thinking"),
        (
            [
                {
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "", "signature": 1}],
                }
            ],
            0,
            "thinking.signature",
        ),
        (
            [{"role": "assistant", "content": [{"type": "redacted_thinking"}]}],
            0,
            "redacted_thinking.data",
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "user", "content": None}],
            1,
            "message.content",
        ),
    ],
)
def test_bad_input_names_index_and_rule(items: Any, index: int | None, rule: str) -> None:
    with pytest.raises(ConversationError) as caught:
        anthropic.decode(items)
    assert (caught.value.index, caught.value.rule) == (index, rule)


@pytest.mark.parametrize(
    ("system", "rule"), [(3, "system.type"), ([{"text": "x"}], "message.content")]
)
def test_bad_system(system: Any, rule: str) -> None:
    with pytest.raises(ConversationError) as caught:
        anthropic.decode([], system=system)
    assert (caught.value.index, caught.value.rule) == (None, rule)


# ---------------------------------------------------------------- encode from elsewhere


def test_openai_tool_messages_become_one_user_message_of_results() -> None:
    chat = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "running",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "oops"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": ""},
    ]
    wire = anthropic.encode(openai_chat.decode(chat))
    assert wire.system is None
    assert wire.messages == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "running"},
                {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}},
                {"type": "tool_use", "id": "c2", "name": "g", "input": {"arguments": "oops"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "r1"},
                {"type": "tool_result", "tool_use_id": "c2"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ]


def test_foreign_results_are_moved_ahead_of_text_and_flag_errors() -> None:
    message = Message(
        Role.USER,
        (
            TextPart("before"),
            ToolResultPart(
                "t", (TextPart("a"), MediaPart("image", url="https://x.test/i.png")), is_error=True
            ),
        ),
    )
    (out,) = anthropic.encode([message]).messages
    assert out["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "t",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "source": {"type": "url", "url": "https://x.test/i.png"}},
            ],
            "is_error": True,
        },
        {"type": "text", "text": "before"},
    ]


def test_foreign_reasoning_and_opaque_parts() -> None:
    message = Message(
        Role.ASSISTANT,
        (
            ReasoningPart("t", encrypted="E"),
            OpaquePart("refusal", {"type": "refusal"}, "no"),
            OpaquePart("x", {}),
        ),
    )
    (out,) = anthropic.encode([message]).messages
    assert out == {
        "role": "assistant",
        "content": [{"type": "text", "text": "no"}, {"type": "text", "text": "[x]"}],
    }
    assert anthropic.encode([Message(Role.ASSISTANT, (ReasoningPart("t"),))]).messages == []


def test_media_from_elsewhere() -> None:
    parts = (
        MediaPart("image", url="data:image/jpeg;base64,/9j/"),
        MediaPart("image", media_type="image/webp", data="UklG"),
        MediaPart("image", data="UklG"),
        MediaPart("image", url="https://x.test/a.png"),
        MediaPart("image", url="gs://bucket/a.png"),
        MediaPart("file", data="data:application/pdf;base64,JVBER", filename="a.pdf"),
        MediaPart("file", data="data:text/csv;base64,YSxi", filename="a.csv"),
        MediaPart("document", media_type="application/pdf", url="https://x.test/a.pdf"),
        MediaPart("document", data="JVBER"),
        MediaPart("audio", data="UklG"),
    )
    (out,) = anthropic.encode([Message(Role.USER, parts)]).messages
    assert out["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "UklG"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "UklG"}},
        {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
        {"type": "text", "text": "[image: gs://bucket/a.png]"},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
        },
        {"type": "text", "text": "[file: a.csv]"},
        {"type": "document", "source": {"type": "url", "url": "https://x.test/a.pdf"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
        },
        {"type": "text", "text": "[audio: audio]"},
    ]


def test_edited_results_are_written_back_as_edited() -> None:
    content = [{"type": "search_result", "source": "s", "title": "t", "content": []}]
    items = [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": content},
                {"type": "tool_result", "tool_use_id": "b"},
            ],
        }
    ]
    (m,) = anthropic.decode(items)
    cut = tuple(
        dataclasses.replace(p, content="[cut]") for p in m.parts if isinstance(p, ToolResultPart)
    )
    (out,) = anthropic.encode([dataclasses.replace(m, parts=cut)]).messages
    assert [b["content"] for b in out["content"]] == ["[cut]", "[cut]"]


def test_own_message_gets_new_parts_in_plain_shape() -> None:
    (m,) = anthropic.decode([{"role": "user", "content": "x"}])
    grown = dataclasses.replace(m, parts=(*m.parts, MediaPart("image", data="AA"), TextPart("")))
    (out,) = anthropic.encode([grown]).messages
    assert out["content"] == [
        {"type": "text", "text": "x"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}},
        {"type": "text", "text": ""},
    ]


# ---------------------------------------------------------------- caller ids


def test_a_callers_string_id_becomes_the_message_id() -> None:
    (m,) = anthropic.decode([{"role": "user", "content": "x", "id": "m1"}])
    assert (m.id, dict(m.extra)) == ("m1", {})
    assert anthropic.encode([m]).messages == [{"role": "user", "content": "x", "id": "m1"}]
    (other,) = anthropic.decode([{"role": "user", "content": "x", "id": None}])
    assert (other.id, dict(other.extra)) == (None, {"id": None})
    assert anthropic.encode([other]).messages == [{"role": "user", "content": "x", "id": None}]


def test_ids_of_other_formats_are_not_written_into_anthropic_messages() -> None:
    (m,) = openai_chat.decode([{"role": "user", "content": "x", "id": "u1"}])
    assert anthropic.encode([m]).messages == [{"role": "user", "content": "x"}]


def test_a_result_without_content_in_a_system_list_comes_back_without_it() -> None:
    system = [{"type": "text", "text": "rules"}, {"type": "tool_result", "tool_use_id": "t"}]
    wire = anthropic.encode(anthropic.decode([], system=system))
    assert wire.system == system
