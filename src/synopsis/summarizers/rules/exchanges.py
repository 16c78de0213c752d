"""One tool call and its result as extractors see them, and what they make of it.

Extractors never see malformed input as an error: arguments that are not a JSON object arrive
as an empty mapping, with the raw text beside them; a call with no result has ``result=None``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from synopsis.messages import thaw
from synopsis.summarizers.scanning import first_error_line, looks_failed, output_line

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ERROR_CHARS",
    "PATH_KEYS",
    "Extractor",
    "Status",
    "ToolExchange",
    "ToolFacts",
    "cut",
    "error_lines",
    "failure",
    "line_count",
    "parse_arguments",
    "with_error",
]

Status = Literal["success", "error", "partial", "pending", "repeated"]
"""``partial``: it worked and found nothing; ``pending``: no result in the part; ``repeated``:
its result repeats one summarized before, whose outcome that summary gives."""
_MARKS = {"error": "❌", "pending": "…", "repeated": "="}

PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "target_file", "notebook_path")
ERROR_CHARS = 500  # an error line is kept verbatim, but a minified line can be megabytes


def cut(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters: facts sit inside a one-line key
    point, so a newline in a command or a title would break it."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class ToolExchange:
    """One tool call and what came back. ``result`` is ``None`` when no result is in the
    summarized part (the call is still running, or its result is kept verbatim)."""

    name: str
    arguments: Mapping[str, Any]
    raw_arguments: str = ""
    result: str | None = None
    is_error: bool = False

    def arg(self, *keys: str) -> str | None:
        """The first of ``keys`` whose value is a non-empty string (a list is joined)."""
        for key in keys:
            value = self.arguments.get(key)
            if isinstance(value, list | tuple) and value:
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                return value
        return None


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """What a summary keeps of one exchange. ``target`` is what it acted on (a path, a
    command, a pattern, a URL) so that a later success can mark an earlier error as fixed;
    ``notes`` say what happened to which file; ``plan`` is the open steps of a plan tool
    (``None`` when the tool says nothing about a plan)."""

    tool: str
    status: Status
    facts: tuple[str, ...] = ()
    target: str | None = None
    files: tuple[str, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    symbols: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    plan: tuple[str, ...] | None = None

    @property
    def key_point(self) -> str:
        mark = _MARKS.get(self.status, "✓")
        body = " | ".join(self.facts)
        return f"[{mark} {self.tool}: {body}]" if body else f"[{mark} {self.tool}]"


class Extractor(Protocol):
    def __call__(self, exchange: ToolExchange, /) -> ToolFacts: ...


def parse_arguments(arguments: str | Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """The arguments as a plain mapping (empty unless they are a JSON object) and as text."""
    if not isinstance(arguments, str):
        plain = thaw(arguments)
        return plain, json.dumps(plain, ensure_ascii=False, default=str)
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return {}, arguments
    return (parsed if isinstance(parsed, dict) else {}), arguments


def error_lines(text: str, *, last: bool = False) -> tuple[str, ...]:
    """The line that says what went wrong: the line that shows the failure, else the first line
    the tool printed (its message), or with ``last`` its last one (a command that fails with
    only an exit code tends to say why just before it exits)."""
    line = first_error_line(text) or output_line(text, last=last) or ""
    return (line[:ERROR_CHARS],) if line else ()


def failure(ex: ToolExchange, text: str) -> tuple[Status, tuple[str, ...]]:
    """Status and error lines for tools whose output opens with the failure, if any: for these
    tools (reads, searches, fetches) the rest of the output is content, whatever it says."""
    if ex.result is None:
        return "pending", ()
    if ex.is_error or looks_failed(text):
        return "error", error_lines(text)
    return "success", ()


def with_error(facts: list[str], errors: tuple[str, ...], status: Status) -> tuple[str, ...]:
    if errors:
        facts.append(f"Error: {cut(errors[0], 120)}")
    elif status == "pending":
        facts.append("no result yet")
    return tuple(facts)


def line_count(text: str) -> int:
    return len(text.splitlines())
