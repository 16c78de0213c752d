"""The throwaway PostgreSQL server the tests and benchmarks start: it starts, serves fresh
databases, says why when it cannot start, and stops, leaving no process or folder behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from synopsis.testing.postgres import (
    EmbeddedPostgres,
    PostgresUnavailableError,
    server_binaries,
    stop_server,
)
from tests.unmeasured import unmeasured_environ

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="only root is refused by PostgreSQL")


def _gone(pid: int) -> bool:
    """Ended: no such process, or a zombie nobody has reaped yet."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_server_starts_serves_fresh_databases_and_stops() -> None:
    with EmbeddedPostgres() as server:
        assert server.process is not None
        assert server.folder is not None
        pid, folder = server.process.pid, server.folder
        first, second = server.create_database(), server.create_database("named")
        assert first != second
        assert second.endswith("/named")
        with psycopg.connect(first) as db:
            assert db.execute("SELECT current_setting('fsync')").fetchone() == ("off",)
    assert _gone(pid)
    assert not folder.exists()
    server.stop()  # a second stop does nothing


def test_binaries_that_are_missing_are_named() -> None:
    with pytest.raises(PostgresUnavailableError, match="no_such_package is not installed"):
        server_binaries("no_such_package")
    with pytest.raises(PostgresUnavailableError, match="no server binaries"):
        server_binaries("tests")
    assert (server_binaries() / "initdb").is_file()


@root_only
def test_a_server_run_as_root_is_refused_with_initdbs_reason() -> None:
    server = EmbeddedPostgres(user=None)
    with pytest.raises(PostgresUnavailableError, match=r"initdb failed: .*root"):
        server.start()
    assert server.folder is None


def test_a_server_that_exits_at_start_says_why() -> None:
    server = EmbeddedPostgres(settings={"shared_buffers": "plenty"})
    with pytest.raises(PostgresUnavailableError, match=r"exited at start: .*shared_buffers"):
        server.start()
    assert server.process is None
    assert server.folder is None


def test_a_server_that_does_not_answer_in_time_is_stopped() -> None:
    server = EmbeddedPostgres(startup_seconds=0)
    with pytest.raises(PostgresUnavailableError, match="did not answer within 0 s"):
        server.start()
    assert server.process is None
    assert server.folder is None


def _stubborn(tmp_path: Path) -> subprocess.Popen[bytes]:
    """A process that ignores SIGINT, as a server that will not shut down."""
    ready = tmp_path / "ready"
    code = (
        "import signal, sys, time, pathlib; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        f"pathlib.Path({str(ready)!r}).touch(); time.sleep(60)"
    )
    process = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 20
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return process


def test_stop_server_kills_what_ignores_a_fast_shutdown(tmp_path: Path) -> None:
    folder = tmp_path / "server"
    folder.mkdir()
    process = _stubborn(tmp_path)
    started = time.monotonic()
    stop_server(process.pid, folder, grace=0.3)
    assert time.monotonic() - started >= 0.3
    assert _gone(process.pid)
    process.wait(5)  # reaped already: nothing to wait for
    assert not folder.exists()


def test_stop_server_stops_a_server_another_process_started(tmp_path: Path) -> None:
    """The run's last step stops the server an xdist worker started: not its child."""
    code = (
        "import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', "
        "'import time; time.sleep(60)'], start_new_session=True, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(child.pid)"
    )
    # Unmeasured: a child that coverage measures loses a SIGINT come while coverage starts in
    # it, and this one is signalled at once: it outlived the ten seconds' grace.
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=unmeasured_environ(),
    )
    pid = int(out.stdout)
    assert not _gone(pid)
    stop_server(pid, tmp_path / "absent")
    assert _gone(pid)
    stop_server(pid, tmp_path / "absent")  # already gone: nothing to do


def test_a_process_that_was_reaped_is_not_alive() -> None:
    from synopsis.testing.postgres import _alive  # noqa: PLC0415 - the check stop_server makes

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    assert not _alive(process.pid)
