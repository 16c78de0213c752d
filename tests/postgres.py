"""One PostgreSQL server for the whole test run, shared by every xdist worker.

The first test that asks for it starts it (:class:`~synopsis.testing.postgres.EmbeddedPostgres`,
on 127.0.0.1), under a file lock in a folder the controlling process made for this run, and
writes where it is; the other workers read that. The controlling process stops it by its process
id when the run ends (``pytest_unconfigure`` in ``tests/conftest.py``). A test gets a database
of its own (``postgres_url``), dropped after it. Under ``CI=true`` a server that cannot start
fails the tests that need it; elsewhere they are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

from synopsis.testing.postgres import EmbeddedPostgres, PostgresUnavailableError, stop_server

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["RUN_FOLDER", "Server", "begin_run", "end_run", "postgres_url", "server"]

_STARTED: list[EmbeddedPostgres] = []
"""The server this worker started, held for the worker's life: the run's last step stops it
(a collected Popen of a running process would warn)."""

RUN_FOLDER = "PYTEST_POSTGRES_RUN"
"""The environment variable naming the run's folder (not SYNOPSIS_*: those are settings)."""


class Server:
    """The run's server as a test sees it: its port, and new databases on it."""

    def __init__(self, port: int) -> None:
        self._server = EmbeddedPostgres()
        self._server.port = port

    @property
    def url(self) -> str:
        return self._server.url

    def create_database(self) -> str:
        return self._server.create_database()

    def drop_database(self, url: str) -> None:
        """``url``'s database dropped, if no connection is open on it. Each database is a copy
        of the template, some three hundred files: the two hundred of a run, removed with the
        server's folder when the run ended, took 15 s after the last test on this machine's
        disk; dropped as each test ends, a few milliseconds each."""
        name = url.rsplit("/", 1)[1]
        with (
            psycopg.connect(self.url, autocommit=True) as admin,
            contextlib.suppress(psycopg.errors.ObjectInUse),
        ):
            admin.execute(f'DROP DATABASE "{name}"')


def begin_run() -> None:
    """In the controlling process, before any worker starts: the run's folder."""
    if RUN_FOLDER not in os.environ:
        os.environ[RUN_FOLDER] = tempfile.mkdtemp(prefix="synopsis-pgrun-")


def end_run() -> None:
    """In the controlling process, after every worker ended: the server stopped, if one was
    started, and the run's folder removed."""
    folder = os.environ.pop(RUN_FOLDER, None)
    if folder is None:
        return
    found = Path(folder) / "server.json"
    if found.exists():
        where = json.loads(found.read_text())
        stop_server(where["pid"], where["folder"])
    shutil.rmtree(folder, ignore_errors=True)


def _start(run: Path) -> int:
    """The server's port: started by the first caller of the run, read by the others."""
    with (run / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = run / "server.json"
        failed = run / "failed"
        if found.exists():
            return int(json.loads(found.read_text())["port"])
        if failed.exists():
            raise PostgresUnavailableError(failed.read_text())
        try:
            started = EmbeddedPostgres().start()
        except PostgresUnavailableError as exc:
            failed.write_text(str(exc))
            raise
        _STARTED.append(started)
        assert started.process is not None
        assert started.folder is not None
        found.write_text(
            json.dumps(
                {"port": started.port, "pid": started.process.pid, "folder": str(started.folder)}
            )
        )
        return started.port


@pytest.fixture(scope="session")
def server() -> Server:
    run = os.environ.get(RUN_FOLDER)
    try:
        if run is None:
            raise PostgresUnavailableError(f"{RUN_FOLDER} is not set: run the tests with pytest")
        port = _start(Path(run))
    except PostgresUnavailableError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL could not be started: {exc}")
        pytest.skip(f"PostgreSQL could not be started: {exc}")
    return Server(port)


@pytest.fixture
def postgres_url(server: Server) -> Iterator[str]:
    """A new, empty database on the run's server, dropped after the test when nothing holds
    it open still (a test that left a store open leaves its database to the run's end)."""
    url = server.create_database()
    yield url
    server.drop_database(url)
