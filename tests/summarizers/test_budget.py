from __future__ import annotations

import pytest

from synopsis.errors import ConfigurationError
from synopsis.summarizers import SummaryRecord
from synopsis.summarizers.budget import ENTITY_KEYS, FACET_KEYS, SECTION_KEYS, Draft, fit, plan_cuts


def draft(**lists: tuple[object, ...]) -> Draft:
    keys = ["narrative", "key_points", *SECTION_KEYS, *FACET_KEYS]
    keys += [f"entities.{k}" for k in ENTITY_KEYS]
    return Draft({k: lists.get(k.replace(".", "_"), ()) for k in keys})


FULL = draft(
    narrative=("older story " * 30, "latest story"),
    key_points=("[✓ a]", "[❌ b]", "[✓ c]"),
    primary_request=("goal " * 100,),
    user_messages=("first " * 100, "second"),
    errors_and_fixes=("e1", "e2"),
    problem_solving=("p1",),
    next_step=("n",),
    current_work=("c",),
    entities_files=("a.py", "b.py"),
)


def order(d: Draft) -> list[tuple[str, int, bool]]:
    return [(key, index, replacement is None) for key, index, replacement in plan_cuts(d)]


def test_least_important_first() -> None:
    cuts = order(FULL)
    position = {cut: i for i, cut in enumerate(cuts)}
    assert cuts[0] == ("problem_solving", 0, True)
    # Entities go newest first: the first are anchors carried from earlier summaries.
    assert position[("entities.files", 1, True)] < position[("entities.files", 0, True)]
    # Old successful tool calls go before failed ones, user messages and errors.
    assert position[("key_points", 0, True)] < position[("key_points", 2, True)]
    assert position[("key_points", 2, True)] < position[("key_points", 1, True)]
    assert position[("key_points", 1, True)] < position[("user_messages", 0, True)]
    assert position[("user_messages", 0, False)] < position[("user_messages", 0, True)]
    assert position[("user_messages", 0, True)] < position[("errors_and_fixes", 0, True)]
    assert position[("errors_and_fixes", 0, True)] < position[("user_messages", 1, True)]
    assert position[("next_step", 0, True)] < position[("user_messages", 1, True)]
    # Older narrative is shortened, then dropped; the latest goes late.
    assert position[("narrative", 0, False)] < position[("narrative", 0, True)]
    assert position[("narrative", 0, True)] < position[("narrative", 1, True)]
    assert cuts[-2:] == [("primary_request", 0, False), ("primary_request", 0, True)]
    # Short items are never "shortened".
    assert ("user_messages", 1, False) not in position


def test_apply_replaces_and_drops() -> None:
    cut = FULL.apply([("user_messages", 0, "short"), ("key_points", 1, None)])
    assert cut.lists["user_messages"] == ("short", "second")
    assert cut.lists["key_points"] == ("[✓ a]", "[✓ c]")
    assert cut.lists["errors_and_fixes"] == FULL.lists["errors_and_fixes"]
    assert FULL.apply([("user_messages", 0, "x"), ("user_messages", 0, None)]).lists[
        "user_messages"
    ] == ("second",)


def build(d: Draft, truncated: bool) -> SummaryRecord:
    return SummaryRecord(
        narrative="\n".join(d.lists["narrative"]),
        key_points=d.lists["key_points"],
        truncated=truncated,
    )


def size(record: SummaryRecord) -> int:
    return len(record.narrative) + sum(len(p) for p in record.key_points) + 10 * record.truncated


def test_fit_returns_the_whole_record_when_it_fits() -> None:
    record = fit(FULL, build, size, 10_000)
    assert not record.truncated
    assert record.key_points == FULL.lists["key_points"]


def test_fit_makes_the_fewest_cuts() -> None:
    budget = size(build(FULL, False)) - 1
    record = fit(FULL, build, size, budget)
    assert record.truncated
    assert size(record) <= budget
    # Shortening the old narrative was enough; the key points all stay.
    assert record.key_points == FULL.lists["key_points"]
    assert record.narrative.endswith("latest story")


def test_fit_raises_when_not_even_the_frame_fits() -> None:
    with pytest.raises(ConfigurationError, match="needs at least 10 tokens"):
        fit(FULL, build, size, 5)


def test_fit_survives_cuts_that_do_not_shrink_the_measure() -> None:
    # A measure that ignores content: only dropping everything is certain to fit.
    def stubborn(record: SummaryRecord) -> int:
        return 0 if not record.narrative and not record.key_points else 100

    record = fit(FULL, build, stubborn, 50)
    assert stubborn(record) <= 50
