"""Small builders and a Hypothesis strategy for messages with every part type."""

from __future__ import annotations

import base64

from hypothesis import strategies as st

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
)


def text_message(text: str, role: Role = Role.USER, name: str | None = None) -> Message:
    return Message(role, (TextPart(text),), name=name)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def png(width: int, height: int) -> bytes:
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + ihdr + b"\x00" * 4


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + width.to_bytes(2, "little") + height.to_bytes(2, "little") + b"\x00" * 3


def jpeg(width: int, height: int, *, exif: int = 16) -> bytes:
    app1 = b"\xff\xe1" + (exif + 2).to_bytes(2, "big") + b"E" * exif
    sof = b"\xff\xc0\x00\x11\x08" + height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return b"\xff\xd8" + app1 + b"\xff\xff" + b"\xff\xd0" + sof + b"\x03" + b"\x00" * 9


_TEXT = st.text(max_size=60)
_NAME = st.sampled_from(["read_file", "bash", "grep", "lookup_flight"])


def _media() -> st.SearchStrategy[MediaPart]:
    return st.builds(
        MediaPart,
        kind=st.sampled_from(["image", "audio", "document", "file", "video"]),
        token_estimate=st.one_of(st.none(), st.integers(0, 5000)),
        url=st.sampled_from([None, "https://example.org/a.png"]),
    )


def _part() -> st.SearchStrategy[Part]:
    return st.one_of(
        st.builds(TextPart, _TEXT),
        st.builds(
            ToolCallPart,
            st.sampled_from(["call_1", "call_2"]),
            _NAME,
            st.one_of(_TEXT, st.dictionaries(st.sampled_from(["path", "n"]), _TEXT, max_size=2)),
        ),
        st.builds(
            ToolResultPart,
            st.sampled_from(["call_1", "call_2"]),
            st.one_of(
                _TEXT,
                st.lists(st.one_of(st.builds(TextPart, _TEXT), _media()), max_size=3).map(tuple),
            ),
            name=st.one_of(st.none(), _NAME),
        ),
        _media(),
        st.builds(
            ReasoningPart,
            _TEXT,
            encrypted=st.one_of(st.none(), st.text(alphabet="ABCDEFabcdef0123+/", max_size=200)),
        ),
        st.builds(OpaquePart, st.sampled_from(["server_tool", "compaction"]), st.just({}), _TEXT),
    )


messages = st.builds(
    Message,
    st.sampled_from(list(Role)),
    st.lists(_part(), max_size=4).map(tuple),
    name=st.one_of(st.none(), st.sampled_from(["alice", "bob"])),
)
histories = st.lists(messages, max_size=8)
