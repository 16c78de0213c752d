"""Speed and scale: the cost of one call at 100, 1k, 10k and 100k messages, and peak memory.

Each (system, size, mode) runs in a child process of its own, so that one system's caches,
garbage and imports never weigh on another's figures, and so that a call that would run for
hours can be stopped. Modes:

- ``decide``: the history is under the trigger, as on most turns of an agent loop. Each timed
  call gets the history grown by one new user message (converted to the system's own objects
  outside the timing), after one untimed warm-up call. Beside synopsis, three variants of it
  decide too (see :data:`VARIANTS`): with a session in a SQLite file (``synopsis+sqlite``);
  with the history decoded afresh from JSON on every call, as an HTTP proxy or a per-request
  hook passes it (``synopsis+fresh``); and with a session whose summary was made by a forced
  compaction in the warm-up call, the client sending its whole uncompacted history again on
  every call after it (``synopsis+resent``).
- ``plan``: the history is over the trigger: the system decides, picks the cut, summarizes
  with the instant fake summarizer and rebuilds the history. A fresh copy each call.
- ``memory``: one ``plan`` call at 10k messages under ``tracemalloc``: the peak of Python
  allocations during the call (tiktoken's native buffers are not seen, which favours nobody
  much: they are a few kilobytes per message being counted).

A call still running after ``LIMIT`` seconds is stopped and reported as a lower bound.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tracemalloc
from typing import TYPE_CHECKING, Any

from benchmarks.compare.inputs import build_history, load_transcripts, next_item
from benchmarks.compare.judge import OutOfTime, call_step, tokens
from benchmarks.compare.systems import Budget

if TYPE_CHECKING:
    from collections.abc import Callable

SIZES = (100, 1_000, 10_000, 100_000)
LIMIT = 60.0
REPEATS = {"decide": 7, "plan": 3}
MEMORY_SIZE = 10_000
VARIANTS = (
    ("sqlite", "synopsis+sqlite", "with a SQLite store"),
    ("fresh", "synopsis+fresh", "with the history decoded from JSON each call"),
    ("resent", "synopsis+resent", "with the whole history resent after a compaction"),
)
"""synopsis deciding in the ways an agent may call it besides appending to one list: the key
in the results, the registry's name, and what the progress line says."""


def measure(name: str, size: int, mode: str, limit: float = LIMIT) -> dict[str, Any]:
    from benchmarks.compare.registry import create  # noqa: PLC0415 - one system per child

    system = create(name)
    transcripts = load_transcripts()
    items = build_history(transcripts, size)
    size_tokens = tokens(items)
    if mode == "decide":
        budget = Budget(trigger=10 * size_tokens, keep=size_tokens // 10, window=20 * size_tokens)
    else:
        budget = Budget(trigger=size_tokens // 2, keep=size_tokens // 10, window=size_tokens)
    repeats = REPEATS.get(mode, 1) if size < 100_000 else 2
    inputs: list[Callable[[], Any]] = []
    if mode == "decide":
        grown = list(items)
        system.step(system.native(grown), budget)  # warm-up: caches, imports, first pass
        for k in range(repeats):
            grown = [*grown, next_item(transcripts, k)]
            inputs.append(functools.partial(system.native, grown))
    else:
        inputs = [lambda: system.native(items) for _ in range(max(1, repeats))]
    samples: list[float] = []
    compacted = 0
    peak = 0
    try:
        for make in inputs:
            native = make()
            if mode == "memory":
                tracemalloc.start()
            result, seconds = call_step(system, native, budget, limit)
            samples.append(seconds)
            if mode == "memory":
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            compacted += result is not None
    except OutOfTime:
        return {"messages": len(items), "tokens": size_tokens, "timeout": limit}
    out: dict[str, Any] = {
        "messages": len(items),
        "tokens": size_tokens,
        "median_ms": statistics.median(samples) * 1e3,
        "min_ms": min(samples) * 1e3,
        "calls": len(samples),
        "compacted": compacted,
    }
    if mode == "memory":
        out["peak_mib"] = peak / 2**20
    first = getattr(system, "first_resent_ms", None)
    if first is not None:  # the request right after the compaction, made in the warm-up
        out["first_ms"] = first
    return out


def in_child(name: str, size: int, mode: str, limit: float = LIMIT) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter; a child that dies says why. A system that
    catches the alarm and carries on is stopped from outside: setting up the largest history
    takes about a minute, and the calls get four times the limit."""
    command = [sys.executable, "-m", "benchmarks.compare.speed", name, str(size), mode]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=limit * 4 + 300, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": "the child process did not finish"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail}"[:300]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(names: list[str], progress: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {"limit_s": LIMIT, "sizes": list(SIZES), "systems": {}}
    for name in names:
        per: dict[str, Any] = {"decide": {}, "plan": {}}
        for mode in ("decide", "plan"):
            stopped = False
            for size in SIZES:
                if stopped:
                    per[mode][str(size)] = {"skipped": "a smaller size ran out of time"}
                    continue
                found = in_child(name, size, mode)
                per[mode][str(size)] = found
                stopped = "timeout" in found or "error" in found
                shown = found.get("median_ms")
                progress(
                    f"speed: {name} {mode} {size:,}: "
                    + (f"{shown:,.2f} ms" if shown is not None else json.dumps(found))
                )
        per["memory"] = in_child(name, MEMORY_SIZE, "memory")
        out["systems"][name] = per
    if "synopsis" in names:
        for key, variant, what in VARIANTS:
            out[key] = _variant(variant, what, progress)
    return out


def _variant(name: str, what: str, progress: Callable[[str], None]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for size in SIZES:
        found[str(size)] = cell = in_child(name, size, "decide")
        shown = cell.get("median_ms")
        progress(
            f"speed: synopsis {what} decide {size:,}: "
            + (f"{shown:,.2f} ms" if shown is not None else json.dumps(cell))
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("system")
    parser.add_argument("size", type=int)
    parser.add_argument("mode", choices=("decide", "plan", "memory"))
    args = parser.parse_args()
    print(json.dumps(measure(args.system, args.size, args.mode)))


if __name__ == "__main__":
    main()
