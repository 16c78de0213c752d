"""What recording each request's figures costs the proxy (a part of ``bench_proxy``): the
same proxy with request records on and off (``create_app(record_requests=...)``,
``synopsis serve --no-records``), side by side in one run, with the memory store (the
default) and with a SQLite file; its figures and its section of ``proxy.md``.

The paths take turns with the same bytes (``bench_proxy.latency``), so that the i-th sample
of every path is the same request: the difference of two paths is taken request by request
as well as between their quantiles, and the ratio of their medians in consecutive blocks of
requests shows how far it moves with the machine's load alone.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Protocol

from benchmarks._harness import ms, table


class Latency(Protocol):
    """What this part reads of ``bench_proxy.Latency`` (named here, not imported: that
    module imports this one)."""

    messages: int
    samples: dict[str, list[float]]

    def at(self, path: str, q: float) -> float: ...

    @property
    def count(self) -> int: ...


STORES = (
    ("memory", "recorded", "unrecorded"),
    ("SQLite file", "recorded-sqlite", "unrecorded-sqlite"),
    ("SQLite file, control", "control-sqlite", "unrecorded-sqlite"),
)
"""(the store, the path with records, the path without). The control is a second proxy
without records in the first's place: how far two alike processes differ."""
KINDS = tuple(dict.fromkeys(kind for _, *kinds in STORES for kind in kinds))
"""The proxies this part starts."""
PATHS = ("direct", *KINDS)
BLOCKS = 10
"""Consecutive blocks of requests whose ratios give the spread."""


@dataclass(frozen=True)
class Recording:
    """The latencies of :data:`PATHS`, and the records each SQLite file held at the end."""

    latency: Latency
    written: dict[str, int]

    def ratio(self, on: str, off: str, q: float) -> float:
        """Time per request with records over without, at the quantile ``q``."""
        return self.latency.at(on, q) / self.latency.at(off, q)

    def paired(self, on: str, off: str) -> float:
        """The median of the request-by-request difference, in seconds."""
        s = self.latency.samples
        return statistics.median(a - b for a, b in zip(s[on], s[off], strict=True))

    def blocks(self, on: str, off: str) -> list[float]:
        """The ratio of the medians in each of :data:`BLOCKS` consecutive blocks."""
        s = self.latency.samples
        size = max(1, len(s[on]) // BLOCKS)
        return [
            statistics.median(s[on][low : low + size]) / statistics.median(s[off][low : low + size])
            for low in range(0, size * (len(s[on]) // size), size)
        ]


def _rows(r: Recording) -> list[list[str]]:
    rows = []
    for store, on, off in STORES:
        spread = r.blocks(on, off)
        rows.append(
            [
                store,
                str(r.latency.count),
                ms(r.latency.at(on, 0.5) * 1e3),
                ms(r.latency.at(off, 0.5) * 1e3),
                f"**{r.ratio(on, off, 0.5):.3f}**",
                f"{r.ratio(on, off, 0.99):.3f}",
                f"{r.paired(on, off) * 1e3:+.3f}",
                f"{min(spread):.3f} to {max(spread):.3f}",
                f"{r.written.get(on, 0):,} / {r.written.get(off, 0):,}"
                if on in r.written
                else "(memory)",
            ]
        )
    return rows


_COLUMNS = (
    "store",
    "n",
    "records on p50",
    "off p50",
    "ratio p50",
    "ratio p99",
    "paired difference p50",
    f"ratio p50 in {BLOCKS} blocks",
    "records written on / off",
)


def lines(r: Recording) -> list[str]:
    """The figures as ``main`` prints them."""
    return [
        f"recording's cost at {r.latency.messages:,} messages:",
        *table(_COLUMNS, _rows(r), left=1),
    ]


def section(r: Recording, warmup: int) -> list[str]:
    """The ``## Recording's cost`` section of ``proxy.md``."""
    return [
        "## Recording's cost",
        "",
        "The same proxy with request records on and off (`create_app(record_requests=...)`, "
        "`synopsis serve --no-records`), side by side in this run: with the memory store "
        "(the default) and with a SQLite file (`--store`), and a second SQLite proxy without "
        "records as a control, each in a process of its own, in front of the same upstream. "
        "The six paths (the upstream called directly too) take turns with the same bytes, "
        "a session growing by one message a request, at "
        f"{r.latency.messages:,} messages; n timed requests per path, after {warmup} "
        "untimed. The recorder queues a request's figures when its log line is "
        "written and a background task writes them in batches (every half second at most): "
        "nothing on the request's path waits for the store.",
        "",
        "Milliseconds per request (the whole request, as the client times it); ratio: with "
        "records over without, at the same quantile; paired difference: the median of the "
        "request-by-request difference (the paths take turns, so the i-th requests match); "
        f"blocks: the p50 ratio in each of {BLOCKS} consecutive blocks of requests, the "
        "spread the machine's load alone gives. Records written: what each SQLite file held "
        "at the end.",
        "",
        *table(_COLUMNS, _rows(r), left=1),
        "",
        *(f"- {verdict(r, store, on, off)}" for store, on, off in STORES),
    ]


def verdict(r: Recording, store: str, on: str, off: str) -> str:
    """What the blocks say of one store: a difference resolved only if every block shows it."""
    if on.startswith("control"):
        spread = r.blocks(on, off)
        return (
            f"{store}: two proxies without records, {r.ratio(on, off, 0.5):.3f} at p50 "
            f"({min(spread):.3f} to {max(spread):.3f} in the blocks): what two alike "
            "processes differ by here, with no recording in either."
        )
    spread = r.blocks(on, off)
    low, high = min(spread), max(spread)
    if low <= 1 <= high:
        return (
            f"{store}: no difference resolved; the blocks' ratios lie on both sides of 1 "
            f"({low:.3f} to {high:.3f})."
        )
    if low > 1:
        return (
            f"{store}: records on is slower in every block ({low:.3f} to {high:.3f}), by "
            f"{r.paired(on, off) * 1e3:.3f} ms a request (paired median)."
        )
    return (
        f"{store}: records on is faster in every block ({low:.3f} to {high:.3f}): an effect "
        "of the machine or of the processes' order, not of recording."
    )
