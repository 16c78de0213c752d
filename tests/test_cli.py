from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import synopsis
from synopsis.cli import main

ROOT = Path(__file__).parent.parent
CODEX = ROOT / "examples" / "transcripts" / "codex-compaction-config-change.jsonl"
DANGLING = ROOT / "examples" / "transcripts" / "openhands-ponylang-ponyc-4593.jsonl"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user would run it."""
    exe = shutil.which("synopsis", path=str(Path(sys.executable).parent)) or "synopsis"
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, check=False)


def test_inspect_reports_counts_tools_window_and_validity() -> None:
    done = run("inspect", str(CODEX), "--model", "gpt-4o")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "openai history, 174 messages" in out
    assert "Tokens by role" in out
    assert "Tokens by tool" in out
    assert "Largest 5 messages" in out
    assert "128,000 tokens for gpt-4o" in out
    assert "valid for openai" in out


def test_inspect_json_matches_the_library() -> None:
    done = run("inspect", str(CODEX), "--model", "gpt-4o", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    items = [json.loads(line) for line in CODEX.read_text().splitlines()]
    assert report["total_tokens"] == synopsis.count_tokens(items, model="gpt-4o")
    assert report["message_count"] == len(items)
    assert report["window"] == synopsis.context_window("gpt-4o")
    assert sum(r["count"] for r in report["by_role"]) == len(items)
    calls = sum(len(m.get("tool_calls") or []) for m in items)
    assert sum(t["calls"] for t in report["by_tool"]) == calls
    assert report["problems"] == []


def test_inspect_lists_every_problem_for_a_stricter_provider(tmp_path: Path) -> None:
    broken = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "ghost", "content": "stray"},
    ]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    done = run("inspect", str(path))
    assert done.returncode == 0
    assert "1 problem(s) for openai" in done.stdout
    assert "[openai.C1]" in done.stdout
    done = run("inspect", str(CODEX), "--provider", "openai-strict", "--json")
    rules = [p["rule"] for p in json.loads(done.stdout)["problems"]]
    assert "openai-strict.system_position" in rules


def test_inspect_accepts_a_request_body(tmp_path: Path) -> None:
    body = {"system": "be brief", "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    assert main(["inspect", str(path), "--json"]) == 0


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
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, content, args, expected) -> None:
    path = tmp_path / "h.json"
    if content is not None:
        path.write_text(content)
    done = run("inspect", str(path), *args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("synopsis: error: ")
    assert expected in lines[0]


def test_directory_and_missing_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main([]) == 2
    assert "required" in capsys.readouterr().err


def test_unknown_model_uses_default_window(caplog: pytest.LogCaptureFixture) -> None:
    done = run("inspect", str(DANGLING), "--model", "no-such-model-9", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["window"] == 200_000


def test_lone_surrogates_in_a_history_print_escaped(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text('[{"role": "user", "content": "bad \\ud800 text"}]')
    done = run("inspect", str(path))
    assert done.returncode == 0, done.stderr
    assert "\\ud800" in done.stdout


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


def test_window_and_top_shape_the_report(tmp_path: Path) -> None:
    items = [
        {"role": "user", "content": "alpha " * 40},
        {"role": "assistant", "content": "beta " * 20},
        {"role": "user", "content": "gamma"},
    ]
    path = tmp_path / "h.json"
    path.write_text(json.dumps(items))
    report = json.loads(run("inspect", str(path), "--window", "1000", "--json").stdout)
    assert report["window"] == 1000
    done = run("inspect", str(path), "--window", "1000", "--top", "2")
    assert done.returncode == 0, done.stderr
    share = report["total_tokens"] / 1000
    assert f"window: 1,000 tokens for the given window; this history fills {share:.1%}" in (
        done.stdout
    )
    assert "Largest 2 messages" in done.stdout
    assert "alpha" in done.stdout
    assert "beta" in done.stdout
    assert "gamma" not in done.stdout


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


def test_inspect_names_a_system_prompt_kept_apart_as_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {
        "system": "You follow the house rules. " * 200,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
        ],
    }
    src = tmp_path / "body.json"
    src.write_text(json.dumps(body))
    assert main(["inspect", str(src), "--format", "anthropic", "--model", "claude-sonnet-4"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "house rules" in line]
    assert rows
    assert rows[0].split("│")[1].strip() == "system"


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


def test_an_unknown_model_says_how_to_give_its_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.json"
    path.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    assert main(["inspect", str(path), "--model", "my-local-llama-13b-cli-test"]) == 0
    err = capsys.readouterr().err
    assert "my-local-llama-13b-cli-test" in err
    assert "--window" in err
