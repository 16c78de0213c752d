"""A summary record as the text the model reads.

The text opens with :data:`~synopsis.messages.SUMMARY_TAG` so the governor recognises
synopsis's own summary in a later history (and summarizes it into the next record rather than
quoting it as a user turn). Two bodies hold the same content: the nine numbered sections of a
continuation summary or one ``<state_snapshot>`` block.

What synopsis added to a model's summary (``SummaryRecord.added``: facts the model left out)
is shown in a section of its own, not in the sections it is kept in: the reader can tell the
model's words from the conversation's.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Literal

from synopsis.messages import SUMMARY_TAG, Message, Role, TextPart
from synopsis.summarizers.requests import label_of
from synopsis.summarizers.scanning import same_head

if TYPE_CHECKING:
    from synopsis.summarizers.records import SummaryRecord

__all__ = ["SECTION_TITLES", "Style", "render", "render_compact", "summary_message"]

Style = Literal["sections", "snapshot"]

SECTION_TITLES: tuple[tuple[str, str], ...] = (
    ("primary_request", "Primary Request and Intent"),
    ("constraints", "Constraints and Corrections"),
    ("key_concepts", "Key Technical Concepts"),
    ("files_and_code", "Files and Code Sections"),
    ("errors_and_fixes", "Errors and Fixes"),
    ("problem_solving", "Problem Solving"),
    ("user_messages", "All User Messages"),
    ("pending_tasks", "Pending Tasks"),
    ("current_work", "Current Work"),
    ("next_step", "Optional Next Step"),
)
"""The nine sections of a continuation summary in their usual order, with the person's
constraints second: a section keeps its number even when an earlier one is empty, so
"section 7" means the same thing in every summary."""

_CLOSE = "</synopsis-summary>"
_CUT_NOTE = "cut to fit its budget."
_ADDED_TITLE = "Kept verbatim from the conversation (the summary above left these out)"
_ADDED_ITEMS = (
    ("primary_request", "First request"),
    ("constraints", "Constraint"),
    ("user_messages", "Request"),
)
_ADDED_ENTITIES = (("files", "Files"), ("symbols", "Identifiers"))
_ENTITY_LABELS = (
    ("files", "Files"),
    ("symbols", "Symbols"),
    ("commands", "Commands"),
    ("urls", "URLs"),
    ("errors", "Errors"),
    ("versions", "Versions"),
    ("numbers", "Figures"),
)


def _defuse(text: str) -> str:
    """Quoted history may itself hold a summary: its closing tags must not end this one."""
    return text.replace("</synopsis-summary", "<\\/synopsis-summary").replace(
        "</state_snapshot", "<\\/state_snapshot"
    )


def _items(record: SummaryRecord, name: str, *, apart: bool = True) -> tuple[str, ...]:
    """The items of section ``name``; with ``apart``, not those synopsis added to a model's
    summary (they are shown in a section of their own)."""
    value = getattr(record.sections, name)
    if name == "next_step":
        return (value,) if value else ()
    items: tuple[str, ...] = value
    if name == "user_messages":
        # A request quoted in full as the primary request, or that was nothing but a
        # constraint, is already in its own section.
        said = {*record.sections.constraints, *record.sections.primary_request}
        items = tuple(i for i in items if i not in said)
    if apart and record.added:
        added = set(record.added)
        items = tuple(i for i in items if i not in added)
    return items


def _added(record: SummaryRecord) -> list[str]:
    """The items synopsis added, each once, labelled by what it is."""
    added = set(record.added)
    lines: list[str] = []
    for name, label in _ADDED_ITEMS:
        for item in getattr(record.sections, name):
            if item in added:
                added.discard(item)
                lines += _bullets((f"{label}: {item}",), "")
    entities = record.facets.entities
    for field, label in _ADDED_ENTITIES:
        values = [v for v in getattr(entities, field) if v in added]
        added.difference_update(values)
        if values:
            lines.append(f"- {label}: {_defuse(', '.join(values))}")
    return lines


def _bullets(items: tuple[str, ...], indent: str) -> list[str]:
    nested = "\n" + indent + "  "
    return [f"{indent}- {_defuse(item).replace(chr(10), nested)}" for item in items]


def _grouped(items: tuple[str, ...], indent: str) -> list[str]:
    """Bullets, with statements a person flagged with the same label (``SAFETY RULE: …``)
    listed under it once, where it first appears: a label said again for every rule costs a
    summary under a tight budget one rule in four."""
    labels = [label_of(item) for item in items]
    counts = Counter(found[0] for found in labels if found)
    lines: list[str] = []
    done: set[str] = set()
    for item, found in zip(items, labels, strict=True):
        if found is None or counts[found[0]] < 2:
            lines += _bullets((item,), indent)
        elif found[0] not in done:
            done.add(found[0])
            group = tuple(f[1] for f in labels if f and f[0] == found[0])
            lines += [f"{indent}{found[0]}:", *_bullets(group, indent + "  ")]
    return lines


def _other_facts(record: SummaryRecord, shown: str) -> list[str]:
    """Facets the body has not already said: an item whose exact text appears above (a path
    quoted in a section, a decision that is also a reasoning step) costs nothing twice."""
    facets = record.facets
    out: list[str] = []
    if facets.participants:
        out.append(f"- Participants: {', '.join(facets.participants)}")
    out += [f"- Decision: {_defuse(d)}" for d in facets.decisions if d not in shown]
    for item in facets.action_items:
        if item.task in shown and not item.due:
            continue
        owner = f"{item.owner}: " if item.owner else ""
        due = f" (due {item.due})" if item.due else ""
        out.append(f"- Action item: {owner}{_defuse(item.task)}{due}")
    out += [f"- Unresolved: {_defuse(u)}" for u in facets.unresolved if u not in shown]
    for field, label in _ENTITY_LABELS:
        values = [v for v in getattr(facets.entities, field) if v not in shown]
        if values:
            out.append(f"- {label}: {_defuse(', '.join(values))}")
    return out


def _sections_body(record: SummaryRecord) -> list[str]:
    lines: list[str] = []
    if record.narrative:
        lines += ["", "Analysis:", _defuse(record.narrative)]
    if record.key_points:
        lines += ["", "Key points:", *_bullets(record.key_points, "")]
    numbered: list[str] = []
    for number, (name, title) in enumerate(SECTION_TITLES, start=1):
        items = _items(record, name)
        if items:
            numbered += [f"{number}. {title}:", *_grouped(items, "   ")]
    if numbered:
        lines += ["", "Summary:", *numbered]
    added = _added(record)
    if added:
        lines += ["", f"{_ADDED_TITLE}:", *added]
    facts = _other_facts(record, "\n".join(lines))
    if facts:
        lines += ["", "Other facts:", *facts]
    return lines


def _snapshot_body(record: SummaryRecord) -> list[str]:
    lines = ["<state_snapshot>"]
    if record.narrative:
        lines.append(f"<overview>{_defuse(record.narrative)}</overview>")
    blocks = [("key_points", record.key_points)]
    blocks += [(name, _items(record, name)) for name, _ in SECTION_TITLES]
    for tag, items in blocks:
        if items:
            lines += [f"<{tag}>", *_grouped(items, ""), f"</{tag}>"]
    added = _added(record)
    if added:
        lines += [f'<kept_verbatim note="{_ADDED_TITLE}">', *added, "</kept_verbatim>"]
    facts = _other_facts(record, "\n".join(lines))
    if facts:
        lines += ["<other_facts>", *facts, "</other_facts>"]
    lines.append("</state_snapshot>")
    return lines


def render(
    record: SummaryRecord, *, style: Style = "sections", offload_ref: str | None = None
) -> str:
    """The summary text; ``offload_ref`` names where the replaced messages can be fetched.

    A record cut to fit its budget spends nothing on ceremony (no blank lines, no closing
    advice): under a tight budget those lines would cost one of the person's rules."""
    count = record.messages_covered
    opening = f"Summary of the earlier conversation ({count} messages), "
    lines = [
        f'{SUMMARY_TAG} depth="{record.depth}" messages="{count}">',
        opening + (_CUT_NOTE if record.truncated else "replaced to save context."),
    ]
    if offload_ref:
        lines.append(f"The replaced messages are stored under reference {_defuse(offload_ref)}.")
    body = _snapshot_body(record) if style == "snapshot" else _sections_body(record)
    if record.truncated:
        lines += [line for line in body if line and line != "Summary:"]
    else:
        lines += body
        lines += [
            "",
            "Continue from where it left off; do not ask the user to repeat what is summarized.",
        ]
    lines.append(_CLOSE)
    return "\n".join(lines)


def render_compact(record: SummaryRecord) -> str:
    """The content without the frame, one line per part: for a single summarized message,
    which stays inside its turn rather than standing as a summary of its own."""
    lines = [record.narrative] if record.narrative else []
    lines += record.key_points
    users = record.sections.user_messages
    for name, title in SECTION_TITLES:
        items = _items(record, name, apart=False)
        if name == "primary_request" and users:
            # A rule-based request is the head of the first user message: say it once.
            # (The first user message itself is left out below when it is the request word
            # for word.)
            items = tuple(i for i in items if i == users[0] or not same_head(i, users[0]))
        if items:
            lines.append(f"{title}: {' | '.join(items)}")
    if record.truncated:
        lines.append(f"[{_CUT_NOTE.capitalize()}]")
    return "\n".join(lines)


def summary_message(
    record: SummaryRecord, *, style: Style = "sections", offload_ref: str | None = None
) -> Message:
    """The summary as its own user turn (the default voice: every provider accepts a user turn,
    where a mid-history system message is refused by strict servers)."""
    return Message(Role.USER, (TextPart(render(record, style=style, offload_ref=offload_ref)),))
