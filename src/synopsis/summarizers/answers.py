"""What an LLM's answer must be: strict JSON of the summary's content, holding the anchors.

:class:`SummaryContent` is the schema the LLM fills (generated, so it cannot drift from the
record); :func:`required_anchors` lists what a summary must keep verbatim, and
:func:`missing_anchors` which of those an answer dropped (the quality guard of seed 001).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from synopsis.messages import Message, message_text
from synopsis.summarizers.digest import digest
from synopsis.summarizers.extractors import DEFAULT_EXTRACTORS
from synopsis.summarizers.records import (
    MAX_FACET_ITEMS,
    MAX_KEY_POINTS,
    MAX_SECTION_ITEMS,
    Facets,
    Sections,
    SummaryRecord,
)
from synopsis.summarizers.scanning import dedupe, scan_text

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "SUMMARY_SCHEMA",
    "SummaryContent",
    "missing_anchors",
    "parse_sectioned",
    "parse_summary",
    "required_anchors",
]

_PREFIX_WORDS: Final = 6
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


SUMMARY_SCHEMA: Final = SummaryContent.model_json_schema()


def parse_summary(text: str) -> SummaryContent:
    """The content in an LLM's answer: strict JSON (a surrounding Markdown fence is tolerated).

    Raises :class:`ValueError` (a :class:`json.JSONDecodeError` or a pydantic
    :class:`~pydantic.ValidationError`) when the text does not parse or does not validate.
    """
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) > 6:
        body = body[3:-3].removeprefix("json").strip()
    return SummaryContent.model_validate(json.loads(body))


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _prefix(text: str) -> str:
    return " ".join(text.split()[:_PREFIX_WORDS])


def required_anchors(
    messages: Sequence[Message], previous: SummaryRecord | None = None, *, limit: int = 10
) -> list[str]:
    """What a summary of ``messages`` must keep verbatim: the start of the first request (the
    previous summary's, when updating one), up to ``limit`` paths and identifiers that occur at
    least twice (most frequent first), and the start of each pending item."""
    found = digest(messages, DEFAULT_EXTRACTORS, _USER_CHARS)
    anchors: list[str] = []
    first = (
        previous.sections.primary_request[0]
        if previous and previous.sections.primary_request
        else found.first_request
    )
    if first:
        anchors.append(_prefix(first))
    text = "\n".join(message_text(m) for m in messages)
    names = scan_text(text)
    counts = {name: text.count(name) for name in (*names.files, *names.symbols)}
    repeated = [name for name, count in counts.items() if count >= 2]
    repeated.sort(key=lambda name: -counts[name])
    anchors += repeated[:limit]
    anchors += [_prefix(item) for item in found.pending]
    return dedupe(anchors)


def missing_anchors(content: SummaryContent, anchors: Sequence[str]) -> list[str]:
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

    collect(content.model_dump())
    haystack = _normal("\n".join(strings))
    return [anchor for anchor in anchors if _normal(anchor) not in haystack]


_TITLES: Final = {
    "primary request and intent": "primary_request",
    "primary request": "primary_request",
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
    """The content of an answer written as seed 002's numbered sections instead of JSON (an
    LLM that ignored the format but did the work), or ``None`` when fewer than two of the
    sections are there. Prose under "Analysis" (or before the first section) is the
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
