"""Per-tool extractors: what one tool call and its result come down to in a summary.

Each takes a :class:`~synopsis.summarizers.rules.exchanges.ToolExchange` and returns
:class:`~synopsis.summarizers.rules.exchanges.ToolFacts`, rendered as one key point, a compact
line (``[✓ read_file: File: a.py | Lines: 120]``). They are looked up by tool name, so agents
that name their tools differently (``Read``, ``mcp__fs__read_file``) still get the right one.
"""

from __future__ import annotations

import json
import re
from types import MappingProxyType
from typing import TYPE_CHECKING

from synopsis.summarizers.rules.exchanges import (
    PATH_KEYS,
    Extractor,
    Status,
    ToolExchange,
    ToolFacts,
    cut,
    error_lines,
    failure,
    line_count,
    with_error,
)
from synopsis.summarizers.scanning import (
    URL,
    dedupe,
    defined_symbols,
    exit_code,
    file_type,
    first_error_line,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "DEFAULT_EXTRACTORS",
    "editor_extractor",
    "find_extractor",
    "generic_extractor",
    "plan_extractor",
    "read_extractor",
    "search_extractor",
    "shell_extractor",
    "web_extractor",
    "write_extractor",
]


def read_extractor(ex: ToolExchange) -> ToolFacts:
    path = ex.arg(*PATH_KEYS)
    text = ex.result or ""
    status, errors = failure(ex, text)
    kind = file_type(path) if path else "unknown"
    facts = [f"File: {path or '?'}"]
    symbols: list[str] = []
    if status == "success":
        facts += [f"Lines: {line_count(text)}", f"Type: {kind}"]
        symbols = defined_symbols(kind, text)
        if symbols:
            more = f" (+{len(symbols) - 5} more)" if len(symbols) > 5 else ""
            facts.append(f"Defines: {', '.join(symbols[:5])}{more}")
    note = f"read ({line_count(text)} lines, {kind})" if status == "success" else "read failed"
    return ToolFacts(
        ex.name,
        status,
        with_error(facts, errors, status),
        target=path,
        files=(path,) if path else (),
        notes=((path, note),) if path and status != "pending" else (),
        symbols=tuple(symbols),
        errors=errors,
    )


_PATCH_FILE = re.compile(
    r"^(?:\*\*\* (?:Update|Add|Delete) File: |\+\+\+ b/|--- a/|\+\+\+ |--- )(\S+)", re.MULTILINE
)


def _patch_paths(patch: str) -> list[str]:
    return [p for p in dedupe(_PATCH_FILE.findall(patch)) if p != "/dev/null"]


def _patch_size(patch: str) -> tuple[int, int]:
    added = removed = 0
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _change(ex: ToolExchange) -> tuple[list[str], str]:
    """The files a write touches and how much it changed."""
    path = ex.arg(*PATH_KEYS)
    body = ex.arg("content", "file_text", "text", "contents")
    old = ex.arg("old_string", "old_str", "search", "old")
    new = ex.arg("new_string", "new_str", "replace", "new")
    patch = ex.arg("input", "patch", "diff", "patch_text") or (
        ex.raw_arguments if not ex.arguments else None
    )
    if old is not None or new is not None:
        return ([path] if path else []), (
            f"-{line_count(old or '')}/+{line_count(new or '')} lines"
        )
    if body is not None:
        return ([path] if path else []), f"{line_count(body)} lines, {len(body)} chars"
    if patch is not None and _patch_paths(patch):
        added, removed = _patch_size(patch)
        return [path] if path else _patch_paths(patch), f"+{added}/-{removed} lines"
    return ([path] if path else []), "change size unknown"


def write_extractor(ex: ToolExchange) -> ToolFacts:
    paths, size = _change(ex)
    text = ex.result or ""
    status, errors = failure(ex, text)
    shown = ", ".join(paths[:3]) + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")
    facts = [f"File: {shown or '?'}", f"Change: {size}"]
    verb = "written" if status != "error" else "write failed"
    return ToolFacts(
        ex.name,
        status,
        with_error(facts, errors, status),
        target=paths[0] if paths else None,
        files=tuple(paths),
        notes=tuple((p, f"{verb} ({size})") for p in paths),
        errors=errors,
    )


def editor_extractor(ex: ToolExchange) -> ToolFacts:
    """Anthropic's and OpenHands' file editor: one tool whose ``command`` says read or write."""
    if ex.arg("command") == "view":
        return read_extractor(ex)
    return write_extractor(ex)


def shell_extractor(ex: ToolExchange) -> ToolFacts:
    command = ex.arg("command", "cmd", "script", "commands") or ex.raw_arguments.strip() or "?"
    text = ex.result or ""
    code = exit_code(text)
    # A zero exit code does not clear the output: ``pytest | tail`` exits 0 with tests failing.
    failed = ex.is_error or bool(code) or first_error_line(text) is not None
    status: Status = "pending" if ex.result is None else ("error" if failed else "success")
    errors = error_lines(text, last=True) if status == "error" else ()
    facts = [f"Command: {cut(command, 60)}"]
    if code is not None:
        facts.append(f"Exit: {code}")
    if ex.result is not None:
        facts.append(f"Output: {line_count(text)} lines")
    return ToolFacts(
        ex.name,
        status,
        with_error(facts, errors, status),
        target=cut(command, 200),
        commands=(cut(command, 200),),
        errors=errors,
    )


_GREP_LINE = re.compile(r"^(\.{0,2}/?[\w@+./-]+?):(\d+)[:-]")
_NAMED_LINE = re.compile(r"^(\.{0,2}/?[\w@+./-]+\.\w+):")
_BARE_PATH = re.compile(r"^(?:\.{0,2}/)?[\w@+.-]+(?:/[\w@+.-]+)+/?$|^[\w@+-]+\.\w+$")
_FOUND = re.compile(r"\b(?:found\s+)?(\d+)\s+(?:matches|match|results?|files?)\b", re.IGNORECASE)


def search_extractor(ex: ToolExchange) -> ToolFacts:
    pattern = ex.arg("pattern", "query", "regex", "search", "q", "glob", "name", "file_name")
    text = ex.result or ""
    status, errors = failure(ex, text)
    files: list[str] = []
    hits = 0
    listed = 0
    for raw in text.splitlines():
        line = raw.strip()
        match = _GREP_LINE.match(line) or _NAMED_LINE.match(line)
        if match:
            files.append(match.group(1))
            hits += 1
        elif _BARE_PATH.match(line):
            files.append(line)
            listed += 1
    reported = _FOUND.search(text.splitlines()[0]) if text.strip() else None
    count = int(reported.group(1)) if reported else (hits or listed)
    files = dedupe(files)
    if status == "error" and not ex.is_error and (hits or listed):
        # Searching for "error:" finds lines that say it; matches mean the search worked.
        status, errors = "success", ()
    if status == "success" and count == 0:
        status = "partial"
    facts = [f'Pattern: "{cut(pattern or "?", 60)}"']
    if ex.result is not None and status != "error":
        facts += [f"Matches: {count}", f"Files: {len(files)}"]
        if files:
            facts.append(f"Top files: {', '.join(files[:3])}")
    return ToolFacts(
        ex.name,
        status,
        with_error(facts, errors, status),
        target=pattern,
        files=tuple(files[:5]),
        errors=errors,
    )


_HTTP_STATUS = re.compile(
    r"\b(?:HTTP/\d(?:\.\d)?\s+|status(?:[ _]code)?\s*[:=]?\s*)([1-5]\d\d)\b", re.I
)
_TITLE = re.compile(r"<title[^>]*>([^<]{1,200})</title>|^(?:#\s+|Title:\s*)(.+)$", re.I | re.M)


def web_extractor(ex: ToolExchange) -> ToolFacts:
    url = ex.arg("url", "uri", "href", "link")
    if url is None:
        found = URL.search(ex.raw_arguments)
        url = found.group(0) if found else None
    text = ex.result or ""
    status, errors = failure(ex, text)
    code_match = _HTTP_STATUS.search(text[:2000])
    code = int(code_match.group(1)) if code_match else None
    if code is not None and code >= 400 and status == "success":
        status, errors = "error", (f"HTTP {code}",)
    facts = [f"URL: {url or '?'}"]
    if code is not None:
        facts.append(f"Status: {code}")
    title = _TITLE.search(text[:20_000])
    if title and status != "error":
        facts.append(f"Title: {cut(title.group(1) or title.group(2), 80)}")
    return ToolFacts(
        ex.name,
        status,
        with_error(facts, errors, status),
        target=url,
        urls=(url,) if url else (),
        errors=errors,
    )


_DONE = {"completed", "complete", "done", "cancelled", "canceled"}


def plan_extractor(ex: ToolExchange) -> ToolFacts:
    """Plan and to-do tools (``update_plan``, ``TodoWrite``): the steps not yet done."""
    steps = ex.arguments.get("plan") or ex.arguments.get("todos") or []
    items = [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []
    open_steps: list[str] = []
    for item in items:
        text = item.get("step") or item.get("content") or item.get("task")
        if isinstance(text, str) and str(item.get("status", "")).lower() not in _DONE:
            open_steps.append(cut(text, 200))
    facts = (f"Steps: {len(items)}", f"Open: {len(open_steps)}")
    return ToolFacts(ex.name, "success", facts, plan=tuple(open_steps))


def _brief(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return cut(text, 40)


def generic_extractor(ex: ToolExchange) -> ToolFacts:
    """Any other tool: its first arguments, the size and first line of its result."""
    facts: list[str] = []
    if ex.arguments:
        shown = ", ".join(f"{k}={_brief(v)}" for k, v in list(ex.arguments.items())[:3])
        facts.append(f"Args: {shown}")
    elif ex.raw_arguments.strip() and ex.raw_arguments.strip() != "{}":
        facts.append(f"Args: {cut(ex.raw_arguments, 60)} (not JSON)")
    text = ex.result or ""
    status, errors = failure(ex, text)
    if status == "success":
        first = next((x for x in text.splitlines() if x.strip()), "")
        facts.append(f"Result: {line_count(text)} lines" + (f", {cut(first, 80)}" if first else ""))
    path = ex.arg(*PATH_KEYS)
    urls = dedupe(URL.findall(ex.raw_arguments))
    return ToolFacts(
        ex.name,
        status,
        with_error(facts, errors, status),
        target=path,
        files=(path,) if path else (),
        urls=tuple(urls[:3]),
        errors=errors,
    )


def _table(kinds: Mapping[Extractor, tuple[str, ...]]) -> Mapping[str, Extractor]:
    return MappingProxyType({name: fn for fn, names in kinds.items() for name in names})


DEFAULT_EXTRACTORS: Mapping[str, Extractor] = _table(
    {
        read_extractor: ("read_file", "view", "cat", "read", "open", "read_text_file", "view_file"),
        shell_extractor: (
            "bash",
            "shell",
            "exec_command",
            "execute_bash",
            "run",
            "run_command",
            "run_terminal_cmd",
            "terminal",
            "local_shell",
            "powershell",
        ),
        search_extractor: (
            "grep",
            "search",
            "search_files",
            "rg",
            "ripgrep",
            "find",
            "glob",
            "find_file",
            "file_search",
            "codebase_search",
            "search_dir",
            "search_file",
        ),
        write_extractor: (
            "write_file",
            "edit_file",
            "create_file",
            "apply_patch",
            "write",
            "edit",
            "multiedit",
            "multi_edit",
            "create",
            "insert",
            "str_replace",
            "notebookedit",
        ),
        editor_extractor: ("str_replace_based_edit_tool", "str_replace_editor", "text_editor"),
        web_extractor: ("fetch", "web_fetch", "webfetch", "browse", "open_url", "http_get"),
        plan_extractor: ("update_plan", "todowrite", "todo_write"),
        generic_extractor: ("*",),
    }
)
"""Extractors by lower-case tool name; ``"*"`` is the fallback for tools not listed."""

_NAMESPACE = re.compile(r"(?:__|[./:])")


def find_extractor(name: str, extractors: Mapping[str, Extractor]) -> Extractor:
    """The extractor for ``name`` in a table keyed by lower-case names: the exact name, then
    its last namespaced component (``mcp__fs__read_file`` -> ``read_file``), then ``"*"``."""
    lowered = name.lower()
    for key in (lowered, _NAMESPACE.split(lowered)[-1]):
        if key in extractors:
            return extractors[key]
    return extractors.get("*", generic_extractor)
