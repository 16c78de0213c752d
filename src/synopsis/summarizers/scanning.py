"""Regular expressions that pull anchors out of free text: paths, URLs, identifiers, versions,
figures, error lines and exit codes. Pure functions over strings; the extractors and the
rule-based summarizer share them so a path is recognised the same way everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "TextEntities",
    "bounded",
    "dedupe",
    "defined_symbols",
    "exit_code",
    "file_type",
    "first_error_line",
    "looks_failed",
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
# prose is full of ``and/or``.
PATH = re.compile(
    r"(?<![\w/.~-])(?:"
    r"(?:~|\.{1,2})?/(?:[\w@+.-]+/)*[\w@+.-]+"
    r"|(?:[\w@+.-]+/)*[\w@+-][\w@+.-]*\.(?:" + _EXTENSIONS + r")"
    r")(?![\w/-])",
    re.IGNORECASE,
)
_BACKTICKED = re.compile(r"`([^`\n]{2,80})`")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_DOTTED_CALL = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(\)")
_CODE_ID = re.compile(r"\b(?=[A-Z0-9]*[0-9])(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,12}\b")
VERSION = re.compile(
    r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.]+)?\b|\bv\d+\.\d+\b"
    r"|\b(?:python|node(?:js)?|go|java|ruby|rust|php|typescript|version|release)\s?\d+(?:\.\d+)+\b",
    re.IGNORECASE,
)
_FIGURE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b"
    r"|[$€£]\s?\d[\d,]*(?:\.\d+)?"
    r"|(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:%|ms|s|KB|MB|GB|TB|tokens|lines|bytes)(?!\w)"
    r"|#\d+\b"
    r"|(?<![\w.:/-])\d{3,}(?:\.\d+)?(?![\w.:/-])"
)

_ERROR_WORDS = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|failure|fatal|panic|denied|cannot|"
    r"could not|unable to|not found|no such file|segmentation fault|undefined reference)\b"
    r"|\w+(?:Error|Exception):|\bERR!",
    re.IGNORECASE,
)
# "0 errors", "no failures": a summary line that reports success.
_NOT_AN_ERROR = re.compile(r"\b(?:0|no|zero)\s+(?:errors?|failed|failures?)\b", re.IGNORECASE)
# How a tool says it failed, judged on its first line only: a file whose first line mentions
# ``Exception`` is still a successful read.
_FAILED_HEAD = re.compile(
    r"^\W*(?:error|fatal|failed|failure|exception|traceback)\b"
    r"|^\W*\w*(?:Error|Exception)\b"
    r"|\b(?:no such file|does not exist|not found|permission denied|is a directory|"
    r"failed:|error:|tool_use_error)",
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


def dedupe(items: list[str] | tuple[str, ...]) -> list[str]:
    """First occurrence of each item, in order."""
    return list(dict.fromkeys(items))


def scan_text(text: str) -> TextEntities:
    urls = [u.rstrip(_TRAILING) for u in URL.findall(text)]
    rest = URL.sub(" ", text)
    files = [p.rstrip(_TRAILING) for p in PATH.findall(rest)]
    versions = VERSION.findall(rest)
    # Names inside a path or a version are not symbols of their own (``test_core`` of
    # ``tests/test_core.py``).
    without_versions = PATH.sub(" ", VERSION.sub(" ", rest))
    symbols: list[str] = []
    for span in _BACKTICKED.findall(rest):
        if " " not in span.strip() and not PATH.match(span):
            symbols.append(span.strip())
    for pattern in (_CAMEL, _SNAKE, _DOTTED_CALL, _CODE_ID):
        symbols.extend(s for s in pattern.findall(without_versions) if not PATH.fullmatch(s))
    numbers = [n.strip() for n in _FIGURE.findall(without_versions)]
    return TextEntities(
        files=tuple(dedupe(files)),
        urls=tuple(dedupe(urls)),
        symbols=tuple(dedupe(symbols)),
        versions=tuple(dedupe(versions)),
        numbers=tuple(dedupe(numbers)),
    )


def first_error_line(text: str) -> str | None:
    """The first line that reads like an error, verbatim (stripped of surrounding blanks).
    A bare heading such as ``ERROR:`` says nothing alone, so the next line joins it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if _ERROR_WORDS.search(line) and not _NOT_AN_ERROR.search(line):
            found = line.strip()
            if found.endswith(":") and len(found) < 24:
                following = next((x.strip() for x in lines[i + 1 :] if x.strip()), "")
                found = f"{found} {following}".strip()
            return found
    return None


def looks_failed(text: str) -> bool:
    """Whether a tool's output opens with a failure message. A numbered line is file content
    (a log being read), whatever it says."""
    for line in text.splitlines():
        if line.strip():
            return not _GUTTER.match(line) and bool(_FAILED_HEAD.search(line))
    return False


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
