"""Fitting a summary into its token budget by dropping the least important content first.

The content is held as a :class:`Draft` (the record's lists by name). A fixed plan of cuts
orders every item from least to most important: old reasoning and figures go before key points
of old successful tool calls, those before the files touched, failed calls, user messages and
errors, and the first request last of all. The smallest prefix of that plan that fits is found
by bisection over real renderings, counted with the real counter, so the result fits by
measurement, not by estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.errors import ConfigurationError
from synopsis.summarizers.scanning import bounded, same_head

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from synopsis.summarizers.records import SummaryRecord

__all__ = ["ENTITY_KEYS", "FACET_KEYS", "SECTION_KEYS", "Cut", "Draft", "fit", "plan_cuts"]

SECTION_KEYS = (
    "primary_request",
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
    """Every cut, least important first. Within a list the oldest item goes first, except
    entities and concepts, whose first entries are the anchors carried from earlier summaries."""
    lists = draft.lists
    cuts: list[Cut] = []

    def drop(key: str, indices: Iterable[int]) -> None:
        cuts.extend((key, i, None) for i in indices)

    def shorten(key: str, indices: Iterable[int], limit: int) -> None:
        items = lists[key]
        cuts.extend((key, i, bounded(items[i], limit)) for i in indices if len(items[i]) > limit)

    def oldest(key: str) -> range:
        return range(len(lists[key]))

    def newest(key: str) -> range:
        return range(len(lists[key]) - 1, -1, -1)

    def all_but_last(key: str) -> range:
        return range(len(lists[key]) - 1)

    def last(key: str) -> range:
        return range(max(0, len(lists[key]) - 1), len(lists[key]))

    points = lists["key_points"]
    failed = [i for i, p in enumerate(points) if str(p).startswith(_ERROR_MARK)]

    drop("problem_solving", oldest("problem_solving"))
    drop("decisions", oldest("decisions"))
    for kind in ("numbers", "versions", "commands", "urls", "symbols", "files", "errors"):
        drop(f"entities.{kind}", newest(f"entities.{kind}"))
    shorten("narrative", all_but_last("narrative"), _SHORT_NARRATIVE)
    drop("key_points", (i for i in oldest("key_points") if i not in failed))
    drop("narrative", all_but_last("narrative"))
    drop("participants", newest("participants"))
    drop("key_concepts", newest("key_concepts"))
    users = lists["user_messages"]
    if users and lists["primary_request"] and same_head(lists["primary_request"][0], users[0]):
        # The request already quotes the head of the first message: drop it, not shorten it.
        drop("user_messages", range(1))
    shorten("user_messages", oldest("user_messages"), _SHORT_USER)
    drop("files_and_code", oldest("files_and_code"))
    drop("key_points", failed)
    drop("unresolved", oldest("unresolved"))
    drop("action_items", oldest("action_items"))
    drop("user_messages", all_but_last("user_messages"))
    drop("errors_and_fixes", all_but_last("errors_and_fixes"))
    drop("current_work", oldest("current_work"))
    drop("pending_tasks", oldest("pending_tasks"))
    drop("narrative", last("narrative"))
    # The next step may point at the last user message, so it goes first.
    drop("next_step", oldest("next_step"))
    drop("user_messages", last("user_messages"))
    drop("errors_and_fixes", last("errors_and_fixes"))
    shorten("primary_request", oldest("primary_request"), _SHORT_REQUEST)
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
