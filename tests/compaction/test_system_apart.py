"""A system prompt given apart from an OpenAI chat or Responses list (``system=``) is part of
what the model reads: measured, kept whole through a compaction, and given back apart, as
given, never moved into the list nor dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import synopsis
from synopsis.compaction import Compactor
from synopsis.errors import UnknownFormatError

if TYPE_CHECKING:
    from synopsis.formats import FormatName

PROMPT = "Answer in one short sentence. " * 200  # about 1,400 tokens


def history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(turns):
        out += [
            {"role": "user", "content": f"question {n}: " + "detail " * 60},
            {"role": "assistant", "content": f"answer {n}"},
        ]
    out.append({"role": "user", "content": "and now?"})
    return out


@pytest.mark.parametrize("fmt", ["openai", "responses"])
def test_it_is_measured(fmt: FormatName) -> None:
    items = history(3)
    alone = synopsis.compact(items, format=fmt, model="gpt-4o")
    given = synopsis.compact(items, format=fmt, model="gpt-4o", system=PROMPT)
    assert given.tokens_before - alone.tokens_before > 1_000
    assert given.messages == items  # nothing compacted: the list as it came
    assert given.system is PROMPT


@pytest.mark.parametrize("fmt", ["openai", "responses"])
def test_a_compaction_gives_it_back_apart_and_whole(fmt: FormatName) -> None:
    items = history(30)
    result = synopsis.compact(
        items, format=fmt, model="gpt-4o", context_window=4_000, system=PROMPT
    )
    assert result.compacted
    assert result.system is PROMPT
    assert all(item.get("role") != "system" for item in result.messages)
    assert result.tokens_after <= 4_000
    problems = synopsis.validate(result.messages, fmt, system=result.system)
    assert problems == []


def test_text_blocks_are_taken_as_its_text() -> None:
    blocks = [{"type": "text", "text": PROMPT}]
    result = synopsis.compact(history(3), format="openai", model="gpt-4o", system=blocks)
    assert result.tokens_before > 1_000
    assert result.system is blocks


def test_anything_else_is_refused_with_a_sentence() -> None:
    with pytest.raises(UnknownFormatError, match="must be text or text blocks, got int"):
        synopsis.compact(history(1), format="openai", model="gpt-4o", system=42)  # type: ignore[arg-type]


def test_the_fast_way_gives_what_the_full_way_gives() -> None:
    items = history(3)
    fast = Compactor(model="gpt-4o", context_window=10**6, environ={})
    fast.compact(items, system=PROMPT)
    grown = [*items, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    got = fast.compact(grown, system=PROMPT)
    full = synopsis.compact(grown, model="gpt-4o", context_window=10**6, system=PROMPT)
    assert (got.messages, got.system, got.tokens_before) == (
        full.messages,
        full.system,
        full.tokens_before,
    )


def test_problems_are_numbered_in_the_callers_list() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "nobody", "content": "y"},
    ]
    found = synopsis.validate(items, "openai", system=PROMPT)
    assert found  # the result answers no call
    # The result is the list's second item (index 1), whatever opens the decoded messages.
    assert {p.index for p in found} == {1}
