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
from synopsis.summarizers.requests import firm, flagged
from synopsis.summarizers.rules.files import bare_line, fold_line
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


class _Plan:
    """The cuts being planned over one draft's lists."""

    def __init__(self, lists: Mapping[str, tuple[Any, ...]]) -> None:
        self.lists = lists
        self.cuts: list[Cut] = []

    def size(self, key: str) -> int:
        return len(self.lists.get(key, ()))

    def drop(self, key: str, indices: Iterable[int]) -> None:
        self.cuts.extend((key, i, None) for i in indices)

    def shorten(self, key: str, indices: Iterable[int], limit: int) -> None:
        items = self.lists[key]
        self.cuts.extend(
            (key, i, bounded(items[i], limit)) for i in indices if len(items[i]) > limit
        )

    def oldest(self, key: str) -> range:
        return range(self.size(key))

    def newest(self, key: str) -> range:
        return range(self.size(key) - 1, -1, -1)

    def bare(self) -> None:
        """Every file line without its notes: the paths matter more than what was seen."""
        for i, line in enumerate(self.lists["files_and_code"]):
            if bare_line(line) != line:
                self.cuts.append(("files_and_code", i, bare_line(line)))

    def files(self, indices: Iterable[int]) -> None:
        """Each file line folded (paths written once under their shared directory) when
        that is shorter, then dropped."""
        lines = self.lists["files_and_code"]
        for i in indices:
            if fold_line(lines[i]) != lines[i]:
                self.cuts.append(("files_and_code", i, fold_line(lines[i])))
            self.cuts.append(("files_and_code", i, None))


def plan_cuts(draft: Draft) -> list[Cut]:
    """Every cut, least important first: the log of old tool calls, old reasoning and the
    older narrative; entities the sections already say; failed calls; (f) identifiers, URLs
    and figures; (e) decisions, the plan and the work in progress; (d) failures; (c) the
    files, paths a tool only showed first; and only when nothing else is left, the person's
    requests (shortened, then the oldest dropped), their constraints (preferences before
    prohibitions and requirements) and the first request.
    Within a list the oldest item goes first, except entities, whose first entries are the
    anchors carried from earlier summaries."""
    plan = _Plan(draft.lists)
    _facts(plan)
    _people(plan)
    return plan.cuts


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
    # Paths only a tool's output showed (a listing, a log), oldest first: they are none of
    # (c)'s files read, written, searched or named, and rank below all the model wrote.
    lines = plan.lists["files_and_code"]
    seen = [i for i in plan.oldest("files_and_code") if str(lines[i]).startswith("Seen: ")]
    plan.files(seen)
    for kind in ("numbers", "urls", "symbols"):
        plan.drop(f"entities.{kind}", plan.newest(f"entities.{kind}"))
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
    # Of the files (c), the paths a search found go first: a tool's output too.
    found = [i for i in plan.newest("files_and_code") if str(lines[i]).startswith("Searched: ")]
    plan.files(found)
    plan.files(i for i in plan.newest("files_and_code") if i not in seen and i not in found)
    plan.drop("narrative", range(max(0, plan.size("narrative") - 1), plan.size("narrative")))


def _people(plan: _Plan) -> None:
    lists = plan.lists
    users = lists["user_messages"]
    first = 0
    if users and lists["primary_request"] and same_head(lists["primary_request"][0], users[0]):
        # The request already quotes the head of the first message: drop it, not shorten it
        # (a later cut of the same item would bring it back).
        plan.drop("user_messages", range(1))
        first = 1
    plan.shorten("user_messages", range(first, len(users)), _SHORT_USER)
    plan.shorten("constraints", plan.oldest("constraints"), _SHORT_USER)
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
