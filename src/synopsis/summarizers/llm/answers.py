"""What an LLM's answer must be: strict JSON of the summary's content (or its numbered
sections), and a summary at all.

:class:`SummaryContent` is the schema the LLM fills (generated, so it cannot drift from the
record); :func:`not_a_summary` tells an answer that is no summary at all (empty, a refusal, an
echo of the instructions) from a poor one, which is used and filled in (:mod:`.gaps`).

An answer that updates a previous record may still forget some of it. :func:`carry_forward`
puts back what the answer dropped of the previous record's requests, constraints and files,
unless the new part replaced it (see :meth:`Update.replaced`): a model's forgetting is not a
decision, but its answer to a correction is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from synopsis.summarizers.records import (
    MAX_FACET_ITEMS,
    MAX_KEY_POINTS,
    MAX_SECTION_ITEMS,
    Entities,
    Facets,
    Sections,
    SummaryRecord,
)
from synopsis.summarizers.requests import Constraint, constraint_sentences
from synopsis.summarizers.rules.digest import digest
from synopsis.summarizers.rules.extractors import DEFAULT_EXTRACTORS
from synopsis.summarizers.scanning import dedupe, same_head, scan_text

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from synopsis.messages import Message
    from synopsis.summarizers.llm.gaps import Fact

__all__ = [
    "SUMMARY_SCHEMA",
    "SummaryContent",
    "Update",
    "carry_forward",
    "joined",
    "not_a_summary",
    "parse_sectioned",
    "parse_summary",
]

_USER_CHARS: Final = 2000


def _clip(value: object, cap: int) -> object:
    return value[:cap] if isinstance(value, list) else value


class SummaryContent(BaseModel):
    """What the LLM fills: the content fields of a :class:`SummaryRecord`. Lists longer than
    their cap are cut to it (an LLM that lists 31 key points still gave a summary)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    narrative: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
    key_points: Annotated[tuple[str, ...], Field(max_length=MAX_KEY_POINTS)] = ()
    sections: Sections = Field(default_factory=Sections)
    facets: Facets = Field(default_factory=Facets)

    @model_validator(mode="before")
    @classmethod
    def _apply_caps(cls, data: Any) -> Any:  # noqa: ANN401 - raw JSON of any shape
        if not isinstance(data, dict):
            return data
        data = dict(data)
        data["key_points"] = _clip(data.get("key_points", []), MAX_KEY_POINTS)
        for key, cap in (("sections", MAX_SECTION_ITEMS), ("facets", MAX_FACET_ITEMS)):
            group = data.get(key)
            if isinstance(group, dict):
                group = {k: _clip(v, cap) for k, v in group.items()}
                entities = group.get("entities")
                if isinstance(entities, dict):
                    group["entities"] = {k: _clip(v, cap) for k, v in entities.items()}
                data[key] = group
        return data


def _asked(schema: Any, cap: int) -> Any:  # noqa: ANN401 - a JSON schema's node
    """``schema`` with every list's length bound at ``cap``: the record holds as many items as
    a budget allows (a rule summary of a long session lists hundreds), but a model is asked for
    what it can write, and a server that turns the schema into a grammar (llama.cpp) expands a
    bound of 100,000 into a grammar that brings it down."""
    if isinstance(schema, dict):
        out = {k: _asked(v, cap) for k, v in schema.items()}
        if isinstance(out.get("maxItems"), int) and out["maxItems"] > cap:
            out["maxItems"] = cap
        return out
    if isinstance(schema, list):
        return [_asked(v, cap) for v in schema]
    return schema


SUMMARY_SCHEMA: Final = _asked(
    SummaryContent.model_json_schema(), max(MAX_SECTION_ITEMS, MAX_FACET_ITEMS, MAX_KEY_POINTS)
)
"""The schema a model is asked to answer in: the record's content, each list within what a
model's answer keeps (see :meth:`SummaryContent._apply_caps`)."""


def parse_summary(text: str) -> SummaryContent:
    """The content in an LLM's answer: strict JSON (a surrounding Markdown fence is tolerated).

    Raises :class:`ValueError` (a :class:`json.JSONDecodeError` or a pydantic
    :class:`~pydantic.ValidationError`) when the text does not parse or does not validate.
    """
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) > 6:
        body = body[3:-3].removeprefix("json").strip()
    # strict=False: a line break inside a string (a small model writes them raw) is still text.
    return SummaryContent.model_validate(json.loads(body, strict=False))


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _strings(content: SummaryContent) -> list[str]:
    """Every text of ``content`` but its narrative."""
    strings: list[str] = []

    def collect(value: object) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list | tuple):
            for item in value:
                collect(item)

    collect(content.model_dump(exclude={"narrative"}))
    return strings


_WORD: Final = re.compile(r"\w+")
_APOSTROPHE: Final = "['\u2019]"
_REFUSAL: Final = re.compile(
    rf"\W*(?:i{_APOSTROPHE}m sorry|i am sorry|sorry,|i apologi[sz]e|as an ai\b"
    rf"|i (?:cannot|can{_APOSTROPHE}t|can not|am unable|am not able|won{_APOSTROPHE}t)\b"
    rf"|i{_APOSTROPHE}m (?:unable|not able)\b)",
    re.IGNORECASE,
)
_RUN: Final = 5
"""Words in a run compared with the instructions: five in a row are rarely shared by chance."""
_ECHO: Final = 0.5


def _runs(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + _RUN]) for i in range(len(words) - _RUN + 1)}


def not_a_summary(content: SummaryContent, instructions: str) -> str | None:
    """Why an answer that reads as a summary (JSON of the schema, or numbered sections) is
    none at all, or ``None`` when it is one, however poor. It is none when it says nothing (no
    word in any field: ``"..."``, the shape it was shown), when it refuses (its narrative opens
    with "I'm sorry", "I can't", "As an AI"... and every other field is empty), or when it is
    an echo of the ``instructions`` (at least half of its runs of five words are theirs).
    Anything else is a model's real attempt: what it left out is added to it, not held
    against it (:mod:`.gaps`)."""
    rest = _strings(content)
    if not _WORD.search(" ".join([content.narrative, *rest])):
        return "an empty summary"
    if _REFUSAL.match(content.narrative) and not any(s.strip() for s in rest):
        return "a refusal, not a summary"
    runs = _runs("\n".join([content.narrative, *rest]))
    if runs and len(runs & _runs(instructions)) >= _ECHO * len(runs):
        return "an echo of the instructions, not a summary"
    return None


def joined(records: Sequence[SummaryRecord]) -> SummaryContent:
    """The content of consecutive partial summaries put together as they are, oldest first:
    for a merge the model answered with no summary. Each list keeps every distinct item within
    its cap (the first of the primary requests and entities, the newest of the rest); the
    narratives are paragraphs, so that fitting a budget drops the oldest first."""

    def listed(items: Iterable[str], cap: int, *, newest: bool = True) -> list[str]:
        found = dedupe(items)
        return found[-cap:] if newest else found[:cap]

    sections: dict[str, Any] = {
        name: listed(
            (i for r in records for i in getattr(r.sections, name)),
            MAX_SECTION_ITEMS,
            newest=name != "primary_request",
        )
        for name in Sections.model_fields
        if name != "next_step"
    }
    steps = [r.sections.next_step for r in records if r.sections.next_step]
    sections["next_step"] = steps[-1] if steps else None
    facets = [r.facets for r in records]
    entities = {
        name: listed((i for f in facets for i in getattr(f.entities, name)), MAX_FACET_ITEMS)
        for name in Entities.model_fields
    }
    tasks = list(dict.fromkeys(a for f in facets for a in f.action_items))[-MAX_FACET_ITEMS:]
    return SummaryContent(
        narrative="\n".join(r.narrative for r in records if r.narrative.strip()) or "(joined)",
        key_points=tuple(listed((k for r in records for k in r.key_points), MAX_KEY_POINTS)),
        sections=Sections.model_validate(sections),
        facets=Facets(
            participants=tuple(
                listed((p for f in facets for p in f.participants), MAX_FACET_ITEMS)
            ),
            decisions=tuple(listed((d for f in facets for d in f.decisions), MAX_FACET_ITEMS)),
            action_items=tuple(tasks),
            unresolved=tuple(listed((u for f in facets for u in f.unresolved), MAX_FACET_ITEMS)),
            entities=Entities.model_validate(entities),
        ),
    )


_SENTENCES: Final = re.compile(r"(?<=[.!?;])\s+|\n+")
_SUPERSEDED: Final = "[superseded, see constraints]"
"""What stands in a restored request for a sentence the new part superseded (as in the rule
summary), so that a request put back cannot bring an old value back with it."""


def _about_the_same(subject: frozenset[str], other: frozenset[str]) -> bool:
    """At least half the words of the shorter subject are shared (as
    :meth:`~synopsis.summarizers.requests.Constraint.supersedes` judges it)."""
    return bool(other) and 2 * len(subject & other) >= min(len(subject), len(other))


@dataclass(frozen=True, slots=True)
class Update:
    """A previous record, and what people wrote in the part that updates it."""

    previous: SummaryRecord
    stated: tuple[Constraint, ...] = ()
    """The constraints people stated in the new part, the latest value of each."""
    said: tuple[frozenset[str], ...] = ()
    """The subject words of each sentence people wrote in the new part."""

    @classmethod
    def of(cls, previous: SummaryRecord, messages: Sequence[Message]) -> Update:
        found = digest(messages, DEFAULT_EXTRACTORS, _USER_CHARS).requests
        sentences = [s for r in found.requests for s in _SENTENCES.split(r) if s.strip()]
        return cls(
            previous,
            tuple(found.constraints),
            tuple(Constraint.of(s).subject for s in sentences),
        )

    def replaced(self, constraint: str, answer: Sequence[Constraint]) -> bool:
        """Whether the previous record's ``constraint`` is one the update may drop, given the
        constraints of the ``answer``: a person's new constraint supersedes it; or a sentence a
        person wrote in the new part names at least half of its subject (the answer had the
        correction before it, so what it did with the constraint stands); or the answer holds
        a constraint about the same subject (its new value). A constraint with no subject
        words ("Use 8080 instead") cannot be told apart, so any constraint a person stated in
        the new part counts as its replacement."""
        old = Constraint.of(constraint)
        if any(new.supersedes(old) for new in self.stated):
            return True
        if not old.subject:
            return bool(self.stated)
        if any(2 * len(old.subject & words) >= len(old.subject) for words in self.said):
            return True
        return any(_about_the_same(old.subject, new.subject) for new in answer)

    def current(self, facts: Sequence[Fact], content: SummaryContent) -> tuple[Fact, ...]:
        """``facts`` without the previous record's constraints that ``content`` left out and
        was free to (:meth:`replaced`): the rule summary may still hold one, and adding it
        back would undo a correction the answer applied."""
        answer = [Constraint.of(c) for c in content.sections.constraints]
        before = self.previous.sections.constraints
        return tuple(
            fact
            for fact in facts
            if fact.kind != "constraint"
            or not any(_same(fact.text, old) for old in before)
            or not self.replaced(fact.text, answer)
        )

    def superseded(self, sentence: str, answer: Sequence[Constraint]) -> bool:
        """Whether a sentence of a previous request no longer holds: a rule
        :meth:`replaced`, or a value a person's new constraint gives another value ("Use port
        8080." after "Use port 9090 instead.")."""
        if constraint_sentences(sentence):
            return self.replaced(sentence, answer)
        old = Constraint.of(sentence)
        return any(new.revalues(old) for new in self.stated)


def _same(a: str, b: str) -> bool:
    """One item is the other, perhaps cut short or with a few words added at its end."""
    a, b = _normal(a), _normal(b)
    return bool(a) and bool(b) and same_head(a, b)


def _merge(
    previous: Sequence[str],
    answer: Sequence[str],
    same: Callable[[str, str], bool],
    restore: Callable[[str], str | None],
) -> list[str]:
    """The answer's items with the previous items it dropped put back where they stood,
    previous first (``restore`` gives what to put back, or ``None`` to leave an item out)."""
    out: list[str] = []
    rest = list(answer)
    for item in previous:
        at = next((i for i, kept in enumerate(rest) if same(item, kept)), None)
        if at is not None:
            # The answer's own items before the match stay in the answer's order.
            out += rest[: at + 1]
            del rest[: at + 1]
        elif not any(same(item, kept) for kept in answer):
            restored = restore(item)
            if restored is not None:
                out.append(restored)
    return dedupe([*out, *rest])


def carry_forward(content: SummaryContent, update: Update) -> SummaryContent:
    """``content`` with what it dropped of ``update.previous`` put back: the first request and
    every other request (a sentence the new part superseded replaced by a mark, a request that
    was nothing else left out), every constraint the new part did not replace
    (:meth:`Update.replaced`), and every file it no longer names. Requests and files are never
    superseded: they happened. What the answer kept, it keeps as it wrote it."""
    before, now = update.previous.sections, content.sections
    answer = [Constraint.of(c) for c in now.constraints]

    def redacted(text: str) -> str:
        for sentence in dedupe([s.strip() for s in _SENTENCES.split(text) if s.strip()]):
            if update.superseded(sentence, answer):
                text = text.replace(sentence, _SUPERSEDED)
        return text

    def request(text: str) -> str | None:
        text = redacted(text)
        return None if text.strip() == _SUPERSEDED else text

    def constraint(text: str) -> str | None:
        return None if update.replaced(text, answer) else text

    entities = content.facets.entities
    named = _normal("\n".join([*now.files_and_code, *entities.files]))

    def file_line(text: str) -> str | None:
        # A line the answer regrouped ("Read: a.py" into "Edited: a.py; b.py") is still there.
        paths = scan_text(text).files
        return None if paths and all(_normal(p) in named for p in paths) else text

    sections = now.model_copy(
        update={
            "primary_request": tuple(
                _merge(before.primary_request, now.primary_request, _same, redacted)
            )[:MAX_SECTION_ITEMS],
            "user_messages": tuple(_merge(before.user_messages, now.user_messages, _same, request))[
                -MAX_SECTION_ITEMS:
            ],
            "constraints": tuple(_merge(before.constraints, now.constraints, _same, constraint))[
                -MAX_SECTION_ITEMS:
            ],
            "files_and_code": tuple(
                _merge(before.files_and_code, now.files_and_code, _same, file_line)
            )[-MAX_SECTION_ITEMS:],
        }
    )
    files = _merge(update.previous.facets.entities.files, entities.files, str.__eq__, str)
    facets = content.facets.model_copy(
        update={"entities": entities.model_copy(update={"files": tuple(files[:MAX_FACET_ITEMS])})}
    )
    return content.model_copy(update={"sections": sections, "facets": facets})


_TITLES: Final = {
    "primary request and intent": "primary_request",
    "primary request": "primary_request",
    "constraints and corrections": "constraints",
    "constraints": "constraints",
    "key technical concepts": "key_concepts",
    "files and code sections": "files_and_code",
    "files and code": "files_and_code",
    "errors and fixes": "errors_and_fixes",
    "problem solving": "problem_solving",
    "all user messages": "user_messages",
    "user messages": "user_messages",
    "pending tasks": "pending_tasks",
    "current work": "current_work",
    "optional next step": "next_step",
    "next step": "next_step",
}
_PROSE: Final = frozenset({"analysis", "summary"})
_HEADING = re.compile(r"^\s*(?:#+\s*)?(?:\d+\.\s*)?\**\s*([A-Za-z][A-Za-z ]*?)\s*:?\s*\**\s*:?\s*$")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_TAGS = re.compile(r"</?(?:analysis|summary)>", re.IGNORECASE)
_MIN_SECTIONS: Final = 2


def parse_sectioned(text: str) -> SummaryContent | None:
    """The content of an answer written in the rendered summary's numbered sections instead of
    JSON (an LLM that ignored the format but did the work), or ``None`` when fewer than two of
    the sections are there. Prose under "Analysis" (or before the first section) is the
    narrative; each other line under a section heading is one item, bullets stripped."""
    sections: dict[str, list[str]] = {}
    prose: list[str] = []
    current: list[str] | None = prose
    for raw in _TAGS.sub("", text).splitlines():
        heading = _HEADING.match(raw)
        title = heading.group(1).strip().lower() if heading else ""
        if title in _TITLES:
            current = sections.setdefault(_TITLES[title], [])
            continue
        if title in _PROSE:
            current = prose
            continue
        line = _BULLET.sub("", raw).strip().strip("*").strip()
        if line and current is not None:
            current.append(line)
    if len(sections) < _MIN_SECTIONS:
        return None
    steps = sections.pop("next_step", [])
    narrative = " ".join(prose) or " ".join(sections.get("current_work", [])) or "(see sections)"
    return SummaryContent.model_validate(
        {
            "narrative": narrative,
            "sections": {**sections, "next_step": " ".join(steps) or None},
        }
    )
