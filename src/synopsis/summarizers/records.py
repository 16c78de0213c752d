"""The summary record: what a summarizer returns, what the store keeps, what gets rendered.

Pydantic models (not dataclasses like the message model) because the JSON schema an LLM must
fill is generated from them, and a record read back from a store or an LLM is validated the
same way. Every list is a tuple with a cap: a runaway answer or store entry cannot make a record
explode, and a frozen record cannot be edited behind the store's back. The cap of a list is far
above what any summary budget holds (the token budget decides what a summary keeps, not a
count); an LLM's answer is clipped to the smaller caps below before it is read.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Self

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from synopsis.summarizers.coverage import Coverage, Covers

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "MAX_FACET_ITEMS",
    "MAX_KEY_POINTS",
    "MAX_LIST_ITEMS",
    "MAX_SECTION_ITEMS",
    "ActionItem",
    "Coverage",
    "Covers",
    "Entities",
    "Facets",
    "Sections",
    "SummaryRecord",
    "Usage",
    "summary_schema",
]

MAX_KEY_POINTS = 30
"""At most 30 key points: more stop being key."""
MAX_FACET_ITEMS = 50
"""The most items of one facet an LLM's answer is read with (a sanity cap on a model)."""
MAX_SECTION_ITEMS = 50
"""The most items of one section an LLM's answer is read with (a sanity cap on a model)."""
MAX_LIST_ITEMS = 100_000
"""The most items any list of a record holds: each costs at least a token, so no summary
budget comes near it, and a record read back from a store or a model stays bounded."""

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> datetime:
    return datetime.now(UTC)


FacetList = Annotated[tuple[str, ...], Field(max_length=MAX_LIST_ITEMS)]
SectionList = Annotated[tuple[str, ...], Field(max_length=MAX_LIST_ITEMS)]
Count = Annotated[int, Field(ge=0)]


class ActionItem(BaseModel):
    model_config = _FROZEN

    owner: str | None = None
    task: str
    due: str | None = None


class Entities(BaseModel):
    """Domain anchors kept verbatim: a later turn can only refer back to what survives here."""

    model_config = _FROZEN

    files: FacetList = ()
    symbols: FacetList = ()
    commands: FacetList = ()
    urls: FacetList = ()
    errors: FacetList = ()
    versions: FacetList = ()
    numbers: FacetList = ()
    """Dates, amounts and other figures (kept verbatim: a continued session trips over a wrong
    number, date or version)."""


class Facets(BaseModel):
    model_config = _FROZEN

    participants: FacetList = ()
    decisions: FacetList = ()
    action_items: Annotated[tuple[ActionItem, ...], Field(max_length=MAX_LIST_ITEMS)] = ()
    unresolved: FacetList = ()
    entities: Entities = Field(default_factory=Entities)


class Sections(BaseModel):
    """The sections of the continuation summary: the nine numbered sections (request and intent
    to next step), in that order, and the constraints and corrections a person stated (which a
    continued session must still obey)."""

    model_config = _FROZEN

    primary_request: SectionList = ()
    constraints: SectionList = ()
    """Rules, preferences and corrections a person stated ("never …", "use X instead"), the
    latest value of each: a later correction replaces the earlier one."""
    key_concepts: SectionList = ()
    files_and_code: SectionList = ()
    errors_and_fixes: SectionList = ()
    problem_solving: SectionList = ()
    user_messages: SectionList = ()
    pending_tasks: SectionList = ()
    current_work: SectionList = ()
    next_step: str | None = None


class Usage(BaseModel):
    """What producing the record cost, as the provider reported it (zero for rules)."""

    model_config = _FROZEN

    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    total_tokens: Count = 0
    cached_tokens: Count = 0
    reasoning_tokens: Count = 0

    @classmethod
    def total(cls, usages: Sequence[Usage]) -> Usage:
        """What ``usages`` cost together, field by field."""
        return cls(**{name: sum(getattr(u, name) for u in usages) for name in cls.model_fields})


class SummaryRecord(BaseModel):
    """One summary in a chain: ``parent_id`` names the summary it updated (``None`` exactly when
    ``depth`` is 0). ``truncated`` says content was dropped to fit the token budget."""

    model_config = _FROZEN

    id: str = Field(default_factory=_new_id, pattern=r"^[0-9a-f]{32}$")
    created_at: Annotated[AwareDatetime, AfterValidator(_to_utc)] = Field(default_factory=_now)
    depth: Count = 0
    parent_id: str | None = None
    narrative: str = ""
    key_points: Annotated[tuple[str, ...], Field(max_length=MAX_KEY_POINTS)] = ()
    facets: Facets = Field(default_factory=Facets)
    sections: Sections = Field(default_factory=Sections)
    covers: Covers = Covers()
    """The messages this record summarized (:meth:`Covers.of` them)."""
    covered_total: Count | None = None
    """Messages the whole chain stands for, this record's ``covers`` and its ancestors'; unset
    on a record that starts a chain (then ``len(covers)``)."""
    tokens_in: Count = 0
    tokens_out: Count = 0
    model: str = "rules"
    usage: Usage = Field(default_factory=Usage)
    truncated: bool = False
    added: tuple[str, ...] = ()
    """Items of the content above that a model's summary left out and synopsis added, verbatim
    from the rule summary of the same messages (the rendering shows them in a section of
    their own); empty for a rule summary."""

    @model_validator(mode="after")
    def _chain_is_consistent(self) -> Self:
        if (self.depth == 0) != (self.parent_id is None):
            raise ValueError(
                "a record has a parent_id exactly when its depth is above 0 "
                f"(depth={self.depth}, parent_id={self.parent_id!r})"
            )
        return self

    @property
    def messages_covered(self) -> int:
        """Every message the chain up to this record stands for."""
        return self.covered_total if self.covered_total is not None else len(self.covers)


def summary_schema() -> dict[str, Any]:
    """The JSON schema of :class:`SummaryRecord` (a copy ships as ``summary.schema.json``)."""
    return SummaryRecord.model_json_schema()
