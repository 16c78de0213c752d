from __future__ import annotations

import pytest

from synopsis.summarizers.scanning import (
    bounded,
    dedupe,
    defined_symbols,
    exit_code,
    file_type,
    first_error_line,
    looks_failed,
    scan_text,
)


def test_anchors_in_prose() -> None:
    found = scan_text(
        "Add a `retry` option to FlexibleTokenizer in src/tok/core.py (see ./docs/retry.md and "
        "~/notes/todo, /etc/hosts, setup.py); keep Python 3.11 and pkg 1.2.3-rc1, not v2.0. "
        "Docs: https://example.com/a_b/c. Cost $1,200 on 2024-05-21, 45% of 2000 tokens, "
        "issue #1867, booking JG7FMM for omar_davis_3817; call os.path.join() and/or stop."
    )
    assert found.files == (
        "src/tok/core.py",
        "./docs/retry.md",
        "~/notes/todo",
        "/etc/hosts",
        "setup.py",
    )
    assert found.urls == ("https://example.com/a_b/c",)
    assert found.symbols == (
        "retry",
        "FlexibleTokenizer",
        "omar_davis_3817",
        "os.path.join()",
        "JG7FMM",
    )
    assert found.versions == ("Python 3.11", "1.2.3-rc1", "v2.0")
    assert found.numbers == ("$1,200", "2024-05-21", "45%", "2000 tokens", "#1867")


def test_names_inside_paths_and_urls_are_not_symbols() -> None:
    found = scan_text("see tests/test_core.py and https://x.io/some_page and `src/a.py:9`")
    assert found.symbols == ()
    assert found.files == ("tests/test_core.py", "src/a.py")


def test_nothing_in_plain_prose() -> None:
    found = scan_text("Please make it faster and/or simpler.")
    assert found == scan_text("")
    assert found.files == found.symbols == found.numbers == ()


@pytest.mark.parametrize(
    ("output", "line"),
    [
        ("collecting\nE   AssertionError: boom\n1 failed", "E   AssertionError: boom"),
        ("ok\nTraceback (most recent call last):\n  x", "Traceback (most recent call last):"),
        ("ERROR:\n\nNo replacement was performed.", "ERROR: No replacement was performed."),
        ("npm ERR! missing script", "npm ERR! missing script"),
        ("10 passed, 0 failed\nno errors", None),
        ("ValueError: bad", "ValueError: bad"),
    ],
)
def test_first_error_line(output: str, line: str | None) -> None:
    assert first_error_line(output) == line


@pytest.mark.parametrize(
    ("output", "failed"),
    [
        ("Error: file not found", True),
        ("<tool_use_error>File does not exist.</tool_use_error>", True),
        ("\n\nbash: foo: command not found", True),
        ("FileNotFoundError: [Errno 2]", True),
        ("class ConfigError(Exception):\n    pass", False),
        ("     1→import os", False),
        ("    12\tERROR: disk full (a log being read)", False),
        ("", False),
    ],
)
def test_a_tool_failure_is_judged_on_the_first_line(output: str, failed: bool) -> None:
    assert looks_failed(output) is failed


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nx", 2),
        ("a\nb\nc\nd\ne\nf\ng\n[Command finished with exit code 1]", 1),
        ("Exit code: 0\nfine", 0),
        ("returncode=-9", -9),
        ("1\n2\n3\n4\n5\nprints exit code 7 in the middle\n7\n8\n9\n10\n11", None),
        ("no code here", None),
    ],
)
def test_exit_codes_are_read_from_the_wrapper_lines(output: str, code: int | None) -> None:
    assert exit_code(output) == code


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("src/app.py", "python"),
        ("web/App.TSX", "typescript"),
        ("Dockerfile", "dockerfile"),
        ("Makefile", "unknown"),
        ("data.parquet", "parquet"),
    ],
)
def test_file_types(path: str, kind: str) -> None:
    assert file_type(path) == kind


def test_defined_symbols_read_through_line_number_gutters() -> None:
    python = "     1→import os\n     2→\n     3→class Tokenizer:\n     4→    def inner(self): ...\n"
    python += "     5→async def fetch():\n     6→def tokenize(): ...\n     7→class Tokenizer: ..."
    assert defined_symbols("python", python) == ["Tokenizer", "fetch", "tokenize"]
    ts = "1:export const a = 1\n2:export default function main() {}\n3:export interface Props {}\n"
    ts += "4:const hidden = 2\n5:export abstract class Base {}"
    assert defined_symbols("typescript", ts) == ["a", "main", "Props", "Base"]
    assert defined_symbols("c", "int main() {}") == []


def test_bounded_marks_the_cut() -> None:
    assert bounded("short", 10) == "short"
    assert bounded("x" * 3000, 1000) == "x" * 1000 + "… [cut 2,000 characters]"


def test_dedupe_keeps_first_occurrences_in_order() -> None:
    assert dedupe(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
