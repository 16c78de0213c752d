"""OpenAI chat completions <-> the message model: each role, content part and tool-call form,
each error, and the shapes written for messages from other formats."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

import pytest

from synopsis.errors import ConversationError
from synopsis.formats import anthropic, openai_chat, responses
from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.validation import repair


def one(item: dict[str, Any]) -> Message:
    (message,) = openai_chat.decode([item])
    assert openai_chat.encode([message]).messages == [item]
    return message


def user_parts(*content: dict[str, Any]) -> tuple[Any, ...]:
    return one({"role": "user", "content": list(content)}).parts


# ---------------------------------------------------------------- decode


@pytest.mark.parametrize("role", ["system", "developer", "user", "assistant"])
def test_roles_with_string_content(role: str) -> None:
    m = one({"role": role, "content": "hi", "name": "ann"})
    assert (m.role, m.parts, m.name) == (Role(role), (TextPart("hi"),), "ann")


def test_content_forms_come_back() -> None:
    assert one({"role": "assistant", "content": None}).parts == ()
    assert one({"role": "assistant"}).wire["content"] == "absent"
    assert one({"role": "user", "content": []}).parts == ()


def test_content_parts() -> None:
    got = user_parts(
        {"type": "text", "text": "look", "x_meta": 1},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "high"}},
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "mp3"}},
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64,JVBER", "filename": "a.pdf"},
        },
        {"type": "file", "file": {"file_id": "file-1"}},
    )
    assert got[0] == TextPart("look", {"x_meta": 1})
    assert got[1] == MediaPart(
        "image", url="https://x.test/a.png", extra={"image_url": {"detail": "high"}}
    )
    assert (got[2].kind, got[2].data, got[2].media_type) == ("audio", "UklG", "audio/mp3")
    assert (got[3].kind, got[3].filename) == ("file", "a.pdf")
    assert got[4].extra == {"file": {"file_id": "file-1"}}


def test_optional_media_fields_may_be_missing_or_null() -> None:
    user_parts({"type": "input_audio", "input_audio": {}})
    user_parts({"type": "input_audio", "input_audio": {"data": None, "format": None}})
    user_parts({"type": "file", "file": {"file_data": None}})


def test_refusal_and_unknown_parts_are_opaque() -> None:
    m = one(
        {
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "no"}, {"type": "future", "text": None}],
        }
    )
    assert m.parts == (
        OpaquePart("refusal", {"type": "refusal", "refusal": "no"}, "no"),
        OpaquePart("future", {"type": "future", "text": None}, ""),
    )


def test_tool_calls_function_and_custom() -> None:
    item = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
            {"id": "c2", "type": "custom", "custom": {"name": "patch", "input": "*** Begin"}},
            {"id": "c3", "function": {"name": "g", "arguments": "{}"}},
            {"id": "c4", "type": "function", "function": {"name": "h"}},
            {"id": "c5", "type": "function", "function": {"name": "m", "arguments": {"k": 1}}},
        ],
    }
    calls = one(item).tool_calls
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("c1", "f", '{"a": 1}'),
        ("c2", "patch", "*** Begin"),
        ("c3", "g", "{}"),
        ("c4", "h", ""),
        ("c5", "m", {"k": 1}),
    ]


def test_empty_and_null_tool_calls_come_back() -> None:
    assert one({"role": "assistant", "content": "x", "tool_calls": []}).tool_calls == ()
    assert one({"role": "assistant", "content": "x", "tool_calls": None}).extra == {
        "tool_calls": None
    }


def test_legacy_function_call_and_function_message() -> None:
    call = one(
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}
    )
    assert call.tool_calls == (ToolCallPart("function:f", "f", "{}"),)
    result = one({"role": "function", "name": "f", "content": "out"})
    assert result.role is Role.TOOL
    assert result.parts == (ToolResultPart("function:f", "out", name="f"),)
    one({"role": "function", "name": "f", "content": None})


def test_tool_messages() -> None:
    m = one({"role": "tool", "tool_call_id": "c1", "content": "done", "name": "f"})
    assert m.parts == (ToolResultPart("c1", "done", name="f"),)
    parts = one(
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}]}
    ).parts
    assert parts == (ToolResultPart("c1", (TextPart("a"),)),)
    assert one({"role": "tool", "tool_call_id": "c1", "content": None}).parts == (
        ToolResultPart("c1", ""),
    )
    assert one({"role": "tool", "tool_call_id": "c1"}).parts == (ToolResultPart("c1", ""),)


def test_unknown_message_keys_are_kept() -> None:
    m = one({"role": "assistant", "content": "x", "refusal": None, "audio": {"id": "a"}})
    assert m.extra == {"refusal": None, "audio": {"id": "a"}}


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("items", "index", "rule"),
    [
        ("hello", None, "history.type"),
        ({"messages": []}, None, "history.type"),
        ([None], 0, "message.type"),
        ([{"content": "x"}], 0, "message.role"),
        ([{"role": "model", "content": "x"}], 0, "message.role"),
        ([{"role": "user", "content": 3}], 0, "message.content"),
        ([{"role": "user", "content": ["x"]}], 0, "message.type"),
        ([{"role": "user", "content": [{"text": "x"}]}], 0, "message.content"),
        ([{"role": "user", "content": [{"type": "text"}]}], 0, "message.content"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            0,
            "message.content",
        ),
        ([{"role": "user", "content": [{"type": "image_url"}]}], 0, "message.type"),
        (
            [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": 1}}]}],
            0,
            "message.content",
        ),
        ([{"role": "user", "content": "x", "name": 5}], 0, "message.name"),
        ([{"role": "tool", "content": "x"}], 0, "tool.call_id"),
        (
            [{"role": "tool", "tool_call_id": "c", "content": [{"type": "refusal"}]}],
            0,
            "message.content",
        ),
        ([{"role": "function", "content": "x"}], 0, "function.name"),
        ([{"role": "assistant", "tool_calls": {}}], 0, "tool_calls.type"),
        ([{"role": "assistant", "tool_calls": ["x"]}], 0, "message.type"),
        ([{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}], 0, "tool_call.id"),
        ([{"role": "assistant", "tool_calls": [{"id": "c", "type": "web"}]}], 0, "tool_call.type"),
        ([{"role": "assistant", "tool_calls": [{"id": "c", "function": "f"}]}], 0, "message.type"),
        ([{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}], 0, "tool_call.name"),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": 1}}],
                }
            ],
            0,
            "tool_call.arguments",
        ),
        ([{"role": "assistant", "function_call": "f"}], 0, "message.type"),
        ([{"role": "assistant", "function_call": {"arguments": "{}"}}], 0, "tool_call.name"),
        ([{"role": "assistant", "function_call": {"name": "f"}}], 0, "tool_call.arguments"),
        (
            [{"role": "user", "content": "ok"}, {"role": "user", "content": {}}],
            1,
            "message.content",
        ),
    ],
)
def test_bad_input_names_index_and_rule(items: Any, index: int | None, rule: str) -> None:
    with pytest.raises(ConversationError) as caught:
        openai_chat.decode(items)
    assert (caught.value.index, caught.value.rule) == (index, rule)


# ---------------------------------------------------------------- encode from elsewhere


def test_messages_from_elsewhere_get_the_plainest_shape() -> None:
    messages = [
        Message(Role.SYSTEM, (TextPart("sys", {"cache_control": {"type": "ephemeral"}}),)),
        Message(
            Role.ASSISTANT,
            (ReasoningPart("t", signature="s"), ToolCallPart("t1", "f", {"a": 1})),
        ),
        Message(
            Role.USER,
            (ToolResultPart("t1", "r1"), TextPart("more"), ReasoningPart("stray")),
        ),
        Message(Role.USER, ()),
        Message(Role.ASSISTANT, ()),
        Message(Role.USER, (TextPart("a"), TextPart("b"))),
    ]
    assert openai_chat.encode(messages).messages == [
        {"role": "system", "content": "sys"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
            ],
        },
        {"role": "tool", "content": "r1", "tool_call_id": "t1"},
        {"role": "user", "content": "more"},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": None},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]


def test_media_from_elsewhere() -> None:
    parts = (
        MediaPart("image", media_type="image/jpeg", data="/9j/"),
        MediaPart("image"),
        MediaPart("audio", data="UklG"),
        MediaPart("audio", media_type="audio/mp3", data="UklG"),
        MediaPart("audio", url="https://x.test/a.mp3"),
        MediaPart("document", media_type="application/pdf", data="JVBER", filename="a.pdf"),
        MediaPart("file", data="data:application/pdf;base64,JVBER"),
        MediaPart("document", url="https://x.test/a.pdf"),
        MediaPart("video", data="AAAA"),
        OpaquePart("server_tool_use", {}, ""),
    )
    (out,) = openai_chat.encode([Message(Role.USER, parts)]).messages
    assert out["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
        {"type": "text", "text": "[image: image]"},
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "mp3"}},
        {"type": "text", "text": "[audio: https://x.test/a.mp3]"},
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64,JVBER", "filename": "a.pdf"},
        },
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBER"}},
        {"type": "text", "text": "[document: https://x.test/a.pdf]"},
        {"type": "text", "text": "[video: video]"},
        {"type": "text", "text": "[server_tool_use]"},
    ]


def test_results_with_parts_from_elsewhere() -> None:
    message = Message(
        Role.USER, (ToolResultPart("t", (TextPart("a"), MediaPart("image", url="u"))),)
    )
    assert openai_chat.encode([message]).messages == [
        {
            "role": "tool",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image_url", "image_url": {"url": "u"}},
            ],
            "tool_call_id": "t",
        }
    ]


def test_edited_own_messages() -> None:
    (call,) = openai_chat.decode(
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}],
            }
        ]
    )
    edited = dataclasses.replace(call, parts=(ToolCallPart("c", "f", '{"x": 1}'),))
    (out,) = openai_chat.encode([edited]).messages
    assert out["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"x": 1}'}
    (tool,) = openai_chat.decode([{"role": "tool", "tool_call_id": "c"}])
    cut = dataclasses.replace(tool, parts=(ToolResultPart("c", "[cut]"),))
    assert openai_chat.encode([cut]).messages == [
        {"role": "tool", "content": "[cut]", "tool_call_id": "c"}
    ]
    (legacy,) = openai_chat.decode(
        [{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}]
    )
    mapped = dataclasses.replace(legacy, parts=(ToolCallPart("function:f", "f", {"a": 1}),))
    assert openai_chat.encode([mapped]).messages[0]["function_call"] == {
        "name": "f",
        "arguments": '{"a":1}',
    }
    (audio,) = openai_chat.decode([{"role": "user", "content": []}])
    added = dataclasses.replace(audio, parts=(MediaPart("audio"),))
    assert openai_chat.encode([added]).messages[0]["content"] == [
        {"type": "input_audio", "input_audio": {}}
    ]


# ---------------------------------------------------------------- tool_calls, legacy calls, ids


def _call(call_id: str, name: str = "f") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_tool_calls_emptied_later_are_left_out() -> None:
    (m,) = openai_chat.decode([{"role": "assistant", "content": "x", "tool_calls": [_call("c")]}])
    dropped = dataclasses.replace(m, parts=tuple(p for p in m.parts if p not in m.tool_calls))
    assert openai_chat.encode([dropped]).messages == [{"role": "assistant", "content": "x"}]
    # a literal empty list is the caller's own, and comes back
    one({"role": "assistant", "content": "x", "tool_calls": []})


def test_repair_dropping_a_dangling_call_leaves_no_empty_tool_calls() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x", "tool_calls": [_call("c1")]},
        {"role": "user", "content": "next"},
    ]
    fixed = repair(history, "openai", dangling="drop")
    assert list(fixed) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": "next"},
    ]


def test_a_real_call_with_the_legacy_id_is_not_taken_for_the_legacy_call() -> None:
    item = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "h", "arguments": "{}"},
        "tool_calls": [_call("function:h", "g"), _call("function:f", "g")],
    }
    answer = {"role": "function", "name": "h", "content": "out"}
    (call, result) = openai_chat.decode([item, answer])
    assert openai_chat.encode([call, result]).messages == [item, answer]
    ids = [c.call_id for c in call.tool_calls]
    assert ids[:2] == ["function:h", "function:f"]
    assert ids[2] not in ids[:2]  # the legacy call's own id, which its answer carries
    assert result.tool_results[0].call_id == ids[2]
    # without the legacy call, the real ones stay tool calls
    real = dataclasses.replace(call, parts=call.tool_calls[:2])
    (out,) = openai_chat.encode([real]).messages
    assert out == {k: v for k, v in item.items() if k != "function_call"}


def test_a_custom_key_on_a_function_call_is_only_an_extra() -> None:
    call = {**_call("c"), "custom": 5}
    m = one({"role": "assistant", "content": None, "tool_calls": [call]})
    assert m.tool_calls[0].name == "f"
    assert m.tool_calls[0].extra["custom"] == 5


@pytest.mark.parametrize(
    "item",
    [
        {"role": "user", "content": "x", "id": "u1"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c")], "id": "a1"},
        {"role": "tool", "tool_call_id": "c", "content": "out", "id": "t1"},
        {"role": "function", "name": "f", "content": "out", "id": "f1"},
    ],
)
def test_a_callers_string_id_becomes_the_message_id(item: dict[str, Any]) -> None:
    m = one(item)
    assert m.id == item["id"]
    assert "id" not in m.extra


def test_an_id_that_is_not_a_string_stays_an_extra() -> None:
    m = one({"role": "user", "content": "x", "id": 7})
    assert (m.id, dict(m.extra)) == (None, {"id": 7})


def test_ids_of_other_formats_are_not_written_into_chat_messages() -> None:
    (item,) = responses.decode([{"type": "message", "id": "msg_1", "role": "user", "content": "x"}])
    assert openai_chat.encode([item]).messages == [{"role": "user", "content": "x"}]
    (own,) = anthropic.decode([{"role": "user", "content": "x", "id": "m1"}])
    assert openai_chat.encode([own]).messages == [{"role": "user", "content": "x"}]


def test_notes_past_the_kept_shapes_are_still_each_message_s_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(openai_chat, "_NOTES", {})
    monkeypatch.setattr(openai_chat, "_NOTES_KEPT", 1)
    items = [
        {"role": "assistant", "content": None, "function_call": {"name": f"f{n}", "arguments": ""}}
        for n in range(3)
    ]
    messages = openai_chat.decode(items)
    assert [m.wire["legacy_id"] for m in messages] == ["function:f0", "function:f1", "function:f2"]
    assert len(openai_chat._NOTES) == 1
    assert openai_chat.encode(messages).messages == items


def test_an_item_that_is_a_mapping_but_not_a_dict_decodes_like_one() -> None:
    item = {"role": "user", "content": "hi", "x": 1}
    assert openai_chat.decode([MappingProxyType(item)]) == openai_chat.decode([item])
