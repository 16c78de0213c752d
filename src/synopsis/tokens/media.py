"""Token estimates for images, audio, documents, files and video.

An explicit :attr:`MediaPart.token_estimate` always wins. Otherwise the estimate comes from the
provider's published rule when the inputs it needs can be read cheaply from the inline data
(image dimensions from a PNG, GIF or JPEG header; WAV byte rate; PDF page count; the text of a
text file), and from a documented per-kind default when they cannot (remote URLs, file ids).

Provider rules:

* images, ``openai`` (GPT-4o, 4.1, 5 "tile" models): ``detail: low`` costs 85; otherwise the
  image is fitted into 2048x2048, its short side brought down to 768, and each 512px tile costs
  170 on top of a base of 85.
* images, ``anthropic``: ``ceil(width * height / 750)`` after the long edge is brought down to
  1568px, at most about 1,600 tokens (Anthropic vision docs).
* images, ``gemini``: 258 when both sides are at most 384px, else 258 per 768x768 tile
  (Gemini 2.x token docs). Gemini 3 charges by ``media_resolution`` (1,120 at the default high
  setting), which is the default used when dimensions are unknown.
* audio: Gemini counts 32 tokens a second; OpenAI's audio input bills about 10 a second
  ($0.06 a minute at $100 per million tokens). Claude takes no audio; 32 is used.
* video: Gemini counts 263 tokens a second; the other providers take frames as images.
* PDF: Gemini counts 258 tokens a page; Anthropic 1,500 to 3,000 text tokens a page plus the
  page image (3,000 used); OpenAI extracts the text and an image of each page (1,500 used).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from synopsis.messages import MediaPart
    from synopsis.tokens.framing import Provider

__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "DEFAULT_AUDIO_SECONDS",
    "DEFAULT_DOCUMENT_PAGES",
    "DEFAULT_IMAGE_TOKENS",
    "DEFAULT_VIDEO_SECONDS",
    "PAGE_TOKENS",
    "VIDEO_TOKENS_PER_SECOND",
    "audio_seconds",
    "estimate_media",
    "image_size",
    "image_tokens",
    "pdf_pages",
]

# Used when an image's dimensions cannot be read: a 1024x1024 image at high detail (OpenAI),
# the ~1,600-token cap (Anthropic), Gemini 3's default high media resolution.
DEFAULT_IMAGE_TOKENS: Final[dict[Provider, int]] = {
    "openai": 765,
    "anthropic": 1600,
    "gemini": 1120,
}
AUDIO_TOKENS_PER_SECOND: Final[dict[Provider, int]] = {"openai": 10, "anthropic": 32, "gemini": 32}
VIDEO_TOKENS_PER_SECOND: Final[int] = 263
PAGE_TOKENS: Final[dict[Provider, int]] = {"openai": 1500, "anthropic": 3000, "gemini": 258}
DEFAULT_AUDIO_SECONDS: Final[int] = 30
DEFAULT_VIDEO_SECONDS: Final[int] = 60
DEFAULT_DOCUMENT_PAGES: Final[int] = 3
# Compressed audio (MP3, AAC, Opus) at 128 kbit/s, when no WAV header gives the byte rate.
_COMPRESSED_AUDIO_BYTES_PER_SECOND: Final[int] = 16_000
# Enough base64 to reach a JPEG's frame header behind ordinary EXIF blocks (64 KiB decoded).
_HEADER_CHARS: Final[int] = 87_384

_OPENAI_LOW_DETAIL = 85
_OPENAI_TILE = 170
_ANTHROPIC_LONG_EDGE = 1568
_ANTHROPIC_PIXELS_PER_TOKEN = 750
_ANTHROPIC_CAP = 1600
_GEMINI_TILE_TOKENS = 258
_GEMINI_SMALL = 384
_GEMINI_TILE = 768

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD9)})
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_TEXT_TYPES = ("application/json", "application/xml", "application/x-yaml", "application/yaml")


# ---------------------------------------------------------------- reading inline data


def _payload(part: MediaPart) -> tuple[str | None, str | None]:
    """The media type and base64 payload of the part, from ``data`` or a ``data:`` URL."""
    for value in (part.data, part.url):
        if not value:
            continue
        if value.startswith("data:"):
            header, sep, body = value[5:].partition(",")
            if not sep or not header.endswith(";base64"):
                return part.media_type, None
            return part.media_type or header[: -len(";base64")] or None, body
        if value is part.data:
            return part.media_type, value
    return part.media_type, None


def _b64decode(text: str, limit: int | None = None) -> bytes | None:
    """Decode base64 (all of it, or about the first ``limit`` characters); ``None`` if invalid.

    A full decode skips whitespace by itself; a prefix drops it and stops on a 4-character
    boundary so that the cut does not read as bad padding.
    """
    if limit is not None:
        text = "".join(text[:limit].split())
        text = text[: len(text) // 4 * 4]
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return None


def _decoded_length(b64: str) -> int:
    return len(b64) * 3 // 4 - b64[-2:].count("=")


def image_size(head: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from the first bytes of a PNG, GIF or JPEG file, else ``None``."""
    if head.startswith(_PNG_MAGIC) and head[12:16] == b"IHDR" and len(head) >= 24:
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return int.from_bytes(head[6:8], "little"), int.from_bytes(head[8:10], "little")
    if head.startswith(b"\xff\xd8"):
        return _jpeg_size(head)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        if marker in _JPEG_STANDALONE:
            i += 2
            continue
        if marker in _JPEG_SOF:
            if i + 9 > len(data):
                return None
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            width = int.from_bytes(data[i + 7 : i + 9], "big")
            return width, height
        i += 2 + int.from_bytes(data[i + 2 : i + 4], "big")
    return None


def audio_seconds(b64: str) -> float:
    """Duration of base64 audio: from a WAV header's byte rate, else assuming 128 kbit/s."""
    size = _decoded_length(b64)
    head = _b64decode(b64, 64)
    if head is not None and head[:4] == b"RIFF" and head[8:12] == b"WAVE" and len(head) >= 44:
        byte_rate = int.from_bytes(head[28:32], "little")
        if byte_rate > 0:
            return max(size - 44, 0) / byte_rate
    return size / _COMPRESSED_AUDIO_BYTES_PER_SECOND


def pdf_pages(data: bytes) -> int:
    """Number of ``/Type /Page`` objects in a PDF (0 when none can be seen, e.g. compressed)."""
    return len(_PDF_PAGE.findall(data))


# ---------------------------------------------------------------- provider rules


def image_tokens(width: int, height: int, provider: Provider, detail: str | None = None) -> int:
    """What ``provider`` charges for a ``width`` x ``height`` image."""
    if width <= 0 or height <= 0:
        return DEFAULT_IMAGE_TOKENS[provider]
    if provider == "openai":
        if detail == "low":
            return _OPENAI_LOW_DETAIL
        w, h = float(width), float(height)
        if max(w, h) > 2048:
            scale = 2048 / max(w, h)
            w, h = w * scale, h * scale
        if min(w, h) > 768:
            scale = 768 / min(w, h)
            w, h = w * scale, h * scale
        tiles = math.ceil(w / 512) * math.ceil(h / 512)
        return _OPENAI_LOW_DETAIL + _OPENAI_TILE * tiles
    if provider == "anthropic":
        w, h = float(width), float(height)
        if max(w, h) > _ANTHROPIC_LONG_EDGE:
            scale = _ANTHROPIC_LONG_EDGE / max(w, h)
            w, h = w * scale, h * scale
        return min(math.ceil(w * h / _ANTHROPIC_PIXELS_PER_TOKEN), _ANTHROPIC_CAP)
    if width <= _GEMINI_SMALL and height <= _GEMINI_SMALL:
        return _GEMINI_TILE_TOKENS
    return math.ceil(width / _GEMINI_TILE) * math.ceil(height / _GEMINI_TILE) * _GEMINI_TILE_TOKENS


def _detail(extra: Mapping[str, Any]) -> str | None:
    detail = extra.get("detail")
    inner = extra.get("image_url")
    if detail is None and isinstance(inner, Mapping):
        detail = inner.get("detail")
    return detail if isinstance(detail, str) else None


def _image(part: MediaPart, provider: Provider) -> int:
    _, b64 = _payload(part)
    detail = _detail(part.extra)
    if provider == "openai" and detail == "low":
        return _OPENAI_LOW_DETAIL
    head = _b64decode(b64, _HEADER_CHARS) if b64 else None
    size = image_size(head) if head else None
    if size is None:
        return DEFAULT_IMAGE_TOKENS[provider]
    return image_tokens(size[0], size[1], provider, detail)


def _is_text_type(media_type: str | None) -> bool:
    if not media_type:
        return False
    media_type = media_type.split(";", 1)[0].strip().lower()
    return media_type.startswith("text/") or media_type in _TEXT_TYPES


def _document(part: MediaPart, provider: Provider, count_text: Callable[[str], int]) -> int:
    media_type, b64 = _payload(part)
    default = DEFAULT_DOCUMENT_PAGES * PAGE_TOKENS[provider]
    if not b64:
        return default
    data = _b64decode(b64)
    if data is None:
        return default
    if _is_text_type(media_type):
        return count_text(data.decode("utf-8", errors="replace"))
    if data.startswith(b"%PDF"):
        pages = pdf_pages(data)
        return (pages or DEFAULT_DOCUMENT_PAGES) * PAGE_TOKENS[provider]
    return default


def estimate_media(part: MediaPart, provider: Provider, count_text: Callable[[str], int]) -> int:
    """Tokens ``provider`` is expected to charge for ``part``.

    ``count_text`` counts the text of a plain-text file (it is the counter's own text count).
    """
    if part.token_estimate is not None:
        return max(part.token_estimate, 0)
    if part.kind == "image":
        return _image(part, provider)
    if part.kind == "audio":
        _, b64 = _payload(part)
        seconds = audio_seconds(b64) if b64 else DEFAULT_AUDIO_SECONDS
        return math.ceil(seconds * AUDIO_TOKENS_PER_SECOND[provider])
    if part.kind == "video":
        return DEFAULT_VIDEO_SECONDS * VIDEO_TOKENS_PER_SECOND
    return _document(part, provider, count_text)
