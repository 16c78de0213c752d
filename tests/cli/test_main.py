"""What every subcommand shares, seen through ``main``: the version and help, reading a history
file, argument types, and each failure a user can cause as one line on stderr and exit code 2."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

import synopsis
from synopsis.cli import main
from tests.cli.helpers import CODEX

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        (None, [], "no such file"),
        ("", [], "is empty"),
        ("{not json", [], "is not JSON"),
        ('{"a": 1}\n{"b": 2', [], "is not JSON"),
        ('{"hello": "world"}', [], "must hold 'messages', 'input' or 'contents'"),
        ('[{"role": "wizard", "content": "x"}]', [], "unknown role 'wizard'"),
        ("[1, 2]", [], "JSON objects"),
        ("[]", ["--window", "0"], "expected a positive number"),
        ("[]", ["--model"], "expected one argument"),
        ("[]", ["--provider", "bedrock"], "invalid choice"),
        ("[" * 100_000 + "]" * 100_000, [], "nested too deeply"),
        ('[{"role": "user", "content": "x", "n": ' + "9" * 5000 + "}]", [], "cannot read"),
        ('{"a": 1}\n' + "[" * 100_000 + "]" * 100_000, [], "nested too deeply"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, content, args, expected, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.json"
    if content is not None:
        path.write_text(content)
    assert main(["inspect", str(path), *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("synopsis: error: ")
    assert expected in lines[0]


def test_directory_and_missing_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main([]) == 2
    assert "required" in capsys.readouterr().err


def test_lone_surrogates_in_a_history_print_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.json"
    path.write_text('[{"role": "user", "content": "bad \\ud800 text"}]')
    assert main(["inspect", str(path)]) == 0, capsys.readouterr().err
    assert "\\ud800" in capsys.readouterr().out


def test_a_file_that_is_not_utf8_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin1.json"
    raw = '[{"role": "user", "content": "café"}]'.encode("latin-1")
    path.write_bytes(raw)
    assert main(["inspect", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"synopsis: error: cannot read {path}: 'utf-8' codec can't decode byte 0xe9 "
        f"in position {raw.index(0xE9)}: invalid continuation byte\n"
    )


def test_blank_lines_in_jsonl_are_skipped_but_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"role": "user", "content": "a"}\n\n  \n{"role": "assistant", "content": "b"}\n'
    )
    assert main(["inspect", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["message_count"] == 2
    assert report["problems"] == []
    path.write_text('{"role": "user", "content": "a"}\n\n{"role": oops}\n')
    assert main(["inspect", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"synopsis: error: {path}:3 is not JSON: Expecting value: line 1 column 10\n"
    )


@pytest.mark.parametrize(
    ("args", "detail"),
    [
        (["--window", "abc"], "argument --window: expected a whole number, got 'abc'"),
        (["--window", "-5"], "argument --window: expected a positive number, got -5"),
        (["--top", "1.5"], "argument --top: expected a whole number, got '1.5'"),
    ],
)
def test_window_and_top_must_be_positive_whole_numbers(
    args: list[str], detail: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(CODEX), *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"synopsis: error: {detail}\n"


def test_main_runs_with_streams_that_are_not_text_files(tmp_path: Path) -> None:
    # Called from a program that collects the output in memory: nothing to reconfigure.
    path = tmp_path / "h.json"
    path.write_text('[{"role": "user", "content": "bad \\ud800 text"}]')
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["inspect", str(path), "--json"]) == 0
        assert main(["inspect", str(tmp_path / "missing.json")]) == 2
    assert json.loads(out.getvalue())["message_count"] == 1
    assert err.getvalue() == f"synopsis: error: no such file: {tmp_path / 'missing.json'}\n"


def test_version_and_help_read_as_plain_words(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"synopsis {synopsis.__version__}\n"
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert "``" not in shown
    assert "context window" in shown


def test_a_broken_json_file_says_what_and_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.json"
    path.write_text('[{"role": "user", "content": "hi', encoding="utf-8")
    assert main(["inspect", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"synopsis: error: {path} is not JSON or JSONL: "
        "Unterminated string starting at line 1 column 30\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["replay", str(CODEX), "--model", "gpt-4o", "--window", "32000", "--json"],
        ["inspect", str(CODEX), "--json"],
        ["inspect", str(CODEX)],
    ],
)
def test_a_reader_that_stops_early_gets_no_traceback(args: list[str]) -> None:
    # `synopsis … | head -1`: the reader leaves while the command still writes.
    with subprocess.Popen(
        [sys.executable, "-m", "synopsis.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        assert child.stdout.read(1)
        child.stdout.close()
        err = child.stderr.read().decode()
        code = child.wait(timeout=120)
    assert "Traceback" not in err
    assert err == ""
    assert code in (0, 1, 141)


def test_a_closed_pipe_ends_the_command_quietly_with_the_shells_code() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    with (
        open(write, "w", encoding="utf-8") as closed,
        contextlib.redirect_stdout(closed),
    ):
        code = main(["inspect", str(CODEX), "--json"])
        # What was still buffered went to the null device, not to the closed pipe.
        closed.write("more")
        closed.flush()
    assert code == 141
