"""Files a summarized part touched, grouped by what was done to them.

One line per action (edited, read, searched, named, seen), each path with a short note. Under
a tight budget the notes go first, then paths one at a time (see
:mod:`synopsis.summarizers.rules.budget`); a path is always written out in full, so that it is
found as it was written. A path is listed under its strongest action only: a file that was read
and then edited is an edited file. Lines an older summary folded (``src/app/{a.py, b.py}
(folded)``) are carried as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.summarizers.scanning import dedupe

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "ACTIONS",
    "bare_line",
    "entries_of",
    "file_lines",
    "merge_file_lines",
    "parse_file_line",
    "without",
]

ACTIONS = ("Edited", "Read", "Searched", "Named", "Seen")
"""Strongest first: ``Named`` is a path people or the model wrote, ``Seen`` one that only a
tool's output showed (a listing, a log)."""
_PER_LINE = 12
"""Entries per line: the budget cuts a line at a time, so a long list goes in pieces."""
_SEPARATOR = "; "
_FOLD_NOTE = " (folded)"


def _action(notes: Iterable[str]) -> str:
    verbs = {note.partition(" ")[0] for note in notes}
    if verbs & {"written", "write"}:
        return "Edited"
    if "read" in verbs:
        return "Read"
    if "found" in verbs:
        return "Searched"
    if "named" in verbs:
        return "Named"
    return "Seen"


def _note(notes: list[str]) -> str:
    """``read (120 lines, python)`` three times reads as ``read x3 (120 lines, python)``."""
    kinds: dict[str, tuple[int, str]] = {}
    for note in notes:
        verb, _, detail = note.partition(" (")
        if verb in ("found", "named", "seen"):
            continue
        count, first = kinds.get(verb, (0, detail))
        kinds[verb] = (count + 1, first)
    parts = []
    for verb, (count, detail) in kinds.items():
        times = f" x{count}" if count > 1 else ""
        parts.append(f"{verb}{times} ({detail}" if detail else f"{verb}{times}")
    return ", ".join(parts)


def file_lines(notes: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Entries by action: ``path`` or ``path [note]``, in the order first met."""
    out: dict[str, list[str]] = {action: [] for action in ACTIONS}
    for path, path_notes in notes.items():
        note = _note(path_notes)
        out[_action(path_notes)].append(f"{path} [{note}]" if note else path)
    return out


def _render(action: str, entries: list[str]) -> str:
    return f"{action}: {_SEPARATOR.join(entries)}"


def parse_file_line(line: str) -> tuple[str, list[str]] | None:
    """``(action, entries)`` of a line :func:`render_lines` wrote, else ``None`` (a line of
    an older summary, or an LLM's own wording, stays as it is)."""
    action, sep, rest = line.partition(": ")
    if not sep or action not in ACTIONS or rest.endswith(_FOLD_NOTE):
        return None
    return action, [e for e in rest.split(_SEPARATOR) if e]


def _path(entry: str) -> str:
    return entry.partition(" [")[0]


def merge_file_lines(previous: Iterable[str], new: Mapping[str, list[str]]) -> list[str]:
    """One line per action: the previous summary's entries, then the new part's; a path moves
    to its strongest action, and a path seen again keeps its newest note."""
    entries: dict[str, str] = {}
    action_of: dict[str, str] = {}
    others: list[str] = []

    def add(action: str, entry: str) -> None:
        path = _path(entry)
        known = action_of.get(path)
        if known is None or ACTIONS.index(action) <= ACTIONS.index(known):
            action_of[path] = action
            if " [" in entry or path not in entries:
                entries[path] = entry

    for line in previous:
        parsed = parse_file_line(line)
        if parsed is None:
            others.append(line)
            continue
        for entry in parsed[1]:
            add(parsed[0], entry)
    for action in ACTIONS:
        for entry in new.get(action, ()):
            add(action, entry)
    under = _ancestors(action_of)
    lines = []
    for action in ACTIONS:
        listed = [
            entries[p]
            for p in action_of
            if action_of[p] == action and not (action in _MENTIONS and p in under)
        ]
        lines += [
            _render(action, listed[i : i + _PER_LINE]) for i in range(0, len(listed), _PER_LINE)
        ]
    return [*lines, *dedupe(others)]


_MENTIONS = frozenset({"Searched", "Named", "Seen"})
"""Actions whose directory entries say nothing a deeper path in the list does not."""


def _ancestors(paths: Iterable[str]) -> set[str]:
    """The listed paths that are a directory of another listed path: ``src`` and ``src/app``
    beside ``src/app/main.py``."""
    listed = set(paths)
    out: set[str] = set()
    for path in listed:
        parent = path.rstrip("/")
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if parent in listed or f"{parent}/" in listed:
                out.update((parent, f"{parent}/"))
    return out & listed


def bare_line(line: str) -> str:
    """``line`` with its notes dropped, every path still written out in full."""
    parsed = parse_file_line(line)
    if parsed is None:
        return line
    action, entries = parsed
    return _render(action, [_path(e) for e in entries])


def without(line: str, dropped: set[int]) -> str | None:
    """``line`` bare, without its entries at ``dropped``; ``None`` once none is left (a line
    :func:`parse_file_line` cannot read is one entry)."""
    parsed = parse_file_line(line)
    if parsed is None:
        return None if 0 in dropped else line
    action, entries = parsed
    kept = [_path(e) for i, e in enumerate(entries) if i not in dropped]
    return _render(action, kept) if kept else None


def entries_of(line: str) -> tuple[str, list[str]]:
    """``(action, paths)`` of a file line; a line of other wording is one entry, itself."""
    parsed = parse_file_line(line)
    if parsed is None:
        return "", [line]
    return parsed[0], [_path(e) for e in parsed[1]]
