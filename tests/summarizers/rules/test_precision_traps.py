"""A failure is reported only on evidence: outputs that merely contain "error", "failed" or
"exception" are successes, and real failures are reported with the line that shows them.

Each case runs a whole exchange through the rule-based summarizer and checks what a reader of
the summary sees: the Errors and Fixes section, the ❌ key points and the failed count.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.summarizers import RuleBasedSummarizer
from tests.summarizers.helpers import exchange, user

if TYPE_CHECKING:
    from synopsis.summarizers import SummaryRecord

SUMMARIZER = RuleBasedSummarizer(max_summary_tokens=50_000)
FAILED_COUNT = re.compile(r"\b([1-9]\d*) failed\b")


def summarize(
    name: str, args: dict[str, Any], output: str, *, is_error: bool = False
) -> SummaryRecord:
    history = [
        user("Please check the project."),
        *exchange("c1", name, args, output, is_error=is_error),
    ]
    return SUMMARIZER.summarize(history)


def assert_no_failure(record: SummaryRecord) -> None:
    assert record.sections.errors_and_fixes == ()
    assert not any(p.startswith("[❌") for p in record.key_points), record.key_points
    assert FAILED_COUNT.search(record.narrative) is None, record.narrative
    assert record.facets.entities.errors == ()


def assert_one_failure(record: SummaryRecord, line: str) -> None:
    (reported,) = record.sections.errors_and_fixes
    assert line in reported, reported
    (point,) = record.key_points
    assert point.startswith("[❌"), point
    assert FAILED_COUNT.search(record.narrative) is not None, record.narrative
    assert record.facets.entities.errors == (line,)


PACKAGE_JSON = """{
  "name": "web",
  "version": "1.4.0",
  "devDependencies": {
    "assertion-error": "^2.0.1",
    "chai": "^4.3.10",
    "error-stack-parser": "^2.1.4"
  }
}"""
LS = "Makefile\nREADME.md\nerror.c\nerror.h\nmain.c\nparser.c"
LS_LONG = """total 24
drwxr-xr-x  5 dev  staff   160 May  1 12:00 .
-rw-r--r--  1 dev  staff  1204 May  1 12:00 error.c
-rw-r--r--  1 dev  staff   310 May  1 12:00 error.h
-rw-r--r--  1 dev  staff  2048 May  1 12:00 main.c"""
LOG = """2024-05-01 12:00:01,120 INFO  worker started jobs=12 error_count=0
2024-05-01 12:00:02,004 [WARN] retrying request to https://api.example.com (attempt 2)
2024-05-01 12:00:02,310 DEBUG error handler registered for /upload
2024-05-01 12:00:03,002 INFO  upload finished failures=0"""
CURL = """  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current
                                 Dload  Upload   Total   Spent    Left  Speed

  0     0    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0
100  5120  100  5120    0     0  21333      0 --:--:-- --:--:-- --:--:-- 21333"""
GREP = """src/errors.py:12: class ParseError(Exception):
src/errors.py:20:    \"\"\"Raised when the input cannot be parsed.\"\"\"
src/cli.py:45:        raise ParseError(f"bad token {tok!r}")
src/cli.py:51:    except ParseError as error:"""
PIP_LIST = """Package            Version
------------------ -------
error-stack-parser 0.1.1
python-json-logger 2.0.7
pytest             8.2.0"""
NPM_LS = """web@1.4.0 /repo
├── assertion-error@2.0.1
├── error-stack-parser@2.1.4
└── python-json-logger@0.0.1"""
PYTEST_PASSED = """============================= test session starts ==============================
collected 3 items

tests/test_errors.py::test_error_message PASSED                          [ 33%]
tests/test_errors.py::test_raises_value_error PASSED                     [ 66%]
tests/test_errors.py::test_failed_upload_is_retried PASSED               [100%]

======================== 3 passed, 1 xfailed in 0.04s ========================="""
CLEAN_COUNTS = """Tests run: 42, Failures: 0, Errors: 0, Skipped: 0
BUILD SUCCESS
0 errors, 2 warnings
no failures"""
MYPY_OK = "Success: no issues found in 12 source files"
RUFF_FIXED = "Found 3 errors (3 fixed, 0 remaining)."
ESLINT_WARNINGS = """/repo/src/a.js
  3:7  warning  'error' is assigned a value but never used  no-unused-vars

✖ 2 problems (0 errors, 2 warnings)"""
SUMMARY_COUNTS = "Passed: 10\nFailed: 0\nErrors: 0"
CAT_SOURCE = '''"""Errors raised by the parser."""


class ParseError(Exception):
    """Raised when input cannot be parsed; see error codes in docs/errors.md."""


def describe(error: Exception) -> str:
    return f"error: {error}"'''
GIT_LOG = (
    "a1b2c3d Fix error handling in parser\n9f8e7d6 Retry failed uploads\n5e4d3c2 Add ParseError"
)
SWEAGENT_OK = (
    "Script completed successfully, no errors. Result: True\n\n"
    "(Open file: /repo/reproduce.py)\n(Current directory: /repo)\nbash-$"
)
CODEX_OK = (
    "Chunk ID: 9d5e71\nWall time: 0.4 seconds\nProcess exited with code 0\n"
    "Original token count: 12\nOutput:\nerror.c\nerror_test.c\nfailed_jobs.txt"
)
# "Error:" opens a line, but not the output: further in, it is what the program logged.
OPENHANDS_OK = (
    "serving on :8080\nError: cache miss for /index, rebuilding\nready\n"
    "[Command finished with exit code 0]"
)
WC = "  120 error.c\n   30 failed_jobs.txt\n    8 errors.log\n  158 total"


@pytest.mark.parametrize(
    ("command", "output"),
    [
        ("cat package.json", PACKAGE_JSON),
        ("ls src", LS),
        ("ls -la src", LS_LONG),
        ("tail -n 4 logs/app.log", LOG),
        ("curl -o data.json https://example.com/data.json", CURL),
        ('grep -rn "Error" src', GREP),
        ("pip list", PIP_LIST),
        ("npm ls", NPM_LS),
        ("pytest -v tests/test_errors.py", PYTEST_PASSED),
        ("mvn test", CLEAN_COUNTS),
        ("mypy src", MYPY_OK),
        ("ruff check --fix", RUFF_FIXED),
        ("npx eslint src", ESLINT_WARNINGS),
        ("./run_checks.sh", SUMMARY_COUNTS),
        ("cat src/errors.py", CAT_SOURCE),
        ("git log --oneline -3", GIT_LOG),
        ("python reproduce.py", SWEAGENT_OK),
        ("ls", CODEX_OK),
        ("./serve", OPENHANDS_OK),
        ("wc -l *", WC),
        ("", ""),
    ],
    ids=[
        "package-json",
        "ls-error-c",
        "ls-long",
        "log-levels",
        "curl-meter",
        "grep-hits",
        "pip-list",
        "npm-ls",
        "test-names",
        "zero-counts",
        "mypy-clean",
        "ruff-fixed",
        "eslint-warnings",
        "failed-zero",
        "cat-source",
        "git-log",
        "sweagent-ok",
        "codex-exit-0",
        "error-mid-output",
        "wc-counts",
        "empty",
    ],
)
def test_shell_output_that_only_mentions_errors_is_a_success(command: str, output: str) -> None:
    assert_no_failure(summarize("bash", {"command": command}, output))


@pytest.mark.parametrize(
    ("name", "args", "output"),
    [
        ("Read", {"file_path": "src/errors.py"}, CAT_SOURCE),
        (
            "read_file",
            {"path": "docs/errors.md"},
            "# Error handling\n\nTraceback (most recent call last):\n  ...\nValueError: x",
        ),
        ("cat", {"path": "logs/app.log"}, LOG),
        ("grep", {"pattern": "Error"}, GREP),
        ("Glob", {"pattern": "**/error*"}, "src/error.c\nsrc/error.h\ntests/test_error.py"),
        (
            "web_fetch",
            {"url": "https://docs.python.org/3/tutorial/errors.html"},
            "8. Errors and Exceptions\nUntil now error messages haven't been more than mentioned.",
        ),
        (
            "get_order",
            {"id": 7},
            '{"error": null, "order": {"id": 7, "status": "failed_payment_retried"}}',
        ),
        ("lookup", {"q": "x"}, "Error handling is described in section 3."),
    ],
    ids=[
        "read",
        "read-markdown",
        "cat-tool",
        "grep-tool",
        "glob",
        "web-page",
        "json-null-error",
        "prose",
    ],
)
def test_content_returned_by_other_tools_is_a_success(
    name: str, args: dict[str, Any], output: str
) -> None:
    assert_no_failure(summarize(name, args, output))


PYTEST_FAILED = """============================= test session starts ==============================
collected 4 items

tests/test_api.py ..F.                                                   [100%]

=================================== FAILURES ===================================
_________________________________ test_upload __________________________________

    def test_upload():
        handle_error = None
>       assert upload("a.txt") == 200
E       assert 500 == 200
E        +  where 500 = upload('a.txt')

tests/test_api.py:12: AssertionError
=========================== short test summary info ============================
FAILED tests/test_api.py::test_upload - assert 500 == 200
========================= 1 failed, 3 passed in 0.21s =========================="""
TRACEBACK = """INFO loading error handlers
Traceback (most recent call last):
  File "/repo/app.py", line 30, in <module>
    main()
  File "/repo/app.py", line 12, in main
    raise ValueError("missing setting: DATABASE_URL")
ValueError: missing setting: DATABASE_URL"""
SYNTAX_ERROR = """  File "/repo/app.py", line 3
    def broken(
              ^
SyntaxError: '(' was never closed"""
JEST = """FAIL src/sum.test.ts
  ● sum > adds two numbers

    expect(received).toBe(expected) // Object.is equality

Tests:       1 failed, 4 passed, 5 total
Time:        1.2 s"""
GO_TEST = """--- FAIL: TestParse (0.00s)
    parse_test.go:12: got 1, want 2
FAIL
FAIL\texample.com/parse\t0.003s"""
GO_PANIC = """panic: runtime error: index out of range [3] with length 3

goroutine 1 [running]:
main.main()
\t/app/main.go:8 +0x1d"""
GCC = """src/main.c: In function 'main':
src/main.c:5:3: error: 'count' undeclared (first use in this function)
    5 |   count++;
      |   ^~~~~"""
RUSTC = """   Compiling app v0.1.0 (/repo)
error[E0425]: cannot find value `total` in this scope
 --> src/main.rs:2:13
  |
2 |     println!("{}", total);
  |                    ^^^^^ not found in this scope"""
TSC = "src/index.ts(3,5): error TS2304: Cannot find name 'foo'."
MYPY = """src/app.py:12: error: Incompatible return value type (got "int", expected "str")
Found 1 error in 1 file (checked 3 source files)"""
NODE = """node:internal/modules/cjs/loader:1080
  throw err;
  ^

Error: Cannot find module '/repo/missing.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15) {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v18.19.0"""


@pytest.mark.parametrize(
    ("command", "output", "line"),
    [
        (
            "git commit -am wip",
            "On branch main\nnothing to commit, working tree clean\n"
            "[Command finished with exit code 1]",
            "nothing to commit, working tree clean",
        ),
        (
            "grep -q TODO src/app.py",
            "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 1\nOutput:\n",
            "",
        ),
        ("pytest tests/test_api.py", PYTEST_FAILED, "E       assert 500 == 200"),
        (
            "pytest -q 2>&1 | tail -3",
            "FAILED tests/test_api.py::test_upload - assert 500 == 200\n"
            "1 failed, 3 passed in 0.21s\n[Command finished with exit code 0]",
            "FAILED tests/test_api.py::test_upload - assert 500 == 200",
        ),
        ("python app.py", TRACEBACK, "ValueError: missing setting: DATABASE_URL"),
        ("python app.py", SYNTAX_ERROR, "SyntaxError: '(' was never closed"),
        ("npx jest", JEST, "FAIL src/sum.test.ts"),
        ("npm test", "> web@1.4.0 test\n> vitest run\n\nTests: 2 failed", "Tests: 2 failed"),
        ("go test ./...", GO_TEST, "--- FAIL: TestParse (0.00s)"),
        ("go run .", GO_PANIC, "panic: runtime error: index out of range [3] with length 3"),
        (
            "./a.out",
            "starting\nSegmentation fault (core dumped)",
            "Segmentation fault (core dumped)",
        ),
        (
            "gcc src/main.c",
            GCC,
            "src/main.c:5:3: error: 'count' undeclared (first use in this function)",
        ),
        ("cargo build", RUSTC, "error[E0425]: cannot find value `total` in this scope"),
        ("npx tsc", TSC, TSC),
        ("mypy src", MYPY, MYPY.splitlines()[0]),
        ("npm run biuld", 'npm ERR! Missing script: "biuld"', 'npm ERR! Missing script: "biuld"'),
        (
            "git status",
            "fatal: not a git repository (or any of the parent directories): .git",
            "fatal: not a git repository (or any of the parent directories): .git",
        ),
        ("pyhton app.py", "bash: pyhton: command not found", "bash: pyhton: command not found"),
        (
            "cat config.yml",
            "cat: config.yml: No such file or directory",
            "cat: config.yml: No such file or directory",
        ),
        (
            "make",
            "cc -c main.c\nmake: *** [Makefile:12: build] Error 1",
            "make: *** [Makefile:12: build] Error 1",
        ),
        ("node missing.js", NODE, "Error: Cannot find module '/repo/missing.js'"),
    ],
    ids=[
        "exit-code-1",
        "exit-code-silent",
        "pytest",
        "pytest-through-tail",
        "traceback",
        "syntax-error-at-end",
        "jest",
        "test-count",
        "go-test",
        "go-panic",
        "segfault",
        "gcc",
        "rustc",
        "tsc",
        "mypy",
        "npm-err",
        "git-fatal",
        "command-not-found",
        "no-such-file",
        "make",
        "node-uncaught",
    ],
)
def test_a_real_shell_failure_is_reported_with_the_line_that_shows_it(
    command: str, output: str, line: str
) -> None:
    record = summarize("bash", {"command": command}, output)
    if line:
        assert_one_failure(record, line)
    else:  # an exit code and nothing else to show
        (reported,) = record.sections.errors_and_fixes
        assert reported.startswith(f"bash `{command}`")
        assert record.key_points[0].startswith("[❌ bash:")
        assert record.facets.entities.errors == ()


@pytest.mark.parametrize(
    ("name", "args", "output", "is_error", "line"),
    [
        (
            "edit_file",
            {"path": "a.py", "old_string": "x", "new_string": "y"},
            "String to replace not found in file.",
            True,
            "String to replace not found in file.",
        ),
        (
            "bash",
            {"command": "deploy"},
            "Exit code 1\nINFO error handlers ready\npermission check: denied for user ci",
            True,
            "permission check: denied for user ci",
        ),
        (
            "lookup",
            {"id": 1},
            "Error: reservation not found",
            False,
            "Error: reservation not found",
        ),
        (
            "Read",
            {"file_path": "/nope.py"},
            "<tool_use_error>File does not exist.</tool_use_error>",
            False,
            "<tool_use_error>File does not exist.</tool_use_error>",
        ),
        ("open", {"path": "nope.py"}, "File nope.py not found", False, "File nope.py not found"),
    ],
    ids=["flagged-edit", "flagged-shell", "tool-message", "tool-use-error", "sweagent-open"],
)
def test_a_tool_that_says_it_failed_is_reported(
    name: str, args: dict[str, Any], output: str, is_error: bool, line: str
) -> None:
    assert_one_failure(summarize(name, args, output, is_error=is_error), line)


# A property: with the wrapper reporting exit code 0, output made of lines that only mention
# errors (log lines, listings, grep hits, dependency names, test names, zero counts) is a
# success, however those lines are mixed.
_PREFIXES = st.sampled_from(
    [
        "INFO",
        "[WARN]",
        "DEBUG",
        "2024-05-01 12:00:00",
        "src/errors.py:12:",
        "├──",
        "-rw-r--r--",
        "  ",
        "#",
    ]
)
_WORDS = st.sampled_from(
    ["error", "Error", "errors", "ERROR_CODE", "failed", "failure", "exception", "Exception",
     "ParseError", "error_count=0", "0 errors", "no failures", "Errors: 0", "error.c",
     "assertion-error", "python-json-logger", "test_error_message PASSED", "fatal", "panic",
     "traceback", "not found", "denied", "cannot", "retrying", "the", "upload"]
)  # fmt: skip
_NOISE_LINE = st.builds(
    lambda prefix, words: f"{prefix} {' '.join(words)}",
    _PREFIXES,
    st.lists(_WORDS, min_size=1, max_size=6),
)
_WRAPPERS = st.sampled_from(
    ["[Command finished with exit code 0]", "Process exited with code 0", "Exit code: 0"]
)


@given(st.lists(_NOISE_LINE, min_size=1, max_size=12), _WRAPPERS, st.booleans())
def test_any_noise_with_a_zero_exit_code_is_a_success(
    lines: list[str], wrapper: str, wrapper_first: bool
) -> None:
    output = "\n".join([wrapper, *lines] if wrapper_first else [*lines, wrapper])
    assert_no_failure(summarize("bash", {"command": "run"}, output))


@given(
    st.lists(_NOISE_LINE, max_size=6),
    st.lists(_NOISE_LINE, max_size=6),
    st.sampled_from(
        [
            "FAILED tests/test_a.py::test_b - assert 1 == 2",
            "3 failed, 1 passed in 0.2s",
            "src/a.c:3:5: error: expected ';'",
            "error[E0308]: mismatched types",
            "npm ERR! code ELIFECYCLE",
            "Traceback (most recent call last):",
        ]
    ),
)
def test_evidence_inside_noise_is_a_failure_shown_by_its_line(
    before: list[str], after: list[str], evidence: str
) -> None:
    output = "\n".join([*before, evidence, *after, "[Command finished with exit code 0]"])
    record = summarize("bash", {"command": "run"}, output)
    (reported,) = record.sections.errors_and_fixes
    assert evidence in reported
    assert record.key_points[0].startswith("[❌")
