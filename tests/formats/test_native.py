"""The store codec: every message (every part kind, nested tool-result content, any text, the
converter's ``wire`` notes) comes back equal from its JSON; unknown part types are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConversationError
from synopsis.formats import FormatName, decode, encode
from synopsis.formats.native import message_from_json, message_to_json
from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    content_hash,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

TRANSCRIPTS = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "transcripts").glob("*.jsonl")
)

# ---------------------------------------------------------------- strategies

# Non-ASCII on purpose: accents, CJK, RTL, emoji (with ZWJ sequences and modifiers), controls.
ODD = st.sampled_from(
    [
        "",
        "naïve café",
        "日本語のテキスト",
        "مرحبا",
        "😀",
        "👩‍💻",
        "🏳️‍🌈",
        "👍🏽",
        "\x00\n\t\"'\\",
        "</x>",
    ]
)
TEXT = st.one_of(st.text(max_size=20), ODD, st.lists(ODD, max_size=3).map("".join))
KEY = st.one_of(st.text(max_size=8), ODD)
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEY, inner, max_size=3),
    max_leaves=8,
)
EXTRA = st.dictionaries(KEY, JSON, max_size=3)
OPT_TEXT = st.none() | TEXT
# Converter notes are written with tuples (never lists): scalars, tuples of them, or a mapping.
NOTE: st.SearchStrategy[Any] = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=6), inner, max_size=2)
    ),
    max_leaves=6,
)
WIRE = st.one_of(
    st.dictionaries(KEY, NOTE, max_size=4),
    st.sampled_from(
        [
            {"format": "openai", "content": "string"},
            {"format": "openai", "content": "parts", "no_args": (0, 2), "tool_calls": "list"},
            {"format": "responses", "item": "reasoning", "missing_summary": True},
            {"format": "anthropic", "content": "list", "no_content": (1,)},
            {"format": "gemini", "role": "absent", "synth_ids": ("g-1", "g-2")},
        ]
    ),
)


def text_parts() -> st.SearchStrategy[TextPart]:
    return st.builds(TextPart, TEXT, EXTRA)


def media_parts() -> st.SearchStrategy[MediaPart]:
    return st.builds(
        MediaPart,
        kind=st.sampled_from(["image", "audio", "document", "file", "video"]),
        media_type=OPT_TEXT,
        url=OPT_TEXT,
        data=OPT_TEXT,
        filename=OPT_TEXT,
        token_estimate=st.none() | st.integers(0, 10**6),
        extra=EXTRA,
    )


def call_parts() -> st.SearchStrategy[ToolCallPart]:
    arguments = TEXT | st.dictionaries(KEY, JSON, max_size=3)
    return st.builds(ToolCallPart, TEXT, TEXT, arguments, EXTRA)


def result_parts() -> st.SearchStrategy[ToolResultPart]:
    nested = st.lists(text_parts() | media_parts(), max_size=3).map(tuple)
    return st.builds(
        ToolResultPart,
        call_id=TEXT,
        content=TEXT | nested,
        is_error=st.booleans(),
        name=OPT_TEXT,
        extra=EXTRA,
    )


def reasoning_parts() -> st.SearchStrategy[ReasoningPart]:
    return st.builds(
        ReasoningPart,
        text=TEXT,
        signature=OPT_TEXT,
        encrypted=OPT_TEXT,
        redacted=st.booleans(),
        extra=EXTRA,
    )


def opaque_parts() -> st.SearchStrategy[OpaquePart]:
    return st.builds(OpaquePart, kind=TEXT, raw=st.dictionaries(KEY, JSON, max_size=3), text=TEXT)


PARTS: st.SearchStrategy[Part] = st.one_of(
    text_parts(), call_parts(), result_parts(), media_parts(), reasoning_parts(), opaque_parts()
)
MESSAGES = st.builds(
    Message,
    role=st.sampled_from(list(Role)),
    parts=st.lists(PARTS, max_size=5).map(tuple),
    id=OPT_TEXT,
    name=OPT_TEXT,
    extra=EXTRA,
    wire=WIRE,
)


def assert_round_trips(message: Message) -> None:
    text = message_to_json(message)
    back = message_from_json(text)
    assert back == message
    assert dict(back.wire) == dict(message.wire)
    assert [type(p) for p in back.parts] == [type(p) for p in message.parts]
    assert content_hash(back) == content_hash(message)
    # what the store keeps is stable: writing the decoded message gives the same text
    assert message_to_json(back) == text


# ---------------------------------------------------------------- properties


@given(MESSAGES)
def test_any_message_round_trips_with_its_wire_notes(message: Message) -> None:
    assert_round_trips(message)


@given(st.lists(st.one_of(text_parts(), media_parts()), min_size=1, max_size=4))
def test_nested_tool_result_content_comes_back_as_parts(inner: list[TextPart | MediaPart]) -> None:
    message = Message(Role.TOOL, (ToolResultPart("call_1", tuple(inner), is_error=True),))
    back = message_from_json(message_to_json(message))
    (result,) = back.parts
    assert isinstance(result, ToolResultPart)
    assert isinstance(result.content, tuple)
    assert result.content == tuple(inner)
    assert [type(p) for p in result.content] == [type(p) for p in inner]


# ---------------------------------------------------------------- examples


def every_kind() -> Message:
    return Message(
        Role.ASSISTANT,
        (
            TextPart("héllo 👩‍💻 日本", {"cache_control": {"type": "ephemeral"}}),
            ToolCallPart("call_😀", "bash", {"cmd": "echo ✓", "nested": [1, {"a": [True]}]}),
            ToolCallPart("call_2", "read", '{"path": "ü.txt"'),  # not even valid JSON
            ToolResultPart(
                "call_😀",
                (TextPart("out ✓"), MediaPart("image", "image/png", data="iVBORw0KGgo=")),
                is_error=True,
                name="bash",
                extra={"x": (1, 2)},
            ),
            ToolResultPart("call_2", ""),
            ToolResultPart("call_3", ()),
            MediaPart("document", "application/pdf", url="https://x.test/é.pdf", token_estimate=7),
            ReasoningPart("思考", signature="sig==", encrypted="enc", redacted=True),
            OpaquePart("server_tool_use", {"type": "server_tool_use", "input": {"q": "🔎"}}, "q"),
        ),
        id="msg_1",
        name="agent ✓",
        extra={"refusal": None, "list": [1, "二"]},
        wire={"format": "openai", "content": "parts", "no_args": (0,), "legacy_id": "call_x"},
    )


def test_every_part_kind_round_trips() -> None:
    assert_round_trips(every_kind())


def test_non_ascii_is_written_as_is() -> None:
    message = Message(Role.USER, (TextPart("emoji 😀 and 日本語 and ZWJ 👩‍💻"),))
    text = message_to_json(message)
    assert "😀" in text
    assert "日本語" in text
    assert "👩‍💻" in text
    assert json.loads(text)["parts"][0]["text"] == message.parts[0].text  # type: ignore[union-attr]
    assert_round_trips(message)


def test_empty_message_without_notes_round_trips() -> None:
    message = Message(Role.SYSTEM)
    back = message_from_json(message_to_json(message))
    assert back == message
    assert back.parts == ()
    assert dict(back.wire) == {}


def test_content_shape_is_kept_apart() -> None:
    """A result whose content was a string and one whose content was an empty list of parts
    stay different after the trip."""
    as_text = message_from_json(message_to_json(Message(Role.TOOL, (ToolResultPart("c", ""),))))
    as_parts = message_from_json(message_to_json(Message(Role.TOOL, (ToolResultPart("c", ()),))))
    assert as_text.parts[0] == ToolResultPart("c", "")
    assert as_parts.parts[0] == ToolResultPart("c", ())
    assert as_text != as_parts


def test_tuple_notes_stay_tuples() -> None:
    message = Message(Role.USER, wire={"synth_ids": ("a", ("b", "c")), "map": {"k": (1, 2)}})
    back = message_from_json(message_to_json(message))
    assert back.wire["synth_ids"] == ("a", ("b", "c"))
    assert back.wire["map"] == {"k": (1, 2)}


# ---------------------------------------------------------------- bundled transcripts


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def in_every_format(items: list[dict[str, Any]]) -> dict[str, Sequence[Message]]:
    base = decode(items, "openai").messages
    out: dict[str, Sequence[Message]] = {"openai": base}
    fmts: tuple[FormatName, ...] = ("responses", "anthropic", "gemini")
    for fmt in fmts:
        wire = encode(base, fmt)
        out[fmt] = decode(json.loads(json.dumps(wire.messages)), fmt, system=wire.system).messages
    return out


def test_the_transcripts_are_there() -> None:
    assert len(TRANSCRIPTS) >= 10


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
def test_every_transcript_message_round_trips(path: Path) -> None:
    histories = in_every_format(load(path))
    for fmt, messages in histories.items():
        assert messages, fmt
        # each format leaves its own notes, which must come back too
        assert any(m.wire.get("format") == fmt for m in messages), fmt
        for message in messages:
            assert_round_trips(message)


# ---------------------------------------------------------------- refusals


def stored(*parts: dict[str, Any]) -> str:
    body: dict[str, Any] = {
        "role": "user",
        "parts": list(parts),
        "id": None,
        "name": None,
        "extra": {},
    }
    return json.dumps(body | {"wire": {}})


@pytest.mark.parametrize(
    "part",
    [
        {"type": "hologram", "text": "x"},
        {"type": "Text", "text": "x"},
        {"type": "", "text": "x"},
        {"type": None, "text": "x"},
        {"text": "no type at all"},
    ],
    ids=["unknown", "wrong-case", "empty", "null", "missing"],
)
def test_unknown_part_type_is_refused(part: dict[str, Any]) -> None:
    with pytest.raises(ConversationError):
        message_from_json(stored({"type": "text", "text": "fine"}, part))


def test_unknown_type_inside_tool_result_content_is_refused() -> None:
    bad = {"type": "tool_result", "call_id": "c", "content": [{"type": "hologram"}]}
    with pytest.raises(ConversationError):
        message_from_json(stored(bad))


@pytest.mark.parametrize("tag", [["text"], {"kind": "text"}], ids=["list", "object"])
def test_unhashable_part_type_is_refused(tag: object) -> None:
    with pytest.raises(ConversationError):
        message_from_json(stored({"type": tag, "text": "x"}))
