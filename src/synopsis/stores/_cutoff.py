"""When a prune's age begins: a moment, or that long ago (what every store's ``prune`` and
``prune_requests`` take)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from synopsis.errors import ConfigurationError

__all__ = ["cutoff"]


def cutoff(older_than: datetime | timedelta) -> datetime:
    """The moment before which ``StoreBase.prune`` forgets a session: ``older_than`` ago,
    or that moment itself."""
    if isinstance(older_than, timedelta):
        if older_than < timedelta(0):
            raise ConfigurationError(f"older_than must not be negative, got {older_than!r}")
        now, first = datetime.now(UTC), datetime.min.replace(tzinfo=UTC)
        # Longer ago than the calendar reaches: no session is that old.
        return now - older_than if older_than < now - first else first
    if isinstance(older_than, datetime):
        if older_than.tzinfo is None or older_than.utcoffset() is None:
            raise ConfigurationError(
                f"older_than must be a timezone-aware datetime, got {older_than!r}"
            )
        return older_than.astimezone(UTC)
    raise ConfigurationError(f"older_than must be a timedelta or a datetime, got {older_than!r}")
