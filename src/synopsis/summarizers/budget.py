"""Fitting a summary into its token budget by dropping the least important content first.

The content is held as a :class:`Draft` (the record's lists by name). A fixed plan of cuts
orders every item from least to most important: the log of old tool calls and old reasoning go
first, then identifiers, the plan, failures and the files touched, and the person's requests
and constraints last of all (see :func:`plan_cuts`). The smallest prefix of that plan that fits
is found by bisection over real renderings, counted with the real counter, so the result fits
by measurement, not by estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.errors import ConfigurationError
from synopsis.summarizers.files import fold_line
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


def plan_cuts(draft: Draft) -> list[Cut]:
    """Every cut, least important first, in the order of what a continued session needs
    least: the log of old tool calls and old reasoning; identifiers (figures first); the file
    list folded under shared directories; decisions, the plan and the work in progress;
    failures; the file list itself; and only when nothing else is left, the person's requests
    (shortened, then the oldest dropped), their constraints and the first request. Within a
    list the oldest item goes first, except entities, whose first entries are the anchors
    carried from earlier summaries."""
    lists = draft.lists
    cuts: list[Cut] = []

    def drop(key: str, indices: Iterable[int]) -> None:
        cuts.extend((key, i, None) for i in indices)

    def shorten(key: str, indices: Iterable[int], limit: int) -> None:
        items = lists[key]
        cuts.extend((key, i, bounded(items[i], limit)) for i in indices if len(items[i]) > limit)

    def oldest(key: str) -> range:
        return range(len(lists.get(key, ())))

    def newest(key: str) -> range:
        return range(len(lists.get(key, ())) - 1, -1, -1)

    def all_but_last(key: str) -> range:
        return range(len(lists.get(key, ())) - 1)

    def last(key: str) -> range:
        return range(max(0, len(lists.get(key, ())) - 1), len(lists.get(key, ())))

    points = lists["key_points"]
    failed = [i for i, p in enumerate(points) if str(p).startswith(_ERROR_MARK)]

    drop("key_points", (i for i in oldest("key_points") if i not in failed))
    drop("problem_solving", oldest("problem_solving"))
    shorten("narrative", all_but_last("narrative"), _SHORT_NARRATIVE)
    drop("narrative", all_but_last("narrative"))
    drop("participants", newest("participants"))
    drop("key_concepts", newest("key_concepts"))
    # Entities the sections already say (files, errors, commands in the key points) or that
    # are rarely acted on (versions) before anything else.
    for kind in ("versions", "commands", "errors", "files"):
        drop(f"entities.{kind}", newest(f"entities.{kind}"))
    drop("key_points", failed)
    # Files, weakest action first (the lines come strongest first): each line is folded
    # (paths written once under their shared directory), then the folded line goes. Paths a
    # tool only showed (a listing, a log) go first, oldest first; they rank below what people
    # and the model wrote themselves.
    lines = lists["files_and_code"]
    seen = [i for i in oldest("files_and_code") if str(lines[i]).startswith("Seen: ")]
    rest = [i for i in newest("files_and_code") if i not in seen]

    def files(indices: Iterable[int]) -> None:
        for i in indices:
            if fold_line(lines[i]) != lines[i]:
                cuts.append(("files_and_code", i, fold_line(lines[i])))
            cuts.append(("files_and_code", i, None))

    files(seen)
    # (f) identifiers, URLs and figures the conversation itself wrote.
    for kind in ("numbers", "urls", "symbols"):
        drop(f"entities.{kind}", newest(f"entities.{kind}"))
    # (e) decisions, the plan and the work in progress; (d) failures; (c) files.
    drop("decisions", oldest("decisions"))
    drop("action_items", oldest("action_items"))
    drop("current_work", oldest("current_work"))
    drop("unresolved", oldest("unresolved"))
    drop("pending_tasks", oldest("pending_tasks"))
    drop("next_step", oldest("next_step"))
    drop("errors_and_fixes", oldest("errors_and_fixes"))
    files(rest)
    drop("narrative", last("narrative"))
    users = lists["user_messages"]
    first = 0
    if users and lists["primary_request"] and same_head(lists["primary_request"][0], users[0]):
        # The request already quotes the head of the first message: drop it, not shorten it
        # (a later cut of the same item would bring it back).
        drop("user_messages", range(1))
        first = 1
    shorten("user_messages", range(first, len(users)), _SHORT_USER)
    shorten("constraints", oldest("constraints"), _SHORT_USER)
    drop("user_messages", range(first, len(users) - 1))
    shorten("primary_request", oldest("primary_request"), _SHORT_USER)
    drop("user_messages", range(max(first, len(users) - 1), len(users)))
    drop("constraints", all_but_last("constraints"))
    shorten("primary_request", oldest("primary_request"), _SHORT_REQUEST)
    drop("constraints", last("constraints"))
    drop("primary_request", oldest("primary_request"))
    return cuts


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
