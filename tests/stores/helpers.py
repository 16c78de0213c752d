"""Builders for store tests: stored messages made the way the pipeline makes them, summary
records chained as a summarizer chains them, and a few messages of a real transcript."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synopsis.formats import decode
from synopsis.messages import Message, Role, TextPart
from synopsis.stores import Compaction, MemoryStore, SessionState, StoredMessage
from synopsis.summarizers import SummaryRecord

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.stores import SearchHit

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "examples" / "transcripts"
T0 = datetime(2025, 6, 15, 10, 30, tzinfo=UTC)


def record(
    parent: SummaryRecord | None = None, *, minutes: int = 0, **fields: Any
) -> SummaryRecord:
    """A summary record, chained after ``parent`` when given."""
    chain: dict[str, Any] = {"depth": 0, "parent_id": None}
    if parent is not None:
        chain = {"depth": parent.depth + 1, "parent_id": parent.id}
    return SummaryRecord(created_at=T0 + timedelta(minutes=minutes), **chain, **fields)


def stored(
    position: int,
    text: str,
    *,
    compaction: str,
    session: str = "s1",
    role: Role = Role.USER,
    item: dict[str, Any] | None = None,
) -> StoredMessage:
    """The stored form of a one-text message; its wire item is an OpenAI chat message."""
    message = Message(role, (TextPart(text),))
    wire = item if item is not None else {"role": role.value, "content": text}
    return StoredMessage.of(
        session,
        message,
        position=position,
        format="openai",
        data=wire,
        compaction_id=compaction,
        created_at=T0,
    )


def compaction(
    summary: SummaryRecord,
    messages: list[StoredMessage],
    *,
    session: str = "s1",
    **state: Any,
) -> Compaction:
    fields: dict[str, Any] = {"compactions": 1, "summary_id": summary.id, "updated_at": T0}
    fields.update(state)
    return Compaction(session, summary, tuple(messages), SessionState(session, **fields))


def transcript(name: str, count: int) -> tuple[list[dict[str, Any]], tuple[Message, ...]]:
    """The first ``count`` wire items of a bundled transcript and their decoded messages."""
    lines = (TRANSCRIPTS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines[:count]]
    return items, decode(items, "openai").messages


def offload(
    name: str, count: int, *, session: str = "s1"
) -> tuple[Compaction, list[dict[str, Any]]]:
    """A compaction of the first ``count`` messages of a transcript, as the pipeline saves it."""
    items, messages = transcript(name, count)
    summary = record()
    rows = [
        StoredMessage.of(
            session,
            message,
            position=i,
            format="openai",
            data=item,
            compaction_id=summary.id,
            created_at=T0,
        )
        for i, (item, message) in enumerate(zip(items, messages, strict=True))
    ]
    return compaction(summary, rows, session=session, offset=count), items


def three(session: str = "s1", first: int = 0) -> tuple[SummaryRecord, list[StoredMessage]]:
    """A record and the three messages it replaced: a request, a reply, a result."""
    summary = record()
    rows = [
        stored(first, "please fix the parser in app.py", compaction=summary.id, session=session),
        stored(
            first + 1,
            "reading app.py now",
            compaction=summary.id,
            session=session,
            role=Role.ASSISTANT,
        ),
        stored(first + 2, "the tests pass", compaction=summary.id, session=session),
    ]
    return summary, rows


class BlockingOnly:
    """A store of the blocking protocol alone, kept in a MemoryStore: not an AsyncStore, and
    no ``summary`` lookup (a store need not offer one)."""

    def __init__(self) -> None:
        self.inner = MemoryStore()

    def save(self, compaction: Compaction) -> None:
        self.inner.save(compaction)

    def session(self, session_id: str) -> SessionState | None:
        return self.inner.session(session_id)

    def save_session(self, state: SessionState) -> None:
        self.inner.save_session(state)

    def summaries(self, session_id: str) -> list[SummaryRecord]:
        return self.inner.summaries(session_id)

    def recall(
        self,
        session_id: str,
        *,
        ids: Sequence[str] | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> list[StoredMessage]:
        return self.inner.recall(session_id, ids=ids, start=start, stop=stop)

    def search(self, session_id: str, query: str, *, limit: int = 10) -> list[SearchHit]:
        return self.inner.search(session_id, query, limit=limit)

    def sessions(self) -> list[str]:
        return self.inner.sessions()

    def close(self) -> None:
        self.inner.close()
