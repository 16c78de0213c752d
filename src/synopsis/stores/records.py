"""The values a store keeps: offloaded messages, a session's state, search hits, and the
compaction that saves them together.

Plain frozen dataclasses: a store hands back equal values to what it was given, so the
constructors normalise what would otherwise not survive a round trip (a timestamp in another
zone, a governor state holding tuples, a lone surrogate in the search text).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from synopsis.errors import ConfigurationError
from synopsis.formats import FORMATS
from synopsis.messages import Role, content_hash, message_id, message_text, thaw
from synopsis.summarizers.records import SummaryRecord

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from synopsis.messages import Message

__all__ = [
    "LAST_SUMMARY_CHARS",
    "Compaction",
    "SearchHit",
    "SessionState",
    "SessionStats",
    "StoredMessage",
]

LAST_SUMMARY_CHARS = 500
"""How much of the last summary text a session state keeps (enough for a listing)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_EMPTY: Mapping[str, object] = MappingProxyType({})


def _empty() -> Mapping[str, object]:
    return _EMPTY


def _now() -> datetime:
    return datetime.now(UTC)


def _utc(value: datetime, what: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ConfigurationError(f"{what} must be a timezone-aware datetime, got {value!r}")
    return value.astimezone(UTC)


def _count(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{what} must be a whole number of at least 0, got {value!r}")


def _name(value: str, what: str, *, empty: bool = False) -> None:
    if not isinstance(value, str) or not (value or empty):
        raise ConfigurationError(f"{what} must be a non-empty string, got {value!r}")


def wire_json(item: object) -> str:
    """A wire item as compact JSON text that keeps non-ASCII as it is (what ``data`` holds)."""
    return json.dumps(thaw(item), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One offloaded message. ``data`` is the original wire item as JSON text and comes back
    from a store unchanged; ``text`` is what search and export read (lone surrogates, which no
    database can hold as text, become U+FFFD)."""

    session_id: str
    id: str
    position: int
    role: str
    text: str
    sha256: str
    format: str
    data: str
    compaction_id: str
    created_at: datetime = field(default_factory=_now)

    def __post_init__(self) -> None:
        _name(self.session_id, "session_id")
        _name(self.id, "a stored message's id")
        _count(self.position, "position")
        try:
            role = Role(self.role).value
        except ValueError:
            known = ", ".join(r.value for r in Role)
            raise ConfigurationError(
                f"unknown role {self.role!r}; expected one of {known}"
            ) from None
        if self.format not in FORMATS:
            known = ", ".join(FORMATS)
            raise ConfigurationError(f"unknown format {self.format!r}; expected one of {known}")
        if not isinstance(self.data, str):
            raise ConfigurationError("data must be the wire item as JSON text (use wire_json)")
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "text", _SURROGATE.sub("\ufffd", self.text))
        object.__setattr__(self, "created_at", _utc(self.created_at, "created_at"))

    @classmethod
    def of(
        cls,
        session_id: str,
        message: Message,
        *,
        position: int,
        format: str,
        data: str | Mapping[str, Any],
        compaction_id: str,
        created_at: datetime | None = None,
    ) -> StoredMessage:
        """The stored form of ``message``: id, role, text and hash derived as the rest of
        synopsis derives them. ``data`` is the wire item, as JSON text or as a mapping."""
        return cls(
            session_id=session_id,
            id=message_id(message, position),
            position=position,
            role=message.role.value,
            text=message_text(message),
            sha256=content_hash(message),
            format=format,
            data=data if isinstance(data, str) else wire_json(data),
            compaction_id=compaction_id,
            created_at=created_at or _now(),
        )


@dataclass(frozen=True, slots=True)
class SessionState:
    """What the pipeline remembers about a session between calls. ``governor`` is
    ``GovernorState.to_json()``; it is copied through JSON so that it compares equal to what
    a store reads back. ``last_summary`` is cut to :data:`LAST_SUMMARY_CHARS`.
    ``projection`` says which part of the caller's own history the newest summary stands
    for, so that a client sending that history again gets the same summary in its place
    (see :mod:`synopsis.compaction.projection`); empty when there is none."""

    session_id: str
    governor: Mapping[str, object] = field(default_factory=_empty)
    summary_id: str | None = None
    compactions: int = 0
    tokens_summarized: int = 0
    last_summary: str = ""
    offset: int = 0
    updated_at: datetime | None = None
    projection: Mapping[str, object] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        # "" is allowed: the state of a call that names no session, which no store keeps.
        _name(self.session_id, "session_id", empty=True)
        for name in ("compactions", "tokens_summarized", "offset"):
            _count(getattr(self, name), name)
        for name in ("governor", "projection"):
            try:
                value = json.loads(json.dumps(dict(getattr(self, name))))
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(f"the {name} state must be plain JSON: {exc}") from None
            object.__setattr__(self, name, MappingProxyType(value))
        object.__setattr__(self, "last_summary", self.last_summary[:LAST_SUMMARY_CHARS])
        if self.updated_at is not None:
            object.__setattr__(self, "updated_at", _utc(self.updated_at, "updated_at"))

    def to_json(self) -> dict[str, object]:
        """Everything but the session id, as plain JSON (how the SQLite store keeps it)."""
        return {
            "governor": dict(self.governor),
            "summary_id": self.summary_id,
            "compactions": self.compactions,
            "tokens_summarized": self.tokens_summarized,
            "last_summary": self.last_summary,
            "offset": self.offset,
            "updated_at": None if self.updated_at is None else self.updated_at.isoformat(),
            "projection": dict(self.projection),
        }

    @classmethod
    def from_json(cls, session_id: str, data: Mapping[str, Any]) -> SessionState:
        """The inverse of :meth:`to_json`."""
        updated = data.get("updated_at")
        return cls(
            session_id=session_id,
            governor=data.get("governor") or {},
            summary_id=data.get("summary_id"),
            compactions=data.get("compactions", 0),
            tokens_summarized=data.get("tokens_summarized", 0),
            last_summary=data.get("last_summary", ""),
            offset=data.get("offset", 0),
            updated_at=None if updated is None else datetime.fromisoformat(updated),
            projection=data.get("projection") or {},
        )

    @classmethod
    def from_text(cls, session_id: str, text: str) -> SessionState:
        """A state as a store keeps it: :meth:`to_json` as JSON text. What ``json.loads``
        gives is plain JSON that nothing else holds, so its governor and projection are kept
        as they are, not copied through JSON again as the constructor copies what a caller
        gives (a third of the time of the thousand states the operator's page reads)."""
        data = json.loads(text)
        state = cls.from_json(session_id, {**data, "governor": None, "projection": None})
        for name in ("governor", "projection"):
            object.__setattr__(state, name, MappingProxyType(data.get(name) or {}))
        return state


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: the message, its score (higher is better) and an extract around the
    match, with the matching words between ``**``."""

    message: StoredMessage
    score: float
    snippet: str


@dataclass(frozen=True, slots=True)
class SessionStats:
    """What a store keeps for one session, as ``synopsis store stats`` lists it. ``bytes`` is
    the size of the stored messages' wire items and text plus the summary records' JSON, as
    UTF-8: what the session costs the store before its indexes."""

    session_id: str
    messages: int
    summaries: int
    bytes: int
    updated_at: datetime | None


@dataclass(frozen=True, slots=True, init=False)
class Compaction:
    """What one compaction saves, in one transaction: all of it or nothing.

    ``records`` are the summary records it made, oldest first: one per summarizing pass, none
    when only reductions ran. A single record may be passed in their place. Every message
    names one of them as its ``compaction_id`` (with no record, an id of its own).
    """

    session_id: str
    records: tuple[SummaryRecord, ...]
    messages: tuple[StoredMessage, ...]
    state: SessionState

    def __init__(
        self,
        session_id: str,
        records: SummaryRecord | Iterable[SummaryRecord],
        messages: Iterable[StoredMessage],
        state: SessionState,
    ) -> None:
        records = (records,) if isinstance(records, SummaryRecord) else tuple(records)
        messages = tuple(messages)
        if state.session_id != session_id:
            raise ConfigurationError(
                f"the state is for session {state.session_id!r}, not {session_id!r}"
            )
        ids = {r.id for r in records}
        for message in messages:
            if message.session_id != session_id:
                raise ConfigurationError(
                    f"message {message.id!r} is for session {message.session_id!r}, "
                    f"not {session_id!r}"
                )
            if ids and message.compaction_id not in ids:
                raise ConfigurationError(
                    f"message {message.id!r} names compaction {message.compaction_id!r}, "
                    "which is none of this compaction's records"
                )
        for name, value in (
            ("session_id", session_id),
            ("records", records),
            ("messages", messages),
            ("state", state),
        ):
            object.__setattr__(self, name, value)

    @property
    def record(self) -> SummaryRecord | None:
        """The newest record (the head of the summary chain), if any."""
        return self.records[-1] if self.records else None
