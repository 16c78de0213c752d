"""The converters' shared helpers."""

from __future__ import annotations

import pytest

from synopsis.formats._common import (
    arguments_mapping,
    data_url,
    media_kind,
    opaque_text,
    parse_data_url,
)
from synopsis.messages import ToolCallPart


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("data:image/png;base64,iVBOR", ("image/png", "iVBOR")),
        ("data:;base64,AA", ("application/octet-stream", "AA")),
        ("data:text/plain,hello", None),
        ("data:image/png;base64", None),
        ("https://x.test/a.png", None),
        (None, None),
        ("", None),
    ],
)
def test_parse_data_url(url: str | None, expected: tuple[str, str] | None) -> None:
    assert parse_data_url(url) == expected


def test_data_url() -> None:
    assert data_url("image/png", "AA") == "data:image/png;base64,AA"
    assert data_url(None, "AA") == "data:application/octet-stream;base64,AA"
    assert data_url("image/png", "data:image/gif;base64,R0") == "data:image/gif;base64,R0"


@pytest.mark.parametrize(
    ("media_type", "kind"),
    [
        ("image/png", "image"),
        ("audio/wav", "audio"),
        ("video/mp4", "video"),
        ("application/pdf", "document"),
        ("text/plain", "document"),
        ("text/csv", "file"),
        (None, "file"),
    ],
)
def test_media_kind(media_type: str | None, kind: str) -> None:
    assert media_kind(media_type) == kind


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}),
        ('{"a": 1}', {"a": 1}),
        ("  ", {}),
        ("[1, 2]", {"arguments": "[1, 2]"}),
        ("{not json", {"arguments": "{not json"}),
    ],
)
def test_arguments_mapping(arguments: object, expected: dict[str, object]) -> None:
    assert arguments_mapping(ToolCallPart("c", "f", arguments)) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ({"type": "x", "text": "t"}, "t"),
        ({"content": "c"}, "c"),
        ({"content": [{"text": "a"}, "skip", {"text": 1}, {"text": "b"}]}, "a\nb"),
        ({"content": [], "output": "o"}, "o"),
        ({"executableCode": {"code": "print(1)"}, "code": {"code": "inner"}}, "inner"),
        ({"output": {"x": 1}, "summary": "s"}, "s"),
        ({"payload": 1}, ""),
    ],
)
def test_opaque_text(raw: dict[str, object], text: str) -> None:
    assert opaque_text(raw) == text
