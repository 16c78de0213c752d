"""``synopsis replay`` over long transcripts: the command a person runs on a recorded session,
on histories of 10k and 100k messages built from the bundled transcripts, into a 32k window.
Each size runs the installed command in a process of its own, on a JSONL file, with ``--json``
(so its stdout is the report), once, each size the same way; the wall time includes starting
the interpreter, reading the file and writing the report. Beside it: the CPU time the process
used (which other processes on a busy machine do not add to, as they add to the wall time),
its peak resident memory, and the machine's load average when it began and ended. The replay
is linear in the transcript when the 100k run takes at most ten times the 10k one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._harness import load_average, synopsis_command
from benchmarks.compare.inputs import build_history

if TYPE_CHECKING:
    import resource
    from collections.abc import Callable

    from benchmarks.compare.systems import Items

SIZES = (10_000, 100_000)
WINDOW = 32_000
MODEL = "gpt-4o"
TARGET = 10.0
"""The 100k replay may take at most this many times the 10k one."""
LIMIT = 3_600.0
"""Seconds a replay may run before it is stopped and reported as a lower bound."""


def _waited(
    args: list[str], limit: float
) -> tuple[int | None, bytes, bytes, resource.struct_rusage]:
    """``args`` run to their end (killed after ``limit`` seconds: no exit code then), their
    output, and what the kernel counted of that process alone (its CPU time, its peak
    resident set)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(args, stdout=out, stderr=err)
        stopped = threading.Event()

        def stop() -> None:
            stopped.set()
            process.kill()

        timer = threading.Timer(limit, stop)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (None if stopped.is_set() else process.returncode), out.read(), err.read(), usage


def replay_once(items: Items, limit: float = LIMIT) -> dict[str, Any]:
    """One ``synopsis replay`` of ``items``: its wall and CPU time, peak memory, the load
    around it, and what its report says."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.jsonl"
        path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
        args = [*synopsis_command(), "replay", str(path), "--model", MODEL, "--window", str(WINDOW)]
        load = [load_average()]
        started = time.perf_counter()
        code, out, err, usage = _waited([*args, "--json"], limit)
        seconds = time.perf_counter() - started
        load.append(load_average())
    if code is None:
        return {"messages": len(items), "timeout": limit}
    if code != 0:
        tail = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return {"messages": len(items), "error": f"exit {code}: {tail}"[:300]}
    report = json.loads(out)
    peak = usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024
    return {
        "messages": len(items),
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_mib": peak / 2**20,
        "load": load,
        "compactions": report["compactions"],
        "completed": report["completed"],
        "saved_share": report["saved_share"],
    }


def run(transcripts: dict[str, Items], progress: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {"window": WINDOW, "model": MODEL, "sizes": {}}
    for size in SIZES:
        found = replay_once(build_history(transcripts, size))
        out["sizes"][str(size)] = found
        shown = (
            f"{found['seconds']:.1f} s ({found['cpu_seconds']:.1f} s of CPU), peak "
            f"{found['peak_mib']:,.0f} MiB, load {found['load'][0]:.1f} to {found['load'][1]:.1f}"
            if "seconds" in found
            else str(found)
        )
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


def _cpu_ratio(results: dict[str, Any]) -> float | None:
    sizes = results["scale"]["sizes"]
    small = sizes.get(str(SIZES[0]), {}).get("cpu_seconds")
    large = sizes.get(str(SIZES[-1]), {}).get("cpu_seconds")
    return None if small is None or large is None else large / small


def lines(results: dict[str, Any]) -> list[str]:
    scale = results["scale"]
    out = [
        f"## `synopsis replay` over long transcripts ({scale['window']:,}-token window, "
        f"model {scale['model']})",
        "",
        "The command itself on a JSONL file, in a process of its own, once per size (starting "
        "the interpreter, reading the file and writing the JSON report included). CPU time: "
        "what the process itself used, which a busy machine does not add to; peak memory: its "
        "highest resident set; load: the machine's one-minute load average when it began and "
        "ended.",
        "",
        "| messages | wall time | CPU time | per 1,000 messages | peak memory | load "
        "| compactions | tokens saved |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, found in scale["sizes"].items():
        if "seconds" not in found:
            why = f"> {found['timeout']:,.0f} s" if "timeout" in found else found.get("error")
            out.append(f"| {int(size):,} | {why} | | | | | | |")
            continue
        per = found["seconds"] / int(size) * 1_000
        cpu = found.get("cpu_seconds")
        peak = found.get("peak_mib")
        load = found.get("load")
        out.append(
            f"| {int(size):,} | {found['seconds']:,.1f} s "
            f"| {'–' if cpu is None else f'{cpu:,.1f} s'} | {per:.2f} s "
            f"| {'–' if peak is None else f'{peak:,.0f} MiB'} "
            f"| {'–' if not load else ' → '.join(f'{x:.1f}' for x in load)} "
            f"| {found['compactions']:,} | {found['saved_share']:.1%} |"
        )
    ratio, met = verdict(results)
    if ratio is not None:
        state = "met" if met else "NOT met"
        cpu_ratio = _cpu_ratio(results)
        cpu = "" if cpu_ratio is None else f"; {cpu_ratio:.1f}× its CPU time"
        out += [
            "",
            f"- {SIZES[-1]:,} messages take {ratio:.1f}× the time of {SIZES[0]:,}{cpu} "
            f"(target: at most {TARGET:.0f}×, linear in the transcript: {state})",
        ]
    return out
