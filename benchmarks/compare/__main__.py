"""``python -m benchmarks.compare``: every comparison, then the table and the JSON.

Run it through ``make bench``, which builds the environment with the peers first.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from benchmarks._harness import now, versions
from benchmarks.compare import (
    registry,
    replay,
    replay_retention,
    report,
    retention,
    scale,
    speed,
    speed_report,
    tradeoff_plot,
    validity,
)
from benchmarks.compare.inputs import load_transcripts

_KINDS = ("pending tail", "partial results", "reused ids", "defect")
PARTS = ("speed", "replay", "scale", "validity", "retention", "replay-retention", "yardsticks")
KEYS = {part: part.replace("-", "_") for part in PARTS}
"""Where each part's results sit in compare.json."""
RESULTS = Path(__file__).resolve().parents[1] / "results"
PACKAGES = (
    "synopsis",
    "langchain",
    "langchain-core",
    "zrb",
    "pydantic-ai-slim",
    "adk-deepagents",
    "google-adk",
    "langmem",
    "tessera-transcript",
    "compaction-conformance-kit",
    "tiktoken",
)


def _versions() -> dict[str, str]:
    found = versions(*PACKAGES)
    return {name: found.get(name, "not installed") for name in PACKAGES}


def _verdict(met: bool | None) -> str:
    return "not measured" if met is None else ("met" if met else "NOT met")


def _yardsticks(results: dict[str, Any], progress: Any) -> dict[str, Any]:
    from benchmarks.compare import yardsticks  # noqa: PLC0415 - needs the bench environment

    out: dict[str, Any] = {"tessera": yardsticks.tessera_version(), "kit": yardsticks.kit_version()}
    lines = []
    checked = results.get("validity", {})
    if checked:
        lines.append(
            f"- tessera-transcript {out['tessera']}'s pairing check over every output of the "
            "validity run. tessera fails a history that ends on a tool call still waiting for "
            "its result (`pending tail`, or `partial results` between parallel results) and "
            "any reused call id, both of which real sessions cut at any point carry; "
            "`defect` is everything else (an orphaned result, a call left unanswered inside "
            "the history). The cut points themselves are the baseline."
        )
        lines += ["", "| history | pass | " + " | ".join(_KINDS) + " |"]
        lines.append("|---|---:|" + "---:|" * len(_KINDS))
        rows = [("the cut points as recorded", checked["inputs"])]
        rows += [(results["labels"][n], t) for n, t in checked["systems"].items()]
        for label, t in rows:
            fails = t.get("tessera_failures", {})
            cells = [
                str(sum(v for k, v in fails.items() if kind in k.split("+"))) for kind in _KINDS
            ]
            lines.append(
                f"| {label} | {t['tessera_pass']} of {t['tessera_checked']} | "
                + " | ".join(cells)
                + " |"
            )
        lines.append("")
    start = time.perf_counter()
    canaries = yardsticks.conformance_canaries(rounds=yardsticks.KIT_ROUNDS)
    out["conformance"] = canaries
    progress(f"yardsticks: conformance kit done in {time.perf_counter() - start:.0f} s")
    lines.extend(yardsticks.conformance_lines(canaries))
    lines += ["", *yardsticks.five_round_lines(canaries)]
    for line, met in yardsticks.five_round_verdicts(canaries):
        progress(f"synopsis, kit: {line}: {_verdict(met)}")
    out["lines"] = lines
    return out


def _previous(path: Path, parts: list[str]) -> dict[str, Any]:
    """The last run's results at ``path`` when this run measures only some parts, else
    nothing (a full run starts afresh)."""
    if set(parts) == set(PARTS) or not path.exists():
        return {}
    try:
        found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return {}
    return found


def _merged(results: dict[str, Any], parts: list[str], previous: dict[str, Any]) -> dict[str, Any]:
    """``results`` of a run of ``parts``, with the other parts' results of the ``previous``
    run kept (each part says when it was measured), so that running one part does not wipe
    the others."""
    measured = dict.fromkeys((KEYS[p] for p in parts), results["meta"]["date"])
    before = previous.get("meta", {}).get("measured", {})
    merged: dict[str, Any] = {"meta": results["meta"], "labels": {}}
    for part in PARTS:
        key = KEYS[part]
        if key in results:
            merged[key] = results[key]
        elif key in previous:
            merged[key] = previous[key]
            measured[key] = before.get(key, previous.get("meta", {}).get("date", "earlier"))
    merged["labels"] = {**previous.get("labels", {}), **results["labels"]}
    merged["meta"]["measured"] = {KEYS[p]: measured[KEYS[p]] for p in PARTS if KEYS[p] in measured}
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description="synopsis against its peers, in one run")
    parser.add_argument(
        "--parts",
        "--only",
        default=",".join(PARTS),
        help="comma-separated subset; the other parts' results of the last run are kept",
    )
    parser.add_argument("--systems", default=",".join(registry.NAMES))
    parser.add_argument(
        "--strategies",
        default=",".join(registry.STRATEGIES),
        help="replay and replay-retention only: synopsis's strategy settings run beside its "
        "default (with synopsis among the systems); empty for none",
    )
    parser.add_argument(
        "--sessions", default="", help="replay-retention only: comma-separated transcripts"
    )
    parser.add_argument(
        "--windows",
        default=",".join(map(str, replay_retention.WINDOWS)),
        help="replay-retention only: comma-separated context windows",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    names = [n for n in args.systems.split(",") if n]
    for part in parts:
        if part not in PARTS:
            parser.error(f"unknown part {part!r}; known: {', '.join(PARTS)}")
    started = time.perf_counter()
    # langmem warns each time its own trim leaves nothing to keep (it then summarizes the
    # whole list); the count of such calls is in its adapter's notes, not worth a line each.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"langmem\.")

    def progress(text: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f} s] {text}", file=sys.stderr, flush=True)

    transcripts = load_transcripts()
    chosen = [n for n in args.sessions.split(",") if n]
    for name in chosen:
        if name not in transcripts:
            parser.error(f"unknown transcript {name!r}; known: {', '.join(transcripts)}")
    systems = [registry.create(n) for n in names]
    strategies = registry.strategy_names(args.strategies) if "synopsis" in names else []
    for name in strategies:
        registry.strategy(name)  # an unknown one stops the run before anything is measured
    variants = [registry.create(n) for n in strategies]
    replaying = "replay" in parts or "replay-retention" in parts
    results: dict[str, Any] = {
        "meta": {
            "date": now(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
            "python": platform.python_version(),
            "command": "make bench"
            if set(parts) == set(PARTS)
            else f"python -m benchmarks.compare --parts {','.join(parts)}",
            "versions": _versions(),
        },
        "labels": {s.name: s.label for s in systems + (variants if replaying else [])},
    }
    if "speed" in parts:
        results["speed"] = speed.run(names, progress)
    if "replay" in parts:
        results["replay"] = replay.run([*systems, *variants], transcripts, progress)
    if "scale" in parts:
        results["scale"] = scale.run(transcripts, progress)
        ratio, met = scale.verdict(results)
        if ratio is not None:
            progress(f"synopsis, replay 100k / 10k: {ratio:.1f}×: {_verdict(met)}")
    tessera = None
    if "validity" in parts:
        if "yardsticks" in parts:
            from benchmarks.compare.yardsticks import tessera_pairing  # noqa: PLC0415

            tessera = tessera_pairing
        points = validity.cut_points(transcripts)
        progress(f"validity: {len(points)} valid cut points")
        results["validity"] = {
            "cut_points": len(points),
            "all_cut_points": sum(len(t) for t in transcripts.values()),
            "transcripts": len(transcripts),
            "inputs": validity.inputs(points, tessera),
            "systems": validity.run(systems, points, tessera, progress),
        }
    if "retention" in parts:
        plain = [registry.create_non_llm(n) for n in names]
        results["retention"] = retention.run(plain, transcripts, progress)
    if "replay-retention" in parts:
        replayed = {n: t for n, t in transcripts.items() if not chosen or n in chosen}
        peers = [registry.create_non_llm(n) for n in names if n != "synopsis"]
        results["replay_retention"] = replay_retention.run(
            peers,
            replayed,
            progress,
            windows=[int(w) for w in args.windows.split(",") if w],
            strategies=[n.removeprefix(registry.PREFIX) for n in strategies],
        )
        block = results["replay_retention"]["by_window"]
        for window in block:
            for line, met in replay_retention.verdicts(block[window], int(window)):
                progress(f"synopsis, {line}: {_verdict(met)}")
            progress(report.tradeoff_sentence(results, window))
    previous = _previous(args.out / "compare.json", parts)
    if "yardsticks" in parts:
        # run without the validity part, tessera's table reads the last run's validity results
        earlier = {} if "validity" in results else {"validity": previous.get("validity", {})}
        labels = {**previous.get("labels", {}), **results["labels"]}
        results["yardsticks"] = _yardsticks({**results, **earlier, "labels": labels}, progress)
    results["meta"]["seconds"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    results = _merged(results, parts, previous)
    (args.out / "compare.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (args.out / "compare.md").write_text(report.markdown(results), encoding="utf-8")
    if "replay-retention" in parts:
        plot = args.out / tradeoff_plot.FILENAME
        try:
            tradeoff_plot.draw(results, plot)
        except ImportError:
            progress(
                f"no matplotlib here, so no {plot.name}: draw it from compare.json with "
                "`.venv/bin/python -m benchmarks.compare.tradeoff_plot`"
            )
    verdict, _ = speed_report.decide_verdict(results) if "speed" in parts else ("", None)
    shown = args.out.resolve()
    if shown.is_relative_to(Path.cwd()):
        shown = shown.relative_to(Path.cwd())
    progress(f"wrote {shown / 'compare.md'} and compare.json. {verdict}")


if __name__ == "__main__":
    main()
