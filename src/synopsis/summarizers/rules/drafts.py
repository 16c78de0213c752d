"""A record's content as named lists (a :class:`~synopsis.summarizers.rules.budget.Draft`) and back.

The rule-based summarizer builds its records from drafts; any record (an LLM's too) can be
turned into a draft, cut to a token budget by :func:`~synopsis.summarizers.rules.budget.fit`, and
rebuilt. The narrative is a list of paragraphs, so that the oldest can go first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synopsis.summarizers.records import Entities, Facets, Sections, SummaryRecord
from synopsis.summarizers.rules.budget import ENTITY_KEYS, Draft, fit

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["draft_of", "fit_record", "record_from", "record_lists"]

_CONTENT = frozenset({"narrative", "key_points", "facets", "sections", "truncated"})


def record_lists(record: SummaryRecord) -> dict[str, list[Any]]:
    """Every list of ``record`` by its draft name (the narrative excepted)."""
    s, f = record.sections, record.facets
    out: dict[str, list[Any]] = {
        "key_points": list(record.key_points),
        "next_step": [s.next_step] if s.next_step else [],
        "participants": list(f.participants),
        "decisions": list(f.decisions),
        "action_items": list(f.action_items),
        "unresolved": list(f.unresolved),
    }
    for name in Sections.model_fields:
        if name != "next_step":
            out[name] = list(getattr(s, name))
    for kind in ENTITY_KEYS:
        out[f"entities.{kind}"] = list(getattr(f.entities, kind))
    return out


def draft_of(record: SummaryRecord) -> Draft:
    """``record``'s content, its narrative split into paragraphs."""
    lists: dict[str, tuple[Any, ...]] = {k: tuple(v) for k, v in record_lists(record).items()}
    lists["narrative"] = tuple(p for p in record.narrative.split("\n") if p.strip())
    return Draft(lists)


def record_from(draft: Draft, base: Mapping[str, Any], truncated: bool) -> SummaryRecord:
    """The record with ``base``'s fields (id, time, chain, coverage…) and ``draft``'s content."""
    lists = draft.lists
    steps = lists["next_step"]
    sections = Sections(
        primary_request=lists["primary_request"],
        constraints=lists.get("constraints", ()),
        key_concepts=lists["key_concepts"],
        files_and_code=lists["files_and_code"],
        errors_and_fixes=lists["errors_and_fixes"],
        problem_solving=lists["problem_solving"],
        user_messages=lists["user_messages"],
        pending_tasks=lists["pending_tasks"],
        current_work=lists["current_work"],
        next_step=steps[0] if steps else None,
    )
    facets = Facets(
        participants=lists["participants"],
        decisions=lists["decisions"],
        action_items=lists["action_items"],
        unresolved=lists["unresolved"],
        entities=Entities(**{k: lists[f"entities.{k}"] for k in ENTITY_KEYS}),
    )
    return SummaryRecord(
        **base,
        narrative="\n".join(lists["narrative"]),
        key_points=lists["key_points"],
        facets=facets,
        sections=sections,
        truncated=truncated,
    )


def fit_record(
    record: SummaryRecord, measure: Callable[[SummaryRecord], int], budget: int
) -> SummaryRecord:
    """``record`` itself when it measures within ``budget``, else the record after the fewest
    of :func:`~.budget.plan_cuts`' cuts that make it fit (``truncated``)."""
    if measure(record) <= budget:
        return record
    base = record.model_dump(exclude=set(_CONTENT))
    return fit(
        draft_of(record),
        lambda draft, cut: record_from(draft, base, cut or record.truncated),
        measure,
        budget,
    )
