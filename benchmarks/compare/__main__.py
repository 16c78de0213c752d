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
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks.compare import registry, replay, report, retention, speed, validity
from benchmarks.compare.inputs import load_transcripts

_KINDS = ("pending tail", "partial results", "reused ids", "defect")
PARTS = ("speed", "replay", "validity", "retention", "yardsticks")
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
    out = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


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
    canaries = yardsticks.conformance_canaries()
    out["conformance"] = canaries
    progress(f"yardsticks: conformance kit done in {time.perf_counter() - start:.0f} s")
    lines.extend(yardsticks.conformance_lines(canaries))
    out["lines"] = lines
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="synopsis against its peers, in one run")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated subset")
    parser.add_argument("--systems", default=",".join(registry.NAMES))
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
    systems = [registry.create(n) for n in names]
    results: dict[str, Any] = {
        "meta": {
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
            "python": platform.python_version(),
            "command": "make bench",
            "versions": _versions(),
        },
        "labels": {s.name: s.label for s in systems},
    }
    if "speed" in parts:
        results["speed"] = speed.run(names, progress)
    if "replay" in parts:
        results["replay"] = replay.run(systems, transcripts, progress)
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
    if "yardsticks" in parts:
        results["yardsticks"] = _yardsticks(results, progress)
    results["meta"]["seconds"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (args.out / "compare.md").write_text(report.markdown(results), encoding="utf-8")
    verdict, _ = report.decide_verdict(results) if "speed" in parts else ("", None)
    shown = args.out.resolve()
    if shown.is_relative_to(Path.cwd()):
        shown = shown.relative_to(Path.cwd())
    progress(f"wrote {shown / 'compare.md'} and compare.json. {verdict}")


if __name__ == "__main__":
    main()
