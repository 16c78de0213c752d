"""The bundled tiktoken vocabularies: read, verify and build an encoding, once per process.

The ``.tiktoken.gz`` files under ``synopsis/data`` are OpenAI's public BPE ranks (see
``synopsis/data/VOCABULARIES.md``). Each decompressed file is checked against the sha256 that
tiktoken itself pins for it, so a count from here is the count tiktoken gives, with no network
access, no cache directory and no environment variable.

The split patterns and special tokens below are data, taken from tiktoken's
``tiktoken_ext/openai_public.py`` (MIT), where they define the same two encodings.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import threading
import zlib
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

import tiktoken

from synopsis.errors import ConfigurationError, VocabularyError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = [
    "ENCODINGS",
    "EncodingName",
    "VocabularySpec",
    "build_encoding",
    "get_encoding",
    "parse_ranks",
]

EncodingName: TypeAlias = Literal["o200k_base", "cl100k_base"]

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True, slots=True)
class VocabularySpec:
    """What it takes to build one encoding: file name, pinned hash, pattern, special tokens."""

    name: EncodingName
    filename: str
    sha256: str
    pat_str: str
    special_tokens: tuple[tuple[str, int], ...]


ENCODINGS: Final[dict[str, VocabularySpec]] = {
    "o200k_base": VocabularySpec(
        name="o200k_base",
        filename="o200k_base.tiktoken.gz",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str=_O200K_PATTERN,
        special_tokens=((_ENDOFTEXT, 199999), (_ENDOFPROMPT, 200018)),
    ),
    "cl100k_base": VocabularySpec(
        name="cl100k_base",
        filename="cl100k_base.tiktoken.gz",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=_CL100K_PATTERN,
        special_tokens=(
            (_ENDOFTEXT, 100257),
            (_FIM_PREFIX, 100258),
            (_FIM_MIDDLE, 100259),
            (_FIM_SUFFIX, 100260),
            (_ENDOFPROMPT, 100276),
        ),
    ),
}

_lock = threading.Lock()
_loaded: dict[str, tiktoken.Encoding] = {}


def _spec(name: str) -> VocabularySpec:
    spec = ENCODINGS.get(name)
    if spec is None:
        known = ", ".join(sorted(ENCODINGS))
        raise ConfigurationError(f"unknown encoding {name!r}; synopsis bundles {known}")
    return spec


def parse_ranks(blob: bytes, *, source: str = "vocabulary") -> dict[bytes, int]:
    """Parse a decompressed ``.tiktoken`` file: one ``<base64 token> <rank>`` pair a line."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(blob.splitlines(), start=1):
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2:
            raise VocabularyError(f"{source}: line {number} is not '<base64 token> <rank>'.")
        try:
            ranks[base64.b64decode(fields[0], validate=True)] = int(fields[1])
        except (binascii.Error, ValueError) as exc:
            raise VocabularyError(f"{source}: line {number} does not parse ({exc}).") from exc
    return ranks


def _read(spec: VocabularySpec, directory: Traversable) -> bytes:
    path = directory / spec.filename
    try:
        compressed = path.read_bytes()
    except OSError as exc:
        raise VocabularyError(
            f"The {spec.name} vocabulary file {spec.filename} is missing from {directory}; "
            "reinstall synopsis."
        ) from exc
    try:
        blob = gzip.decompress(compressed)
    except (OSError, EOFError, zlib.error) as exc:
        raise VocabularyError(
            f"The {spec.name} vocabulary file {spec.filename} is not a readable gzip file; "
            "reinstall synopsis."
        ) from exc
    digest = hashlib.sha256(blob).hexdigest()
    if digest != spec.sha256:
        raise VocabularyError(
            f"The {spec.name} vocabulary file {spec.filename} has sha256 {digest}, but "
            f"tiktoken pins {spec.sha256}; the file is corrupt or was replaced."
        )
    return blob


def build_encoding(name: str, *, directory: Traversable | None = None) -> tiktoken.Encoding:
    """Read, verify and build encoding ``name`` from ``directory`` (default: the bundled data).

    Every call reads the file again; :func:`get_encoding` is the cached form.
    """
    spec = _spec(name)
    where = directory if directory is not None else resources.files("synopsis") / "data"
    ranks = parse_ranks(_read(spec, where), source=spec.filename)
    return tiktoken.Encoding(
        name=spec.name,
        pat_str=spec.pat_str,
        mergeable_ranks=ranks,
        special_tokens=dict(spec.special_tokens),
    )


def get_encoding(name: str) -> tiktoken.Encoding:
    """The bundled encoding ``name``, built on first use and shared by the whole process."""
    found = _loaded.get(name)
    if found is not None:
        return found
    with _lock:
        found = _loaded.get(name)
        if found is None:
            found = build_encoding(name)
            _loaded[name] = found
        return found
