"""The rule-based summarizer: offline, free and deterministic (the default summarizer).

It reads the messages once (:mod:`.digest`), carries a previous summary forward, and cuts the
least important content until the rendered summary fits its budget (:mod:`.budget`):
``max_summary_tokens``, at most a tenth of the remaining window when one is given (a summary
must never cause the overflow it prevents), and the per-call ``max_tokens``. The budget holds
for both render styles.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from synopsis.errors import ConfigurationError
from synopsis.summarizers._options import history, utc_now, whole_number
from synopsis.summarizers.records import MAX_KEY_POINTS, MAX_LIST_ITEMS, Covers, SummaryRecord
from synopsis.summarizers.render import render
from synopsis.summarizers.requests import Constraint, Requests, flagged
from synopsis.summarizers.rules.budget import ENTITY_KEYS, Draft, fit
from synopsis.summarizers.rules.digest import Digest, digest
from synopsis.summarizers.rules.drafts import record_from, record_lists
from synopsis.summarizers.rules.extractors import DEFAULT_EXTRACTORS
from synopsis.summarizers.rules.files import file_lines, merge_file_lines
from synopsis.summarizers.rules.repeats import group_points
from synopsis.summarizers.scanning import bounded, dedupe
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime

    from synopsis.messages import Message
    from synopsis.summarizers.rules.exchanges import Extractor

__all__ = ["RuleBasedSummarizer"]

_CARRIED_NARRATIVE = 1000
_LISTED = re.compile(r"\w/\w|\w\.[A-Za-z]\w*$")
"""A path in a tool's output worth listing: a directory and a name, or a name with an
extension (``/title`` in a page is not a file)."""
_ERROR_MARK = "[❌"


class RuleBasedSummarizer:
    """Summarizes by extraction: tool calls through per-tool extractors, the user's words
    verbatim (each up to ``user_message_chars``), anchors by pattern.

    ``extractors`` add to or replace the defaults by tool name (matched without case).
    ``deterministic_ids`` derives the record id from the parent and the covered hashes, and
    ``clock`` gives ``created_at``: with both, the same input gives an equal record.
    ``instructions`` are accepted for the protocol's sake; rules have no use for them.
    """

    model: Final = "rules"

    def __init__(
        self,
        *,
        extractors: Mapping[str, Extractor] | None = None,
        max_summary_tokens: int = 500,
        remaining_window: int | None = None,
        user_message_chars: int = 2000,
        model_for_counting: str | None = None,
        deterministic_ids: bool = False,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.max_summary_tokens = whole_number("max_summary_tokens", max_summary_tokens, 1)
        self.remaining_window = (
            None
            if remaining_window is None
            else whole_number("remaining_window", remaining_window, 0)
        )
        self.user_message_chars = whole_number("user_message_chars", user_message_chars, 1)
        table: dict[str, Extractor] = dict(DEFAULT_EXTRACTORS)
        for name, extractor in (extractors or {}).items():
            if not isinstance(name, str) or not callable(extractor):
                raise ConfigurationError(
                    f"extractors map tool names to callables, got {name!r}: {extractor!r}"
                )
            table[name.lower()] = extractor
        self.extractors: Mapping[str, Extractor] = MappingProxyType(table)
        self.counter = counter_for_model(model_for_counting)
        self.deterministic_ids = deterministic_ids
        self.clock = clock or utc_now

    def __repr__(self) -> str:
        return (
            f"RuleBasedSummarizer(max_summary_tokens={self.max_summary_tokens}, "
            f"remaining_window={self.remaining_window}, "
            f"user_message_chars={self.user_message_chars})"
        )

    def budget(self, max_tokens: int | None = None) -> int:
        """The most tokens the rendered summary may take for one call."""
        limits = [self.max_summary_tokens]
        if self.remaining_window is not None:
            limits.append(self.remaining_window // 10)
        if max_tokens is not None:
            limits.append(whole_number("max_tokens", max_tokens, 1))
        return min(limits)

    def measure(self, record: SummaryRecord) -> int:
        """Tokens of the longer of the record's two renderings."""
        return max(
            self.counter.count_text(render(record, style=style))
            for style in ("sections", "snapshot")
        )

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        del instructions
        budget = self.budget(max_tokens)
        messages = history(messages)
        found = digest(
            messages, self.extractors, self.user_message_chars, requests=_carried(previous)
        )
        draft, dropped = _draft(found, previous, self.user_message_chars, budget)
        covers = Covers.of(messages)
        depth = previous.depth + 1 if previous else 0
        parent = previous.id if previous else None
        base: dict[str, Any] = {
            "created_at": self.clock(),
            "depth": depth,
            "parent_id": parent,
            "covers": covers,
            "tokens_in": sum(self.counter.count_message(m) for m in messages),
            "model": self.model,
            "covered_total": previous.messages_covered + len(covers) if previous else None,
        }
        if self.deterministic_ids:
            key = json.dumps([parent, depth, list(covers.hashes)])
            base["id"] = hashlib.sha256(key.encode()).hexdigest()[:32]

        def build(content: Draft, truncated: bool) -> SummaryRecord:
            return record_from(content, base, truncated or dropped)

        record = fit(draft, build, self.measure, budget)
        return record.model_copy(update={"tokens_out": self.counter.count_text(render(record))})

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        """:meth:`summarize`, in a worker thread: rules do no I/O, but on a long history
        their work takes seconds, which an event loop must not spend waiting (the hand-off
        costs a tenth of a millisecond)."""
        return await asyncio.to_thread(
            self.summarize,
            messages,
            previous=previous,
            instructions=instructions,
            max_tokens=max_tokens,
        )


def _narrative(found: Digest) -> str:
    people = found.people
    text = (
        f"{_plural(found.messages, 'message')} ({people} from people, "
        f"{found.roles.get('assistant', 0)} from the assistant)"
    )
    calls = sum(found.tools.values())
    if calls:
        top = ", ".join(f"{name} x{n}" for name, n in found.tools.most_common(5))
        more = ", …" if len(found.tools) > 5 else ""
        failed = f", {found.failed} failed" if found.failed else ""
        if found.repeated:
            failed += f", {found.repeated} repeating a result summarized before"
        text += f"; {_plural(calls, 'tool call')} ({top}{more}){failed}"
    return text + "."


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _key_points(points: list[str]) -> list[str]:
    """At most ``MAX_KEY_POINTS``: the oldest successful calls go first, then oldest errors."""
    excess = len(points) - MAX_KEY_POINTS
    if excess <= 0:
        return points
    successes = [i for i, p in enumerate(points) if not p.startswith(_ERROR_MARK)]
    dropped = set(successes[:excess])
    if len(dropped) < excess:
        failures = [i for i, p in enumerate(points) if p.startswith(_ERROR_MARK)]
        dropped.update(failures[: excess - len(dropped)])
    return [p for i, p in enumerate(points) if i not in dropped]


def _file_notes(found: Digest) -> dict[str, list[str]]:
    """What happened to each path: the tools' notes, and "named" for a path only mentioned."""
    notes = {path: list(n) for path, n in found.files.items()}
    for path in dedupe(found.named_files):
        notes.setdefault(path, ["named"])
    for path in dedupe(p.rstrip(".,;:!?'\"") for p in found.seen_files):
        if _LISTED.search(path):
            notes.setdefault(path, ["seen"])
    return notes


def _carried(previous: SummaryRecord | None) -> Requests:
    """The requests and constraints a previous record carries, for the new part's to follow:
    its constraints first (said before any of its requests it still quotes), then its
    requests, read for the values they state."""
    carried = Requests()
    if previous is not None:
        for text in previous.sections.constraints:
            carried.add_constraint(text)
        carried.requests = list(previous.sections.user_messages)
    return carried


def _requests(
    found: Digest, previous: SummaryRecord | None
) -> tuple[list[str], list[str], list[str], frozenset[str]]:
    """The primary request, the constraints, every request (all the person's messages, the first
    among them) and the values now stale, the previous record's carried forward and updated
    (``found.requests`` follow the previous record's): a constraint the new part corrects is
    replaced, and the sentence that stated the old value leaves the requests too."""
    merged = found.requests
    primary = list(previous.sections.primary_request[:1]) if previous is not None else []
    if not primary and found.people:
        primary = [merged.requests[len(merged.requests) - found.people]]
    for old in merged.superseded:
        primary = [p.replace(old, "[superseded, see constraints]") for p in primary]
    constraints = [c.text for c in merged.constraints]
    return primary, constraints, merged.current_requests(), _stale(merged)


def _stale(requests: Requests) -> frozenset[str]:
    """Values only superseded sentences gave (the 8080 of "use port 8080" once 9090
    replaced it): the identifiers and figures must not carry them on either."""
    old = {v for text in requests.superseded for v in Constraint.of(text).values}
    current = {v for c in requests.constraints for v in c.values}
    return frozenset(old - current)


def _failures(
    found: Digest, previous: Mapping[str, list[Any]] | None
) -> tuple[list[str], list[str]]:
    """Failures and what is still unresolved, an earlier summary's marked resolved when the
    new part's last call on the same target worked."""
    errors = list(found.errors)
    unresolved = list(found.unresolved)
    if previous is None:
        return errors, unresolved
    fixed = [key for key, ok in found.outcomes.items() if ok]
    carried_errors = [
        f"{line} (fixed later)"
        if any(line.startswith(f"{key}:") for key in fixed) and "fixed" not in line
        else line
        for line in previous["errors_and_fixes"]
    ]
    carried_unresolved = [
        line
        for line in previous["unresolved"]
        if not any(line.startswith(f"{key}:") for key in fixed)
    ]
    return dedupe([*carried_errors, *errors]), dedupe([*carried_unresolved, *unresolved])


def _participants(found: Digest) -> list[str]:
    """Named participants only: "user, assistant, tool" tells the reader nothing."""
    return [p for p in found.participants if "(" in p]


def _draft(
    found: Digest, previous: SummaryRecord | None, user_chars: int, budget: int
) -> tuple[Draft, bool]:
    """The content of the record, every list within what ``budget`` could show, and whether
    that dropped anything."""
    narrative: list[str] = []
    if previous is not None:
        narrative += [_tail(previous.narrative)] if previous.narrative else []
    elif found.earlier_summaries:
        # A summary this summarizer cannot parse back (its record was not passed as
        # ``previous``): quoting it is the only way not to lose it.
        quoted = "\n".join(bounded(s, user_chars) for s in found.earlier_summaries)
        narrative.append(f"An earlier summary opened this part:\n{quoted}")
    narrative.append(("Then " if previous else "Earlier: ") + _narrative(found))
    prev_lists = record_lists(previous) if previous else None
    primary, constraints, requests, stale = _requests(found, previous)
    errors, unresolved = _failures(found, prev_lists)
    pending = found.pending
    current = [bounded(found.assistant_texts[-1], 400)] if found.assistant_texts else []
    if found.key_points:
        current.append(f"Last tool call: {found.key_points[-1]}")
    step = found.next_step
    if step and current and current[0] == step:
        step = None  # the last message was nothing but that step: say it once
    new: dict[str, list[Any]] = {
        "key_points": found.key_points,
        "primary_request": primary,
        "constraints": constraints,
        "key_concepts": [],
        "errors_and_fixes": errors,
        "problem_solving": found.reasoning,
        "user_messages": requests,
        "pending_tasks": pending,
        "current_work": current,
        "next_step": [step] if step else [],
        "participants": _participants(found),
        "decisions": found.decisions,
        "action_items": [],
        "unresolved": unresolved,
    }
    for kind in ENTITY_KEYS:
        new[f"entities.{kind}"] = dedupe(found.entities[kind])
    files = merge_file_lines(
        prev_lists["files_and_code"] if prev_lists else (), file_lines(_file_notes(found))
    )
    if prev_lists is not None:
        new = _merge(prev_lists, new)
    for kind in ENTITY_KEYS:
        key = f"entities.{kind}"
        new[key] = [v for v in new[key] if v.lower() not in stale]
    new["files_and_code"] = files
    new["narrative"] = narrative
    lists, dropped = _bounded(new, budget)
    return Draft(lists), dropped


_UPDATED = frozenset(
    {"primary_request", "constraints", "user_messages", "errors_and_fixes", "unresolved"}
)
"""Lists the draft already built from the previous record and the new part together."""


def _merge(old: Mapping[str, list[Any]], new: Mapping[str, list[Any]]) -> dict[str, list[Any]]:
    """The previous record updated section by section: what describes the present (pending
    work, current work, next step) is replaced when the new part says anything about it;
    every other list keeps its items and gains the new part's."""
    out: dict[str, list[Any]] = {}
    for key, items in new.items():
        before = old[key]
        if key in _UPDATED:
            out[key] = items
        elif key in ("pending_tasks", "current_work", "next_step", "action_items"):
            out[key] = items or before
        elif key == "key_points":
            out[key] = [*before, *items]
        elif key == "key_concepts":
            out[key] = list(items)
        else:
            out[key] = dedupe([*before, *items])
    return out


def _bounded(lists: dict[str, list[Any]], budget: int) -> tuple[dict[str, tuple[Any, ...]], bool]:
    """Every list within what ``budget`` could ever show (each item costs at least a token,
    so more items than the budget has tokens cannot all fit) and the record's cap, and
    whether that dropped anything: anchors and file lines keep their first entries, histories
    (errors, reasoning, decisions) their latest, requests the first and the newest. The key
    points are a log of at most ``MAX_KEY_POINTS`` calls whatever the budget."""
    most = min(budget, MAX_LIST_ITEMS)
    out: dict[str, tuple[Any, ...]] = {}
    dropped = False
    for key, items in lists.items():
        if key == "key_points":
            out[key] = tuple(_key_points(group_points(items)))
            continue
        if key in ("user_messages", "constraints"):
            kept = _users(items, most)
        elif key.startswith("entities.") or key in (
            "key_concepts",
            "participants",
            "files_and_code",
        ):
            kept = items[:most]
        else:
            kept = items[-most:]
        dropped = dropped or len(kept) < len(items)
        out[key] = tuple(kept)
    return out, dropped


def _users(messages: list[str], most: int) -> list[str]:
    """At most ``most``: the first, then the oldest of the rest go, those a person flagged
    with a label (``FACT: …``) after all the others."""
    excess = len(messages) - most
    if excess <= 0:
        return messages
    rest = range(1, len(messages))
    order = [i for i in rest if not flagged(messages[i])] + [
        i for i in rest if flagged(messages[i])
    ]
    dropped = set(order[:excess])
    return [m for i, m in enumerate(messages) if i not in dropped]


def _tail(text: str) -> str:
    return text if len(text) <= _CARRIED_NARRATIVE else "…" + text[-_CARRIED_NARRATIVE:]
