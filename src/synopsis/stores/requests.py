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
from typing import Any, Literal, TypeAlias, get_args

from synopsis.errors import ConfigurationError
from synopsis.stores._cutoff import cutoff

__all__ = [
    "EVENTS_MAX",
    "EVENT_CHARS",
    "FELL_BACK",
    "RECORDS_MAX",
    "RECORDS_RETENTION_DAYS",
    "RequestRecord",
    "RequestRollup",
    "RollupBy",
    "bucket",
    "check_read",
    "check_retention",
    "check_rollup",
    "stamp",
]

RECORDS_RETENTION_DAYS = 30.0
"""How long request records are kept by default, in days (``--records-retention`` of
``synopsis serve`` and ``synopsis store prune``)."""
RECORDS_MAX = 100_000
"""The most request records kept by default, the newest (``--records-max``)."""
EVENTS_MAX = 20
"""The most event lines a record keeps (the first ones)."""
EVENT_CHARS = 200
"""The most characters an event line keeps."""
FELL_BACK = "summarizer_fell_back"
"""The opening of an event line that says the summarizer fell back (a rollup counts them)."""

RollupBy: TypeAlias = Literal["session", "model", "hour", "day", "error"]
"""What a rollup groups the records by: their session, model, the hour or day (UTC) they
fall in, or the error they ended with."""


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request on a compacting route: when (UTC), its session, model and route, the
    tokens of its history before and after synopsis, whether it was compacted (and the
    compaction's code), the summarizer's calls and seconds for it, the status the client
    got, and the request's whole time in milliseconds.

    ``error`` is the kind of error the request ended with, as the proxy counts it in
    ``synopsis_proxy_errors_total{kind}`` (None when it went well); ``events`` what happened
    inside its compaction, one short line each (at most :data:`EVENTS_MAX` lines of
    :data:`EVENT_CHARS` characters).

    The prefix a provider's cache could read, compared with the session's previous request
    (None when the proxy had none to compare with): ``shared_messages`` leading messages of
    the history sent upstream were the previous request's sent ones, and ``shared_tokens``
    their tokens (with the system prompt and tools before them, in the count of
    ``tokens_after``); ``client_shared_tokens`` the same for the client's own history
    against its previous one (in the count of ``tokens_before``). Input cost with a cache is
    then ``shared`` tokens at the cached price and the rest at the write price."""

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
    error: str | None = None
    events: tuple[str, ...] = ()
    shared_tokens: int | None = None
    client_shared_tokens: int | None = None

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
        # A record written before a field existed reads with its default.
        fields["events"] = tuple(fields.get("events", ()))
        return cls(**fields)

    @property
    def fell_back(self) -> bool:
        """Whether the summarizer fell back on this request."""
        return any(line.startswith(FELL_BACK) for line in self.events)


@dataclass(frozen=True, slots=True)
class RequestRollup:
    """The records of one group (see :meth:`~synopsis.stores._base.StoreBase.request_rollup`):
    ``key`` is the session id, the model, the start of the hour or day (ISO 8601, UTC) or the
    error kind; counts and sums over its records (a ``None`` counted as 0); ``errors`` the
    records that ended with an error, ``fallbacks`` those whose summarizer fell back; the
    first and last record's times; the newest record's model and format."""

    key: str
    requests: int
    compacted: int
    tokens_before: int
    tokens_after: int
    summarizer_calls: int
    summarizer_seconds: float
    errors: int
    fallbacks: int
    first_at: datetime
    last_at: datetime
    model: str
    format: str
    shared_tokens: int
    client_shared_tokens: int


def check_rollup(by: object, since: datetime | None, until: datetime | None) -> None:
    """The arguments of ``request_rollup``: a known ``by`` and aware times."""
    if by not in get_args(RollupBy):
        known = ", ".join(map(repr, get_args(RollupBy)))
        raise ConfigurationError(f"by must be one of {known}, got {by!r}")
    check_read(since, until, 0)


def bucket(moment: datetime, by: Literal["hour", "day"]) -> str:
    """The start of the hour or day (UTC) that ``moment`` falls in, as a rollup's key."""
    start = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return (start if by == "hour" else start.replace(hour=0)).isoformat()


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
