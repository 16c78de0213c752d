"""``synopsis inspect``: token counts by role and tool, the largest messages, the window's share
and the problems for a provider, as a table or as JSON that matches the library."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import synopsis
from synopsis.cli import main
from tests.cli.helpers import CODEX, DANGLING, lines

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """What ``synopsis inspect ARGS`` prints, once it has succeeded."""
    code = main(["inspect", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_inspect_reports_counts_tools_window_and_validity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = inspect(capsys, str(CODEX), "--model", "gpt-4o")
    assert "openai history, 174 messages" in out
    assert "Tokens by role" in out
    assert "Tokens by tool" in out
    assert "Largest 5 messages" in out
    assert "128,000 tokens for gpt-4o" in out
    assert "valid for openai" in out


def test_inspect_json_matches_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(inspect(capsys, str(CODEX), "--model", "gpt-4o", "--json"))
    items = lines(CODEX)
    assert report["total_tokens"] == synopsis.count_tokens(items, model="gpt-4o")
    assert report["message_count"] == len(items)
    assert report["window"] == synopsis.context_window("gpt-4o")
    assert sum(r["count"] for r in report["by_role"]) == len(items)
    calls = sum(len(m.get("tool_calls") or []) for m in items)
    assert sum(t["calls"] for t in report["by_tool"]) == calls
    assert report["problems"] == []


def test_inspect_lists_every_problem_for_a_stricter_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "ghost", "content": "stray"},
    ]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    out = inspect(capsys, str(path))
    assert "1 problem(s) for openai" in out
    assert "[openai.C1]" in out
    out = inspect(capsys, str(CODEX), "--provider", "openai-strict", "--json")
    rules = [p["rule"] for p in json.loads(out)["problems"]]
    assert "openai-strict.system_position" in rules


def test_inspect_accepts_a_request_body(tmp_path: Path) -> None:
    body = {"system": "be brief", "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    assert main(["inspect", str(path), "--json"]) == 0


def test_unknown_model_uses_default_window(capsys: pytest.CaptureFixture[str]) -> None:
    out = inspect(capsys, str(DANGLING), "--model", "no-such-model-9", "--json")
    assert json.loads(out)["window"] == 200_000


def test_window_and_top_shape_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        {"role": "user", "content": "alpha " * 40},
        {"role": "assistant", "content": "beta " * 20},
        {"role": "user", "content": "gamma"},
    ]
    path = tmp_path / "h.json"
    path.write_text(json.dumps(items))
    report = json.loads(inspect(capsys, str(path), "--window", "1000", "--json"))
    assert report["window"] == 1000
    out = inspect(capsys, str(path), "--window", "1000", "--top", "2")
    share = report["total_tokens"] / 1000
    assert f"window: 1,000 tokens for the given window; this history fills {share:.1%}" in out
    assert "Largest 2 messages" in out
    assert "alpha" in out
    assert "beta" in out
    assert "gamma" not in out


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


def test_an_unknown_model_says_how_to_give_its_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.json"
    path.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    assert main(["inspect", str(path), "--model", "my-local-llama-13b-cli-test"]) == 0
    err = capsys.readouterr().err
    assert "my-local-llama-13b-cli-test" in err
    assert "--window" in err
