"""The rule-based summarizer: offline, free and deterministic (seed 003's default mode).

It reads the messages once (:mod:`~synopsis.summarizers.digest`), carries a previous summary
forward, and cuts the least important content until the rendered summary fits its budget
(:mod:`~synopsis.summarizers.budget`): ``max_summary_tokens``, at most a tenth of the remaining
window when one is given (seed 003: a summary must never cause the overflow it prevents), and
the per-call ``max_tokens``. The budget holds for both render styles.
"""

from __future__ import annotations

import hashlib
import json
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from synopsis.errors import ConfigurationError
from synopsis.messages import Message, content_hash, message_id
from synopsis.summarizers._options import history, utc_now, whole_number
from synopsis.summarizers.budget import ENTITY_KEYS, Draft, fit
from synopsis.summarizers.digest import Digest, digest
from synopsis.summarizers.drafts import record_from, record_lists
from synopsis.summarizers.extractors import DEFAULT_EXTRACTORS
from synopsis.summarizers.records import (
    MAX_FACET_ITEMS,
    MAX_KEY_POINTS,
    MAX_SECTION_ITEMS,
    ActionItem,
    Coverage,
    SummaryRecord,
)
from synopsis.summarizers.render import render
from synopsis.summarizers.scanning import bounded, dedupe
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime

    from synopsis.summarizers.exchanges import Extractor

__all__ = ["RuleBasedSummarizer"]

_REQUEST_CHARS = 300
_CARRIED_NARRATIVE = 1000
_CONCEPTS = 12
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
        found = digest(messages, self.extractors, self.user_message_chars)
        draft = _draft(found, previous, self.user_message_chars)
        covers = tuple(
            Coverage(id=message_id(m, i), sha256=content_hash(m)) for i, m in enumerate(messages)
        )
        depth = previous.depth + 1 if previous else 0
        parent = previous.id if previous else None
        base: dict[str, Any] = {
            "created_at": self.clock(),
            "depth": depth,
            "parent_id": parent,
            "covers": covers,
            "tokens_in": sum(self.counter.count_message(m) for m in messages),
            "model": self.model,
        }
        if self.deterministic_ids:
            key = json.dumps([parent, depth, [c.sha256 for c in covers]])
            base["id"] = hashlib.sha256(key.encode()).hexdigest()[:32]

        def build(content: Draft, truncated: bool) -> SummaryRecord:
            return record_from(content, base, truncated)

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
        """The same as :meth:`summarize`: rules do no I/O, so there is nothing to await."""
        return self.summarize(
            messages, previous=previous, instructions=instructions, max_tokens=max_tokens
        )


def _narrative(found: Digest) -> str:
    text = (
        f"{_plural(found.messages, 'message')} ({len(found.user_messages)} from the user, "
        f"{found.roles.get('assistant', 0)} from the assistant)"
    )
    calls = sum(found.tools.values())
    if calls:
        top = ", ".join(f"{name} x{n}" for name, n in found.tools.most_common(5))
        more = ", …" if len(found.tools) > 5 else ""
        text += f"; {_plural(calls, 'tool call')} ({top}{more}), {found.failed} failed"
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


def _files(previous: Sequence[str], new: Mapping[str, list[str]]) -> list[str]:
    """One line per file; notes about a file the previous summary listed join its line."""
    lines: dict[str, str] = {}
    for line in previous:
        path, sep, _ = line.partition(" — ")
        lines[path if sep else line] = line
    for path, notes in new.items():
        joined = _notes(notes)
        lines[path] = f"{lines[path]}; {joined}" if path in lines else f"{path} — {joined}"
    return list(lines.values())


def _notes(notes: list[str]) -> str:
    """``read (120 lines, python)`` three times reads as ``read x3 (120 lines, python)``:
    the count and the first detail of each kind of access."""
    kinds: dict[str, tuple[int, str]] = {}
    for note in notes:
        verb, _, detail = note.partition(" (")
        count, first = kinds.get(verb, (0, detail))
        kinds[verb] = (count + 1, first)
    parts = []
    for verb, (count, detail) in kinds.items():
        times = f" x{count}" if count > 1 else ""
        parts.append(f"{verb}{times} ({detail}" if detail else f"{verb}{times}")
    return "; ".join(parts)


def _users(messages: list[str]) -> list[str]:
    """The first request and the most recent messages, within the cap."""
    if len(messages) <= MAX_SECTION_ITEMS:
        return messages
    return [messages[0], *messages[-(MAX_SECTION_ITEMS - 1) :]]


def _draft(found: Digest, previous: SummaryRecord | None, user_chars: int) -> Draft:
    narrative: list[str] = []
    if previous is not None:
        narrative += [_tail(previous.narrative)] if previous.narrative else []
    elif found.earlier_summaries:
        # A summary this summarizer cannot parse back (its record was not passed as
        # ``previous``): quoting it is the only way not to lose it.
        quoted = "\n".join(bounded(s, user_chars) for s in found.earlier_summaries)
        narrative.append(f"An earlier summary opened this part:\n{quoted}")
    narrative.append(("Then " if previous else "Earlier: ") + _narrative(found))
    request = (
        [bounded(found.first_request, min(user_chars, _REQUEST_CHARS))]
        if found.first_request
        else []
    )
    pending = found.pending
    current = [bounded(found.assistant_texts[-1], 400)] if found.assistant_texts else []
    if found.key_points:
        current.append(f"Last tool call: {found.key_points[-1]}")
    concepts = [term for term, _ in found.concepts.most_common(_CONCEPTS)]
    step = found.next_step
    if step and current and current[0] == step:
        step = None  # the last message was nothing but that step: say it once
    new: dict[str, list[Any]] = {
        "key_points": found.key_points,
        "primary_request": request,
        "key_concepts": concepts,
        "errors_and_fixes": found.errors,
        "problem_solving": found.reasoning,
        "user_messages": found.user_messages,
        "pending_tasks": pending,
        "current_work": current,
        "next_step": [step] if step else [],
        "participants": found.participants,
        "decisions": found.decisions,
        "action_items": [ActionItem(owner="assistant", task=t) for t in pending],
        "unresolved": found.unresolved,
    }
    for kind in ENTITY_KEYS:
        new[f"entities.{kind}"] = dedupe(found.entities[kind])
    prev_lists = record_lists(previous) if previous else None
    files = _files(prev_lists["files_and_code"] if prev_lists else (), found.files)
    if prev_lists is not None:
        new = _merge(prev_lists, new)
    new["files_and_code"] = files
    new["narrative"] = narrative
    return Draft(_capped(new))


def _merge(old: Mapping[str, list[Any]], new: Mapping[str, list[Any]]) -> dict[str, list[Any]]:
    """The previous summary's content carried forward: the first request stays, lists grow,
    and what describes the present (pending work, current work, next step) is replaced when
    the new part says anything about it."""
    out: dict[str, list[Any]] = {}
    for key, items in new.items():
        before = old[key]
        if key == "primary_request":
            out[key] = before or items
        elif key in ("pending_tasks", "current_work", "next_step", "action_items"):
            out[key] = items or before
        elif key in ("user_messages", "key_points"):
            out[key] = [*before, *items]
        else:
            out[key] = dedupe([*before, *items])
    return out


def _capped(lists: dict[str, list[Any]]) -> dict[str, tuple[Any, ...]]:
    """Every list within its cap: anchors (entities, concepts, participants) keep their first
    entries, histories (errors, reasoning, decisions) their latest."""
    out: dict[str, tuple[Any, ...]] = {}
    for key, items in lists.items():
        if key == "key_points":
            kept = _key_points(items)
        elif key == "user_messages":
            kept = _users(items)
        elif key.startswith("entities.") or key in ("key_concepts", "participants"):
            kept = items[:MAX_FACET_ITEMS]
        else:
            kept = items[-MAX_SECTION_ITEMS:]
        out[key] = tuple(kept)
    return out


def _tail(text: str) -> str:
    return text if len(text) <= _CARRIED_NARRATIVE else "…" + text[-_CARRIED_NARRATIVE:]
