"""A session's offloaded history as Markdown: a running log, one section per compaction,
with the messages it replaced."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from synopsis.stores.protocols import Store
    from synopsis.stores.records import StoredMessage

__all__ = ["export_markdown"]


def export_markdown(store: Store, session_id: str) -> str:
    """``# Session <id>``, then per compaction, oldest first, ``## Summarized at <ISO time>``
    (``## Reduced at`` for one that only made parts small) and a ``[role]: text`` paragraph
    per message it replaced, in timeline order. A session the
    store does not know gives the heading alone."""
    replaced: dict[str, list[StoredMessage]] = {}
    for message in store.recall(session_id):
        replaced.setdefault(message.compaction_id, []).append(message)
    sections: list[tuple[str, str, list[StoredMessage]]] = []
    for record in store.summaries(session_id):
        when = record.created_at.isoformat(timespec="seconds")
        sections.append((when, "Summarized", replaced.pop(record.id, [])))
    # What a compaction only reduced (no summary record): its section is dated by its messages.
    for messages in replaced.values():
        when = messages[0].created_at.isoformat(timespec="seconds")
        sections.append((when, "Reduced", messages))
    sections.sort(key=lambda s: s[0])
    out = [f"# Session {session_id}"]
    for when, verb, messages in sections:
        out.append(f"## {verb} at {when}")
        out.extend(f"[{m.role}]: {m.text}" for m in messages)
    return "\n\n".join(out) + "\n"
