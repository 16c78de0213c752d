"""A model's summary held to what the rule summary keeps: checked, and what it left out added.

The check (:func:`wanted`) reads the rule summary of the same messages at the same budget for
what the retention measures count: its first request, the constraints people stated, the
opening of each request a person wrote, and every file path and identifier anywhere in it.
A model's summary that leaves some of them out is not thrown away: :func:`fill_in` adds them,
verbatim, each where the rule summary keeps it (the first request first among the primary
requests, constraints and requests in their sections, paths and identifiers among the
entities), and lists them in ``SummaryRecord.added``, which the rendering shows as a section of
its own. So an LLM summary never keeps less of these than the rule summary would.

The summary budget holds both: the model's own content is cut to make room (least important
first, as for any record), and when the facts alone are over the budget the least important
of them go (identifiers, then paths, the oldest requests, constraints, the first request
last), as the rules would cut them; those are reported as left out.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from synopsis.summarizers.records import Entities, Sections
from synopsis.summarizers.rules.drafts import fit_record
from synopsis.summarizers.scanning import dedupe, scan_text

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pydantic import BaseModel

    from synopsis.summarizers.records import SummaryRecord

__all__ = ["Fact", "Filled", "fill_in", "kept", "wanted"]

Kind = Literal["first request", "constraint", "request", "path", "identifier"]

PROBE_CHARS: Final = 60
"""How much of a request or a constraint must be there, word for word up to whitespace, for it
to count as kept: the opening the retention measures look for."""
_TEXT_CHARS: Final = 300
"""The most of a first request or a constraint added (the rules cut one to this too)."""
_OPENING_CHARS: Final = 160
"""The most of another request added: its opening, which is what the measures count."""


def squash(text: str) -> str:
    return " ".join(text.split())


def _opening(text: str, chars: int) -> str:
    """``text`` with its whitespace squashed, cut at a word past the probe when longer than
    ``chars``."""
    text = squash(text)
    if len(text) <= chars:
        return text
    cut = text.rfind(" ", PROBE_CHARS, chars)
    return text[: cut if cut > 0 else chars] + "…"


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing the summary must keep: ``text`` is what is added when it does not."""

    kind: Kind
    text: str

    @property
    def probe(self) -> str:
        """What must occur in the summary for the fact to be kept."""
        if self.kind in ("path", "identifier"):
            return self.text
        return squash(self.text)[:PROBE_CHARS].removesuffix("…")

    def __str__(self) -> str:
        return f"{self.kind}: {self.text}"


def _strings(record: SummaryRecord) -> list[str]:
    """Every text of the record's content, in no particular order."""
    out: list[str] = [record.narrative, *record.key_points]
    for name in Sections.model_fields:
        value = getattr(record.sections, name)
        out += [value] if isinstance(value, str) else list(value or ())
    facets = record.facets
    out += [*facets.participants, *facets.decisions, *facets.unresolved]
    for item in facets.action_items:
        out += [item.task, item.owner or "", item.due or ""]
    for name in type(facets.entities).model_fields:
        out += getattr(facets.entities, name)
    return out


def wanted(reference: SummaryRecord) -> tuple[Fact, ...]:
    """The facts of the rule summary ``reference``, most important first: the first request,
    the constraints, the requests (newest first), the paths, the identifiers."""
    sections = reference.sections
    facts: list[Fact] = []
    first = sections.primary_request[0] if sections.primary_request else ""
    facts.append(Fact("first request", _opening(first, _TEXT_CHARS)))
    facts += [Fact("constraint", _opening(c, _TEXT_CHARS)) for c in sections.constraints]
    head = squash(first)[:PROBE_CHARS]
    for request in reversed(sections.user_messages):
        fact = Fact("request", _opening(request, _OPENING_CHARS))
        if fact.probe != head:  # the first message, already the first request
            facts.append(fact)
    found = scan_text("\n".join(_strings(reference)))
    facts += [Fact("path", p) for p in found.files]
    facts += [Fact("identifier", s) for s in found.symbols if s not in found.files]
    return tuple(dedupe_facts(facts))


def dedupe_facts(facts: Sequence[Fact]) -> list[Fact]:
    """Each fact once, by what would show it kept, the first (most important) kept."""
    seen: set[str] = set()
    out: list[Fact] = []
    for fact in facts:
        if fact.probe and fact.probe not in seen:
            seen.add(fact.probe)
            out.append(fact)
    return out


class _Text:
    """A record's content as text, to look facts up in."""

    def __init__(self, record: SummaryRecord) -> None:
        strings = _strings(record)
        self.exact = "\n".join(strings)
        self.squashed = squash(self.exact)

    def has(self, fact: Fact) -> bool:
        if fact.kind in ("path", "identifier"):
            return fact.probe in self.exact
        return fact.probe in self.squashed


def kept(facts: Sequence[Fact], record: SummaryRecord) -> list[Fact]:
    """The ``facts`` that ``record`` keeps."""
    text = _Text(record)
    return [fact for fact in facts if text.has(fact)]


def _cap(model: type[BaseModel], name: str) -> int:
    """The most items the record's field ``name`` may hold."""
    metadata = model.model_fields[name].metadata
    lengths = [m.max_length for m in metadata if isinstance(getattr(m, "max_length", None), int)]
    return min(lengths, default=sys.maxsize)


def _with(
    items: Sequence[str],
    more: Sequence[str],
    cap: int,
    *,
    first: bool = False,
    newest: bool = False,
) -> tuple[str, ...]:
    """``items`` with ``more`` (the most important first) added, after them (before them when
    ``first``; the other way round when ``newest``: oldest first), within ``cap``: what does
    not fit is the model's items (its oldest when ``newest``) before an added one."""
    more = dedupe(more)[:cap]
    own = [i for i in items if i not in more]
    room = cap - len(more)
    own = own[len(own) - room :] if newest else own[:room]
    if newest:
        more = more[::-1]
    return tuple([*more, *own] if first else [*own, *more])


def with_facts(record: SummaryRecord, facts: Sequence[Fact]) -> SummaryRecord:
    """``record`` with ``facts`` in the sections the rule summary keeps them in, and those
    that found room named in ``added``."""
    if not facts:
        return record

    def of(kind: Kind) -> list[str]:
        return [f.text for f in facts if f.kind == kind]

    s, entities = record.sections, record.facets.entities
    # The requests come newest first, in order of importance; they are listed oldest first.
    requests = _with(s.user_messages, of("request"), _cap(Sections, "user_messages"), newest=True)
    sections = s.model_copy(
        update={
            "primary_request": _with(
                s.primary_request,
                of("first request"),
                _cap(Sections, "primary_request"),
                first=True,
            ),
            "constraints": _with(s.constraints, of("constraint"), _cap(Sections, "constraints")),
            "user_messages": requests,
        }
    )
    entities = entities.model_copy(
        update={
            "files": _with(entities.files, of("path"), _cap(Entities, "files")),
            "symbols": _with(entities.symbols, of("identifier"), _cap(Entities, "symbols")),
        }
    )
    placed = {
        *sections.primary_request,
        *sections.constraints,
        *sections.user_messages,
        *entities.files,
        *entities.symbols,
    }
    return record.model_copy(
        update={
            "sections": sections,
            "facets": record.facets.model_copy(update={"entities": entities}),
            "added": tuple(dedupe([*record.added, *(f.text for f in facts if f.text in placed)])),
        }
    )


def _fitting(
    record: SummaryRecord,
    facts: Sequence[Fact],
    measure: Callable[[SummaryRecord], int],
    budget: int,
) -> int:
    """How many of ``facts`` (the most important first) fit ``budget`` in a record with
    nothing else: found by bisection over real renderings."""
    empty = record.model_copy(
        update={
            "narrative": "",
            "key_points": (),
            "sections": Sections(),
            "facets": type(record.facets)(),
            "truncated": True,
        }
    )
    low, high = 0, len(facts)
    while low < high:
        middle = (low + high + 1) // 2
        if measure(with_facts(empty, facts[:middle])) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def _unsaid(facts: Sequence[Fact]) -> list[Fact]:
    """``facts`` but the paths and identifiers a request or constraint before them quotes."""
    out: list[Fact] = []
    said: list[str] = []
    for fact in facts:
        if fact.kind in ("path", "identifier"):
            if any(fact.probe in text for text in said):
                continue
        else:
            said.append(fact.text)
        out.append(fact)
    return out


@dataclass(frozen=True, slots=True)
class Filled:
    """A model's record within its budget, with what was added to it and what even so did
    not fit."""

    record: SummaryRecord
    added: tuple[Fact, ...] = ()
    left_out: tuple[Fact, ...] = ()


def fill_in(
    record: SummaryRecord,
    facts: Sequence[Fact],
    measure: Callable[[SummaryRecord], int],
    budget: int,
) -> Filled:
    """``record`` cut to ``budget``, with what it does not keep of ``facts`` added."""
    fitted = fit_record(record, measure, budget)
    added: list[Fact] = []
    tried: set[Fact] = set()
    # Adding facts may cut the model's content more, and with it a fact only it kept: that
    # one is added in the next round. Each round adds one at least, or ends.
    for _ in range(len(facts)):
        have = _Text(with_facts(fitted, added))
        missing = [f for f in facts if f not in tried and not have.has(f)]
        if not missing:
            break
        tried.update(missing)
        chosen = set(added) | set(missing)
        ordered = _unsaid([f for f in facts if f in chosen])
        added = ordered[: _fitting(record, ordered, measure, budget)]

        def measured(draft: SummaryRecord, facts: Sequence[Fact] = tuple(added)) -> int:
            return measure(with_facts(draft, facts))

        fitted = fit_record(record, measured, budget)
    final = with_facts(fitted, added)
    left_out = [f for f in facts if f not in kept(facts, final)]
    if left_out and not final.truncated:
        final = final.model_copy(update={"truncated": True})
    return Filled(final, tuple(added), tuple(left_out))
