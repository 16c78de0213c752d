"""Option checks and the default clock shared by the summarizers."""

from __future__ import annotations

from datetime import UTC, datetime

from synopsis.errors import ConfigurationError

__all__ = ["utc_now", "whole_number"]


def whole_number(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


def utc_now() -> datetime:
    return datetime.now(UTC)
