"""A message's words as PostgreSQL's text search takes them: cut here, as every store cuts
them (:mod:`._query`), and handed over as ``tsvector`` and ``tsquery`` literals, so that a
query finds in PostgreSQL what it finds in SQLite (its own parser reads ``app.py`` as one word
and lower-cases by the server's locale)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.stores import _query

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["tsquery", "tsvector"]

# What a tsvector can hold: positions up to 16383, 256 of them a lexeme, a lexeme under 2 KB,
# and under 1 MB for the lexemes and their positions together (each lexeme is padded to an even
# length, then holds a 2-byte count and 2 bytes a position). A longer text is indexed up to
# those limits: its first words, and each word's first positions.
_MAX_POSITION = 16383
_MAX_POSITIONS = 256
_MAX_LEXEME = 2046
_MAX_BYTES = 1_000_000


def tsvector(text: str) -> str:
    """``text``'s words as a ``tsvector`` literal: each lexeme quoted (words hold only
    letters and digits, so no quote or backslash), with its positions."""
    positions: dict[str, list[int]] = {}
    size = 0
    for n, word in enumerate(_query.words(text), 1):
        found = positions.get(word)
        if found is None:
            length = len(word.encode())
            cost = length + 1 + 2 + 2
            if length > _MAX_LEXEME or size + cost > _MAX_BYTES:
                continue
            size += cost
            positions[word] = [min(n, _MAX_POSITION)]
        elif len(found) < _MAX_POSITIONS and found[-1] < _MAX_POSITION and size + 2 <= _MAX_BYTES:
            size += 2
            found.append(min(n, _MAX_POSITION))
    return " ".join(f"'{w}':{','.join(map(str, p))}" for w, p in positions.items())


def tsquery(terms: Sequence[str]) -> str:
    """Any of ``terms`` as a ``tsquery`` literal (empty when none can be a lexeme)."""
    return " | ".join(f"'{t}'" for t in terms if len(t.encode()) <= _MAX_LEXEME)
