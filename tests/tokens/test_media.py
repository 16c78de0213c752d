"""Media estimates: header sniffing, provider image rules, audio, video, documents."""

from __future__ import annotations

import math

import pytest

from synopsis.messages import MediaPart
from synopsis.tokens import TiktokenCounter
from synopsis.tokens.media import (
    AUDIO_TOKENS_PER_SECOND,
    DEFAULT_AUDIO_SECONDS,
    DEFAULT_DOCUMENT_PAGES,
    DEFAULT_IMAGE_TOKENS,
    DEFAULT_VIDEO_SECONDS,
    PAGE_TOKENS,
    VIDEO_TOKENS_PER_SECOND,
    audio_seconds,
    estimate_media,
    image_size,
    image_tokens,
    pdf_pages,
)

from .helpers import b64, gif, jpeg, png

COUNT = TiktokenCounter().count_text


def test_image_size_from_headers() -> None:
    assert image_size(png(640, 480)) == (640, 480)
    assert image_size(gif(32, 16)) == (32, 16)
    assert image_size(jpeg(1920, 1080)) == (1920, 1080)
    assert image_size(jpeg(800, 600, exif=30_000)) == (800, 600)


@pytest.mark.parametrize(
    "head",
    [
        b"",
        b"not an image",
        png(1, 1)[:20],  # truncated IHDR
        b"GIF89a\x01",
        b"\xff\xd8\xff",  # JPEG cut before any segment
        b"\xff\xd8\x00\x00\x00\x00",  # not a marker where one must be
        jpeg(10, 10)[:-12],  # cut inside the frame header
        b"\xff\xd8\xff\xe1\x00\x10" + b"E" * 4,  # cut inside a segment
    ],
)
def test_image_size_unknown(head: bytes) -> None:
    assert image_size(head) is None


def test_openai_image_rule() -> None:
    assert image_tokens(4000, 4000, "openai", "low") == 85
    assert image_tokens(100, 100, "openai") == 85 + 170  # one tile, never upscaled
    assert image_tokens(1024, 1024, "openai") == 85 + 170 * 4  # 768x768
    assert image_tokens(2048, 4096, "openai") == 1105  # OpenAI's own worked example
    assert image_tokens(4096, 8192, "openai", "high") == 1105
    assert image_tokens(0, 10, "openai") == DEFAULT_IMAGE_TOKENS["openai"]


def test_anthropic_image_rule() -> None:
    assert image_tokens(200, 200, "anthropic") == 54  # Anthropic's table: ~54
    assert image_tokens(1000, 1000, "anthropic") == 1334  # ~1334
    assert image_tokens(1092, 1092, "anthropic") == 1590  # ~1590
    assert image_tokens(3000, 3000, "anthropic") == 1600  # scaled to 1568, then capped
    assert image_tokens(3136, 400, "anthropic") == math.ceil(1568 * 200 / 750)


def test_gemini_image_rule() -> None:
    assert image_tokens(384, 384, "gemini") == 258
    assert image_tokens(385, 100, "gemini") == 258
    assert image_tokens(1000, 800, "gemini") == 4 * 258
    assert image_tokens(2000, 700, "gemini") == 3 * 258


def _image(**kw: object) -> MediaPart:
    return MediaPart("image", **kw)  # type: ignore[arg-type]


def test_image_estimates_from_inline_data() -> None:
    data_url = "data:image/png;base64," + b64(png(1024, 1024))
    assert estimate_media(_image(url=data_url), "openai", COUNT) == 765
    assert estimate_media(_image(url=data_url), "anthropic", COUNT) == 1399
    assert estimate_media(_image(url=data_url), "gemini", COUNT) == 4 * 258
    raw = _image(data=b64(gif(200, 200)), media_type="image/gif")
    assert estimate_media(raw, "anthropic", COUNT) == 54
    spaced = b64(jpeg(384, 300))
    spaced = "\n".join(spaced[i : i + 10] for i in range(0, len(spaced), 10))
    assert estimate_media(_image(data=spaced), "gemini", COUNT) == 258


def test_image_detail() -> None:
    low = _image(url="https://example.org/a.png", extra={"image_url": {"detail": "low"}})
    assert estimate_media(low, "openai", COUNT) == 85
    assert estimate_media(low, "anthropic", COUNT) == DEFAULT_IMAGE_TOKENS["anthropic"]
    top = _image(data=b64(png(4000, 4000)), extra={"detail": "low"})
    assert estimate_media(top, "openai", COUNT) == 85
    odd = _image(data=b64(png(100, 100)), extra={"detail": 3, "image_url": "x"})
    assert estimate_media(odd, "openai", COUNT) == 255


@pytest.mark.parametrize(
    "part",
    [
        _image(url="https://example.org/a.png"),
        _image(),
        _image(url="data:image/svg+xml,<svg/>"),  # not base64
        _image(url="data:;base64,!!!!"),  # not valid base64
        _image(data="bm90IGFuIGltYWdl"),  # "not an image"
        _image(data="abc\u00e9"),  # not ASCII
    ],
)
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_image_defaults(part: MediaPart, provider: str) -> None:
    expected = DEFAULT_IMAGE_TOKENS[provider]  # type: ignore[index]
    assert estimate_media(part, provider, COUNT) == expected  # type: ignore[arg-type]


def test_explicit_estimate_wins() -> None:
    part = _image(data=b64(png(4000, 4000)), token_estimate=7)
    assert estimate_media(part, "openai", COUNT) == 7
    assert estimate_media(_image(token_estimate=-5), "openai", COUNT) == 0
    doc = MediaPart("document", token_estimate=0)
    assert estimate_media(doc, "anthropic", COUNT) == 0


def _wav(seconds: float, byte_rate: int = 32_000) -> bytes:
    header = b"RIFF" + b"\x00" * 4 + b"WAVE" + b"fmt " + b"\x00" * 12
    header += byte_rate.to_bytes(4, "little") + b"\x00" * 4 + b"data" + b"\x00" * 4
    assert len(header) == 44
    return header + b"\x00" * int(seconds * byte_rate)


def test_audio() -> None:
    wav = MediaPart("audio", data=b64(_wav(2.0)), media_type="audio/wav")
    assert audio_seconds(wav.data or "") == pytest.approx(2.0)
    assert estimate_media(wav, "gemini", COUNT) == 64
    assert estimate_media(wav, "openai", COUNT) == 20
    zero_rate = b64(_wav(0, byte_rate=0) + b"\x00" * 16_000)
    assert audio_seconds(zero_rate) == pytest.approx((44 + 16_000) / 16_000)
    mp3 = MediaPart("audio", data=b64(b"ID3" + b"\x00" * 47_997), media_type="audio/mp3")
    assert estimate_media(mp3, "gemini", COUNT) == 3 * 32
    silent = MediaPart("audio", url="https://example.org/a.mp3")
    assert estimate_media(silent, "anthropic", COUNT) == (
        DEFAULT_AUDIO_SECONDS * AUDIO_TOKENS_PER_SECOND["anthropic"]
    )


def test_video() -> None:
    video = MediaPart("video", url="https://example.org/v.mp4")
    assert estimate_media(video, "gemini", COUNT) == DEFAULT_VIDEO_SECONDS * VIDEO_TOKENS_PER_SECOND


def _pdf(pages: int) -> bytes:
    body = b"".join(b"<< /Type /Page /Parent 1 0 R >>\n" for _ in range(pages))
    return b"%PDF-1.7\n<< /Type /Pages /Count 2 >>\n" + body + b"%%EOF"


def test_pdf_pages() -> None:
    assert pdf_pages(_pdf(2)) == 2
    assert pdf_pages(b"%PDF-1.7 /Type/Page /Type /Pages") == 1
    assert pdf_pages(b"%PDF compressed objects only") == 0


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_documents(provider: str) -> None:
    per_page = PAGE_TOKENS[provider]  # type: ignore[index]
    default = DEFAULT_DOCUMENT_PAGES * per_page
    pdf = MediaPart("document", data=b64(_pdf(2)), media_type="application/pdf")
    assert estimate_media(pdf, provider, COUNT) == 2 * per_page  # type: ignore[arg-type]
    openai_file = MediaPart("file", data="data:application/pdf;base64," + b64(_pdf(5)))
    assert estimate_media(openai_file, provider, COUNT) == 5 * per_page  # type: ignore[arg-type]
    hidden = MediaPart("file", data=b64(b"%PDF-1.7 compressed"))
    assert estimate_media(hidden, provider, COUNT) == default  # type: ignore[arg-type]
    remote = MediaPart("document", url="https://example.org/a.pdf")
    assert estimate_media(remote, provider, COUNT) == default  # type: ignore[arg-type]
    referenced = MediaPart("file", extra={"file_id": "file-123"})
    assert estimate_media(referenced, provider, COUNT) == default  # type: ignore[arg-type]
    binary = MediaPart("file", data=b64(b"\x00\x01\x02\x03"), media_type="application/zip")
    assert estimate_media(binary, provider, COUNT) == default  # type: ignore[arg-type]
    broken = MediaPart("file", data="abcde", media_type="text/plain")  # bad padding
    assert estimate_media(broken, provider, COUNT) == default  # type: ignore[arg-type]


def test_text_files_are_counted_as_text() -> None:
    text = "def main():\n    print('hello world')\n"
    plain = MediaPart("document", data=b64(text.encode()), media_type="text/plain")
    assert estimate_media(plain, "openai", COUNT) == COUNT(text)
    as_json = MediaPart("file", data=b64(b'{"a": 1}'), media_type="Application/JSON; charset=utf-8")
    assert estimate_media(as_json, "openai", COUNT) == COUNT('{"a": 1}')
    claude = TiktokenCounter(provider="anthropic", factor=2.0)
    assert estimate_media(plain, "anthropic", claude.count_text) == 2 * COUNT(text)
