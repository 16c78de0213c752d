"""The files a summary lists: one line per action, merged across records, thinned a path at a
time under a tight budget."""

from __future__ import annotations

import pytest

from synopsis.summarizers.rules.files import (
    ACTIONS,
    bare_line,
    entries_of,
    file_lines,
    merge_file_lines,
    parse_file_line,
    without,
)


def test_a_path_is_listed_under_its_strongest_action() -> None:
    lines = file_lines(
        {
            "src/a.py": ["read (5 lines, python)", "written (-1/+2 lines)"],
            "src/b.py": ["found", "read (2 lines, python)"],
            "src/c.py": ["found"],
            "README.md": ["named"],
            "build/out.log": ["seen"],
            "src/d.py": ["write failed (3 lines, 40 chars)"],
            "src/e.py": ["read failed"],
        }
    )
    assert lines == {
        "Edited": [
            "src/a.py [read (5 lines, python), written (-1/+2 lines)]",
            "src/d.py [write failed (3 lines, 40 chars)]",
        ],
        "Read": ["src/b.py [read (2 lines, python)]", "src/e.py [read failed]"],
        "Searched": ["src/c.py"],
        "Named": ["README.md"],
        "Seen": ["build/out.log"],
    }
    assert list(lines) == list(ACTIONS)


def test_repeated_notes_are_counted_with_their_first_detail() -> None:
    lines = file_lines(
        {"a.py": ["read (5 lines, python)", "read (9 lines, python)", "read (7 lines, python)"]}
    )
    assert lines["Read"] == ["a.py [read x3 (5 lines, python)]"]
    assert file_lines({})["Edited"] == []


def test_merging_moves_a_path_to_its_strongest_action() -> None:
    previous = ["Read: a.py [read (5 lines, python)]; b.py [read (1 lines, python)]", "Named: c.md"]
    new = {"Edited": ["a.py [written (+1/-0 lines)]"], "Read": ["c.md [read (3 lines, md)]"]}
    assert merge_file_lines(previous, new) == [
        "Edited: a.py [written (+1/-0 lines)]",
        "Read: b.py [read (1 lines, python)]; c.md [read (3 lines, md)]",
    ]


def test_merging_never_demotes_and_keeps_the_newest_note() -> None:
    previous = ["Edited: a.py [written (3 lines)]", "Read: b.py [read (1 lines)]"]
    new = {
        "Read": ["a.py [read (9 lines)]", "b.py [read (2 lines)]"],
        "Named": ["b.py", "d.py"],
    }
    assert merge_file_lines(previous, new) == [
        "Edited: a.py [written (3 lines)]",
        "Read: b.py [read (2 lines)]",
        "Named: d.py",
    ]


def test_a_bare_entry_does_not_replace_a_noted_one_of_the_same_action() -> None:
    previous = ["Read: a.py [read (5 lines)]"]
    assert merge_file_lines(previous, {"Read": ["a.py"]}) == previous


def test_lines_hold_at_most_twelve_entries() -> None:
    new = {"Read": [f"src/m{i}.py" for i in range(25)]}
    lines = merge_file_lines([], new)
    assert len(lines) == 3
    assert [len(parse_file_line(line)[1]) for line in lines] == [12, 12, 1]  # type: ignore[index]
    assert lines[0].startswith("Read: src/m0.py; src/m1.py;")
    assert lines[2] == "Read: src/m24.py"


def test_chunked_lines_merge_back_into_one_list() -> None:
    first = merge_file_lines([], {"Edited": [f"f{i}.py" for i in range(13)]})
    again = merge_file_lines(first, {"Edited": ["f13.py"]})
    assert len(again) == 2
    assert again[1] == "Edited: f12.py; f13.py"


def test_lines_another_summarizer_wrote_are_kept_word_for_word_after_the_parsed_ones() -> None:
    previous = [
        "Refactored the whole auth module",
        "src/app.py — read (3 lines)",
        "Edited: src/{a.py, b.py} (folded)",
        "Refactored the whole auth module",
    ]
    assert merge_file_lines(previous, {"Named": ["x.md"]}) == [
        "Named: x.md",
        "Refactored the whole auth module",
        "src/app.py — read (3 lines)",
        "Edited: src/{a.py, b.py} (folded)",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "Refactored the whole auth module",
        "src/app.py — read (3 lines)",
        "Touched: a.py",
        "Edited: src/{a.py, b.py} (folded)",
        "Edited:a.py",
        "",
    ],
)
def test_parse_file_line_refuses_foreign_lines(line: str) -> None:
    assert parse_file_line(line) is None


def test_parse_file_line_reads_its_own_lines() -> None:
    assert parse_file_line("Edited: a.py [written (1 lines)]; b/c.py") == (
        "Edited",
        ["a.py [written (1 lines)]", "b/c.py"],
    )
    assert parse_file_line("Seen: ") == ("Seen", [])


def test_without_drops_entries_and_keeps_the_rest_bare_and_whole() -> None:
    line = "Read: src/app/x.py [read (3 lines, python)]; src/app/y.py; docs/z.md [read]"
    assert without(line, set()) == "Read: src/app/x.py; src/app/y.py; docs/z.md"
    assert without(line, {0, 2}) == "Read: src/app/y.py"
    assert without(line, {0, 1, 2}) is None
    # A line of other wording is one entry: kept whole, or dropped whole.
    assert without("Refactored the auth module", set()) == "Refactored the auth module"
    assert without("Refactored the auth module", {0}) is None


def test_entries_of_reads_paths_without_their_notes() -> None:
    assert entries_of("Edited: a.py [written (1 lines)]; b/c.py") == ("Edited", ["a.py", "b/c.py"])
    assert entries_of("Edited: src/{a.py, b.py} (folded)") == (
        "",
        ["Edited: src/{a.py, b.py} (folded)"],
    )


def test_a_directory_a_deeper_listed_path_lies_in_is_not_listed_on_its_own() -> None:
    new = {
        "Edited": ["src/app/main.py"],
        "Read": ["src [read (3 entries)]"],
        "Named": ["/srv/repo", "/srv/repo/src", "src/app", "docs"],
        "Seen": ["/srv/repo/src/lib/util.py", "src/app/"],
    }
    lines = merge_file_lines([], new)
    # A directory that was only mentioned goes when a deeper path says it; one that was read
    # stays, and so does one with nothing listed under it.
    assert lines == [
        "Edited: src/app/main.py",
        "Read: src [read (3 entries)]",
        "Named: docs",
        "Seen: /srv/repo/src/lib/util.py",
    ]


def test_bare_line_drops_the_notes_and_keeps_every_path_whole() -> None:
    line = "Read: src/app/x.py [read (3 lines, python)]; src/app/y.py"
    assert bare_line(line) == "Read: src/app/x.py; src/app/y.py"
    assert bare_line("Something else: x [y]") == "Something else: x [y]"
