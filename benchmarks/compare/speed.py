"""Speed and scale: the cost of one call at 100, 1k, 10k and 100k messages, and its peak memory.

Each (system, size, mode) runs in a child process of its own, so that one system's caches,
garbage and imports never weigh on another's figures, and so that a call that would run for
hours can be stopped. Every size of every system is timed the same way: :data:`CALLS` calls in
the child, the first one (cold: nothing of the system ran in the process before it but its
import and the conversion of the history to its own objects, so its tokenizer, caches and lazy
imports are paid there) reported apart from the others (warm: their median and their best). The
history's size in tokens, which the budget is made from, is counted by the parent process, so
that no counter a system shares with the harness is warm before its first call. A full garbage
collection precedes each call, untimed: the collector's work during a call is the call's own,
not what the harness or the call before left behind. Each cell says the CPU time of its calls
besides their wall time (other processes on a busy machine add to the wall time, not to the
CPU time), how loaded the machine was (the one-minute load average when the child began and
ended) and the peak memory of its calls (the most that the process's resident set, at its
highest during a call, rose above what it held when the call began: the system's own
allocations, native ones included). The cells run size by size, every system at one size
before any at the next, so that a change in the load falls on every system alike.

Modes:

- ``decide``: the history is under the trigger, as on most turns of an agent loop. The first
  call gets the history; each later one the history grown by one new user message (converted
  to the system's own objects outside the timing). Beside synopsis, three variants of it
  decide too (see :data:`VARIANTS`): with a session in a SQLite file (``synopsis+sqlite``);
  with the history decoded afresh from JSON on every call, as an HTTP proxy or a per-request
  hook passes it (``synopsis+fresh``); and with a session whose summary was made by a forced
  compaction in the first call, the client sending its whole uncompacted history again on
  every call after it (``synopsis+resent``).
- ``plan``: the history is over the trigger: the system decides, picks the cut, summarizes
  with the instant fake summarizer and rebuilds the history. A fresh copy each call (the same
  messages: what a system keeps of them from one call to the next is what warm means).

A call still running after ``LIMIT`` seconds (the first call: twice that, for what a process
pays once, a whole history's tokens counted among it) is stopped and reported as a lower bound.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._harness import load_average
from benchmarks.compare.inputs import build_history, load_transcripts, next_item
from benchmarks.compare.judge import OutOfTime, call_step
from benchmarks.compare.systems import Budget

if TYPE_CHECKING:
    from collections.abc import Callable

    from benchmarks.compare.systems import Items

SIZES = (100, 1_000, 10_000, 100_000)
LIMIT = 60.0
CALLS = {"decide": 8, "plan": 6}
"""Calls per child, at every size and for every system: the first (cold) and the warm rest."""
VARIANTS = (
    ("sqlite", "synopsis+sqlite", "with a SQLite store"),
    ("fresh", "synopsis+fresh", "with the history decoded from JSON each call"),
    ("resent", "synopsis+resent", "with the whole history resent after a compaction"),
)
"""synopsis deciding in the ways an agent may call it besides appending to one list: the key
in the results, the registry's name, and what the progress line says."""


def size_tokens(items: Items) -> int:
    """The tokens of ``items`` as the harness counts them (o200k), with a counter of its own:
    synopsis's shared counters stay as cold as every other system's."""
    from synopsis import decode  # noqa: PLC0415 - the harness's counting, not a system's
    from synopsis.tokens import TiktokenCounter  # noqa: PLC0415

    return TiktokenCounter().count_messages(decode(items, "openai").messages)


def budget_for(mode: str, tokens: int) -> Budget:
    """Far above the history when deciding; over half of it when planning a compaction."""
    if mode == "decide":
        return Budget(trigger=10 * tokens, keep=tokens // 10, window=20 * tokens)
    return Budget(trigger=tokens // 2, keep=tokens // 10, window=tokens)


def _status(field: str) -> int | None:
    """A size field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``), in bytes; None where
    there is no such file."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return None if found is None else int(found.group(1)) * 1024


def _peak_from_here() -> Callable[[], int]:
    """A function giving how far the resident set has risen, at its highest, above what it is
    now. Linux forgets the highest so far when asked (``/proc/self/clear_refs``), so that what
    the harness built and let go of before is not counted; elsewhere the high-water mark of
    the process's life is the base."""
    now = _status("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        now = None
    if now is not None:
        return lambda: max(0, (_status("VmHWM") or 0) - now)
    before = _max_rss()
    return lambda: max(0, _max_rss() - before)


def _max_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # kilobytes on Linux


def measure(
    name: str, size: int, mode: str, tokens: int | None = None, limit: float = LIMIT
) -> dict[str, Any]:
    """:data:`CALLS` calls of ``name`` at ``size`` messages in ``mode``, in this process.
    ``tokens``: the history's size as the parent counted it (counted here when not given)."""
    from benchmarks.compare.registry import create  # noqa: PLC0415 - one system per child

    load = [load_average()]
    transcripts = load_transcripts()
    items = build_history(transcripts, size)
    if tokens is None:
        tokens = size_tokens(items)
    system = create(name)
    budget = budget_for(mode, tokens)
    samples: list[float] = []
    cpu: list[float] = []
    compacted = 0
    history = list(items)
    native = system.native(history)
    peaks: list[int] = []
    try:
        for k in range(CALLS[mode]):
            if k:
                if mode == "decide":
                    history = [*history, next_item(transcripts, k)]
                del native  # one copy of the history at a time, as the baseline had
                native = system.native(history)
            gc.collect()  # no call pays for the garbage of the harness or of the call before
            peak = _peak_from_here()  # after the conversion, which is the harness's
            started = time.process_time()
            result, seconds = call_step(system, native, budget, limit * (1 if k else 2))
            cpu.append(time.process_time() - started)
            peaks.append(peak())
            samples.append(seconds)
            compacted += result is not None
    except OutOfTime:
        return {"messages": len(items), "tokens": tokens, "timeout": limit}
    warm = samples[1:]
    out: dict[str, Any] = {
        "messages": len(items),
        "tokens": tokens,
        "cold_ms": samples[0] * 1e3,
        "median_ms": statistics.median(warm) * 1e3,
        "min_ms": min(warm) * 1e3,
        "cold_cpu_ms": cpu[0] * 1e3,
        "median_cpu_ms": statistics.median(cpu[1:]) * 1e3,
        "calls": len(warm),
        "compacted": compacted,
        "peak_mib": max(peaks) / 2**20,
        "load": [*load, load_average()],
    }
    first = getattr(system, "first_resent_ms", None)
    if first is not None:  # the request right after the compaction, made in the first call
        out["first_ms"] = first
    return out


def in_child(name: str, size: int, mode: str, tokens: int, limit: float = LIMIT) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter; a child that dies says why. A system that
    catches the alarm and carries on is stopped from outside: setting up the largest history
    takes about a minute, and the calls get their limit each."""
    command = [
        sys.executable,
        *("-m", "benchmarks.compare.speed", name, str(size), mode, "--tokens", str(tokens)),
    ]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=limit * (CALLS[mode] + 2) + 300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": "the child process did not finish"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail}"[:300]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _shown(cell: dict[str, Any]) -> str:
    if "median_ms" not in cell:
        return json.dumps(cell)
    return (
        f"first {cell['cold_ms']:,.2f} ms, then {cell['median_ms']:,.2f} ms "
        f"(best {cell['min_ms']:,.2f}; CPU {cell['cold_cpu_ms']:,.2f} and "
        f"{cell['median_cpu_ms']:,.2f}), peak {cell['peak_mib']:,.1f} MiB, load "
        + " to ".join(f"{x:.1f}" for x in cell["load"])
    )


def run(names: list[str], progress: Callable[[str], None]) -> dict[str, Any]:
    transcripts = load_transcripts()
    counted = {size: size_tokens(build_history(transcripts, size)) for size in SIZES}
    out: dict[str, Any] = {
        "limit_s": LIMIT,
        "sizes": list(SIZES),
        "calls": CALLS,
        "cores": os.cpu_count(),
        "load": [load_average()],
    }
    systems: dict[str, Any] = {name: {"decide": {}, "plan": {}} for name in names}
    # Size by size, the systems one after another: a change in the machine's load between
    # two cells falls on every system at about the same sizes, not on one system's all.
    for mode in ("decide", "plan"):
        stopped: set[str] = set()
        for size in SIZES:
            for name in names:
                if name in stopped:
                    systems[name][mode][str(size)] = {"skipped": "a smaller size ran out of time"}
                    continue
                found = in_child(name, size, mode, counted[size])
                systems[name][mode][str(size)] = found
                if "timeout" in found or "error" in found:
                    stopped.add(name)
                progress(f"speed: {name} {mode} {size:,}: {_shown(found)}")
    out["systems"] = systems
    if "synopsis" in names:
        for key, variant, what in VARIANTS:
            out[key] = _variant(variant, what, counted, progress)
    out["load"].append(load_average())
    return out


def _variant(
    name: str, what: str, counted: dict[int, int], progress: Callable[[str], None]
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for size in SIZES:
        found[str(size)] = cell = in_child(name, size, "decide", counted[size])
        progress(f"speed: synopsis {what} decide {size:,}: {_shown(cell)}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("system")
    parser.add_argument("size", type=int)
    parser.add_argument("mode", choices=tuple(CALLS))
    parser.add_argument("--tokens", type=int, help="the history's tokens, as the parent counted")
    args = parser.parse_args()
    print(json.dumps(measure(args.system, args.size, args.mode, args.tokens)))


if __name__ == "__main__":
    main()
