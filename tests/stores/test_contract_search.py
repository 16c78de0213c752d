"""The search half of the store contract, run against every bundled store: BM25 ranking,
ties, limits, hostile queries, and snippets of huge texts."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import Role
from tests.stores.helpers import compaction, record, stored, three

if TYPE_CHECKING:
    from tests.stores.conftest import Harness

HOSTILE = [
    '"',
    '""',
    "'",
    "-",
    "fix -app",
    "text:fix",
    "*",
    "app*",
    "NEAR",
    "NEAR(fix app)",
    "fix AND",
    "OR",
    "NOT fix",
    "(",
    ")",
    "^fix",
    "{text}: fix",
    "fix + app",
    '"unterminated',
    "\x00",
    "🙂",
    "\ud800",
    "ß İ ǅ",
]


def test_search_ranks_the_best_match_first(harness: Harness) -> None:
    summary = record()
    texts = [
        "the weather is nice today",
        "a parser error in the tokenizer",
        "parser parser parser: the parser fails on nested parser input",
        "unrelated words about lunch",
        "the tokenizer is fine",
    ]
    rows = [stored(i, t, compaction=summary.id) for i, t in enumerate(texts)]
    harness.store.save(compaction(summary, rows))
    store = harness.reader()
    hits = store.search("s1", "Parser")
    assert [h.message for h in hits] == [rows[2], rows[1]]
    assert hits[0].score > hits[1].score > 0
    assert "**parser**" in hits[0].snippet
    both = store.search("s1", "tokenizer parser error")
    assert both[0].message == rows[1]
    assert {h.message.position for h in both} == {1, 2, 4}
    assert [h.message for h in store.search("s1", "parser", limit=1)] == [rows[2]]
    assert store.search("s1", "parser", limit=0) == []
    assert store.search("s1", "absent") == []


def test_search_ties_go_in_timeline_order(harness: Harness) -> None:
    summary = record()
    rows = [stored(i, "same words here", compaction=summary.id, role=Role.TOOL) for i in (3, 1)]
    rows = [replace(r, id=f"r{r.position}") for r in rows]
    harness.store.save(compaction(summary, rows))
    hits = harness.reader().search("s1", "words")
    assert [h.message.position for h in hits] == [1, 3]


@pytest.mark.parametrize("query", HOSTILE)
def test_search_tolerates_hostile_queries(harness: Harness, query: str) -> None:
    summary, rows = three()
    harness.store.save(compaction(summary, rows))
    hits = harness.reader().search("s1", query)
    assert all(h.message in rows for h in hits)
    assert harness.store.search("s1", f"{query} parser")[0].message == rows[0]


def test_search_without_words_finds_nothing(harness: Harness) -> None:
    summary, rows = three()
    harness.store.save(compaction(summary, rows))
    for query in ("", "   ", "-:*", "🙂🙂"):
        assert harness.reader().search("s1", query) == []


def test_search_limit_must_be_a_number(harness: Harness) -> None:
    with pytest.raises(ConfigurationError, match="limit"):
        harness.store.search("s1", "x", limit=True)
    with pytest.raises(ConfigurationError, match="limit"):
        harness.store.search("s1", "x", limit="3")  # type: ignore[arg-type]


def test_search_in_a_huge_text_gives_a_short_snippet(harness: Harness) -> None:
    summary = record()
    log = "INFO step ok\n" * 60_000 + "ERROR disk quota exceeded\n" + "INFO step ok\n" * 100
    rows = [stored(0, log, compaction=summary.id, role=Role.TOOL)]
    harness.store.save(compaction(summary, rows))
    store = harness.reader()
    (hit,) = store.search("s1", "Quota")
    lines = ["…step ok", "ERROR disk **quota** exceeded", *["INFO step ok"] * 3, "INFO…"]
    assert hit.snippet == "\n".join(lines)
    (common,) = store.search("s1", "step")
    assert common.snippet == "\n".join(["INFO **step** ok"] * 5) + "\nINFO…"


def test_a_search_after_more_saves_scores_as_if_all_were_saved_first(harness: Harness) -> None:
    """Collection statistics cover every saved message, also those saved after a search."""
    first, second = record(), record()
    early = [stored(i, t, compaction=first.id) for i, t in enumerate(["parser bug", "lunch"])]
    later = [
        stored(i + 2, t, compaction=second.id)
        for i, t in enumerate(["parser parser fix", "the lunch menu", "lunch again"])
    ]
    harness.store.save(compaction(first, early))
    before = harness.reader().search("s1", "parser lunch")
    assert {h.message for h in before} == set(early)
    harness.store.save(compaction(second, later))
    after = harness.reader().search("s1", "parser lunch")
    assert {h.message for h in after} == {*early, *later}
    other = harness.another()
    other.save(compaction(first, early))
    other.save(compaction(second, later))
    assert [(h.message, h.score) for h in other.search("s1", "parser lunch")] == [
        (h.message, h.score) for h in after
    ]
