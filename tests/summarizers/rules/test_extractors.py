"""Each default extractor on the output real agents produce (shapes taken from the bundled
transcripts: Claude Code, Codex, OpenHands, SWE-agent)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from synopsis.summarizers import DEFAULT_EXTRACTORS, ToolExchange, ToolFacts, find_extractor
from synopsis.summarizers.rules.exchanges import parse_arguments
from synopsis.summarizers.rules.extractors import (
    editor_extractor,
    generic_extractor,
    plan_extractor,
    read_extractor,
    search_extractor,
    shell_extractor,
    web_extractor,
    write_extractor,
)


def run(
    name: str, args: dict[str, Any] | str, output: str | None, *, is_error: bool = False
) -> ToolFacts:
    parsed, raw = parse_arguments(args if isinstance(args, str) else json.dumps(args))
    exchange = ToolExchange(name, parsed, raw, output, is_error)
    return find_extractor(name, DEFAULT_EXTRACTORS)(exchange)


PY_FILE = (
    '     1→"""Math utility functions."""\n     2→\n     3→\n'
    "     4→def add_numbers(a: int, b: int) -> int:\n"
    '     5→    """Add two numbers together."""\n     6→    return a + b\n     7→\n'
    "     8→class Calculator:\n     9→    pass\n"
)


def test_read_file_reports_path_lines_type_and_definitions() -> None:
    facts = run("Read", {"file_path": "/tmp/src/math_utils.py"}, PY_FILE)
    assert facts.key_point == (
        "[✓ Read: File: /tmp/src/math_utils.py | Lines: 9 | Type: python | "
        "Defines: add_numbers, Calculator]"
    )
    assert facts.files == ("/tmp/src/math_utils.py",)
    assert facts.symbols == ("add_numbers", "Calculator")
    assert facts.notes == (("/tmp/src/math_utils.py", "read (9 lines, python)"),)


def test_read_file_lists_at_most_five_definitions() -> None:
    body = "\n".join(f"export function f{i}() {{}}" for i in range(8))
    facts = run("read_file", {"path": "web/api.ts"}, body)
    assert "Defines: f0, f1, f2, f3, f4 (+3 more)" in facts.key_point
    assert len(facts.symbols) == 8


def test_a_failed_read_is_an_error_with_its_message() -> None:
    facts = run(
        "Read",
        {"file_path": "/nope.py"},
        "<tool_use_error>File does not exist.</tool_use_error>",
    )
    assert facts.status == "error"
    assert facts.errors == ("<tool_use_error>File does not exist.</tool_use_error>",)
    assert facts.key_point.startswith("[❌ Read: File: /nope.py | Error: <tool_use_error>")
    assert facts.notes == (("/nope.py", "read failed"),)


def test_a_read_without_a_result_is_pending() -> None:
    facts = run("cat", {"path": "a.md"}, None)
    assert facts.status == "pending"
    # "…": no outcome yet; a ✓ would claim a success the part never saw.
    assert facts.key_point == "[… cat: File: a.md | no result yet]"
    assert facts.notes == ()


def test_openhands_editor_view_is_a_read_and_its_edits_are_writes() -> None:
    view = run(
        "str_replace_editor",
        {"command": "view", "path": "/workspace/ponyc/src/libponyc/expr/match.c"},
        'Here\'s the result of running `cat -n` on match.c:\n     1\t#include "match.h"\n',
    )
    assert view.status == "success"
    assert "Type: c" in view.key_point
    edit = run(
        "str_replace_editor",
        {
            "command": "str_replace",
            "path": "/workspace/ponyc/src/libponyc/expr/match.c",
            "old_str": "return pattern_type;",
            "new_str": "ast_free(x);\nreturn pattern_type;",
        },
        "ERROR:\nNo replacement was performed. Multiple occurrences of old_str "
        "`return pattern_type;` in lines [317, 449]. Please ensure it is unique.",
    )
    assert edit.status == "error"
    assert edit.errors[0].startswith("ERROR: No replacement was performed. Multiple occurrences")
    assert "Change: -1/+2 lines" in edit.key_point
    assert DEFAULT_EXTRACTORS["str_replace_based_edit_tool"] is editor_extractor


def test_write_reports_the_size_of_new_content() -> None:
    facts = run("Write", {"file_path": "SPEC.md", "content": "# Spec\n\nbody\n"}, "File created")
    assert facts.key_point == "[✓ Write: File: SPEC.md | Change: 3 lines, 13 chars]"
    assert facts.notes == (("SPEC.md", "written (3 lines, 13 chars)"),)


def test_codex_apply_patch_lists_every_file_and_counts_lines() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/env.ts\n@@\n-const a = 1;\n+const a = 2;\n"
        "+const b = 3;\n*** Add File: src/new.ts\n+export {};\n*** End Patch"
    )
    facts = run("apply_patch", {"input": patch}, "Success. Updated the following files:")
    assert facts.files == ("src/env.ts", "src/new.ts")
    assert "Change: +3/-1 lines" in facts.key_point
    freeform = run("apply_patch", patch, "ok")  # a custom tool's raw, non-JSON input
    assert freeform.files == ("src/env.ts", "src/new.ts")


def test_a_unified_diff_names_its_files() -> None:
    diff = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n--- /dev/null\n+++ b/new.py"
    facts = write_extractor(ToolExchange("patch", {"diff": diff}, "", "applied"))
    assert facts.files == ("app.py", "new.py")


def test_writes_without_a_known_size_or_path() -> None:
    facts = run("create", {"filename": "reproduce.py"}, "[File: reproduce.py (1 lines total)]")
    assert "Change: change size unknown" in facts.key_point
    anonymous = run("edit", {"search": "a", "replace": "b\nc"}, "ok")
    assert anonymous.key_point == "[✓ edit: File: ? | Change: -1/+2 lines]"
    assert anonymous.target is None
    many = write_extractor(
        ToolExchange(
            "apply_patch",
            {"patch": "".join(f"*** Add File: f{i}.py\n+x\n" for i in range(5))},
            "",
            "done",
        )
    )
    assert "File: f0.py, f1.py, f2.py (+2 more)" in many.key_point


def test_shell_with_a_failing_exit_code_keeps_the_first_error_line() -> None:
    output = (
        "Chunk ID: 853167\nWall time: 2.1 seconds\nProcess exited with code 1\nOutput:\n"
        "FAILED tests/test_env.ts > sets compaction\nAssertionError: expected 90 to be 80\n"
    )
    facts = run("exec_command", {"cmd": "npm test -- env", "workdir": "/repo"}, output)
    assert facts.status == "error"
    assert facts.errors == ("FAILED tests/test_env.ts > sets compaction",)
    assert facts.key_point == (
        "[❌ exec_command: Command: npm test -- env | Exit: 1 | Output: 6 lines | "
        "Error: FAILED tests/test_env.ts > sets compaction]"
    )
    assert facts.commands == ("npm test -- env",)


def test_shell_success_ignores_error_words_when_the_exit_code_is_zero() -> None:
    output = "Process exited with code 0\nOutput:\n3 passed, 0 failed\nwarning: error-prone lint"
    facts = run("bash", {"command": "pytest -q"}, output)
    assert facts.status == "success"
    assert facts.errors == ()


def test_shell_without_an_exit_code_judges_by_evidence() -> None:
    bad = run("execute_bash", {"command": "make"}, "cc: fatal error: no input files")
    assert bad.status == "error"
    assert bad.errors == ("cc: fatal error: no input files",)
    assert "Exit" not in bad.key_point
    good = run("execute_bash", {"command": "ls"}, "a.py\nb.py")
    assert good.status == "success"
    flagged = run("shell", {"command": "false"}, "", is_error=True)
    assert flagged.status == "error"
    assert flagged.errors == ()


@pytest.mark.parametrize(
    "output",
    [
        "Makefile\nerror.c\nerror.h",
        '{\n  "devDependencies": {\n    "assertion-error": "^2.0.1"\n  }\n}',
        "INFO sync done error_count=0\nDEBUG error handler registered",
        "src/errors.py:12: class ParseError(Exception):",
    ],
)
def test_shell_output_that_only_mentions_errors_succeeded(output: str) -> None:
    # These used to count as failures: no exit code, and a line with "error" in it.
    facts = run("bash", {"command": "cat x"}, output)
    assert facts.status == "success"
    assert facts.errors == ()


def test_a_zero_exit_code_does_not_hide_failing_tests() -> None:
    output = "FAILED tests/a.py::test_b - assert 1 == 2\n1 failed in 0.1s\nExit code: 0"
    facts = run("bash", {"command": "pytest -q | tail -2"}, output)
    assert facts.status == "error"
    assert facts.errors == ("FAILED tests/a.py::test_b - assert 1 == 2",)
    assert "Exit: 0" in facts.key_point


def test_a_failing_exit_code_without_evidence_shows_the_last_line() -> None:
    output = (
        "On branch main\nnothing to commit, working tree clean\n[Command finished with exit code 1]"
    )
    facts = run("execute_bash", {"command": "git commit -am x"}, output)
    assert facts.status == "error"
    assert facts.errors == ("nothing to commit, working tree clean",)


def test_shell_commands_given_as_a_list_or_raw_text() -> None:
    listed = run("shell", {"command": ["bash", "-lc", "ls -la"]}, "total 0")
    assert listed.commands == ("bash -lc ls -la",)
    raw = run("run", "ls -la /tmp", "total 0")
    assert raw.commands == ("ls -la /tmp",)
    long = run("bash", {"command": "echo " + "x" * 300}, None)
    assert long.status == "pending"
    assert "no result yet" in long.key_point
    assert len(long.commands[0]) == 200


def test_grep_output_with_line_numbers() -> None:
    output = "src/net.py:12:    retry = 3\nsrc/net.py:40:    if retry:\nsrc/core.py:7:retry()"
    facts = run("grep", {"pattern": "retry", "path": "src"}, output)
    assert facts.key_point == (
        '[✓ grep: Pattern: "retry" | Matches: 3 | Files: 2 | Top files: src/net.py, src/core.py]'
    )
    assert facts.files == ("src/net.py", "src/core.py")


def test_searching_for_error_text_is_not_an_error() -> None:
    facts = run("grep", {"pattern": "error:"}, "src/a.py:3: raise error: bad\nsrc/b.py:9:error: x")
    assert facts.status == "success"
    assert "Matches: 2" in facts.key_point
    failed = run("grep", {"pattern": "x"}, "grep: src: No such file or directory")
    assert failed.status == "error"
    # A directory it could not read opens the output, but the files it found mean it worked.
    partly = run("find", {"name": "*.log"}, "find: './root': Permission denied\n./app.log\n./x.log")
    assert partly.status == "success"
    assert partly.errors == ()
    assert "Matches: 2" in partly.key_point


def test_glob_and_find_output_are_file_lists() -> None:
    output = "/tmp/x/tests/__init__.py\n/tmp/x/src/math_utils.py\nREADME.md"
    facts = run("Glob", {"pattern": "**/*.py"}, output)
    assert "Matches: 3 | Files: 3" in facts.key_point
    found = run(
        "find_file",
        {"file_name": "fields.py", "dir": "src"},
        'Found 1 matches for "fields.py" in /testbed/src:\n/testbed/src/marshmallow/fields.py',
    )
    assert 'Pattern: "fields.py" | Matches: 1 | Files: 1' in found.key_point


def test_a_search_with_no_matches_is_partial() -> None:
    facts = run("search_files", {"query": "nothing"}, "")
    assert facts.status == "partial"
    assert facts.key_point.startswith("[✓ search_files: Pattern:")
    assert "Matches: 0" in facts.key_point
    failed = run("rg", {"pattern": "("}, "Error: regex parse error", is_error=True)
    assert failed.status == "error"
    assert "Matches" not in failed.key_point


def test_web_fetch_reports_status_and_title() -> None:
    page = "HTTP/1.1 200 OK\ncontent-type: text/html\n\n<html><title>asyncio docs</title></html>"
    facts = run("web_fetch", {"url": "https://docs.python.org/3/library/asyncio.html"}, page)
    assert facts.key_point == (
        "[✓ web_fetch: URL: https://docs.python.org/3/library/asyncio.html | Status: 200 | "
        "Title: asyncio docs]"
    )
    assert facts.urls == ("https://docs.python.org/3/library/asyncio.html",)
    markdown = run("fetch", {"url": "https://x.dev"}, "# Getting started\nInstall it.")
    assert "Title: Getting started" in markdown.key_point
    about_errors = run("fetch", {"url": "https://x.dev/e"}, "# Error handling\nTraceback: see")
    assert about_errors.status == "success"


def test_web_fetch_errors() -> None:
    missing = run("browse", {"url": "https://x.dev/gone"}, "status: 404\nNot Found")
    assert missing.status == "error"
    assert missing.errors == ("HTTP 404",)
    raw = run("fetch", "please open https://x.dev/a now", None)
    assert raw.urls == ("https://x.dev/a",)
    nothing = run("web_fetch", {}, "")
    assert nothing.key_point == "[✓ web_fetch: URL: ?]"


def test_plan_tools_report_open_steps() -> None:
    facts = run(
        "update_plan",
        {
            "plan": [
                {"step": "Add failing tests", "status": "completed"},
                {"step": "Set default to 90%", "status": "in_progress"},
                {"step": "Update docs", "status": "pending"},
                "not a step",
            ]
        },
        "Plan updated",
    )
    assert facts.plan == ("Set default to 90%", "Update docs")
    assert facts.key_point == "[✓ update_plan: Steps: 3 | Open: 2]"
    todos = run("TodoWrite", {"todos": [{"content": "ship", "status": "done"}]}, "ok")
    assert todos.plan == ()
    assert plan_extractor(ToolExchange("update_plan", {"plan": "oops"})).plan == ()


def test_generic_extractor_shows_arguments_and_the_first_result_line() -> None:
    facts = run(
        "get_reservation_details",
        {"reservation_id": "JG7FMM", "verbose": True, "fields": ["a", "b"], "extra": 1},
        '{"reservation_id": "JG7FMM", "cabin": "business"}',
    )
    assert facts.key_point == (
        '[✓ get_reservation_details: Args: reservation_id=JG7FMM, verbose=true, fields=["a", '
        '"b"] | Result: 1 lines, {"reservation_id": "JG7FMM", "cabin": "business"}]'
    )
    error = run("update_reservation", {"id": "X"}, "Error: reservation not found")
    assert error.status == "error"
    assert error.errors == ("Error: reservation not found",)
    null_error = run("get_order", {"id": 7}, '{"error": null, "order": {"id": 7}}')
    assert null_error.status == "success"
    flagged = run("get_order", {"id": 7}, "quota exhausted\nretry later", is_error=True)
    assert flagged.errors == ("quota exhausted",)


def test_generic_extractor_on_garbage() -> None:
    facts = run("mystery", "{not json", "")
    assert facts.key_point == "[✓ mystery: Args: {not json (not JSON) | Result: 0 lines]"
    quiet = generic_extractor(ToolExchange("noop", {}, "{}", "done"))
    assert quiet.key_point == "[✓ noop: Result: 1 lines, done]"
    located = run("upload", {"file_path": "a.bin", "to": "https://s3.example/x"}, None)
    assert located.files == ("a.bin",)
    assert located.urls == ("https://s3.example/x",)
    assert located.status == "pending"
    assert generic_extractor(ToolExchange("x", {})).key_point == "[… x: no result yet]"
    assert ToolFacts("t", "success").key_point == "[✓ t]"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("read_file", read_extractor),
        ("Read", read_extractor),
        ("mcp__filesystem__read_file", read_extractor),
        ("functions.bash", shell_extractor),
        ("tools/grep", search_extractor),
        ("server:web_fetch", web_extractor),
        ("write_file", write_extractor),
        ("no_such_tool", generic_extractor),
        ("", generic_extractor),
    ],
)
def test_lookup_by_name(name: str, expected: object) -> None:
    assert find_extractor(name, DEFAULT_EXTRACTORS) is expected


def test_lookup_without_a_fallback_entry_uses_the_generic_one() -> None:
    assert find_extractor("x", {}) is generic_extractor


@pytest.mark.parametrize(
    ("arguments", "parsed", "raw"),
    [
        ('{"a": 1}', {"a": 1}, '{"a": 1}'),
        ("[1, 2]", {}, "[1, 2]"),
        ("not json", {}, "not json"),
        ("", {}, ""),
        ("[" * 100_000, {}, "[" * 100_000),
        ({"a": {"b": [1]}}, {"a": {"b": [1]}}, '{"a": {"b": [1]}}'),
    ],
    ids=["object", "array", "text", "empty", "deep", "mapping"],
)
def test_parse_arguments(arguments: Any, parsed: dict[str, Any], raw: str) -> None:
    assert parse_arguments(arguments) == (parsed, raw)


def test_every_default_extractor_survives_garbage() -> None:
    garbage: list[dict[str, Any]] = [
        {},
        {"path": 5, "command": None, "url": ["x"], "content": {"a": 1}, "plan": 3},
        {"command": [], "old_string": 7, "input": 1.5},
    ]
    outputs = [None, "", "\x00\x01", "Error", "\n" * 1000, "é" * 10_000]
    for extractor in set(DEFAULT_EXTRACTORS.values()):
        for args in garbage:
            for output in outputs:
                facts = extractor(ToolExchange("t", args, json.dumps(args), output))
                assert facts.key_point.startswith("[")
