"""Fitting a summary into its token budget by dropping the least important content first.

The content is held as a :class:`Draft` (the record's lists by name). A fixed plan of cuts
orders every item from least to most important: the log of old tool calls and old reasoning go
first, then identifiers, the plan, failures and the files touched, and the person's requests
and constraints last of all (see :func:`plan_cuts`). Paths go one at a time, the longest first,
and are never folded into a shape they cannot be found in: a history many times the window
still keeps most of the paths it named. The smallest prefix of that plan that fits
is found by bisection over real renderings, counted with the real counter, so the result fits
by measurement, not by estimate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.errors import ConfigurationError
from synopsis.summarizers.requests import firm, flagged
from synopsis.summarizers.rules.files import bare_line, entries_of, without
from synopsis.summarizers.scanning import bounded, same_head

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from synopsis.summarizers.records import SummaryRecord

__all__ = ["ENTITY_KEYS", "FACET_KEYS", "SECTION_KEYS", "Cut", "Draft", "fit", "plan_cuts"]

SECTION_KEYS = (
    "primary_request",
    "constraints",
    "key_concepts",
    "files_and_code",
    "errors_and_fixes",
    "problem_solving",
    "user_messages",
    "pending_tasks",
    "current_work",
    "next_step",
)
FACET_KEYS = ("participants", "decisions", "action_items", "unresolved")
ENTITY_KEYS = ("files", "symbols", "commands", "urls", "errors", "versions", "numbers")

Cut = tuple[str, int, Any]
"""(list name, index, replacement): ``None`` drops the item, anything else replaces it."""

_SHORT_USER = 300
_SHORT_REQUEST = 200
_IDENTITY = 100
"""A request cut to what identifies it: its first line, up to this many characters."""
_SHORT_NARRATIVE = 200
_ERROR_MARK = "[❌"


@dataclass(frozen=True, slots=True)
class Draft:
    """A record's content: ``lists`` maps ``narrative`` (its paragraphs, oldest first),
    ``key_points``, each section (``next_step`` as a list of at most one), each facet and
    ``entities.<kind>`` to its items."""

    lists: Mapping[str, tuple[Any, ...]]

    def apply(self, cuts: Iterable[Cut]) -> Draft:
        changes: dict[str, dict[int, Any]] = {}
        for key, index, replacement in cuts:
            changes.setdefault(key, {})[index] = replacement
        lists = dict(self.lists)
        for key, changed in changes.items():
            kept = (changed.get(i, item) for i, item in enumerate(self.lists[key]))
            lists[key] = tuple(item for item in kept if item is not None)
        return Draft(lists)


_Rank = tuple[bool, bool, int]
"""How much a path is worth keeping, least first: not written out in another, names a file,
and is short."""
_FILE_NAME = re.compile(r"[^/]\.[A-Za-z0-9]{1,8}$")


def _named_file(path: str) -> bool:
    """Whether ``path`` ends in a file name with an extension."""
    return _FILE_NAME.search(path) is not None


class _Plan:
    """The cuts being planned over one draft's lists."""

    def __init__(self, lists: Mapping[str, tuple[Any, ...]]) -> None:
        self.lists = lists
        self.cuts: list[Cut] = []
        self._gone: dict[int, set[int]] = {}
        self._files: list[tuple[str, list[str]]] | None = None
        self._covered: set[str] = set()

    def size(self, key: str) -> int:
        return len(self.lists.get(key, ()))

    def drop(self, key: str, indices: Iterable[int]) -> None:
        self.cuts.extend((key, i, None) for i in indices)

    def shorten(self, key: str, indices: Iterable[int], limit: int) -> None:
        items = self.lists[key]
        self.cuts.extend(
            (key, i, bounded(items[i], limit)) for i in indices if len(items[i]) > limit
        )

    def identify(self, key: str, indices: Iterable[int]) -> None:
        """Each item cut to its first line, up to ``_IDENTITY`` characters, when that is
        shorter: what tells a request apart, once its whole text no longer fits."""
        items = self.lists[key]
        for i in indices:
            text = str(items[i])
            head = next((line.strip() for line in text.splitlines() if line.strip()), text)
            short = head[:_IDENTITY]
            if len(short) < len(text):
                self.cuts.append((key, i, f"{short}… [cut {len(text) - len(short):,} characters]"))

    def oldest(self, key: str) -> range:
        return range(self.size(key))

    def newest(self, key: str) -> range:
        return range(self.size(key) - 1, -1, -1)

    def bare(self) -> None:
        """Every file line without its notes: the paths matter more than what was seen."""
        for i, line in enumerate(self.lists["files_and_code"]):
            if bare_line(line) != line:
                self.cuts.append(("files_and_code", i, bare_line(line)))

    def _entries(self) -> list[tuple[str, list[str]]]:
        if self._files is None:
            self._files = [entries_of(str(line)) for line in self.lists["files_and_code"]]
            self._covered = _covered([p for _, paths in self._files for p in paths])
        return self._files

    def paths(self, *actions: str, files: bool | None = None) -> list[tuple[_Rank, int, int]]:
        """The entries (rank, line, entry) of the file lines of ``actions`` ("" for lines of
        other wording), least worth keeping first: a path a longer listed one ends with (it
        is still found in that one), then one naming no file (a directory, ``/clear``), then
        the longest: when paths must go, the most files stay. ``files`` picks the paths that
        name a file (``True``) or those that do not (``False``)."""
        found = []
        for i, (action, paths) in enumerate(self._entries()):
            if action in actions:
                found += [
                    ((p not in self._covered, _named_file(p), -len(p)), i, j)
                    for j, p in enumerate(paths)
                    if files is None or _named_file(p) == files
                ]
        return sorted(found)

    def thin(self, entries: Iterable[tuple[_Rank, int, int]], *keys: str) -> None:
        """File ``entries`` dropped one at a time, with the items of ``keys`` (ranked as
        files of their length) among them: each cut writes its line without the entries
        gone so far (bare), or drops it with its last."""
        ranked: list[tuple[_Rank, int, str, int, int]] = [
            (rank, n, "", i, j) for n, (rank, i, j) in enumerate(entries)
        ]
        for key in keys:
            ranked += [
                ((True, True, -len(str(item))), len(ranked), key, i, 0)
                for i, item in enumerate(self.lists[key])
            ]
        lines = self.lists["files_and_code"]
        for _, _, key, i, j in sorted(ranked):
            if key:
                self.cuts.append((key, i, None))
                continue
            gone = self._gone.setdefault(i, set())
            gone.add(j)
            self.cuts.append(("files_and_code", i, without(str(lines[i]), gone)))


def _covered(paths: Iterable[str]) -> set[str]:
    """The paths another listed path ends with, after a ``/`` (``src/a.py`` beside
    ``./src/a.py`` or ``a/src/a.py``): written out there, they are still found."""
    listed = set(paths)
    by_name: dict[str, list[str]] = {}
    for path in listed:
        by_name.setdefault(path.rstrip("/").rsplit("/", 1)[-1], []).append(path)
    out = set()
    for path in listed:
        for other in by_name.get(path.rstrip("/").rsplit("/", 1)[-1], ()):
            if len(other) > len(path) and other.endswith(path) and other[-len(path) - 1] == "/":
                out.add(path)
                break
    return out


def plan_cuts(draft: Draft) -> list[Cut]:
    """Every cut, least important first: the log of old tool calls, old reasoning and the
    older narrative; entities the sections already say; failed calls; the person's long
    messages shortened to their opening; (f) identifiers, URLs and figures together with the
    paths only a tool showed, the longest first (each is one anchor: the short ones keep the
    most); (e) decisions, the plan and the work in progress; (d) failures; (c) the files
    searched, named, read and edited, a path at a time; and only when nothing else is left,
    the person's requests (each cut to its first line, then the oldest dropped), their
    constraints (preferences before prohibitions and requirements) and the first request.
    Within a list the oldest item goes first, except entities, whose first entries are the
    anchors carried from earlier summaries."""
    plan = _Plan(draft.lists)
    _facts(plan)
    _people(plan)
    return plan.cuts


def _first_user(plan: _Plan) -> int:
    """Where the person's messages worth shortening start: 1 when the first only repeats the
    primary request, which says it already."""
    lists = plan.lists
    users = lists["user_messages"]
    request = lists["primary_request"]
    return int(bool(users and request and same_head(request[0], users[0])))


def _said_as_request(plan: _Plan) -> bool:
    """Whether the first message is the primary request word for word (and so not shown)."""
    return bool(plan.lists["user_messages"][0] == plan.lists["primary_request"][0])


def _facts(plan: _Plan) -> None:
    points = plan.lists["key_points"]
    failed = [i for i, p in enumerate(points) if str(p).startswith(_ERROR_MARK)]
    plan.drop("key_points", (i for i in plan.oldest("key_points") if i not in failed))
    plan.bare()
    plan.drop("problem_solving", plan.oldest("problem_solving"))
    older = range(plan.size("narrative") - 1)
    plan.shorten("narrative", older, _SHORT_NARRATIVE)
    plan.drop("narrative", older)
    plan.drop("participants", plan.newest("participants"))
    plan.drop("key_concepts", plan.newest("key_concepts"))
    for kind in ("versions", "commands", "errors", "files"):
        plan.drop(f"entities.{kind}", plan.newest(f"entities.{kind}"))
    plan.drop("key_points", failed)
    # A long message of the person's (a pasted log, the text of a skill their harness sent)
    # keeps its opening, which says what it was, before the paths go. The first one goes if
    # it only repeats the request and is shown beside it (shortened, it would be said twice).
    first = _first_user(plan)
    if first and not _said_as_request(plan):
        plan.drop("user_messages", range(1))
    plan.shorten("user_messages", range(first, plan.size("user_messages")), _SHORT_USER)
    # Paths only a tool's output showed (a listing, a log) and (f) identifiers, URLs and
    # figures, the longest first, whichever list it is in: each is one anchor, so the
    # shorter ones keep the most of them.
    plan.thin(
        [*plan.paths("Seen"), *plan.paths("Searched", "Named", files=False)],
        "entities.numbers",
        "entities.urls",
        "entities.symbols",
    )
    for key in (
        "decisions",
        "action_items",
        "current_work",
        "unresolved",
        "pending_tasks",
        "next_step",
        "errors_and_fixes",
    ):
        plan.drop(key, plan.oldest(key))
    # Of the files (c), the paths a search found go first (a tool's output too), then those
    # only named, then those read, and those edited last; each the longest first.
    plan.thin(plan.paths("Searched", files=True))
    plan.thin([*plan.paths("Named", files=True), *plan.paths("")])
    plan.thin(plan.paths("Read"))
    plan.thin(plan.paths("Edited"))
    plan.drop("narrative", range(max(0, plan.size("narrative") - 1), plan.size("narrative")))


def _people(plan: _Plan) -> None:
    lists = plan.lists
    users = lists["user_messages"]
    first = _first_user(plan)
    if first and _said_as_request(plan):
        # Word for word the request, it is not shown; once the request is shortened it
        # would be, so it goes first.
        plan.drop("user_messages", range(1))
    plan.shorten("constraints", plan.oldest("constraints"), _SHORT_USER)
    # Every request said by its first line before the oldest go: most of them still there.
    plan.identify("user_messages", range(first, len(users) - 1))
    # The person's flagged statements ("FACT: …", "GOAL: …") go after their other requests.
    older = range(first, len(users) - 1)
    plan.drop("user_messages", (i for i in older if not flagged(users[i])))
    plan.drop("user_messages", (i for i in older if flagged(users[i])))
    plan.shorten("primary_request", plan.oldest("primary_request"), _SHORT_USER)
    plan.drop("user_messages", range(max(first, len(users) - 1), len(users)))
    # Preferences and suggestions before prohibitions and requirements, each oldest first.
    rules = lists["constraints"]
    order = [i for i in range(len(rules)) if not firm(rules[i])]
    order += [i for i in range(len(rules)) if firm(rules[i])]
    plan.drop("constraints", order[:-1])
    plan.shorten("primary_request", plan.oldest("primary_request"), _SHORT_REQUEST)
    plan.drop("constraints", order[-1:])
    plan.drop("primary_request", plan.oldest("primary_request"))


def fit(
    draft: Draft,
    build: Callable[[Draft, bool], SummaryRecord],
    measure: Callable[[SummaryRecord], int],
    budget: int,
) -> SummaryRecord:
    """The record for ``draft`` if it fits ``budget`` as measured, else the record after the
    fewest cuts that make it fit (``truncated`` set). Raises ``ConfigurationError`` when not
    even the empty frame fits."""
    whole = build(draft, False)
    if measure(whole) <= budget:
        return whole
    cuts = plan_cuts(draft)

    def attempt(count: int) -> SummaryRecord | None:
        record = build(draft.apply(cuts[:count]), True)
        return record if measure(record) <= budget else None

    best = attempt(len(cuts))
    if best is None:
        needed = measure(build(draft.apply(cuts), True))
        raise ConfigurationError(
            f"a summary needs at least {needed} tokens for its frame; the budget is {budget}"
        )
    # Bisection assumes that more cuts never lengthen the text; should one ever do so, the
    # answer is still a measured fit, only not the smallest.
    low, high = 1, len(cuts)
    while low < high:
        middle = (low + high) // 2
        found = attempt(middle)
        if found is None:
            low = middle + 1
        else:
            high, best = middle, found
    return best
