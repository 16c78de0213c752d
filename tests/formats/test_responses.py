"""OpenAI Responses items <-> the message model: each item and content part, each error, and the
shapes written for messages from other formats."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from synopsis.errors import ConversationError
from synopsis.formats import responses
from synopsis.formats._common import hint
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


def one(item: dict[str, Any]) -> Message:
    """The item decoded, after checking it encodes back to the same JSON, its keys in order."""
    (message,) = responses.decode([item])
    back = responses.encode([message]).messages
    assert back == [item]
    assert list(back[0]) == list(item)
    return message


# ---------------------------------------------------------------- decode, item by item


def test_easy_input_message_with_string_content() -> None:
    m = one({"role": "user", "content": "hello"})
    assert m.role is Role.USER
    assert m.parts == (TextPart("hello"),)
    assert m.id is None
    assert m.wire["typed"] is False


def test_typed_message_keeps_id_status_and_annotations() -> None:
    item = {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
    }
    m = one(item)
    assert m.role is Role.ASSISTANT
    assert m.id == "msg_1"
    assert m.extra == {"status": "completed"}
    assert m.parts == (TextPart("hi", {"annotations": []}),)


@pytest.mark.parametrize("role", ["system", "developer", "user", "assistant"])
def test_every_message_role(role: str) -> None:
    assert one({"role": role, "content": "x"}).role is Role(role)


def test_text_type_kept_only_when_unusual_for_the_role() -> None:
    m = one({"role": "assistant", "content": [{"type": "input_text", "text": "a"}]})
    assert m.parts == (TextPart("a", {"type": "input_text"}),)
    m = one({"role": "user", "content": [{"type": "input_text", "text": "a"}]})
    assert m.parts == (TextPart("a"),)


def test_input_image_url_and_file_id() -> None:
    url = "data:image/jpeg;base64,/9j/4AAQ"
    m = one(
        {"role": "user", "content": [{"type": "input_image", "image_url": url, "detail": "low"}]}
    )
    assert m.parts == (
        MediaPart("image", media_type="image/jpeg", url=url, extra={"detail": "low"}),
    )
    m = one(
        {"role": "user", "content": [{"type": "input_image", "file_id": "f", "detail": "auto"}]}
    )
    assert m.parts[0] == MediaPart("image", extra={"file_id": "f", "detail": "auto"})


def test_input_file() -> None:
    block = {
        "type": "input_file",
        "file_data": "data:application/pdf;base64,JVBERi0=",
        "filename": "a.pdf",
        "file_url": "https://x.test/a.pdf",
    }
    (part,) = one({"role": "user", "content": [block]}).parts
    assert part == MediaPart(
        "file",
        media_type="application/pdf",
        url="https://x.test/a.pdf",
        data="data:application/pdf;base64,JVBERi0=",
        filename="a.pdf",
    )


def test_input_audio_nested_and_flat() -> None:
    nested = {"type": "input_audio", "input_audio": {"data": "UklG", "format": "mp3"}}
    (part,) = one({"role": "user", "content": [nested]}).parts
    assert isinstance(part, MediaPart)
    assert (part.kind, part.data, part.media_type) == ("audio", "UklG", "audio/mp3")
    flat = {"type": "input_audio", "data": "UklG", "format": "wav"}
    (part,) = one({"role": "user", "content": [flat]}).parts
    assert isinstance(part, MediaPart)
    assert (part.data, part.media_type, dict(part.extra)) == ("UklG", "audio/wav", {})
    one({"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]})
    one({"role": "user", "content": [{"type": "input_audio", "data": None}]})


def test_refusal_and_unknown_parts_are_opaque() -> None:
    m = one(
        {
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "no"}, {"type": "future", "text": 3}],
        }
    )
    assert m.parts == (
        OpaquePart("refusal", {"type": "refusal", "refusal": "no"}, "no"),
        OpaquePart("future", {"type": "future", "text": 3}, ""),
    )


def test_function_call() -> None:
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "bash",
        "arguments": '{"cmd": "ls"}',
        "status": "completed",
    }
    m = one(item)
    assert m.role is Role.ASSISTANT
    assert m.id == "fc_1"
    assert m.parts == (ToolCallPart("call_1", "bash", '{"cmd": "ls"}'),)
    assert m.extra == {"status": "completed"}


def test_function_call_output_string_and_parts() -> None:
    m = one({"type": "function_call_output", "call_id": "call_1", "output": "done"})
    assert m.role is Role.TOOL
    assert m.parts == (ToolResultPart("call_1", "done"),)
    item = {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [{"type": "input_text", "text": "a"}, {"type": "input_file", "file_id": "f"}],
    }
    (result,) = one(item).parts
    assert isinstance(result, ToolResultPart)
    assert result.content == (TextPart("a"), MediaPart("file", extra={"file_id": "f"}))


def test_reasoning_keeps_summary_content_and_encrypted_content() -> None:
    item = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "plan"}],
        "content": [{"type": "reasoning_text", "text": "think"}],
        "encrypted_content": "gAAAA",
    }
    m = one(item)
    (part,) = m.parts
    assert isinstance(part, ReasoningPart)
    assert (part.text, part.encrypted, m.id) == ("plan\nthink", "gAAAA", "rs_1")
    assert one({"type": "reasoning", "summary": []}).parts == (
        ReasoningPart(extra={"summary": []}),
    )


def test_custom_tool_call_uses_input_as_arguments() -> None:
    m = one({"type": "custom_tool_call", "call_id": "c", "name": "patch", "input": "*** Begin"})
    assert m.parts == (ToolCallPart("c", "patch", "*** Begin"),)


def test_payload_calls_take_their_fields_as_arguments() -> None:
    item = {
        "type": "shell_call",
        "id": "sh_1",
        "call_id": "c",
        "action": {"commands": ["ls"]},
        "status": "completed",
    }
    m = one(item)
    assert m.parts == (ToolCallPart("c", "shell_call", {"action": {"commands": ["ls"]}}),)
    assert m.extra == {"status": "completed"}
    named = {"type": "apply_patch_call", "call_id": "c", "name": "p", "arguments": {"a": 1}}
    assert one(named).parts == (ToolCallPart("c", "p", {"a": 1}),)


def test_structured_outputs_are_rendered_and_kept() -> None:
    shot = {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"}
    m = one({"type": "computer_call_output", "call_id": "c", "output": shot})
    (result,) = m.parts
    assert isinstance(result, ToolResultPart)
    assert result.text.startswith('{"type": "computer_screenshot"')
    records = [{"stdout": "a", "stderr": ""}]
    one({"type": "shell_call_output", "call_id": "c", "output": records})
    one({"type": "custom_tool_call_output", "call_id": "c", "output": [{"type": "mystery"}]})
    absent = one({"type": "apply_patch_call_output", "call_id": "c", "status": "completed"})
    assert absent.parts == (ToolResultPart("c", ""),)


@pytest.mark.parametrize(
    "item",
    [
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"},
        {"type": "compaction_trigger"},
        {"type": "web_search_call", "id": "ws", "status": "completed"},
        {"type": "local_shell_call_output", "output": "x"},
        {"type": "brand_new_item", "role": "user", "text": "visible"},
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "server_label": "git",
            "name": "log",
            "arguments": "{}",
            "output": "3 commits",
            "error": None,
            "status": "completed",
        },
        {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "git", "tools": []},
        {
            "type": "mcp_approval_request",
            "id": "mcpr_1",
            "server_label": "git",
            "name": "push",
            "arguments": "{}",
        },
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
    ],
)
def test_provider_items_are_kept_verbatim(item: dict[str, Any]) -> None:
    m = one(item)
    (part,) = m.parts
    assert isinstance(part, OpaquePart)
    assert part.kind == item["type"]
    assert thaw(part.raw) == item


def test_a_local_shell_output_answers_the_call_its_id_names() -> None:
    call = {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "call_7",
        "action": {"type": "exec", "command": ["ls", "-a"], "env": {}},
        "status": "completed",
    }
    output = {"type": "local_shell_call_output", "id": "call_7", "output": '{"stdout": "a"}'}
    (asked,) = one(call).parts
    (answer,) = one(output).parts
    assert asked == ToolCallPart("call_7", "local_shell_call", {"action": call["action"]})
    assert answer == ToolResultPart("call_7", '{"stdout": "a"}')
    # a result in another format names its call as every output does
    moved = dataclasses.replace(one(output), wire={})
    assert responses.encode([moved]).messages == [
        {"type": "function_call_output", "call_id": "call_7", "output": '{"stdout": "a"}'}
    ]


@pytest.mark.parametrize(
    "item",
    [
        # as the SDK's model_dump() writes them: fields in the order its types declare
        {"arguments": "{}", "call_id": "c", "name": "f", "type": "function_call", "id": "fc_1"},
        {"call_id": "c", "output": "ok", "type": "function_call_output", "id": "fco_1"},
        {"id": "rs_1", "summary": [], "type": "reasoning", "encrypted_content": "gAAA"},
        {"id": "msg_1", "content": "hi", "role": "assistant", "status": "completed"},
        {"status": "completed", "type": "custom_tool_call", "call_id": "c", "input": "*** Begin"},
        {"output": "Done!", "call_id": "c", "type": "custom_tool_call_output"},
        {
            "action": {"type": "click"},
            "status": "completed",
            "type": "computer_call",
            "call_id": "c",
        },
        {"status": "completed", "output": "{}", "id": "c", "type": "local_shell_call_output"},
    ],
)
def test_items_come_back_with_their_keys_in_order(item: dict[str, Any]) -> None:
    one(item)


def test_keys_that_cannot_be_noted_come_back_in_the_encoders_order() -> None:
    for odd in ("a,b", 3):
        item = {"role": "user", "type": "message", "content": "x", odd: 1}
        (m,) = responses.decode([item])
        assert "keys" not in m.wire
        (back,) = responses.encode([m]).messages
        assert back == item
        assert list(back) == ["type", "role", "content", odd]


def test_keys_the_item_lacked_come_last() -> None:
    (m,) = responses.decode([{"id": "rs_1", "type": "reasoning"}])
    assert responses.encode([m]).messages == [{"id": "rs_1", "type": "reasoning"}]
    # the summary a repair gives back (rule R6) follows what the item had
    wire = {k: v for k, v in m.wire.items() if k != "missing_summary"}
    (back,) = responses.encode([dataclasses.replace(m, wire=wire)]).messages
    assert list(back) == ["id", "type", "summary"]
    # and an id dropped is not written
    (back,) = responses.encode([dataclasses.replace(m, id=None)]).messages
    assert back == {"type": "reasoning"}


def test_opaque_item_roles_and_ids() -> None:
    assert one({"type": "x", "role": "user"}).role is Role.USER
    assert one({"type": "x", "role": "robot"}).role is Role.ASSISTANT
    assert one({"type": "compaction", "id": "cmp"}).id == "cmp"
    # a reference's id names the item it points at, not itself
    assert one({"type": "item_reference", "id": "msg_1"}).id is None


def test_null_id_is_kept_as_an_extra() -> None:
    m = one({"type": "message", "id": None, "role": "user", "content": "x"})
    assert m.id is None
    assert m.extra == {"id": None}


# ---------------------------------------------------------------- errors


_NOT_OBJECTS: list[object] = [5, "UklG", [], True, 1.5]


@pytest.mark.parametrize(
    ("items", "index", "rule"),
    [
        ("nope", None, "history.type"),
        ({"input": []}, None, "history.type"),
        ([1], 0, "message.type"),
        ([{"content": "x"}], 0, "item.type"),
        ([{"type": 3}], 0, "item.type"),
        ([{"role": "tool", "content": "x"}], 0, "message.role"),
        ([{"role": "user"}], 0, "message.content"),
        ([{"role": "user", "content": 7}], 0, "message.content"),
        ([{"role": "user", "content": ["x"]}], 0, "message.content"),
        ([{"role": "user", "content": [{"text": "x"}]}], 0, "message.content"),
        ([{"role": "user", "content": [{"type": "input_text"}]}], 0, "message.content"),
        (
            [{"role": "user", "content": [{"type": "input_image", "image_url": 1}]}],
            0,
            "message.content",
        ),
        ([{"type": "function_call", "name": "f", "arguments": ""}], 0, "function_call.call_id"),
        ([{"type": "function_call", "call_id": "c", "arguments": ""}], 0, "function_call.name"),
        ([{"type": "function_call", "call_id": "c", "name": "f"}], 0, "function_call.arguments"),
        ([{"type": "shell_call", "call_id": "c", "name": 3}], 0, "shell_call.name"),
        ([{"type": "function_call_output", "output": "x"}], 0, "function_call_output.call_id"),
        ([{"type": "function_call_output", "call_id": "c"}], 0, "function_call_output.output"),
        (
            [{"type": "function_call_output", "call_id": "c", "output": [{"type": "refusal"}]}],
            0,
            "function_call_output.output",
        ),
        ([{"type": "function_call_output", "call_id": "c", "output": [3]}], 0, "message.content"),
        *(
            (
                [
                    {"role": "user", "content": "ok"},
                    {"role": "user", "content": [{"type": "input_audio", "input_audio": bad}]},
                ],
                1,
                "message.content",
            )
            for bad in _NOT_OBJECTS
        ),
        ([{"type": "reasoning", "summary": None}], 0, "reasoning.summary"),
        ([{"type": "reasoning", "summary": ["x"]}], 0, "reasoning.summary"),
        ([{"type": "reasoning", "summary": [], "content": "x"}], 0, "reasoning.content"),
        ([{"type": "reasoning", "summary": [], "content": [1]}], 0, "reasoning.content"),
        (
            [{"type": "reasoning", "summary": [], "encrypted_content": 5}],
            0,
            "reasoning.encrypted_content",
        ),
        ([{"role": "user", "content": "ok"}, {"role": "x", "content": ""}], 1, "message.role"),
    ],
)
def test_bad_input_names_index_and_rule(items: Any, index: int | None, rule: str) -> None:
    with pytest.raises(ConversationError) as caught:
        responses.decode(items)
    assert (caught.value.index, caught.value.rule) == (index, rule)


# ---------------------------------------------------------------- encode


def test_messages_from_elsewhere_get_the_plainest_items() -> None:
    messages = [
        Message(Role.SYSTEM, (TextPart("be brief"),)),
        Message(Role.USER, (TextPart("a"), TextPart("b", {"cache_control": {}}))),
        Message(
            Role.ASSISTANT,
            (
                ReasoningPart("hidden", signature="sig"),
                TextPart("calling"),
                ToolCallPart("t1", "f", {"x": 1}),
                ToolCallPart("t2", "g", '{"y": 2}'),
            ),
        ),
        Message(Role.USER, (ToolResultPart("t1", "r1"), ToolResultPart("t2", (TextPart("r2"),)))),
        Message(Role.TOOL, (ToolResultPart("t3", "r3"),)),
        Message(Role.ASSISTANT, (OpaquePart("server_tool_use", {"type": "server_tool_use"}),)),
        Message(Role.USER, ()),
    ]
    assert responses.encode(messages).messages == [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
        },
        {"role": "assistant", "content": "calling"},
        {"type": "function_call", "call_id": "t1", "name": "f", "arguments": '{"x":1}'},
        {"type": "function_call", "call_id": "t2", "name": "g", "arguments": '{"y": 2}'},
        {"type": "function_call_output", "call_id": "t1", "output": "r1"},
        {
            "type": "function_call_output",
            "call_id": "t2",
            "output": [{"type": "input_text", "text": "r2"}],
        },
        {"type": "function_call_output", "call_id": "t3", "output": "r3"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "[server_tool_use]"}]},
        {"role": "user", "content": ""},
    ]


def test_media_from_elsewhere() -> None:
    parts = (
        MediaPart("image", media_type="image/png", data="iVBOR"),
        MediaPart("image", url="https://x.test/a.png"),
        MediaPart("image"),
        MediaPart("audio", media_type="audio/mp3", data="UklG"),
        MediaPart("audio", data="UklG"),
        MediaPart("audio", url="https://x.test/a.mp3"),
        MediaPart("document", media_type="application/pdf", data="JVBER", filename="a.pdf"),
        MediaPart("document", url="https://x.test/a.pdf"),
        MediaPart("file"),
        MediaPart("video", media_type="video/mp4", data="AAAA"),
    )
    (item,) = responses.encode([Message(Role.USER, parts)]).messages
    assert item["content"] == [
        {"type": "input_image", "image_url": "data:image/png;base64,iVBOR", "detail": "auto"},
        {"type": "input_image", "image_url": "https://x.test/a.png", "detail": "auto"},
        {"type": "input_text", "text": "[image: image]"},
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "mp3"}},
        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
        {"type": "input_text", "text": "[audio: https://x.test/a.mp3]"},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,JVBER",
            "filename": "a.pdf",
        },
        {"type": "input_file", "file_url": "https://x.test/a.pdf"},
        {"type": "input_text", "text": "[file: file]"},
        {"type": "input_text", "text": "[video: video/mp4]"},
    ]


def test_own_reasoning_survives_and_foreign_reasoning_is_dropped() -> None:
    own = responses.decode([{"type": "reasoning", "summary": [], "encrypted_content": "E"}])[0]
    mixed = dataclasses.replace(own, parts=(*own.parts, TextPart("after")))
    assert responses.encode([mixed]).messages == [
        {"type": "reasoning", "summary": [], "encrypted_content": "E"},
        {"role": "assistant", "content": "after"},
    ]
    foreign = Message(Role.ASSISTANT, (ReasoningPart("t", encrypted="E"),))
    assert responses.encode([foreign]).messages == []


def test_edited_results_are_written_back_as_edited() -> None:
    items = [
        {"type": "shell_call_output", "call_id": "c", "output": [{"stdout": "long"}]},
        {"type": "function_call_output", "call_id": "d", "output": "long"},
        {"type": "apply_patch_call_output", "call_id": "e"},
    ]
    decoded = responses.decode(items)
    edited = [
        dataclasses.replace(m, parts=(dataclasses.replace(m.tool_results[0], content="[cut]"),))
        for m in decoded
    ]
    assert [i["output"] for i in responses.encode(edited).messages] == ["[cut]"] * 3


def test_payload_call_with_edited_text_arguments() -> None:
    (m,) = responses.decode([{"type": "shell_call", "call_id": "c", "action": {"a": 1}}])
    edited = dataclasses.replace(m, parts=(ToolCallPart("c", "shell_call", "{}"),))
    assert responses.encode([edited]).messages == [
        {"type": "shell_call", "call_id": "c", "arguments": "{}"}
    ]


def test_own_message_whose_parts_no_longer_fit_is_re_encoded() -> None:
    (m,) = responses.decode(
        [{"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}]
    )
    grown = dataclasses.replace(m, parts=(TextPart("note"), *m.parts))
    assert responses.encode([grown]).messages == [
        {"role": "assistant", "content": "note"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""},
    ]
    (msg,) = responses.decode([{"role": "user", "content": "x"}])
    with_call = dataclasses.replace(msg, parts=(ToolCallPart("c", "f", ""),))
    assert responses.encode([with_call]).messages == [
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    ]
    bare = Message(Role.USER, (TextPart("x"),), wire={"format": "responses"})
    assert responses.encode([bare]).messages == [{"role": "user", "content": "x"}]


def test_own_media_parts_added_later() -> None:
    (m,) = responses.decode([{"role": "user", "content": []}])
    added = dataclasses.replace(
        m, parts=(MediaPart("image", data="AA"), MediaPart("audio", data="UklG"))
    )
    assert responses.encode([added]).messages[0]["content"] == [
        {"type": "input_image", "image_url": "data:application/octet-stream;base64,AA"},
        {"type": "input_audio", "data": "UklG"},
    ]


def test_input_audio_with_null_nested_value_keeps_it() -> None:
    """A null ``input_audio`` beside flat fields is kept as it is; encoding it must not fail."""
    item = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_audio", "input_audio": None, "data": "AAA", "format": "wav"}],
    }
    m = one(item)
    assert m.parts == (
        MediaPart("audio", media_type="audio/wav", data="AAA", extra={"input_audio": None}),
    )


# ---------------------------------------------------------------- reasoning without summary


def test_reasoning_without_summary_is_noted_and_comes_back_without_it() -> None:
    m = one({"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA"})
    assert m.parts == (ReasoningPart(encrypted="gAAA"),)
    assert hint(m, "responses", "missing_summary") is True
    with_summary = one({"type": "reasoning", "summary": []})
    assert hint(with_summary, "responses", "missing_summary") is None


def test_reasoning_without_the_note_gets_an_empty_summary() -> None:
    (m,) = responses.decode([{"type": "reasoning", "encrypted_content": "gAAA"}])
    noted = dict(m.wire)
    del noted["missing_summary"]
    unnoted = dataclasses.replace(m, wire=noted)
    assert responses.encode([unnoted]).messages == [
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
    ]
    built = Message(
        Role.ASSISTANT,
        (ReasoningPart(encrypted="gAAA"),),
        wire={"format": "responses", "item": "reasoning"},
    )
    assert responses.encode([built]).messages == [
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
    ]
