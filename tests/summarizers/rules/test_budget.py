from __future__ import annotations

import pytest

from synopsis.errors import ConfigurationError
from synopsis.summarizers import SummaryRecord
from synopsis.summarizers.rules.budget import (
    ENTITY_KEYS,
    FACET_KEYS,
    SECTION_KEYS,
    Draft,
    fit,
    plan_cuts,
)


def draft(**lists: tuple[object, ...]) -> Draft:
    keys = ["narrative", "key_points", *SECTION_KEYS, *FACET_KEYS]
    keys += [f"entities.{k}" for k in ENTITY_KEYS]
    return Draft({k: lists.get(k.replace(".", "_"), ()) for k in keys})


FULL = draft(
    narrative=("older story " * 30, "latest story"),
    key_points=("[✓ a]", "[❌ b]", "[✓ c]"),
    primary_request=("goal " * 100,),
    constraints=("Never push to main. " * 20, "Use tabs."),
    user_messages=("first " * 100, "second"),
    files_and_code=("Edited: src/app/x.py [written (3 lines)]; src/app/y.py [read]", "Named: a.md"),
    errors_and_fixes=("e1", "e2"),
    problem_solving=("p1",),
    next_step=("n",),
    current_work=("c",),
    pending_tasks=("t",),
    decisions=("d",),
    unresolved=("u",),
    entities_files=("a.py", "b.py"),
    entities_numbers=("42",),
)


def order(d: Draft) -> list[tuple[str, int, bool]]:
    return [(key, index, replacement is None) for key, index, replacement in plan_cuts(d)]


def test_least_important_first() -> None:
    cuts = order(FULL)

    def at(cut: tuple[str, int, bool]) -> int:
        return cuts.index(cut)

    # The log of successful tool calls goes first, oldest first; then the notes beside the
    # paths, the reasoning and the older narrative (shortened before it is dropped).
    assert cuts[:4] == [
        ("key_points", 0, True),
        ("key_points", 2, True),
        ("files_and_code", 0, False),
        ("problem_solving", 0, True),
    ]
    assert at(("problem_solving", 0, True)) < at(("narrative", 0, False))
    assert at(("narrative", 0, False)) < at(("narrative", 0, True))
    # Entities the sections already say go first, newest first (the first are carried
    # anchors); then the failed calls; then long messages of the person's are shortened;
    # then figures, URLs and identifiers (f) with the paths a tool only showed; then
    # decisions and the plan (e), failures (d) and the files (c).
    assert at(("narrative", 0, True)) < at(("entities.files", 1, True))
    assert at(("entities.files", 1, True)) < at(("entities.files", 0, True))
    sequence = [
        ("entities.files", 0, True),
        ("key_points", 1, True),
        ("user_messages", 0, False),
        ("entities.numbers", 0, True),
        ("decisions", 0, True),
        ("current_work", 0, True),
        ("unresolved", 0, True),
        ("pending_tasks", 0, True),
        ("next_step", 0, True),
        ("errors_and_fixes", 0, True),
        ("errors_and_fixes", 1, True),
        ("files_and_code", 1, True),
        ("files_and_code", 0, True),
        ("narrative", 1, True),
    ]
    assert [at(cut) for cut in sequence] == sorted(at(cut) for cut in sequence)
    # The person's words last: constraints shortened, requests dropped oldest first,
    # constraints (the preference "Use tabs." before the older prohibition), and the first
    # request at the very end.
    people = [
        ("narrative", 1, True),
        ("constraints", 0, False),
        ("user_messages", 0, True),
        ("primary_request", 0, False),
        ("user_messages", 1, True),
        ("constraints", 1, True),
        ("constraints", 0, True),
        ("primary_request", 0, True),
    ]
    assert [at(cut) for cut in people] == sorted(at(cut) for cut in people)
    assert cuts[-1] == ("primary_request", 0, True)
    # Short items are never "shortened".
    assert ("user_messages", 1, False) not in cuts
    assert ("constraints", 1, False) not in cuts
    assert ("files_and_code", 1, False) not in cuts


def test_a_file_line_loses_its_notes_then_its_paths_one_at_a_time() -> None:
    replacements = [r for key, i, r in plan_cuts(FULL) if key == "files_and_code" and i == 0]
    assert replacements == ["Edited: src/app/x.py; src/app/y.py", "Edited: src/app/y.py", None]


def test_paths_a_tool_showed_go_with_identifiers_the_longest_first_then_the_plan() -> None:
    d = draft(
        files_and_code=(
            "Edited: a.py",
            "Searched: b.py",
            "Named: c.py; docs",
            "Seen: build/out/d.py; src/a.py",
            "Read: pkg/src/a.py",
        ),
        entities_symbols=("parse_config", "x_y"),
        next_step=("n",),
    )
    cuts = plan_cuts(d)
    lines = [(key, r) for key, _, r in cuts if key in ("files_and_code", "entities.symbols")]
    assert lines == [
        ("files_and_code", "Seen: build/out/d.py"),  # src/a.py: still in pkg/src/a.py
        ("files_and_code", "Named: c.py"),  # docs names no file
        ("files_and_code", None),  # build/out/d.py: the longest of the rest
        ("entities.symbols", None),  # parse_config
        ("entities.symbols", None),  # x_y
        ("files_and_code", None),  # found by a search
        ("files_and_code", None),  # named
        ("files_and_code", None),  # read
        ("files_and_code", None),  # edited
    ]
    order = [(key, i) for key, i, _ in cuts]
    assert order.index(("entities.symbols", 1)) < order.index(("next_step", 0))
    assert order.index(("next_step", 0)) < order.index(("files_and_code", 1))
    assert [i for key, i, r in cuts if key == "files_and_code" and r is None] == [3, 1, 2, 4, 0]


def test_a_first_message_that_repeats_the_request_goes_first_among_requests() -> None:
    request = "Fix the parser in src/app/x.py."
    d = draft(primary_request=(request,), user_messages=(request, "second"))
    cuts = order(d)
    # Said once already, it goes before any request is shortened or dropped.
    assert cuts[0] == ("user_messages", 0, True)
    assert cuts.index(("user_messages", 1, True)) < cuts.index(("primary_request", 0, True))
    assert cuts[-1] == ("primary_request", 0, True)


def test_a_first_message_longer_than_the_request_it_opens_goes_before_the_paths() -> None:
    # Shown beside the request it repeats the head of: it costs, and says nothing new.
    request = "Fix the parser in src/app/x.py."
    d = draft(
        primary_request=(request,),
        user_messages=(f"{request} It breaks on empty input.", "second"),
        files_and_code=("Seen: build/log.txt",),
    )
    cuts = order(d)
    assert cuts.index(("user_messages", 0, True)) < cuts.index(("files_and_code", 0, True))
    assert ("user_messages", 0, False) not in cuts  # dropped, never shortened


def test_a_dropped_duplicate_request_stays_dropped() -> None:
    request = "Fix the parser. " + "x" * 400
    d = draft(primary_request=(request,), user_messages=(request, "second"))
    cuts = plan_cuts(d)
    for count in range(1, len(cuts) + 1):
        assert d.apply(cuts[:count]).lists["user_messages"][:1] != (request,)
        assert len(d.apply(cuts[:count]).lists["user_messages"]) <= 1


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
    # Dropping the successful calls and shortening the old narrative was enough: the failed
    # call stays, and the old narrative is shortened, not dropped.
    assert record.key_points == ("[❌ b]",)
    assert record.narrative.startswith("older story")
    assert "… [cut" in record.narrative
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


def test_a_persons_flagged_statements_go_after_their_other_requests() -> None:
    d = draft(
        primary_request=("goal",),
        user_messages=("FACT: the codename is LANTERN.", "chatter one", "chatter two", "newest"),
    )
    cuts = order(d)
    dropped = [i for key, i, gone in cuts if key == "user_messages" and gone]
    assert dropped[:3] == [1, 2, 0]
