"""Gemini contents <-> the message model: each part kind, both key spellings, the derived call
ids, systemInstruction, each error, and the shapes written for messages from other formats."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConversationError
from synopsis.formats import gemini, openai_chat
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
from tests.formats import strategies as ws


def same(items: list[dict[str, Any]], system: Any = None) -> tuple[Message, ...]:
    decoded = gemini.decode(items, system=system)
    wire = gemini.encode(decoded)
    assert (wire.messages, wire.system) == (items, system)
    return decoded


def parts(role: str, *content: dict[str, Any]) -> tuple[Any, ...]:
    (m,) = same([{"role": role, "parts": list(content)}])
    return m.parts


# ---------------------------------------------------------------- decode


def test_roles() -> None:
    user, model, bare = same(
        [{"role": "user", "parts": []}, {"role": "model", "parts": []}, {"parts": []}]
    )
    assert (user.role, model.role, bare.role) == (Role.USER, Role.ASSISTANT, Role.USER)
    (empty,) = same([{"role": "model"}])
    assert empty.parts == ()


def test_text_thought_and_signatures() -> None:
    got = parts(
        "model",
        {"text": "plan", "thought": True, "thoughtSignature": "S1"},
        {"text": "answer", "thought_signature": "S2"},
        {"text": "", "thoughtSignature": "S3"},
    )
    assert got[0] == ReasoningPart(
        "plan", signature="S1", extra={"thought": True, "thoughtSignature": "S1"}
    )
    assert got[1] == TextPart("answer", {"thought_signature": "S2"})
    assert got[2] == TextPart("", {"thoughtSignature": "S3"})


@pytest.mark.parametrize("snake", [False, True])
def test_inline_and_file_data_in_either_spelling(snake: bool) -> None:
    inline_key, mime_key = ("inline_data", "mime_type") if snake else ("inlineData", "mimeType")
    file_key, uri_key = ("file_data", "file_uri") if snake else ("fileData", "fileUri")
    image, video = parts(
        "user",
        {inline_key: {mime_key: "image/png", "data": "iVBOR"}},
        {file_key: {mime_key: "video/mp4", uri_key: "gs://b/v.mp4"}, "videoMetadata": {"fps": 1}},
    )
    assert (image.kind, image.media_type, image.data) == ("image", "image/png", "iVBOR")
    assert (video.kind, video.url, video.extra["videoMetadata"]) == (
        "video",
        "gs://b/v.mp4",
        {"fps": 1},
    )


def test_function_call_and_response_with_ids() -> None:
    call, response = same(
        [
            {
                "role": "model",
                "parts": [{"functionCall": {"id": "fc1", "name": "f", "args": {"a": 1}}}],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "fc1", "name": "f", "response": {"output": "ok"}}}
                ],
            },
        ]
    )
    assert call.parts == (
        ToolCallPart(
            "fc1", "f", {"a": 1}, {"functionCall": {"id": "fc1", "name": "f", "args": {"a": 1}}}
        ),
    )
    (result,) = response.parts
    assert isinstance(result, ToolResultPart)
    assert (result.call_id, result.content, result.name, result.is_error) == (
        "fc1",
        "ok",
        "f",
        False,
    )
    assert "synth_ids" not in call.wire


def test_missing_ids_are_derived_so_calls_and_responses_pair() -> None:
    call, response = same(
        [
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "f", "args": {}}},
                    {"function_call": {"name": "ns.g"}},
                    {"functionCall": {"name": "f", "args": {"n": 2}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "f", "response": {"result": "1"}}},
                    {"functionResponse": {"name": "ns.g", "response": {"error": "boom"}}},
                    {"function_response": {"name": "f", "response": {"a": 1, "b": [2]}}},
                ],
            },
        ]
    )
    call_ids = [p.call_id for p in call.tool_calls]
    assert call_ids[0] == gemini.synthetic_call_id(0, "f", 0) == "gemini_0_f_0"
    assert call_ids[2] == "gemini_0_f_1"
    assert call_ids[1].startswith("gemini_0_ns_g_")
    assert call_ids[1].endswith("_0")
    assert [p.call_id for p in response.tool_results] == call_ids
    texts = [(p.content, p.is_error) for p in response.tool_results]
    assert texts == [("1", False), ("boom", True), ('{"a": 1, "b": [2]}', False)]
    assert set(call.wire["synth_ids"]) == set(call_ids)


def test_a_response_without_id_pairs_with_a_call_that_had_one() -> None:
    _, response = same(
        [
            {"role": "model", "parts": [{"functionCall": {"id": "real", "name": "f"}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f"}}]},
        ]
    )
    assert response.tool_results[0].call_id == "real"
    assert response.tool_results[0].content == ""


def test_orphan_response_gets_an_id_of_its_own() -> None:
    (response,) = same([{"role": "user", "parts": [{"functionResponse": {"name": "f"}}]}])
    assert response.tool_results[0].call_id == "gemini_0_f_0"


def test_unknown_parts_are_opaque() -> None:
    got = parts(
        "model",
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        {"thought": True},
        {"somethingNew": 3},
    )
    assert got[0] == OpaquePart(
        "executableCode", {"executableCode": {"language": "PYTHON", "code": "print(1)"}}, "print(1)"
    )
    assert (got[1].kind, got[1].text) == ("codeExecutionResult", "1")
    assert (got[2].kind, got[3].kind, got[3].text) == ("part", "somethingNew", "")


def test_unknown_content_keys_are_kept() -> None:
    (m,) = same([{"role": "user", "parts": [], "x_meta": 1}])
    assert m.extra == {"x_meta": 1}


# ---------------------------------------------------------------- system instruction


@pytest.mark.parametrize(
    "system",
    [
        None,
        "be brief",
        {"parts": [{"text": "a"}, {"text": "b"}]},
        {"role": "system", "parts": [{"text": "a"}]},
        {"role": "system"},
        {"parts": []},
        [{"text": "a"}],
    ],
)
def test_system_instruction_in_its_own_form(system: Any) -> None:
    decoded = same([{"role": "user", "parts": [{"text": "hi"}]}], system)
    assert decoded[0].role is (Role.USER if system is None else Role.SYSTEM)


def test_leading_system_messages_from_elsewhere() -> None:
    chat = [
        {"role": "system", "content": "one"},
        {"role": "developer", "content": "two"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "late"},
    ]
    wire = gemini.encode(openai_chat.decode(chat))
    assert wire.system == {"parts": [{"text": "one"}, {"text": "two"}]}
    assert wire.messages == [{"role": "user", "parts": [{"text": "hi"}, {"text": "late"}]}]
    silent = Message(Role.SYSTEM, (ReasoningPart("x"),))
    assert gemini.encode([silent]).system is None
    (own,) = gemini.decode([], system="mine")
    mixed = gemini.encode([own, Message(Role.SYSTEM, (TextPart("theirs"),))])
    assert mixed.system == {"parts": [{"text": "mine"}, {"text": "theirs"}]}


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("items", "index", "rule"),
    [
        ({"contents": []}, None, "history.type"),
        (["x"], 0, "message.type"),
        ([{"role": "system", "parts": []}], 0, "message.role"),
        ([{"role": 1, "parts": []}], 0, "message.role"),
        ([{"role": "user", "parts": "hi"}], 0, "message.content"),
        ([{"role": "user", "parts": ["hi"]}], 0, "message.content"),
        ([{"role": "user", "parts": [{"text": 1}]}], 0, "message.content"),
        ([{"role": "user", "parts": [{"inlineData": "x"}]}], 0, "message.content"),
        ([{"role": "user", "parts": [{"inlineData": {"mimeType": 1}}]}], 0, "message.content"),
        ([{"role": "user", "parts": [{"fileData": {"fileUri": 1}}]}], 0, "message.content"),
        ([{"role": "model", "parts": [{"functionCall": []}]}], 0, "function_call.type"),
        ([{"role": "model", "parts": [{"functionCall": {"args": {}}}]}], 0, "function_call.name"),
        (
            [{"role": "model", "parts": [{"functionCall": {"name": "f", "id": 3}}]}],
            0,
            "function_call.id",
        ),
        (
            [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": "{}"}}]}],
            0,
            "function_call.args",
        ),
        (
            [{"role": "user", "parts": [{"functionResponse": {"name": 2}}]}],
            0,
            "function_response.name",
        ),
        (
            [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": "ok"}}]}],
            0,
            "function_response.response",
        ),
        ([{"role": "user", "parts": []}, {"role": "robot"}], 1, "message.role"),
    ],
)
def test_bad_input_names_index_and_rule(items: Any, index: int | None, rule: str) -> None:
    with pytest.raises(ConversationError) as caught:
        gemini.decode(items)
    assert (caught.value.index, caught.value.rule) == (index, rule)


@pytest.mark.parametrize(
    ("system", "rule"),
    [(3, "system.type"), ({"parts": "x"}, "system.type"), ([{"text": 1}], "message.content")],
)
def test_bad_system(system: Any, rule: str) -> None:
    with pytest.raises(ConversationError) as caught:
        gemini.decode([], system=system)
    assert (caught.value.index, caught.value.rule) == (None, rule)


# ---------------------------------------------------------------- encode from elsewhere


CHAT = [
    {"role": "user", "content": "go"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": ""}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "r1"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "r2"}]},
    {"role": "tool", "tool_call_id": "c9", "content": "orphan"},
    {"role": "assistant", "content": ""},
]


def test_openai_history_becomes_plain_contents_without_ids() -> None:
    wire = gemini.encode(openai_chat.decode(CHAT))
    assert wire.system is None
    assert wire.messages == [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "f", "args": {"a": 1}}},
                {"functionCall": {"name": "g", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "f", "response": {"output": "r1"}}},
                {"functionResponse": {"name": "g", "response": {"output": "r2"}}},
                {"functionResponse": {"name": "unknown", "response": {"output": "orphan"}}},
            ],
        },
    ]


def test_ids_from_elsewhere_on_request() -> None:
    wire = gemini.encode(openai_chat.decode(CHAT), call_ids=True)
    assert wire.messages[1]["parts"][0] == {
        "functionCall": {"name": "f", "args": {"a": 1}, "id": "c1"}
    }
    assert wire.messages[2]["parts"][0]["functionResponse"]["id"] == "c1"


def test_foreign_user_turn_puts_responses_first_and_marks_errors() -> None:
    message = Message(
        Role.USER,
        (
            TextPart("note"),
            ToolResultPart("t", "bad", is_error=True, name="f"),
            OpaquePart("x", {}, ""),
        ),
    )
    (out,) = gemini.encode([message]).messages
    assert out["parts"] == [
        {"functionResponse": {"name": "f", "response": {"error": "bad"}}},
        {"text": "note"},
        {"text": "[x]"},
    ]


def test_media_from_elsewhere() -> None:
    media = (
        MediaPart("image", url="data:image/png;base64,iVBOR"),
        MediaPart("document", media_type="application/pdf", data="JVBER"),
        MediaPart("file", data="data:application/pdf;base64,JVBER"),
        MediaPart("image", url="https://x.test/a.png"),
        MediaPart("audio", data="UklG"),
        MediaPart("file"),
    )
    (out,) = gemini.encode([Message(Role.USER, media)]).messages
    assert out["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBER"}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBER"}},
        {"fileData": {"mimeType": "application/octet-stream", "fileUri": "https://x.test/a.png"}},
        {"inlineData": {"mimeType": "application/octet-stream", "data": "UklG"}},
        {"text": "[file: file]"},
    ]


def test_foreign_reasoning_is_dropped() -> None:
    message = Message(Role.ASSISTANT, (ReasoningPart("t", signature="s"), TextPart("a")))
    assert gemini.encode([message]).messages == [{"role": "model", "parts": [{"text": "a"}]}]


def test_edited_own_parts_are_written_back_as_edited() -> None:
    items = [
        {"role": "model", "parts": [{"function_call": {"name": "f"}}]},
        {"role": "user", "parts": [{"function_response": {"name": "f", "response": {"a": 1}}}]},
        {
            "role": "user",
            "parts": [{"inline_data": {"data": "AA"}}, {"fileData": {"fileUri": "gs://x"}}],
        },
    ]
    call, result, media = gemini.decode(items)
    edited = [
        dataclasses.replace(
            call, parts=(dataclasses.replace(call.tool_calls[0], arguments={"b": 2}),)
        ),
        dataclasses.replace(
            result, parts=(dataclasses.replace(result.tool_results[0], content="[cut]"),)
        ),
        dataclasses.replace(
            media,
            parts=tuple(
                dataclasses.replace(p, media_type="image/png")
                for p in media.parts
                if isinstance(p, MediaPart)
            ),
        ),
    ]
    out = gemini.encode(edited).messages
    assert out[0]["parts"] == [{"function_call": {"name": "f", "args": {"b": 2}}}]
    assert out[1]["parts"] == [
        {"function_response": {"name": "f", "response": {"output": "[cut]"}}}
    ]
    assert out[2]["parts"] == [
        {"inline_data": {"data": "AA", "mime_type": "image/png"}},
        {"fileData": {"fileUri": "gs://x", "mimeType": "image/png"}},
    ]


def test_own_content_gets_new_parts_in_plain_shape() -> None:
    (m,) = gemini.decode([{"role": "model", "parts": []}])
    grown = dataclasses.replace(
        m, parts=(ReasoningPart("r"), TextPart(""), ToolCallPart("c", "f", '{"x": 1}'))
    )
    assert gemini.encode([grown]).messages == [
        {
            "role": "model",
            "parts": [
                {"text": "r", "thought": True},
                {"text": ""},
                {"functionCall": {"name": "f", "args": {"x": 1}}},
            ],
        }
    ]
    with_id = gemini.encode([grown], call_ids=True).messages[0]["parts"][2]
    assert with_id == {"functionCall": {"name": "f", "args": {"x": 1}, "id": "c"}}


def test_own_media_without_mime_type() -> None:
    same([{"role": "user", "parts": [{"inlineData": {"data": "AA"}}, {"file_data": {}}]}])


# ---------------------------------------------------------------- null ids, model_dump() shapes


@pytest.mark.parametrize("missing", [None, ""])
def test_a_null_or_empty_call_id_comes_back_as_it_was(missing: str | None) -> None:
    call, answer = same(
        [
            {
                "role": "model",
                "parts": [{"functionCall": {"name": "f", "args": {}, "id": missing}}],
            },
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "id": missing}}]},
        ]
    )
    # a derived id still pairs them
    assert call.tool_calls[0].call_id == answer.tool_results[0].call_id == "gemini_0_f_0"
    (first,) = call.tool_calls
    renamed = dataclasses.replace(call, parts=(dataclasses.replace(first, call_id="c9"),))
    (out,) = gemini.encode([renamed]).messages
    assert out["parts"][0]["functionCall"]["id"] == "c9"


# every field of a google-genai Part, as model_dump() writes one: unset fields are None
_PART_FIELDS = (
    "video_metadata",
    "thought",
    "inline_data",
    "file_data",
    "thought_signature",
    "function_call",
    "code_execution_result",
    "executable_code",
    "function_response",
    "text",
)


def dumped(**fields: Any) -> dict[str, Any]:
    return dict.fromkeys(_PART_FIELDS) | fields


def test_parts_as_model_dump_writes_them() -> None:
    contents: list[dict[str, Any]] = [
        {"parts": [dumped(text="weather?")], "role": "user"},
        {
            "parts": [
                dumped(text="plan", thought=True, thought_signature="CiQB"),
                dumped(function_call={"id": None, "args": {"q": "x"}, "name": "get"}),
                dumped(function_call={"id": "c2", "args": None, "name": "now"}),
            ],
            "role": "model",
        },
        {
            "parts": [
                dumped(
                    function_response={"id": None, "name": "get", "response": {"output": "sun"}}
                ),
                dumped(function_response={"id": "c2", "name": "now", "response": None}),
                dumped(
                    inline_data={"display_name": None, "data": "iVBO", "mime_type": "image/png"}
                ),
                dumped(file_data={"display_name": None, "file_uri": "gs://b/o", "mime_type": None}),
                dumped(code_execution_result={"outcome": "OUTCOME_OK", "output": "1"}),
                dumped(),
            ],
            "role": "user",
        },
        {"parts": None, "role": None},
    ]
    system = {"parts": [dumped(text="be brief")], "role": None}
    _, user, model, answers, empty = same(contents, system)
    assert user.parts == (TextPart("weather?", dict.fromkeys(_PART_FIELDS[:-1])),)
    thought, get, now = model.parts
    assert isinstance(thought, ReasoningPart)
    assert thought.signature == "CiQB"
    assert isinstance(get, ToolCallPart)
    assert isinstance(now, ToolCallPart)
    assert (get.name, get.arguments, now.call_id, now.arguments) == ("get", {"q": "x"}, "c2", {})
    kinds = [type(p).__name__ for p in answers.parts]
    assert kinds == [
        "ToolResultPart",
        "ToolResultPart",
        "MediaPart",
        "MediaPart",
        "OpaquePart",
        "OpaquePart",
    ]
    assert [r.call_id for r in answers.tool_results] == [get.call_id, "c2"]
    assert answers.tool_results[0].text == "sun"
    assert isinstance(answers.parts[3], MediaPart)
    assert answers.parts[3].url == "gs://b/o"
    assert (empty.role, empty.parts) == (Role.USER, ())


def test_an_empty_function_name_comes_back_empty() -> None:
    same(
        [
            {"role": "model", "parts": [{"functionCall": {"name": ""}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "", "response": {}}}]},
        ]
    )


def test_a_null_media_field_set_later_keeps_its_spelling() -> None:
    (m,) = same([{"role": "user", "parts": [{"file_data": {"file_uri": None, "mimeType": None}}]}])
    (media,) = m.parts
    assert isinstance(media, MediaPart)
    filled = dataclasses.replace(media, url="gs://b/o", media_type="video/mp4")
    (out,) = gemini.encode([dataclasses.replace(m, parts=(filled,))]).messages
    assert out["parts"] == [{"file_data": {"file_uri": "gs://b/o", "mimeType": "video/mp4"}}]


@pytest.mark.parametrize("system", [{"parts": None, "role": None}, {"role": "user", "parts": None}])
def test_a_system_instruction_with_null_parts(system: Any) -> None:
    (lead,) = same([], system)
    assert lead.parts == ()


# ---------------------------------------------------------------- decoding appended contents


def _outcome(decode: Any) -> tuple[Message, ...] | tuple[int | None, str | None]:
    try:
        return tuple(decode())
    except ConversationError as error:
        return error.index, error.rule


@given(data=st.data())
def test_contents_appended_decode_from_where_the_earlier_ones_left_off(
    data: st.DataObject,
) -> None:
    """What lets a Compactor read only what an agent appended: the contents after any point
    decode, from the :class:`~gemini.Resume` of those before, as the whole list decodes them
    (derived ids that count contents, responses that pair with a call turn before the
    point), and a bad content is named at its index in the whole list."""
    contents = data.draw(st.lists(ws.gemini_content(), max_size=8))
    cut = data.draw(st.integers(0, len(contents)))
    whole = _outcome(lambda: gemini.decode(contents))

    def resumed() -> tuple[Message, ...]:
        before = gemini.decode(contents[:cut])
        after = gemini.decode(contents[cut:], resume=gemini.Resume().after(before))
        return (*before, *after)

    assert _outcome(resumed) == whole


def test_a_response_appended_alone_pairs_with_the_call_turn_before_it() -> None:
    # One call with Gemini's id and one without: each response, without one, takes its call's.
    call = {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "bash", "args": {}, "id": "fc-1"}},
            {"functionCall": {"name": "bash", "args": {}}},
        ],
    }
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "bash"}}] * 2}
    before = gemini.decode([{"role": "user", "parts": [{"text": "go"}]}, call])
    resume = gemini.Resume().after(before)
    assert (resume.start, resume.turn) == (2, 1)
    (appended,) = gemini.decode([answer], resume=resume)
    made = [p.call_id for p in before[1].parts if isinstance(p, ToolCallPart)]
    assert made == ["fc-1", gemini.synthetic_call_id(1, "bash", 1)]
    assert [p.call_id for p in appended.parts if isinstance(p, ToolResultPart)] == made
    # Contents without calls move only the index on.
    assert gemini.Resume().after(before).after((appended,)).turn == 1
