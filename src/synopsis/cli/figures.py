"""A replayed session's figures as text: each compaction's spacing from the one before, where
the compactions landed, the tokens and the input cost with a prefix cache, what their events
said. The terminal report and the HTML page say them in the same words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.cli.replay import BURST

if TYPE_CHECKING:
    from synopsis.cli.replay import ReplayReport, Turn

__all__ = [
    "compactions_title",
    "cost_lines",
    "dollars",
    "events_lines",
    "landings",
    "recallable",
    "session_lines",
    "share",
    "since_text",
    "spacing",
]


def spacing(report: ReplayReport) -> list[tuple[Turn, int | None]]:
    """Each compaction with the requests since the one before (``None`` for the first)."""
    out: list[tuple[Turn, int | None]] = []
    before: Turn | None = None
    for t in report.compactions:
        out.append((t, None if before is None else t.index - before.index))
        before = t
    return out


def since_text(since: int | None) -> str:
    """``-`` for the first compaction, ``1 !`` for one in a burst, else the count."""
    if since is None:
        return "-"
    return f"{since} !" if since <= BURST else str(since)


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def dollars(*values: float) -> list[str]:
    """Dollar amounts to compare, at one precision: cents from a dollar up, else tenths of a
    cent."""
    places = 2 if max(values, default=0.0) >= 1 else 4
    return [f"${v:,.{places}f}" for v in values]


def compactions_title(report: ReplayReport) -> str:
    done, bursts = len(report.compactions), len(report.bursts)
    return f"{done} compaction(s), {bursts} within two requests of the one before"


def landings(report: ReplayReport) -> str:
    """The range of shares of the window the compactions left, and of those they aimed at."""
    shares = sorted(report.landed(t) for t in report.compactions)
    said = f"landed at {shares[0]:.1%} to {shares[-1]:.1%} of the window"
    targets = sorted({t.target for t in report.compactions if t.target is not None})
    if targets:
        aimed = share(targets[0]) if len(targets) == 1 else f"{targets[0]:.1%} to {targets[-1]:.1%}"
        said += f", aiming at {aimed}"
    return said


def recallable(report: ReplayReport) -> str:
    """How many of the originals the compactions offloaded the store gave back."""
    offloaded = sum(len(t.offloaded) for t in report.compactions)
    recallable = sum(t.recallable or 0 for t in report.compactions)
    return f"{recallable} of {offloaded}"


def cost_lines(report: ReplayReport) -> list[str]:
    """What the session's input cost with a prefix cache, with synopsis and without, at which
    prices, and how much of it the cache read."""
    with_, without, saved = dollars(
        report.cost_with, report.cost_without, report.cost_without - report.cost_with
    )
    return [
        f"input cost with a prefix cache: {with_} with synopsis, {without} without ({saved} saved)",
        f"prices {report.prices.describe()}",
        f"{report.cache_hits:,} of {len(report.turns):,} requests read a cached prefix, "
        f"{report.cached_tokens:,} tokens in all",
    ]


def events_lines(report: ReplayReport) -> list[str]:
    """What the compactions' events said went wrong, and where the refill breaker opened."""
    out: list[str] = []
    for t in report.turns:
        if t.emergency:
            out.append(f"turn {t.index}, an emergency: {t.emergency}")
        if t.off_target:
            out.append(f"turn {t.index}, off its target: {t.off_target}")
        if t.breaker is not None:
            out.append(
                f"turn {t.index} opened the refill breaker: compactions land at "
                f"{t.breaker:.0%} of the window from then on"
            )
    return out


def session_lines(report: ReplayReport) -> list[str]:
    """The session in a few lines: compactions, where they landed, tokens, cost, events."""
    done = len(report.compactions)
    out = [
        f"{done} compaction(s), {len(report.bursts)} within two requests of the one before; "
        f"{report.summarizer_calls} summarizer call(s)"
    ]
    if done:
        out += [landings(report), f"offloaded originals recallable: {recallable(report)}"]
    out += [
        f"tokens sent: {report.tokens_with:,} with synopsis, {report.tokens_without:,} "
        f"without ({report.saved_share:.1%} saved)",
        *cost_lines(report),
        *events_lines(report),
    ]
    return out
