"""The speed part of the report (``benchmarks/compare/speed.py``'s results): deciding and one
compaction per call at each size, first call and warm calls apart, the peak memory of each,
the machine's load, and the targets."""

from __future__ import annotations

from typing import Any

DECIDE_TARGET = 10.0
"""At 10k messages synopsis should decide at least this many times faster than any peer."""


def _ms(cell: dict[str, Any], key: str = "median_ms") -> float | None:
    """The cell's milliseconds: the warm calls' median (``median_ms``) or the first call's
    (``cold_ms``); None where it has none."""
    value = cell.get(key)
    return float(value) if value is not None else None


def _cell(cell: dict[str, Any], base: float | None, key: str = "median_ms") -> str:
    if "timeout" in cell:
        text = f"> {cell['timeout']:.0f} s"
        return text + (f" (> {cell['timeout'] * 1e3 / base:,.0f}×)" if base else "")
    if "skipped" in cell:
        return "not run"
    if "error" in cell:
        return "error"
    ms = _ms(cell, key)
    if ms is None:
        return "–"
    text = f"{ms:,.2f} ms" if ms < 100 else f"{ms:,.0f} ms"
    return text + (f" ({_ratio(ms / base)}×)" if base else "")


def _ratio(value: float) -> str:
    """A ratio to one decimal, or to two significant digits below 0.1 (a peer many times
    faster than synopsis reads 0.0066, not 0.0)."""
    return f"{value:.2g}" if value < 0.1 else f"{value:,.1f}"


def _labels(results: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = results["labels"]
    return labels


def speed_table(results: dict[str, Any], mode: str, key: str = "median_ms") -> list[str]:
    """One row per system, one column per size: the ``key`` figure and its ratio to
    synopsis's."""
    speed = results["speed"]
    sizes = [str(s) for s in speed["sizes"]]
    ours = speed["systems"].get("synopsis", {}).get(mode, {})
    lines = [
        "| system | " + " | ".join(f"{int(s):,} msgs" for s in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for name, per in speed["systems"].items():
        cells = []
        for size in sizes:
            base = None if name == "synopsis" else _ms(ours.get(size, {}), key)
            cells.append(_cell(per[mode].get(size, {}), base, key))
        lines.append(f"| {_labels(results)[name]} | " + " | ".join(cells) + " |")
    return lines


def _variant_table(speed: dict[str, Any], heading: str, row: str, cells: list[str]) -> list[str]:
    """One way of calling synopsis besides appending to one list, as a table of one row."""
    sizes = speed["sizes"]
    return [
        heading,
        "",
        "| system | " + " | ".join(f"{int(s):,} msgs" for s in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
        f"| synopsis Compactor, {row} | " + " | ".join(cells) + " |",
        "",
    ]


SQLITE_TARGET = 2.0
"""Deciding with a SQLite store should cost at most this many times the store-less path."""


def sqlite_lines(results: dict[str, Any]) -> list[str]:
    """Deciding with a session in a SQLite file beside the store-less path, and the issue's
    target at 10k and 100k messages."""
    speed = results["speed"]
    stored = speed.get("sqlite")
    if not stored:
        return []
    sizes = [str(s) for s in speed["sizes"]]
    ours = speed["systems"].get("synopsis", {}).get("decide", {})
    cells = [_cell(stored.get(size, {}), _ms(ours.get(size, {}))) for size in sizes]
    lines = _variant_table(
        speed,
        "With a session in a SQLite file (ratio: against synopsis without a store):",
        "SQLite store",
        cells,
    )
    for size in ("10000", "100000"):
        base, with_store = _ms(ours.get(size, {})), _ms(stored.get(size, {}))
        if base is None or with_store is None:
            continue
        ratio = with_store / base
        met = "met" if ratio <= SQLITE_TARGET else "NOT met"
        lines.append(
            f"- at {int(size):,} messages, {with_store:.2f} ms with the store against "
            f"{base:.2f} ms without: {ratio:.2f}× (target ≤ {SQLITE_TARGET:.0f}×: {met})"
        )
    return lines


FRESH_TARGET = 5.0
"""Deciding on a history decoded afresh from JSON should be at least this many times faster
than LangChain's SummarizationMiddleware deciding (the peer the issue names)."""


def _faster(cell: dict[str, Any], peer: float | None) -> str:
    """``cell`` with how many times faster it is than ``peer`` milliseconds: peer / synopsis,
    as every ratio of the main table is."""
    ms = _ms(cell)
    return _cell(cell, None) + (f" ({peer / ms:,.1f}×)" if peer and ms else "")


def fresh_lines(results: dict[str, Any]) -> list[str]:
    """Deciding on a history decoded afresh from JSON on every call beside LangChain's
    SummarizationMiddleware deciding, and the issue's target at 10k messages."""
    speed = results["speed"]
    fresh = speed.get("fresh")
    if not fresh:
        return []
    sizes = [str(s) for s in speed["sizes"]]
    theirs = speed["systems"].get("langchain", {}).get("decide", {})
    cells = [_faster(fresh.get(size, {}), _ms(theirs.get(size, {}))) for size in sizes]
    lines = _variant_table(
        speed,
        "With the history decoded from JSON on every call, as an HTTP proxy or a per-request "
        "hook passes it (ratio: LangChain SummarizationMiddleware / synopsis):",
        "history decoded from JSON each call",
        cells,
    )
    ms, peer = _ms(fresh.get("10000", {})), _ms(theirs.get("10000", {}))
    target = f"target: at least {FRESH_TARGET:.0f}× faster than LangChain SummarizationMiddleware"
    if ms is None:
        return lines
    if peer is None:
        lines.append(
            f"- at 10,000 messages, {ms:.2f} ms; LangChain SummarizationMiddleware has no time "
            f"at that size in this run, so the ratio could not be judged ({target})"
        )
        return lines
    ratio = peer / ms
    met = "met" if ratio >= FRESH_TARGET else "NOT met"
    lines.append(
        f"- at 10,000 messages, {ms:.2f} ms against {peer:.2f} ms for LangChain "
        f"SummarizationMiddleware: {ratio:,.1f}× faster ({target}: {met})"
    )
    return lines


RESENT_TARGET = 3.0
"""Deciding on a whole history sent again after a compaction should cost under this many
times deciding on the appended list."""


def resent_lines(results: dict[str, Any]) -> list[str]:
    """Deciding on a whole uncompacted history sent again after a compaction beside deciding
    on the appended list, and the issue's target at 10k messages."""
    speed = results["speed"]
    resent = speed.get("resent")
    if not resent:
        return []
    sizes = [str(s) for s in speed["sizes"]]
    ours = speed["systems"].get("synopsis", {}).get("decide", {})
    cells = [_cell(resent.get(size, {}), _ms(ours.get(size, {}))) for size in sizes]
    lines = _variant_table(
        speed,
        "With a client that sends its whole uncompacted history again after a compaction, the "
        "session's summary put in place of the part it covers (ratio: against the appended "
        "list):",
        "whole history resent after a compaction",
        cells,
    )
    base, ms = _ms(ours.get("10000", {})), _ms(resent.get("10000", {}))
    if base is not None and ms is not None:
        ratio = ms / base
        met = "met" if ratio < RESENT_TARGET else "NOT met"
        lines.append(
            f"- at 10,000 messages, {ms:.2f} ms with the whole history resent against "
            f"{base:.2f} ms for the appended list: {ratio:.2f}× (target: under "
            f"{RESENT_TARGET:.0f}× the appended-list path: {met})"
        )
    firsts = [(size, resent.get(size, {}).get("first_ms")) for size in sizes]
    shown = [f"{int(size):,} messages {first:,.0f} ms" for size, first in firsts if first]
    if shown:
        lines.append(
            "- the first request after the compaction, sent in the warm-up (not in the "
            "table): " + ", ".join(shown)
        )
    return lines


def _separated(*blocks: list[str]) -> list[str]:
    """The blocks that have lines, a blank line between each two."""
    out: list[str] = []
    for block in filter(None, blocks):
        out += ["", *block] if out else block
    return out


def _fastest_peer(
    results: dict[str, Any], mode: str, size: str = "10000", key: str = "median_ms"
) -> tuple[float, str, float] | None:
    """synopsis's time in ``mode`` at ``size`` messages (the ``key`` figure), the fastest
    peer's name and its time."""
    systems = results["speed"]["systems"]
    ours = _ms(systems.get("synopsis", {}).get(mode, {}).get(size, {}), key)
    peers = {
        name: per.get(mode, {}).get(size, {}) for name, per in systems.items() if name != "synopsis"
    }
    timed = {n: t for n, c in peers.items() if (t := _ms(c, key)) is not None}
    if ours is None or not timed:
        return None
    fastest = min(timed, key=lambda n: timed[n])
    return ours, fastest, timed[fastest]


def decide_verdict(results: dict[str, Any]) -> tuple[str, float | None]:
    """The 10k decide ratio against the fastest peer, and whether it meets the target."""
    found = _fastest_peer(results, "decide")
    if found is None:
        return "not measured", None
    ours, fastest, theirs = found
    ratio = theirs / ours
    met = "met" if ratio >= DECIDE_TARGET else "NOT met"
    return (
        f"at 10k messages synopsis decides in {ours:.2f} ms; the fastest peer, "
        f"{_labels(results)[fastest]}, in {theirs:.2f} ms: {ratio:,.1f}× "
        f"(target ≥ {DECIDE_TARGET:.0f}×: {met})",
        ratio,
    )


def plan_verdict(results: dict[str, Any]) -> list[str]:
    """One compaction at 10k messages against the fastest peer's (target: no slower)."""
    found = _fastest_peer(results, "plan")
    if found is None:
        return []
    ours, fastest, theirs = found
    met = "met" if ours <= theirs else "NOT met"
    return [
        f"- one compaction at 10,000 messages: synopsis {ours:,.0f} ms, the fastest peer "
        f"({_labels(results)[fastest]}) {theirs:,.0f} ms: {ours / theirs:.2f}× its time "
        f"(target: no slower: {met})",
        "",
    ]


SCALE_TARGET = 11.0
"""One compaction at 100k messages may cost at most this many times one at 10k."""
LARGE, SMALL = "100000", "10000"


def memory_table(results: dict[str, Any], mode: str) -> list[str]:
    """The peak memory of each cell: how far the process's resident set rose over its calls."""
    speed = results["speed"]
    sizes = [str(s) for s in speed["sizes"]]
    lines = [
        "| system | " + " | ".join(f"{int(s):,} msgs" for s in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for name, per in speed["systems"].items():
        cells = []
        for size in sizes:
            peak = per[mode].get(size, {}).get("peak_mib")
            cells.append("–" if peak is None else f"{peak:,.1f} MiB")
        lines.append(f"| {_labels(results)[name]} | " + " | ".join(cells) + " |")
    return lines


_CPU = {"median_ms": "median_cpu_ms", "cold_ms": "cold_cpu_ms"}
"""The CPU time beside each wall time of a cell."""


def _peak(results: dict[str, Any], name: str, size: str, key: str) -> str:
    """The cell's CPU time and peak memory, where it has them, as a parenthesis."""
    cell = results["speed"]["systems"][name]["plan"].get(size, {})
    shown = []
    if cell.get(_CPU[key]) is not None:
        shown.append(f"{cell[_CPU[key]]:,.0f} ms of CPU")
    if cell.get("peak_mib") is not None:
        shown.append(f"peak {cell['peak_mib']:,.0f} MiB")
    return f" ({', '.join(shown)})" if shown else ""


def large_verdicts(results: dict[str, Any]) -> list[str]:
    """One compaction at 100k messages against the fastest peer's, warm and cold (target: no
    slower), and synopsis's own cost from 10k to 100k (target: within :data:`SCALE_TARGET`)."""
    out = []
    for key, what in (("median_ms", "warm (median)"), ("cold_ms", "first call")):
        found = _fastest_peer(results, "plan", LARGE, key)
        if found is None:
            continue
        ours, fastest, theirs = found
        met = "met" if ours <= theirs else "NOT met"
        out.append(
            f"- one compaction at 100,000 messages, {what}: synopsis {ours:,.0f} ms"
            f"{_peak(results, 'synopsis', LARGE, key)}; the fastest peer "
            f"({_labels(results)[fastest]}) {theirs:,.0f} ms{_peak(results, fastest, LARGE, key)}"
            f": {ours / theirs:.2f}× its time (target: no slower: {met})"
        )
    ours = results["speed"]["systems"].get("synopsis", {}).get("plan", {})
    for key, what in (("median_ms", "warm (median)"), ("cold_ms", "first call")):
        small, large = _ms(ours.get(SMALL, {}), key), _ms(ours.get(LARGE, {}), key)
        if small is None or large is None:
            continue
        ratio = large / small
        met = "met" if ratio <= SCALE_TARGET else "NOT met"
        cpu = _ms(ours.get(SMALL, {}), _CPU[key]), _ms(ours.get(LARGE, {}), _CPU[key])
        of_cpu = f"; of CPU time, {cpu[1] / cpu[0]:.1f}×" if cpu[0] and cpu[1] else ""
        out.append(
            f"- synopsis's compaction from 10,000 to 100,000 messages, {what}: {small:,.0f} ms "
            f"to {large:,.0f} ms, {ratio:.1f}×{of_cpu} (target: within {SCALE_TARGET:.0f}×: "
            f"{met})"
        )
    return [*out, ""] if out else []


def _loads(cell: dict[str, Any]) -> list[float]:
    return [float(x) for x in cell.get("load", ())]


def load_lines(results: dict[str, Any]) -> list[str]:
    """How loaded the machine was while the part ran, and the cells that may be disturbed:
    those that began or ended with more processes wanting a core than there are cores."""
    speed = results["speed"]
    cores = speed.get("cores")
    found = _loads(speed)
    if not cores or not found:
        return []
    cells = [
        (f"{name} {mode} {int(size):,}", _loads(cell))
        for name, per in speed["systems"].items()
        for mode in ("decide", "plan")
        for size, cell in per.get(mode, {}).items()
    ]
    busy = [what for what, loads in cells if loads and max(loads) > cores]
    line = (
        f"The machine's load average (one minute) was {found[0]:.1f} when this part began and "
        f"{found[-1]:.1f} when it ended, on {cores} cores. "
    )
    why = f"above {cores} (other processes wanting the cores: their times may be high)"
    if busy and len(busy) == len(cells):
        line += f"Every cell began or ended {why}; the CPU times are the steadier figures."
    elif busy:
        line += f"{len(busy)} of {len(cells)} cells began or ended {why}: " + ", ".join(busy) + "."
    else:
        line += f"No cell began or ended above {cores}."
    return [line, ""]


def _how(results: dict[str, Any], mode: str) -> str:
    calls = results["speed"].get("calls", {}).get(mode)
    if calls is None:
        return ""
    return (
        f"Each cell: a process of its own, {calls} calls, each after an untimed full garbage "
        "collection, the same at every size and for every system. The first call (cold: the "
        "system's tokenizer, caches and lazy imports are paid there) is shown apart from the "
        f"other {calls - 1} (warm: their median; ratio: peer / synopsis)."
    )


def lines(results: dict[str, Any]) -> list[str]:
    """The speed sections of ``compare.md``."""
    verdict, _ = decide_verdict(results)
    how_decide, how_plan = _how(results, "decide"), _how(results, "plan")
    return [
        "## Deciding, per call (history under the trigger, one message appended)",
        "",
        *load_lines(results),
        *([how_decide, ""] if how_decide else []),
        *speed_table(results, "decide"),
        "",
        f"**{verdict}.**",
        "",
        *_separated(sqlite_lines(results), fresh_lines(results), resent_lines(results)),
        "",
        "First call (cold):",
        "",
        *speed_table(results, "decide", "cold_ms"),
        "",
        "## One compaction, per call (history over the trigger)",
        "",
        *([how_plan, ""] if how_plan else []),
        "Warm (median):",
        "",
        *speed_table(results, "plan"),
        "",
        "First call (cold):",
        "",
        *speed_table(results, "plan", "cold_ms"),
        "",
        "Peak memory of the calls (the most the process's resident set rose, during a call, "
        "above what it held when the call began):",
        "",
        *memory_table(results, "plan"),
        "",
        *plan_verdict(results),
        *large_verdicts(results),
    ]
