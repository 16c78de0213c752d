"""``synopsis replay`` over long transcripts: the command a person runs on a recorded session,
on histories of 10k and 100k messages built from the bundled transcripts, into a 32k window.
Each size runs the installed command in a process of its own, on a JSONL file, with ``--json``
(so its stdout is the report); the wall time includes reading the file and writing the report.
The replay is linear in the transcript when the 100k run takes at most ten times the 10k one.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._harness import synopsis_command
from benchmarks.compare.inputs import build_history

if TYPE_CHECKING:
    from collections.abc import Callable

    from benchmarks.compare.systems import Items

SIZES = (10_000, 100_000)
WINDOW = 32_000
MODEL = "gpt-4o"
TARGET = 10.0
"""The 100k replay may take at most this many times the 10k one."""
LIMIT = 3_600.0
"""Seconds a replay may run before it is stopped and reported as a lower bound."""


def replay_once(items: Items, limit: float = LIMIT) -> dict[str, Any]:
    """One ``synopsis replay`` of ``items``: its wall time and what its report says."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.jsonl"
        path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
        args = [*synopsis_command(), "replay", str(path), "--model", MODEL, "--window", str(WINDOW)]
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [*args, "--json"], capture_output=True, text=True, timeout=limit, check=False
            )
        except subprocess.TimeoutExpired:
            return {"messages": len(items), "timeout": limit}
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"messages": len(items), "error": f"exit {done.returncode}: {tail}"[:300]}
    report = json.loads(done.stdout)
    return {
        "messages": len(items),
        "seconds": seconds,
        "compactions": report["compactions"],
        "completed": report["completed"],
        "saved_share": report["saved_share"],
    }


def run(transcripts: dict[str, Items], progress: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {"window": WINDOW, "model": MODEL, "sizes": {}}
    for size in SIZES:
        found = replay_once(build_history(transcripts, size))
        out["sizes"][str(size)] = found
        shown = f"{found['seconds']:.1f} s" if "seconds" in found else str(found)
        progress(f"scale: synopsis replay of {size:,} messages: {shown}")
    return out


def verdict(results: dict[str, Any]) -> tuple[float | None, bool | None]:
    """The 100k / 10k ratio of wall times, and whether it is within :data:`TARGET`."""
    sizes = results["scale"]["sizes"]
    small = sizes.get(str(SIZES[0]), {}).get("seconds")
    large = sizes.get(str(SIZES[-1]), {}).get("seconds")
    if small is None or large is None:
        return None, None
    ratio = large / small
    return ratio, ratio <= TARGET


def lines(results: dict[str, Any]) -> list[str]:
    scale = results["scale"]
    out = [
        f"## `synopsis replay` over long transcripts ({scale['window']:,}-token window, "
        f"model {scale['model']})",
        "",
        "The command itself on a JSONL file, in a process of its own (reading the file and "
        "writing the JSON report included).",
        "",
        "| messages | wall time | per 1,000 messages | compactions | tokens saved |",
        "|---:|---:|---:|---:|---:|",
    ]
    for size, found in scale["sizes"].items():
        if "seconds" not in found:
            why = f"> {found['timeout']:,.0f} s" if "timeout" in found else found.get("error")
            out.append(f"| {int(size):,} | {why} | | | |")
            continue
        per = found["seconds"] / int(size) * 1_000
        out.append(
            f"| {int(size):,} | {found['seconds']:,.1f} s | {per:.2f} s | "
            f"{found['compactions']:,} | {found['saved_share']:.1%} |"
        )
    ratio, met = verdict(results)
    if ratio is not None:
        state = "met" if met else "NOT met"
        out += [
            "",
            f"- {SIZES[-1]:,} messages take {ratio:.1f}× the time of {SIZES[0]:,} (target: "
            f"at most {TARGET:.0f}×, linear in the transcript: {state})",
        ]
    return out
