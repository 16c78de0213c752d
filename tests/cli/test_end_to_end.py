"""The command as a user runs it, in a process of its own: the installed ``synopsis`` script and
``python -m synopsis.cli``, their output read through a pipe. Everything else is tested in
process through ``main``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import synopsis
from tests.cli.helpers import TAU, lines

SCRIPT = shutil.which("synopsis", path=str(Path(sys.executable).parent)) or "synopsis"


def run(*command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def test_the_installed_command_says_its_version() -> None:
    done = run(SCRIPT, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"synopsis {synopsis.__version__}\n"


def test_compact_to_a_store_then_read_it_back_through_a_pipe(tmp_path: Path) -> None:
    out, db = tmp_path / "out.jsonl", tmp_path / "s.db"
    done = run(
        SCRIPT, "compact", str(TAU), "--window", "8000", "--model", "gpt-4o",
        "--out", str(out), "--store", str(db), "--session", "demo",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "saved to the store" in done.stdout
    assert len(lines(out)) < len(lines(TAU))
    # The module form is the same command; a pipe gets JSON, and the search's plain words.
    module = (sys.executable, "-m", "synopsis.cli")
    recalled = run(*module, "recall", "--store", str(db), "--session", "demo", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert all(r["item"] in lines(TAU) for r in json.loads(recalled.stdout))
    found = run(SCRIPT, "search", "--store", str(db), "--session", "demo", "reservation")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("1. score ")
    assert "**" not in found.stdout
    assert "\033[" not in found.stdout


def test_an_error_is_one_line_on_stderr_without_a_traceback(tmp_path: Path) -> None:
    done = run(SCRIPT, "recall", "--store", str(tmp_path / "none.db"), "--session", "demo")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"synopsis: error: no such store: {tmp_path / 'none.db'}\n"
    assert not (tmp_path / "none.db").exists()
