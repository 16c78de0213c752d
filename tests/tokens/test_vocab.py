"""The bundled vocabularies give tiktoken's exact counts, offline, and refuse corrupt files."""

from __future__ import annotations

import gzip
import hashlib
import threading
from importlib import resources
from typing import TYPE_CHECKING

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public  # type: ignore[import-untyped]

from synopsis.errors import ConfigurationError, VocabularyError
from synopsis.tokens import _vocab
from synopsis.tokens._vocab import ENCODINGS, build_encoding, get_encoding, parse_ranks

if TYPE_CHECKING:
    from pathlib import Path

    from synopsis.messages import Message

DATA = resources.files("synopsis") / "data"

SAMPLES = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "def add(a: int, b: int) -> int:\n    return a + b\n",
    "Ünïcödé — 日本語のテキスト, emoji 🎉🚀 and <|endoftext|> inside.",
    "   leading spaces\n\n\ttabs\r\nCRLF 1234567890 don't WE'LL",
    '{"path": "/src/app.py", "line": 42, "ok": true}',
]


def _ids(text: str) -> list[int]:
    return [int(t) for t in text.split()]


# Computed once with tiktoken.get_encoding(name) (tiktoken 0.14, vocabulary from its cache)
# and with the bundled files: both routes gave these numbers.
EXPECTED_COUNTS = {
    "o200k_base": [2, 10, 19, 28, 18, 19],
    "cl100k_base": [2, 10, 19, 33, 19, 19],
}
EXPECTED_IDS = {
    "o200k_base": {
        "hello world": [24912, 2375],
        SAMPLES[3]: _ids(
            "8858 77 191375 43369 377 2733 17428 40909 3385 16056 18368 38236 11 74471 139786 231"
            " 112927 222 326 464 91 419 1440 919 91 29 6772 13"
        ),
    },
    "cl100k_base": {
        "hello world": [15339, 1917],
        SAMPLES[3]: _ids(
            "53591 77 38672 66 3029 67 978 2001 76502 22656 45918 252 16144 57933 62903 71634 11"
            " 43465 11410 236 231 9468 248 222 323 83739 8862 728 428 91 29 4871 13"
        ),
    },
}
N_VOCAB = {"o200k_base": 200019, "cl100k_base": 100277}


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_exact_counts_and_ids(name: str) -> None:
    enc = get_encoding(name)
    assert enc.name == name
    assert enc.n_vocab == N_VOCAB[name]
    assert [len(enc.encode_ordinary(s)) for s in SAMPLES] == EXPECTED_COUNTS[name]
    for text, ids in EXPECTED_IDS[name].items():
        assert enc.encode_ordinary(text) == ids
        assert enc.decode(ids) == text


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_same_data_as_tiktoken_defines(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hash, pattern and special tokens equal tiktoken's own definition (its loader swapped
    out, so no download), and tiktoken's own loader reads the same ranks from our file."""
    spec = ENCODINGS[name]
    seen: dict[str, object] = {}

    def fake_load(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen["hash"] = expected_hash
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", fake_load)
    definition = openai_public.ENCODING_CONSTRUCTORS[name]()
    assert seen["hash"] == spec.sha256
    assert definition["pat_str"] == spec.pat_str
    assert definition["special_tokens"] == dict(spec.special_tokens)

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # read the file directly, cache nothing
    plain = tmp_path / name
    plain.write_bytes(gzip.decompress((DATA / spec.filename).read_bytes()))
    theirs = tiktoken.load.load_tiktoken_bpe(str(plain), expected_hash=spec.sha256)
    assert theirs == get_encoding(name)._mergeable_ranks
    assert get_encoding(name)._special_tokens == dict(spec.special_tokens)


def test_ordinary_text_counts_special_token_strings() -> None:
    enc = get_encoding("o200k_base")
    ids = enc.encode_ordinary("<|endoftext|>")
    assert len(ids) == 7
    assert 199999 not in ids
    assert enc.decode(ids) == "<|endoftext|>"


def test_round_trip_on_transcripts(transcripts: dict[str, tuple[Message, ...]]) -> None:
    encs = [get_encoding(n) for n in sorted(ENCODINGS)]
    checked = 0
    for messages in transcripts.values():
        for message in messages:
            text = message.text
            for enc in encs:
                assert enc.decode(enc.encode_ordinary(text)) == text
            checked += 1
    assert checked > 500


def test_no_network_and_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tiktoken's registry or downloader was used")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    enc = build_encoding("cl100k_base")
    assert enc.encode_ordinary("hello world") == [15339, 1917]


def test_loaded_once_and_thread_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vocab, "_loaded", {})
    calls: list[str] = []
    real = _vocab.build_encoding

    def counting(name: str) -> tiktoken.Encoding:
        calls.append(name)
        return real(name)

    monkeypatch.setattr(_vocab, "build_encoding", counting)
    results: list[tiktoken.Encoding] = []
    barrier = threading.Barrier(6)

    def work() -> None:
        barrier.wait()
        results.append(get_encoding("cl100k_base"))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["cl100k_base"]
    assert len(results) == 6
    assert all(r is results[0] for r in results)
    assert get_encoding("cl100k_base") is results[0]


def _copy_data(tmp_path: Path) -> Path:
    for spec in ENCODINGS.values():
        (tmp_path / spec.filename).write_bytes((DATA / spec.filename).read_bytes())
    return tmp_path


def test_a_good_copy_builds(tmp_path: Path) -> None:
    enc = build_encoding("cl100k_base", directory=_copy_data(tmp_path))
    assert enc.encode_ordinary("hello world") == [15339, 1917]


def test_corrupted_copy_raises(tmp_path: Path) -> None:
    directory = _copy_data(tmp_path)
    path = directory / ENCODINGS["cl100k_base"].filename
    blob = bytearray(gzip.decompress(path.read_bytes()))
    blob[100:104] = b"QUFB"  # one token's base64 changed: still parses, no longer the file
    path.write_bytes(gzip.compress(bytes(blob)))
    with pytest.raises(VocabularyError, match="sha256") as info:
        build_encoding("cl100k_base", directory=directory)
    assert hashlib.sha256(bytes(blob)).hexdigest() in str(info.value)
    assert "corrupt" in str(info.value)


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(VocabularyError, match="missing"):
        build_encoding("o200k_base", directory=tmp_path)


def test_not_gzip_raises(tmp_path: Path) -> None:
    (tmp_path / ENCODINGS["o200k_base"].filename).write_bytes(b"not gzip at all")
    with pytest.raises(VocabularyError, match="gzip"):
        build_encoding("o200k_base", directory=tmp_path)


def test_unknown_encoding() -> None:
    with pytest.raises(ConfigurationError, match="r50k_base"):
        build_encoding("r50k_base")


def test_parse_ranks() -> None:
    assert parse_ranks(b"IQ== 0\n\nIg== 1\n") == {b"!": 0, b'"': 1}
    with pytest.raises(VocabularyError, match="line 2"):
        parse_ranks(b"IQ== 0\nIg==\n", source="x")
    with pytest.raises(VocabularyError, match="line 1 does not parse"):
        parse_ranks(b"I*Q= 0\n")
    with pytest.raises(VocabularyError, match="line 1 does not parse"):
        parse_ranks(b"IQ== zero\n")
