"""The plumbing of the parts that run ``synopsis serve``: the replicas as processes of their
own, the CPU time of a process from ``/proc``, and what PostgreSQL itself counts (the
statements in its log, its WAL position, the connections open).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import httpx2
import psycopg

from benchmarks._harness import listening_at, synopsis_command
from benchmarks._upstream import MODEL

if TYPE_CHECKING:
    from collections.abc import Iterator


_STATEMENT = re.compile(r"\[(\d+)\] LOG:  (?:statement|execute [^:]*): (.*)")
"""A statement's first line in the log, after the default prefix (time, ``[pid]``)."""


# -- processes: CPU time and the replicas -----------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name (None where there is none)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds the process has used (user and system), its threads with it."""
    fields = _stat(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / _TICK


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of a server process and its children: the live ones' own, and those ended
    (the server waited for them) as the kernel added them to the server's."""
    fields = _stat(pid)
    if fields is None:
        return None
    total = sum(int(fields[n]) for n in (11, 12, 13, 14)) / _TICK
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            child = _stat(int(entry.name))
            if child is not None and child[1] == str(pid):
                total += (int(child[11]) + int(child[12])) / _TICK
    return total


class Replica:
    """``synopsis serve`` in a process of its own on a free port of 127.0.0.1, stopped by its
    process id (Ctrl-C's signal, then a kill after 15 s)."""

    def __init__(self, upstream: str, store: str, window: int) -> None:
        self.url = ""  # known from the command's start-up line (it takes a free port itself)
        self.err: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYNOPSIS_")}
        self.process = subprocess.Popen(
            [
                *synopsis_command(),
                "serve",
                *("--host", "127.0.0.1", "--port", "0"),
                *("--upstream-openai", upstream, "--store", store, "--summarizer", "rules"),
                # The window given for the model, not --window: a model named with its own
                # window is not recalibrated from the upstream's usage figures, and this
                # upstream's are rough (bytes / 4).
                *("--model-window", f"{MODEL}={window}", "--timeout", "120"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.err,
            env=env,
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"synopsis serve exited: {self.stderr()[-2000:]}")
            self.url = self.url or listening_at(self.stderr())
            with contextlib.suppress(httpx2.TransportError):
                if self.url and httpx2.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"synopsis serve did not start: {self.stderr()[-2000:]}")
            time.sleep(0.05)

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.err.close()


@contextlib.contextmanager
def replicas(count: int, upstream: str, store: str, window: int) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    try:
        for _ in range(count):
            started.append(Replica(upstream, store, window))
        for replica in started:
            replica.wait_ready()
        yield started
    finally:
        for replica in started:
            replica.stop()


# -- PostgreSQL's own counts ------------------------------------------------------------------


def quiet(url: str) -> psycopg.Connection[Any]:
    """A connection whose own statements stay out of the statement log."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SET log_statement = 'none'")
    return conn


def wal_position(url: str) -> int:
    """Bytes of WAL the server has written since it began (all databases)."""
    with quiet(url) as conn:
        row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").fetchone()
    return int(row[0]) if row else 0


def wait_disconnected(url: str, timeout: float = 15.0) -> None:
    """Until no other connection to the database is left (the statements of a later one are
    then the only ones the log shows for it)."""
    deadline = time.monotonic() + timeout
    with quiet(url) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND backend_type = 'client backend'"
            ).fetchone()
            if row is None or row[0] == 0:
                return
            time.sleep(0.05)
    raise RuntimeError("connections to the benchmark's database did not close")


def log_statements(url: str) -> None:
    """Every statement of every later connection to the database goes to the server's log,
    without its parameters (a save's would be its messages)."""
    with quiet(url) as conn:
        row = conn.execute("SELECT current_database()").fetchone()
        assert row is not None
        name = str(row[0]).replace('"', '""')
        conn.execute(f"ALTER DATABASE \"{name}\" SET log_statement = 'all'")
        conn.execute(f'ALTER DATABASE "{name}" SET log_parameter_max_length = 0')


STATEMENT_KINDS = (
    "lock",
    "try-lock",
    "unlock",
    "read session",
    "read other",
    "insert messages",
    "insert summaries",
    "upsert session",
    "begin",
    "commit",
    "other",
)


def classify(statement: str) -> str:
    """The kind (one of :data:`STATEMENT_KINDS`) of a statement as the log shows it."""
    s = statement.strip()
    found = "other"
    if "pg_try_advisory_lock(" in s:
        found = "try-lock"
    elif "pg_advisory_unlock(" in s:
        found = "unlock"
    elif "pg_advisory_lock(" in s or "pg_advisory_xact_lock(" in s:
        found = "lock"
    elif s.startswith("INSERT INTO synopsis_messages"):
        found = "insert messages"
    elif s.startswith("INSERT INTO synopsis_summaries"):
        found = "insert summaries"
    elif s.startswith("INSERT INTO synopsis_sessions"):
        found = "upsert session"
    elif s.upper() == "BEGIN":
        found = "begin"
    elif s.upper() in ("COMMIT", "ROLLBACK"):
        found = "commit"
    elif s.startswith("SELECT") and "FROM synopsis_sessions" in s:
        found = "read session"
    elif s.startswith("SELECT") and "synopsis_" in s:
        found = "read other"
    return found


@dataclass
class Statements:
    kinds: Counter[str]
    """Statements by kind (:data:`STATEMENT_KINDS`)."""
    transactions: int
    """Each statement outside BEGIN and COMMIT is one (the stores run in autocommit)."""

    @property
    def total(self) -> int:
        return sum(self.kinds.values())

    @property
    def refused(self) -> int:
        """Lock attempts that found the session's lock taken: tries not followed by an
        unlock (every lock taken is let go, once)."""
        k = self.kinds
        return max(0, k["try-lock"] + k["lock"] - k["unlock"])


def count_statements(text: str) -> Statements:
    """The statements of a stretch of the server's log (a statement's continuation lines are
    not counted), and the transactions they made, followed connection by connection."""
    kinds: Counter[str] = Counter()
    inside: set[str] = set()
    transactions = 0
    for match in _STATEMENT.finditer(text):
        pid, kind = match.group(1), classify(match.group(2))
        kinds[kind] += 1
        if kind == "begin":
            inside.add(pid)
            transactions += 1
        elif kind == "commit":
            inside.discard(pid)
        elif pid not in inside:
            transactions += 1
    return Statements(kinds, transactions)


def read_log(path: Path, offset: int) -> Statements:
    with path.open("rb") as log:
        log.seek(offset)
        return count_statements(log.read().decode(errors="replace"))


class Sampler:
    """The most connections open to the database at once, looked at ten times a second."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with quiet(self.url) as conn:
            while not self._stop.wait(0.1):
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend'"
                ).fetchone()
                self.peak = max(self.peak, int(row[0]) if row else 0)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
