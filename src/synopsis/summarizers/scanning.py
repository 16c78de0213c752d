"""Regular expressions that pull anchors out of free text: paths, URLs, identifiers, versions,
figures, error lines and exit codes. Pure functions over strings; the extractors and the
rule-based summarizer share them so a path is recognised the same way everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "TextEntities",
    "bounded",
    "dedupe",
    "defined_symbols",
    "exit_code",
    "file_type",
    "first_error_line",
    "looks_failed",
    "looks_like_observation",
    "named_in",
    "output_line",
    "paths_in",
    "same_head",
    "scan_text",
]

URL = re.compile(r"\bhttps?://[^\s<>\"'`()\[\]{}]+")
_TRAILING = ".,;:!?'\""
_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|jsx|ts|tsx|go|rs|c|h|cc|cpp|hpp|java|kt|rb|php|cs|swift|scala|"
    "sh|bash|zsh|ps1|md|rst|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|lock|xml|html|css|scss|"
    "sql|csv|tsv|proto|pony|lua|r|ex|exs|erl|hs|ml|vue|svelte|dockerfile|env|log|gradle|tf"
)
# A path: absolute, home- or dot-relative with at least one separator, or any name.ext with a
# known extension (``src/app.py``, ``setup.py``). Bare ``a/b`` without either is left out:
# prose is full of ``and/or``; so is the ``/tag>`` of a closing tag.
PATH = re.compile(
    r"(?<![\w/.~<-])(?:"
    r"(?:~|\.{1,2})?/(?:[\w@+.-]+/)*[\w@+.-]+"
    r"|(?:[\w@+.-]+/)*[\w@+-][\w@+.-]*\.(?:" + _EXTENSIONS + r")"
    r")(?![\w/-])",
    re.IGNORECASE,
)
_BACKTICKED = re.compile(r"`([^`\n]{2,80})`")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_LOWER_CAMEL = re.compile(r"\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b")  # createSetupCommand
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_DOTTED_CALL = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(\)")
_CODE_ID = re.compile(r"\b(?=[A-Z0-9]*[0-9])(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,12}\b")
VERSION = re.compile(
    r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.]+)?\b|\bv\d+\.\d+\b"
    r"|\b(?:python|node(?:js)?|go|java|ruby|rust|php|typescript|version|release)\s?\d+(?:\.\d+)+\b",
    re.IGNORECASE,
)
NUMBER = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?"
"""A number read whole: its thousands separators (``400,000``) and decimals (``2.5``), never a
comma or a period after it (``2,017,`` is ``2,017``)."""
_SCALE = r"(?:\s?(?:k|K|M|bn|B|thousand|million|billion|trillion)(?![\w]))?"
_CURRENCY_CODE = r"(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|INR|CNY|dollars?|euros?|pounds?|cents?)"
_UNIT = (
    r"%|ms|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    r"KB|MB|GB|TB|KiB|MiB|GiB|TiB|kB|Mb|Gb|px|pt|em|rem|°[CF]|[kK]m|m|cm|mm|kg|g|lbs?|mi|"
    r"tokens|lines|bytes|chars|characters|requests|rps|qps|x"
)
_ENDS = r"(?![\w]|[.,:/]\d)"
"""Where a figure ends: not inside a word, a version or an address (``10.0.0.1``), but before
a sentence's period or comma, or the dash of a range (``1,000-2,000``)."""
_FIGURE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b"
    r"|(?:[$€£¥₹]|\b"
    + _CURRENCY_CODE
    + r"\s?)\s?"
    + NUMBER
    + _SCALE
    + _ENDS
    + r"|(?<![\w.,])"
    + NUMBER
    + _SCALE
    + r"\s?"
    + _CURRENCY_CODE
    + r"\b"
    + r"|(?<![\w.,])"
    + NUMBER
    + r"\s?(?:"
    + _UNIT
    + r")(?!\w)"
    + r"|#\d+\b"
    + r"|(?<![\w.,:/-])(?:\d{1,3}(?:,\d{3})+(?!\d)|\d{3,})(?:\.\d+)?"
    + _ENDS
)

# Failure is judged on evidence, never on a word: outputs are full of "error" that reports
# nothing (``error.c``, ``"assertion-error": "^2.0.1"``, ``error_count=0``, a grep hit for
# ``ParseError``). Each form below is something a tool prints only when something failed.
_EVIDENCE = re.compile(
    r"^(?:"
    # uncaught exceptions and crashes
    r"Traceback \(most recent call last\):"
    r"|Exception in thread \"[^\"\n]*\" \S"
    r"|panic: |thread '[^'\n]*' panicked at "
    r"|.*\bSegmentation fault\b(?: \(core dumped\))?[ \t]*$"
    # failing tests: pytest's detail and summary lines, unittest, jest/vitest, go, cargo, mocha
    r"|E {3,}\S"
    r"|FAILED(?:[ \t:(]|$)|(?:--- )?FAIL(?:[ \t:]|$)|FAILURE: |BUILD FAILED\b|BUILD FAILURE\b"
    r"|\S+::\S+ FAILED\b|.* \.\.\. FAILED[ \t]*$|ERROR \S+\.py\b|test result: FAILED\b"
    r"|[ \t]*(?:=+ |(?:Tests?|Test Suites|Test Files|Suites)[ \t]*:?[ \t]+)?"
    r"(?:\d+ [\w-]+(?:, |; | \| ))*[1-9]\d* (?:failed|failing|failures?|errors?)(?!\.?[\w-])"
    r"|Found [1-9]\d* errors?(?!\.?[\w-])(?! \(\d+ fixed, 0 remaining\))"
    r"|\u2716 [1-9]\d* problems? \([1-9]\d* errors?"
    # compiler and tool diagnostics in their conventional forms
    r"|\S+?(?::\d+){1,2}:? (?:- )?(?:fatal )?error(?::| [A-Z]+\d+:)"
    r"|\S+\(\d+(?:,\d+)?\): (?:fatal )?error(?::| [A-Z]+\d+:)"
    r"|error(?:\[E\d+\]| TS\d+):"
    r"|[\w.+-]+: (?:fatal )?error: "
    r"|npm ERR! |npm error "
    r"|fatal: "
    r"|\S*make(?:\[\d+\])?: \*\*\* "
    r"|CMake Error\b"
    r"|E: [A-Z]"
    r"|(?:/(?:usr/)?bin/)?(?:ba|da|k|z)?sh: .*(?:command not found|not found|No such file or "
    r"directory|Permission denied|can't cd to|cannot execute|syntax error)"
    r")"
)
# How a tool says that it failed, in its own first (or last) line: ``Error: ...``,
# ``cat: x: No such file or directory``, ``FileNotFoundError: ...``. Further in, the same words
# are more likely the content the tool returned.
_TOOL_MESSAGE = re.compile(
    r"^(?:[^\w\s#]{1,3} ?)?(?i:error|fatal|failure|failed|exception)(?::|!| +- )(?!\s*0+\s*$)"
    r"|^(?i:error|fatal|failure|failed)[.!]?$"
    r"|^(?i:error|failed) (?i:executing|calling|running|invoking|to)\b"
    r"|<tool_use_error>|^Traceback \(most recent call last\):"
    r"|^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): "
    r"|^[\w./\[\]-]+: (?:.*: )?(?:No such file or directory|Permission denied|command not found|"
    r"cannot access|can't open file|Is a directory|Not a directory|not found)\b"
    r"|^(?i:the )?(?i:file|path|directory) \S+ (?:does not exist|not found)"
    r"|^(?:No such file or directory|Permission denied)\b"
    r"|^[\w.-]+ failed: "
    r"|^curl: \(\d+\) "
)
_MESSAGE_CHARS = 1000
# The line a Python traceback ends with: the exception, unindented.
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::|$)")
_NODE_TRAILER = re.compile(r"^Node\.js v\d+")
_NODE_ERROR = re.compile(r"^\w*Error(?: \[\w+\])?: \S.*", re.MULTILINE)
# Lines agent harnesses wrap around a command's own output: exit codes, Codex's chunk headers,
# SWE-agent's and OpenHands' status lines, a bare prompt.
_WRAPPER = re.compile(
    r"^\s*(?:"
    r"\[?(?:Command finished|The command completed|Process exited|Process running|"
    r"Command exited)\b.*"
    r"|(?:exit[ _]code|exit status|return ?code)\b\s*[:=]?\s*-?\d+\.?\]?"
    r"|(?:Chunk ID|Wall time|Original token count):.*|Output:"
    r"|\((?:Open file|Current directory):.*\)"
    r"|\[(?:Current working directory|Python interpreter):.*\]"
    r"|(?:ba|da|k|z)?sh-[\d.]*[$#]|[\w.-]+@[\w.-]+:\S*[$#]"
    r")\s*$",
    re.IGNORECASE,
)
_EXIT = re.compile(
    r"\b(?:exit(?:ed)?(?:\s+with)?\s+(?:code|status)|exit_code|returncode|return code)"
    r"\s*[:=]?\s*(-?\d+)\b",
    re.IGNORECASE,
)

_FILE_TYPES = {
    "py": "python",
    "pyi": "python",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascript",
    "ts": "typescript",
    "tsx": "typescript",
    "go": "go",
    "rs": "rust",
    "c": "c",
    "h": "c",
    "cpp": "c++",
    "cc": "c++",
    "hpp": "c++",
    "java": "java",
    "rb": "ruby",
    "sh": "shell",
    "md": "markdown",
    "rst": "restructuredtext",
    "json": "json",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "html": "html",
    "css": "css",
    "sql": "sql",
    "pony": "pony",
}
# Line-number gutters that read tools put before each line ("     4→", "    12\t", "12:").
_GUTTER = re.compile(r"^\s*\d+(?:→|\t|:)", re.MULTILINE)
_PY_DEF = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)
_JS_EXPORT = re.compile(
    r"^export\s+(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?"
    r"(?:const|let|var|function\*?|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)",
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class TextEntities:
    files: tuple[str, ...]
    urls: tuple[str, ...]
    symbols: tuple[str, ...]
    versions: tuple[str, ...]
    numbers: tuple[str, ...]


def bounded(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters; a cut says how much went."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut {len(text) - limit:,} characters]"


def same_head(a: str, b: str) -> bool:
    """Whether two texts, each perhaps cut by :func:`bounded`, start the same way."""
    a, b = a.partition("… [cut")[0], b.partition("… [cut")[0]
    return a.startswith(b) or b.startswith(a)


def dedupe(items: Iterable[str]) -> list[str]:
    """First occurrence of each item, in order."""
    return list(dict.fromkeys(items))


_PATH_CHARS = 512
_NAME_CHARS = 128
"""No real file name is longer (most systems stop at 255 bytes), nor a path than the first:
a longer match is a minified bundle's run of names or an encoded blob, and listing it in a
summary costs thousands of tokens for nothing."""


def paths_in(text: str) -> list[str]:
    """The paths :data:`PATH` finds in ``text`` that can be real ones, in order."""
    return [
        p
        for p in PATH.findall(text)
        if len(p) <= _PATH_CHARS and all(len(name) <= _NAME_CHARS for name in p.split("/"))
    ]


def scan_text(text: str) -> TextEntities:
    urls = [u.rstrip(_TRAILING) for u in URL.findall(text)]
    rest = URL.sub(" ", text)
    files = [p.rstrip(_TRAILING) for p in paths_in(rest)]
    versions = VERSION.findall(rest)
    # Names inside a path or a version are not symbols of their own (``test_core`` of
    # ``tests/test_core.py``).
    without_versions = PATH.sub(" ", VERSION.sub(" ", rest))
    symbols: list[str] = []
    for span in _BACKTICKED.findall(rest):
        if " " not in span.strip() and not PATH.match(span):
            symbols.append(span.strip())
    for pattern in (_CAMEL, _LOWER_CAMEL, _SNAKE, _DOTTED_CALL, _CODE_ID):
        symbols.extend(s for s in pattern.findall(without_versions) if not PATH.fullmatch(s))
    numbers = [n.strip() for n in _FIGURE.findall(without_versions)]
    return TextEntities(
        files=tuple(dedupe(files)),
        urls=tuple(dedupe(urls)),
        symbols=tuple(dedupe(symbols)),
        versions=tuple(dedupe(versions)),
        numbers=tuple(dedupe(numbers)),
    )


_NAME = re.compile(r"[A-Za-z_][\w.$]*(?:\(\))?")
"""A symbol worth naming on its own: not a flag (``--force``), a placeholder (``<agent>``) or
a bracketed word."""
_NAMES_SCANNED = 50_000


def named_in(text: str, limit: int) -> list[str]:
    """The paths, symbols and URLs ``text`` names, first met first, as many as fit ``limit``
    characters written out with a separator: what a note where the text was cut can still
    say about it."""
    found = scan_text(text[:_NAMES_SCANNED])
    names = dedupe([*found.files, *(s for s in found.symbols if _NAME.fullmatch(s)), *found.urls])
    out: list[str] = []
    used = 0
    for name in names:
        used += len(name) + 2
        if used > limit:
            break
        out.append(name)
    return out


def _own_lines(lines: list[str]) -> list[int]:
    """Indexes of the non-blank lines the tool itself printed (not its harness's wrapper)."""
    return [i for i, line in enumerate(lines) if line.strip() and not _WRAPPER.match(line)]


def _is_message(line: str) -> bool:
    # A message opens its line; the rest of a minified line can be megabytes.
    return not _GUTTER.match(line) and bool(_TOOL_MESSAGE.search(line[:_MESSAGE_CHARS]))


def _shown(lines: list[str], i: int) -> str:
    """Line ``i`` as an error line: a traceback by the exception it ends with, a bare heading
    (``ERROR:``) with the line after it, since it says nothing alone."""
    found = lines[i].strip()
    if found.startswith("Traceback"):
        end = next((x for x in lines[i + 1 :] if x.strip() and not x[0].isspace()), "")
        return end.strip() if _RAISED.match(end) else found
    if found.endswith(":") and len(found) < 24:
        following = next((x.strip() for x in lines[i + 1 :] if x.strip()), "")
        found = f"{found} {following}".strip()
    return found


def first_error_line(text: str) -> str | None:
    """The first line that shows the tool or command failed, verbatim (stripped), or ``None``.

    Evidence is a failure message as the tool's own first line, a traceback, a crash, a
    failing test count or line, a compiler or tool diagnostic in its conventional form, or an
    exception or failure message as the last line. Words alone are not: a listing with
    ``error.c`` or a log with ``error_count=0`` shows nothing failed. Numbered lines are file
    content, whatever they say."""
    lines = text.splitlines()
    own = _own_lines(lines)
    if not own:
        return None
    if _is_message(lines[own[0]]):
        return _shown(lines, own[0])
    for i in own:
        if _EVIDENCE.match(lines[i]) and not _GUTTER.match(lines[i]):
            return _shown(lines, i)
    last = lines[own[-1]]
    if _is_message(last):
        return last.strip()
    if _NODE_TRAILER.match(last):
        # Node prints the uncaught error, its stack, then its own version last.
        thrown = _NODE_ERROR.search(text)
        return thrown.group(0).strip() if thrown else None
    return None


def output_line(text: str, *, last: bool = False) -> str | None:
    """The first (or last) line the tool itself printed, past its harness's header, exit-code
    and prompt lines."""
    lines = text.splitlines()
    own = _own_lines(lines)
    return lines[own[-1 if last else 0]].strip() if own else None


def looks_failed(text: str) -> bool:
    """Whether a tool's output opens with a failure message of its own. Only the first line
    counts: further in, "error" is more likely what the tool returned (a file that mentions
    exceptions, a page about error handling)."""
    lines = text.splitlines()
    own = _own_lines(lines)
    return bool(own) and _is_message(lines[own[0]])


def exit_code(text: str) -> int | None:
    """The exit code a shell tool reported. Wrappers put it in the first or the last lines;
    a match in the middle is more likely the command's own output talking about exit codes."""
    lines = text.splitlines()
    for chunk in (lines[:5], lines[-5:]):
        for line in chunk:
            match = _EXIT.search(line)
            if match:
                return int(match.group(1))
    return None


def file_type(path: str) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    if "." not in name:
        return "dockerfile" if name == "dockerfile" else "unknown"
    ext = name.rsplit(".", 1)[-1]
    return _FILE_TYPES.get(ext, ext)


def defined_symbols(kind: str, content: str) -> list[str]:
    """Top-level names a Python file defines or a JavaScript/TypeScript file exports."""
    code = _GUTTER.sub("", content)
    if kind == "python":
        return dedupe(_PY_DEF.findall(code))
    if kind in ("javascript", "typescript"):
        return dedupe(_JS_EXPORT.findall(code))
    return []


# Harnesses without a tool role (SWE-agent's text mode, OpenHands without function calling)
# send a command's output as a user turn. These are the ways such a turn opens...
_OBSERVATION_HEAD = re.compile(
    r"(?:OBSERVATION:|EXECUTION RESULT of \[|\[File: \S.* \(\d+ lines total\)\]"
    r"|Found \d+ matches for \".*\" in |No matches found for \".*\" in "
    r"|Your proposed edit has introduced new syntax error"
    r"|Your command ran successfully and did not produce any output"
    r"|Here's the result of running `cat -n`"
    r"|Parameter '[^']*' is expected to be one of "  # OpenHands: a call's invalid argument
    r"|Missing required parameters? for function '"
    r"|\s*% Total\s+% Received % Xferd\s+Average Speed)"
)
# ...lines only a harness writes...
_HARNESS_LINE = re.compile(
    r"^\[(?:Command finished with exit code -?\d+|Python interpreter: .*|"
    r"Current working directory: .*)\]\s*$",
    re.MULTILINE,
)
# ...and the bare prompt SWE-agent ends each one with.
_PROMPT = re.compile(r"(?:(?:ba|da|k|z)?sh-[\d.]*[$#]|[\w.-]+@[\w.-]+:\S*[$#])")
# The task statement a harness opens with ends with the same prompt, but it is the request.
_TASK = re.compile(
    r"<(?:issue_description|pr_description|uploaded_files|issue)>"
    r"|^(?:ISSUE:|We're currently solving the following issue|Here is a demonstration|"
    r"--- DEMONSTRATION ---)",
    re.MULTILINE,
)
_NUMBERED = re.compile(r"^\s*\d+(→|\t|:)(.*)$")


def looks_like_observation(text: str) -> bool:
    """Whether a user turn is a tool's output an agent harness sent in the user's place,
    rather than words a person typed. Conservative: a person's message that pastes an error,
    a path or a command is still theirs, so only forms a person does not type count."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or _TASK.search(text):
        return False
    if _OBSERVATION_HEAD.match(lines[0]) or _HARNESS_LINE.search(text):
        return True
    if _PROMPT.fullmatch(lines[-1].strip()):
        return True
    numbered = [m for m in map(_NUMBERED.match, lines) if m]
    if len(numbered) < 3 or 2 * len(numbered) <= len(lines):
        return False
    # "12:" also starts a person's numbered list; a file has blank or indented lines too.
    return any(
        m.group(1) != ":" or not m.group(2) or m.group(2).startswith(("  ", "\t")) for m in numbered
    )
