from __future__ import annotations

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
