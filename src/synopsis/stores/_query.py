"""What every store does alike with a query: split it into words, check recall arguments, cut
a snippet around a match, and (for stores without a full-text index) rank with BM25 as
SQLite's FTS5 does.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from synopsis.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Sequence

# Letters and digits, as FTS5's unicode61 tokenizer sees words (it treats "_" as a separator).
_WORD = re.compile(r"[^\W_]+")
K1 = 1.2
B = 0.75
SNIPPET_WORDS = 16
MARK = "**"
ELLIPSIS = "…"


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``."""
    return [w.lower() for w in _WORD.findall(text)]


def query_words(query: str) -> list[str]:
    """The distinct words of a query, in order: asking twice for a word does not weigh more."""
    return list(dict.fromkeys(words(query)))


def fts_expression(terms: Sequence[str]) -> str:
    """A safe FTS5 query of a query's words: each quoted, OR-ed. Words hold only letters and
    digits, so no quote, operator or column filter of the user's reaches FTS5's parser."""
    return " OR ".join(f'"{w}"' for w in terms)


def check_recall(ids: Sequence[str] | None, start: int | None, stop: int | None) -> None:
    """Refuse what ``Store.recall`` cannot answer: ids together with a range, or a bare string
    for ``ids`` (which would be read as one id per character)."""
    if ids is not None and (start is not None or stop is not None):
        raise ConfigurationError("recall takes ids or a start/stop range, not both")
    if isinstance(ids, str):
        raise ConfigurationError(f"ids must be a sequence of ids, not the string {ids!r}")


def check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ConfigurationError(f"limit must be a whole number, got {limit!r}")


def in_range(position: int, start: int | None, stop: int | None) -> bool:
    return (start is None or position >= start) and (stop is None or position < stop)


@dataclass(frozen=True, slots=True)
class Document:
    """One message as a BM25 index sees it: its word counts and length."""

    counts: Counter[str]
    length: int

    @classmethod
    def of(cls, text: str) -> Document:
        tokens = words(text)
        return cls(Counter(tokens), len(tokens))


@dataclass(slots=True)
class Corpus:
    """Collection statistics for BM25: FTS5 keeps them for the whole table, so do we."""

    rows: int = 0
    tokens: int = 0
    hits: Counter[str] = field(default_factory=Counter)

    def add(self, document: Document) -> None:
        self.rows += 1
        self.tokens += document.length
        self.hits.update(document.counts.keys())

    def remove(self, document: Document) -> None:
        """Take back what :meth:`add` counted for ``document`` (a forgotten message), so the
        statistics are those of a corpus that never held it, as FTS5's 'delete' leaves them."""
        self.rows -= 1
        self.tokens -= document.length
        self.hits.subtract(document.counts.keys())
        for word in document.counts:
            if not self.hits[word]:
                del self.hits[word]

    def score(self, document: Document, terms: Sequence[str]) -> float:
        """FTS5's ``bm25()`` negated (higher is better), with its floor on the IDF of a word
        found in most rows, so such a word still ranks what holds it. Only called for a
        document of the corpus that holds one of the terms, so no count here is zero."""
        norm = 1 - B + B * document.length / (self.tokens / self.rows)
        total = 0.0
        for term in terms:
            freq = document.counts.get(term, 0)
            if not freq:
                continue
            hits = self.hits[term]
            idf = max(math.log((self.rows - hits + 0.5) / (hits + 0.5)), 1e-6)
            total += idf * freq * (K1 + 1) / (freq + K1 * norm)
        return total


def snippet(text: str, terms: Sequence[str]) -> str:
    """A short extract around the first word of ``text`` among ``terms`` (or its opening, if
    none is), every such word marked. Reads ``text`` only up to the extract's end: a megabyte
    tool result costs what its first match costs (FTS5's ``snippet()`` took seconds on one).
    """
    wanted = set(terms)
    before: deque[re.Match[str]] = deque(maxlen=SNIPPET_WORDS // 4)
    seen = 0
    words = _WORD.finditer(text)
    for word in words:
        if word.group().lower() in wanted:
            window = [*before, word]
            break
        before.append(word)
        seen += 1
    else:
        # No word matches (one FTS5 split differently): the opening stands in.
        words = _WORD.finditer(text)
        window, seen = [], 0
    window.extend(itertools.islice(words, SNIPPET_WORDS - len(window)))
    if not window:
        return ""
    out = [ELLIPSIS] if seen > len(before) else []
    cursor = window[0].start()
    for word in window:
        out.append(text[cursor : word.start()])
        marked = word.group().lower() in wanted
        out.append(f"{MARK}{word.group()}{MARK}" if marked else word.group())
        cursor = word.end()
    if next(words, None) is not None:
        out.append(ELLIPSIS)
    return "".join(out)
