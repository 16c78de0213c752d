from __future__ import annotations

import pytest

from synopsis.messages import Role
from synopsis.summarizers.scanning import (
    bounded,
    dedupe,
    defined_symbols,
    exit_code,
    file_type,
    first_error_line,
    looks_failed,
    looks_like_observation,
    named_in,
    output_line,
    paths_in,
    scan_text,
)
from tests.summarizers.helpers import TRANSCRIPTS, load


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
        # A traceback shows as the exception it ends with, not as the words before it.
        (
            'handle_error registered\nTraceback (most recent call last):\n  File "a.py", line 1\n'
            "    raise KeyError(k)\nKeyError: 'token'\n",
            "KeyError: 'token'",
        ),
        (
            'Traceback (most recent call last):\n  File "a.py"\nKeyboardInterrupt',
            "KeyboardInterrupt",
        ),
        (
            'Traceback (most recent call last):\n  File "a.py"\n\n-- see log --',
            "Traceback (most recent call last):",
        ),
        (
            "collected 2 items\n\nFAILED tests/a.py::test_b - assert 1 == 2",
            "FAILED tests/a.py::test_b - assert 1 == 2",
        ),
        ("===== 1 failed, 3 passed in 0.2s =====", "===== 1 failed, 3 passed in 0.2s ====="),
        ("  2 passing (10ms)\n  1 failing", "1 failing"),
        ("test parse::it_works ... FAILED", "test parse::it_works ... FAILED"),
        (
            "running 1 test\ntest result: FAILED. 0 passed; 1 failed",
            "test result: FAILED. 0 passed; 1 failed",
        ),
        ("Ran 3 tests in 0.001s\n\nFAILED (failures=1)", "FAILED (failures=1)"),
        ("5 examples, 1 failure", "5 examples, 1 failure"),
        (
            "a.c: In function 'f':\na.c:2:3: fatal error: x.h: No such file or directory",
            "a.c:2:3: fatal error: x.h: No such file or directory",
        ),
        (
            "web/a.ts:3:5 - error TS2304: Cannot find name 'x'.",
            "web/a.ts:3:5 - error TS2304: Cannot find name 'x'.",
        ),
        (
            "error TS5058: The specified path does not exist: 'x'.",
            "error TS5058: The specified path does not exist: 'x'.",
        ),
        (
            "C:\\src\\a.cpp(3): error C2065: 'x': undeclared",
            "C:\\src\\a.cpp(3): error C2065: 'x': undeclared",
        ),
        (
            "clang: error: linker command failed with exit code 1",
            "clang: error: linker command failed with exit code 1",
        ),
        ("npm error code E404", "npm error code E404"),
        (
            'Exception in thread "main" java.lang.NullPointerException\n\tat A.main(A.java:3)',
            'Exception in thread "main" java.lang.NullPointerException',
        ),
        (
            "thread 'main' panicked at src/main.rs:2:5:\nboom",
            "thread 'main' panicked at src/main.rs:2:5:",
        ),
        ("x\nFAILURE: Build failed with an exception.", "FAILURE: Build failed with an exception."),
        (
            "src/a.ts\n  1:1  error  Unexpected var\n\n\u2716 1 problem (1 error, 0 warnings)",
            "\u2716 1 problem (1 error, 0 warnings)",
        ),
        ("2 errors generated.", "2 errors generated."),
        (
            "/bin/sh: 1: cd: can't cd to /x\nmake: *** [Makefile:3: all] Error 2",
            "/bin/sh: 1: cd: can't cd to /x",
        ),
        ("ok\nzsh: command not found: pyhton", "zsh: command not found: pyhton"),
        (
            "Reading package lists... Done\nE: Unable to locate package llvm-dev",
            "E: Unable to locate package llvm-dev",
        ),
        (
            "-- Configuring\nCMake Error at CMakeLists.txt:27 (find_package):\n  Could not find",
            "CMake Error at CMakeLists.txt:27 (find_package):",
        ),
        (
            "Process exited with code 1\nOutput:\nrg: src: No such file or directory (os error 2)",
            "rg: src: No such file or directory (os error 2)",
        ),
        (
            "compiling\nerror: could not compile `app` due to 2 previous errors",
            "error: could not compile `app` due to 2 previous errors",
        ),
        (
            "Collecting foo\nERROR: No matching distribution found for foo",
            "ERROR: No matching distribution found for foo",
        ),
        (
            "throw err;\n^\n\nError [ERR_MODULE_NOT_FOUND]: Cannot find 'x'\n\nNode.js v20.1.0",
            "Error [ERR_MODULE_NOT_FOUND]: Cannot find 'x'",
        ),
        ("Node.js v20.1.0", None),
        # File content: a numbered line is what the file says.
        ("     1\tSegmentation fault\n     2\tTraceback (most recent call last):", None),
        # Words, not evidence.
        ('{\n  "assertion-error": "^2.0.1"\n}', None),
        ("Makefile\nerror.c\nerror.h", None),
        ("INFO worker error_count=0\n[WARN] retrying\nDEBUG error handler registered", None),
        ("src/errors.py:12: class ParseError(Exception):\nsrc/a.py:3:    except ParseError:", None),
        ("tests/test_a.py::test_error_message PASSED", None),
        ("Tests run: 4, Failures: 0, Errors: 0\nErrors: 0\nFailed: 0", None),
        ("  12 error.c\n   3 failed_jobs.txt\n  15 total", None),
        ("Found 2 errors (2 fixed, 0 remaining).", None),
        ("3 passed, 1 xfailed in 0.1s", None),
        ("error-stack-parser\npython-json-logger", None),
        ("Chunk ID: 1\nProcess exited with code 1\nOutput:\n", None),
        ("", None),
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
        ("Traceback (most recent call last):\n  File", True),
        ("ERROR", True),
        ("Failed to fetch https://x.dev: timeout", True),
        ("Error executing tool lookup: bad id", True),
        ("\u274c Error: quota exceeded", True),
        ("File reproduce.py not found", True),
        ("The path /x does not exist. Please provide a valid path.", True),
        ("write_stdin failed: stdin is closed", True),
        ("curl: (22) The requested URL returned error: 404", True),
        ("Permission denied", True),
        ("Chunk ID: 1\nOutput:\ncat: a: No such file or directory", True),
        ("class ConfigError(Exception):\n    pass", False),
        ("     1→import os", False),
        ("    12\tERROR: disk full (a log being read)", False),
        ("12: foo: not found", False),
        ("# Error handling\n\nRaise early.", False),
        ("# Errors: what they mean", False),
        ('{"error": null, "result": 1}', False),
        ("error-stack-parser 2.1.4", False),
        ("failed-jobs.txt", False),
        ("Failed: 0", False),
        ("errors:\n  - none", False),
        ("File handling: when the path is not found we retry", False),
        ("", False),
    ],
)
def test_a_tool_failure_is_judged_on_the_first_line(output: str, failed: bool) -> None:
    assert looks_failed(output) is failed


def test_output_lines_skip_the_wrapper() -> None:
    codex = (
        "Chunk ID: 1\nWall time: 0.2 seconds\nProcess exited with code 1\nOutput:\nfirst\nlast\n"
    )
    assert output_line(codex) == "first"
    assert output_line(codex, last=True) == "last"
    sweagent = "  done  \n\n(Open file: /a.py)\n(Current directory: /repo)\nbash-$"
    assert output_line(sweagent, last=True) == "done"
    openhands = "ok\n[Python interpreter: /usr/bin/python]\n[Command finished with exit code 0]"
    assert output_line(openhands, last=True) == "ok"
    assert output_line("root@box:/workspace# \n") is None


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


def _user_turns(stem: str) -> dict[int, str]:
    (path,) = [p for p in TRANSCRIPTS if p.stem == stem]
    return {i: m.text for i, m in enumerate(load(path)) if m.role is Role.USER and m.text}


def test_sweagent_observations_are_observations_and_its_task_is_not() -> None:
    turns = _user_turns("sweagent-pydicom-1458-gpt4")
    observations = {i for i in turns if i >= 4}
    assert len(observations) == 11
    assert {i for i, text in turns.items() if looks_like_observation(text)} == observations
    assert not looks_like_observation(turns[1])  # the demonstration
    assert not looks_like_observation(turns[2])  # the issue, though it ends with the prompt
    (task,) = _user_turns("sweagent-marshmallow-1867-fc").values()
    assert not looks_like_observation(task)


@pytest.mark.parametrize(
    "stem",
    [
        "aider-census",
        "taubench-airline-task2-trial1",
        "taubench-airline-task3-trial0",
        "openhands-ponylang-ponyc-4588",
        "openhands-ponylang-ponyc-4593",
        "claudecode-coverage-test-fix",
        "codex-compaction-config-change",
    ],
)
def test_people_and_task_statements_are_not_observations(stem: str) -> None:
    turns = _user_turns(stem)
    assert turns
    # OpenHands answers an invalid call in the user's place: that turn is the tool's
    observed = {i for i, text in turns.items() if text.startswith("Parameter 'command'")}
    assert len(observed) == stem.startswith("openhands")
    assert {i for i, text in turns.items() if looks_like_observation(text)} == observed


@pytest.mark.parametrize(
    "text",
    [
        "OBSERVATION:\nls: cannot access 'x'",
        "EXECUTION RESULT of [execute_bash]:\nok",
        "total 0\n[Command finished with exit code 0]",
        "x\n[Current working directory: /workspace]",
        "Here's the result of running `cat -n` on /a.py:\n     1\timport os",
        "[File: /repo/a.py (18 lines total)]\n1:import os",
        'Found 3 matches for "numpy_handler.py" in /repo:\n/repo/a.py',
        'No matches found for "x" in /repo',
        "Your proposed edit has introduced new syntax error(s). Please retry.",
        "Your command ran successfully and did not produce any output.",
        "Parameter 'command' is expected to be one of ['view', 'create'].",
        "Missing required parameters for function 'str_replace_editor': {'path'}",
        "  % Total    % Received % Xferd  Average Speed   Time\n100  5120  100  5120",
        "Script completed successfully, no errors.\n(Current directory: /repo)\nbash-$",
        "Traceback (most recent call last):\nValueError: x\nroot@3f2a:/workspace#",
        "    1→import os\n    2→\n    3→def main():",
        "   10\tdef f():\n   11\t    return 1\n   12\t",
        "12:def f():\n13:    return 1\n14:",
    ],
)
def test_harness_observations(text: str) -> None:
    assert looks_like_observation(text)


@pytest.mark.parametrize(
    "text",
    [
        "/run python3 new_file/getdata.py",
        "show tools",
        "Hi, I'm having a bit of a situation with my flights.",
        "I get this: ValueError: bad config in /repo/app.py",
        'Traceback (most recent call last):\n  File "a.py", line 1\nValueError: x',
        "It fails with\n[Errno 2] No such file or directory: '/repo/data.csv'",
        "<uploaded_files>\n/repo\n</uploaded_files>\n<issue_description>x</issue_description>\nbash-$",
        "We're currently solving the following issue within our repository.\nbash-$",
        "Steps:\n1: install it\n2: run it\n3: watch it fail",
        "1: a\n2: b\nthen more words\nand more\nand more",
        "",
        "   \n",
    ],
)
def test_a_persons_words_are_not_observations(text: str) -> None:
    assert not looks_like_observation(text)


@pytest.mark.parametrize("line", ["x" * 300_000, "a:1" * 100_000, "sh: " + "a: " * 100_000])
def test_a_huge_line_is_judged_in_linear_time(line: str) -> None:
    # The old word scan backtracked quadratically on a long word; a minified bundle hung it.
    assert first_error_line(line) is None
    assert not looks_failed(line)
    assert not looks_like_observation(line)


def test_a_path_longer_than_any_real_one_is_no_path() -> None:
    blob = "/" + "yOVV5u8FeUFsDyQG6fWI2TLTl2gMmq2d" * 6 + "/x.js"
    bundle = "a.js" + "".join(f"../m{i}/index.jssrc/part{i}.ts" for i in range(40))
    text = f"see src/app/main.py and {blob} then {bundle} and ~/.config/app.toml"
    assert paths_in(text) == ["src/app/main.py", "~/.config/app.toml"]


def test_named_in_lists_paths_then_symbols_within_its_limit() -> None:
    text = "# Spec\nAdd `createInitCommand()` in src/cli/init.ts; flags `--force`, `<agent>`.\n"
    text += "Reuse SessionStore and load_settings. See https://example.org/spec."
    names = named_in(text, 1_000)
    assert names[0] == "src/cli/init.ts"
    assert {"createInitCommand()", "SessionStore", "load_settings"} <= set(names)
    assert "https://example.org/spec" in names
    assert not {"--force", "<agent>"} & set(names)
    short = named_in(text, 40)
    assert short == names[: len(short)]
    assert sum(len(n) + 2 for n in short) <= 40
    assert named_in("nothing to name here", 100) == []
