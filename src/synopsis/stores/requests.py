"""What one proxied request did, as a store keeps it (:class:`RequestRecord`), and the checks
that every store's ``save_requests``, ``requests`` and ``prune_requests`` share.

A store keeps these records apart from its sessions: forgetting a session leaves them (they
hold figures, never a message), and only :meth:`~synopsis.stores._base.StoreBase.prune_requests`
removes them. Only the proxy writes them; a library's compactions write none.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from synopsis.errors import ConfigurationError
from synopsis.stores._base import cutoff

__all__ = [
    "RECORDS_MAX",
    "RECORDS_RETENTION_DAYS",
    "RequestRecord",
    "check_read",
    "check_retention",
    "stamp",
]

RECORDS_RETENTION_DAYS = 30.0
"""How long request records are kept by default, in days (``--records-retention`` of
``synopsis serve`` and ``synopsis store prune``)."""
RECORDS_MAX = 100_000
"""The most request records kept by default, the newest (``--records-max``)."""


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request on a compacting route: when (UTC), its session, model and route, the
    tokens of its history before and after synopsis, whether it was compacted (and the
    compaction's code), how many leading messages it shared with the session's previous
    request when the proxy knew (else ``None``), the summarizer's calls and seconds for it,
    the status the client got, and the request's whole time in milliseconds."""

    at: datetime
    session_id: str
    model: str
    route: str
    format: str
    status: int
    messages_in: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    compacted: bool = False
    code: str | None = None
    shared_messages: int | None = None
    summarizer_calls: int = 0
    summarizer_seconds: float = 0.0
    ms_total: float = 0.0

    def __post_init__(self) -> None:
        if self.at.tzinfo is None or self.at.utcoffset() is None:
            raise ConfigurationError(f"at must be a timezone-aware datetime, got {self.at!r}")
        object.__setattr__(self, "at", self.at.astimezone(UTC))

    def to_json(self) -> str:
        """The record as a store writes it (its time kept in a column of its own too)."""
        fields = asdict(self)
        fields["at"] = self.at.isoformat()
        return json.dumps(fields)

    @classmethod
    def from_json(cls, text: str) -> RequestRecord:
        fields: dict[str, Any] = json.loads(text)
        fields["at"] = datetime.fromisoformat(fields["at"])
        return cls(**fields)


def stamp(moment: datetime) -> str:
    """A UTC time as fixed-width text, which sorts as the times do (``isoformat`` drops the
    microseconds when they are zero, and then it does not)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


def check_read(since: datetime | None, until: datetime | None, limit: int) -> None:
    """The arguments of ``requests``: aware times, and a limit of at least 0."""
    for name, value in (("since", since), ("until", until)):
        if value is not None and (not isinstance(value, datetime) or value.utcoffset() is None):
            raise ConfigurationError(f"{name} must be a timezone-aware datetime, got {value!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ConfigurationError(f"limit must be a whole number of at least 0, got {limit!r}")


def check_retention(older_than: datetime | timedelta | None, keep: int | None) -> datetime | None:
    """The moment before which ``prune_requests`` removes records (None: none by age), once
    ``keep`` is checked (None, or the newest records to keep at most, at least 0)."""
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
        raise ConfigurationError(f"keep must be a whole number of at least 0, got {keep!r}")
    return None if older_than is None else cutoff(older_than)
