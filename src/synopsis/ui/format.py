"""How the page writes numbers and times: the templates' filters."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

__all__ = ["FILTERS", "dollars", "num", "pct", "secs", "tokens", "when"]

_NONE = "—"


def num(value: float | None) -> str:
    """A count with thousands separators."""
    return _NONE if value is None else f"{value:,.0f}"


def tokens(value: float | None) -> str:
    """A token count short enough for a card: 950, 12.3k, 4.56M."""
    if value is None:
        return _NONE
    size = abs(value)
    if size < 1000:
        return f"{value:.0f}"
    if size < 1_000_000:
        return f"{value / 1000:.3g}k"
    return f"{value / 1_000_000:.3g}M"


def dollars(value: float | None) -> str:
    """US dollars, with cents, or four decimals below a cent (the savings of one session)."""
    if value is None:
        return _NONE
    if value != 0 and abs(value) < 0.01:
        return f"${value:.4f}"
    return f"${value:,.2f}"


def pct(share: float | None) -> str:
    return _NONE if share is None else f"{share * 100:.1f}%"


def secs(value: float | None) -> str:
    return _NONE if value is None else f"{value:.1f} s"


def when(value: datetime | None) -> str:
    """A moment in UTC, to the second (the store keeps UTC; the page says so)."""
    return _NONE if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


FILTERS: dict[str, Callable[..., str]] = {
    "num": num,
    "tokens": tokens,
    "dollars": dollars,
    "pct": pct,
    "secs": secs,
    "when": when,
}
