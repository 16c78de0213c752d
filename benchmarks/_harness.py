"""What every benchmark shares: the collector-off timing of one call (plain or on an event
loop), quantiles, the figures and tables of the reports, when and on what a run was measured
(the machine, its load, the versions installed), and the processes a benchmark starts (a free
port, a server in a child process, the installed ``synopsis`` command).

Only what is the same in every benchmark is here; what each one measures, and how it words its
report, stays in its own module.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
"""The repository: where a child process runs the benchmarks from."""


# -- timing -----------------------------------------------------------------------------------


def timed(call: Callable[[], T]) -> tuple[float, T]:
    """Seconds of one call and its value, the collector off (as timeit has it): a collection
    that another path's garbage started would land on whichever call runs then."""
    gc.disable()
    try:
        start = time.perf_counter()
        out = call()
        return time.perf_counter() - start, out
    finally:
        gc.enable()


def timed_on(loop: asyncio.AbstractEventLoop, call: Callable[[], Awaitable[T]]) -> tuple[float, T]:
    """:func:`timed` for a coroutine, run to its end on ``loop``."""
    gc.disable()
    try:
        start = time.perf_counter()
        out = loop.run_until_complete(call())
        return time.perf_counter() - start, out
    finally:
        gc.enable()


def quantile(samples: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 to 1) of ``samples``, interpolated between neighbours."""
    ordered = sorted(samples)
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


# -- the reports ------------------------------------------------------------------------------


def ms(value: float) -> str:
    """Milliseconds as the tables show them: two decimals, whole from 100."""
    return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"


def figure(value: float) -> str:
    """Milliseconds to three significant digits, whole from 100 (the adapters' tables)."""
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def table(columns: Sequence[str], rows: Iterable[Sequence[str]], *, left: int = 0) -> list[str]:
    """A markdown table's lines: the first ``left`` columns (names) aligned left, the others
    (counts and figures) right."""
    rule = "---|" * left + "---:|" * (len(columns) - left)
    return [
        "| " + " | ".join(columns) + " |",
        "|" + rule,
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def now() -> str:
    """When a run starts, as its report states it."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def load_average() -> float:
    """The machine's one-minute load average (how many processes wanted a core): every
    figure is only as quiet as the machine was. NaN where the system does not say."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def machine() -> str:
    """The platform and its CPUs, with the processor's model where ``/proc`` names it."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    cpus = os.cpu_count() or 0
    return f"`{platform.platform()}`, {cpus} CPUs" + (f" ({model})" if model else "")


def versions(*names: str) -> dict[str, str]:
    """The version of each distribution of ``names`` that is installed."""
    found = {}
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


def listed(found: Mapping[str, str]) -> str:
    """``name version`` of each, comma-separated."""
    return ", ".join(f"{n} {v}" for n, v in found.items())


def write(path: Path | None, text: str) -> None:
    """The report to ``path`` (nowhere if ``None``), saying which file it went to."""
    if path is not None:
        path.write_text(text, encoding="utf-8")
        print(f"written: {path.name}")


# -- processes --------------------------------------------------------------------------------


def listening_at(said: str) -> str:
    """The root URL that ``synopsis serve --port 0``'s start-up line names in ``said`` (its
    stderr so far), or "" before the line is written. The command takes the free port itself:
    a port found free here could be taken by another process before the command binds it."""
    for line in said.splitlines():
        if line.startswith("synopsis serve: listening on "):
            return line.split()[4]
    return ""


def synopsis_command() -> list[str]:
    """The installed ``synopsis`` command of the environment running the benchmark, as a
    user runs it."""
    found = shutil.which("synopsis", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "synopsis.cli"]


class Child:
    """``with Child("benchmarks.module", *args) as url:``: ``python -m benchmarks.module
    *args`` in a process of its own, a server that prints its root URL on its first line and
    stops when its stdin closes; so that its work does not share the client's interpreter
    lock, as a server on a machine never does. ``name`` says which server failed to start."""

    def __init__(self, module: str, *args: str, name: str = "") -> None:
        self.name = name or module
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __enter__(self) -> str:
        assert self.process.stdout is not None
        url = self.process.stdout.readline().strip()
        if not url.startswith("http://"):
            self.__exit__()
            raise RuntimeError(f"the {self.name} process did not start")
        return url

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
