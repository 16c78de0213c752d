"""The results as JSON (everything measured) and as a markdown table (what a reader needs)."""

from __future__ import annotations

from typing import Any

DECIDE_TARGET = 10.0
"""At 10k messages synopsis should decide at least this many times faster than any peer."""


def _ms(cell: dict[str, Any]) -> float | None:
    value = cell.get("median_ms")
    return float(value) if value is not None else None


def _cell(cell: dict[str, Any], base: float | None) -> str:
    if "timeout" in cell:
        text = f"> {cell['timeout']:.0f} s"
        return text + (f" (> {cell['timeout'] * 1e3 / base:,.0f}×)" if base else "")
    if "skipped" in cell:
        return "not run"
    if "error" in cell:
        return "error"
    ms = _ms(cell)
    if ms is None:
        return "–"
    text = f"{ms:,.2f} ms" if ms < 100 else f"{ms:,.0f} ms"
    return text + (f" ({ms / base:,.1f}×)" if base else "")


def _labels(results: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = results["labels"]
    return labels


def speed_table(results: dict[str, Any], mode: str) -> list[str]:
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
            base = None if name == "synopsis" else _ms(ours.get(size, {}))
            cells.append(_cell(per[mode].get(size, {}), base))
        lines.append(f"| {_labels(results)[name]} | " + " | ".join(cells) + " |")
    return lines


def decide_verdict(results: dict[str, Any]) -> tuple[str, float | None]:
    """The 10k decide ratio against the fastest peer, and whether it meets the target."""
    systems = results["speed"]["systems"]
    ours = _ms(systems.get("synopsis", {}).get("decide", {}).get("10000", {}))
    peers = {
        name: per["decide"].get("10000", {}) for name, per in systems.items() if name != "synopsis"
    }
    timed = {n: _ms(c) for n, c in peers.items() if _ms(c) is not None}
    if ours is None or not timed:
        return "not measured", None
    fastest = min(timed, key=lambda n: timed[n] or 0.0)
    ratio = (timed[fastest] or 0.0) / ours
    met = "met" if ratio >= DECIDE_TARGET else "NOT met"
    return (
        f"at 10k messages synopsis decides in {ours:.2f} ms; the fastest peer, "
        f"{_labels(results)[fastest]}, in {timed[fastest]:.2f} ms: {ratio:,.1f}× "
        f"(target ≥ {DECIDE_TARGET:.0f}×: {met})",
        ratio,
    )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def validity_table(results: dict[str, Any]) -> list[str]:
    validity = results["validity"]
    lines = [
        "| system | outputs | compacted | raised | valid (OpenAI) | valid (Anthropic) "
        "| HTTP 400 (OpenAI) | HTTP 400 (Anthropic) | tessera pairing |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, t in validity["systems"].items():
        whole = t["outputs"] + t["raised"]
        lines.append(
            f"| {_labels(results)[name]} | {t['outputs']} | {t['compacted']} | {t['raised']} "
            f"| {_pct(t['valid']['openai'], whole)} | {_pct(t['valid']['anthropic'], whole)} "
            f"| {t['http_400']['openai']} | {t['http_400']['anthropic']} "
            f"| {_pct(t['tessera_pass'], t['tessera_checked'])} |"
        )
    return lines


def retention_table(results: dict[str, Any]) -> list[str]:
    from benchmarks.compare.anchors import KINDS  # noqa: PLC0415 - keeps this module light

    lines = [
        "| system | ratio | all anchors | salient | "
        + " | ".join(KINDS)
        + " | compression reached (median) | raised |",
        "|---|---:|---:|---:|" + "---:|" * len(KINDS) + "---:|---:|",
    ]
    for ratio, block in results["retention"]["ratios"].items():
        for r in block["systems"].values():
            shares = [
                "–" if r["share"][k] is None else f"{100 * r['share'][k]:.0f}%" for k in KINDS
            ]
            reached = r["compression"]
            median = reached[len(reached) // 2] if reached else None
            lines.append(
                f"| {r['label']} | {ratio}× | {100 * r['overall']:.1f}% "
                f"| {100 * r['salient']:.1f}% | "
                + " | ".join(shares)
                + f" | {'–' if median is None else f'{median:.1f}×'} | {len(r['raised'])} |"
            )
    return lines


def replay_table(results: dict[str, Any]) -> list[str]:
    replay = results["replay"]
    ours = replay["systems"].get("synopsis", {}).get("mean_ms")
    lines = [
        "| system | per request (mean) | vs synopsis | compactions | tokens sent "
        "| largest request | invalid requests |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in replay["systems"].items():
        if "error" in r:
            lines.append(f"| {_labels(results)[name]} | error: {r['error'][:80]} |||||")
            continue
        ratio = "1.0×" if name == "synopsis" or not ours else f"{r['mean_ms'] / ours:,.1f}×"
        lines.append(
            f"| {_labels(results)[name]} | {r['mean_ms']:,.2f} ms | {ratio} | "
            f"{r['compactions']} | {r['tokens_sent']:,} | {r['largest_request']:,} | "
            f"{r['invalid_requests']} |"
        )
    return lines


def memory_table(results: dict[str, Any]) -> list[str]:
    systems = results["speed"]["systems"]
    ours = systems.get("synopsis", {}).get("memory", {}).get("peak_mib")
    lines = ["| system | peak Python memory, one compaction at 10k messages | vs synopsis |"]
    lines.append("|---|---:|---:|")
    for name, per in systems.items():
        peak = per.get("memory", {}).get("peak_mib")
        if peak is None:
            lines.append(f"| {_labels(results)[name]} | {_cell(per.get('memory', {}), None)} | |")
            continue
        ratio = f"{peak / ours:,.1f}×" if ours else "–"
        lines.append(f"| {_labels(results)[name]} | {peak:,.1f} MiB | {ratio} |")
    return lines


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    verdict, _ = decide_verdict(results) if "speed" in results else ("", None)
    out = [
        "# synopsis against its peers",
        "",
        f"Measured {meta['date']} on {meta['machine']} with Python {meta['python']}, "
        f"by `{meta['command']}` in {meta['seconds']:.0f} s. Every ratio is peer / synopsis, "
        "from the same run. Each peer is driven through its public hook with the same "
        "deterministic, instant fake summarizer, so only the machinery is compared.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
    ]
    if "speed" in results:
        out += [
            "## Deciding, per call (history under the trigger, one message appended)",
            "",
            *speed_table(results, "decide"),
            "",
            f"**{verdict}.**",
            "",
            "## Deciding and planning a compaction, per call (history over the trigger)",
            "",
            *speed_table(results, "plan"),
            "",
            *memory_table(results),
            "",
        ]
    if "replay" in results:
        r = results["replay"]
        out += [
            f"## Per request over a replayed session ({r['session']}, {r['window']:,}-token "
            "window)",
            "",
            *replay_table(results),
            "",
        ]
    if "validity" in results:
        v = results["validity"]
        every = v.get("all_cut_points")
        left = (
            f"; {every - v['cut_points']} more are left out because the recorded history is "
            "itself invalid there"
            if every and every > v["cut_points"]
            else ""
        )
        out += [
            f"## Validity over every cut point ({v['cut_points']} cut points of "
            f"{v['transcripts']} transcripts{left})",
            "",
            *validity_table(results),
            "",
        ]
        for name, t in v["systems"].items():
            notes = []
            if t["rules"]:
                notes.append(
                    "rules broken: "
                    + ", ".join(f"{rule} ×{n}" for rule, n in list(t["rules"].items())[:4])
                    + f"; e.g. {t['example']}"
                )
            if t["errors"]:
                notes.append(
                    "raised: " + ", ".join(f"{kind} ×{n}" for kind, n in t["errors"].items())
                )
            if notes:
                out.append(f"- {_labels(results)[name]}: " + ". ".join(notes))
        out.append("")
    if "retention" in results:
        out += [
            "## Anchors retained from the summarized segment",
            "",
            *retention_table(results),
            "",
        ]
    if "yardsticks" in results:
        out += ["## External yardsticks", "", *results["yardsticks"].get("lines", []), ""]
    return "\n".join(out) + "\n"
