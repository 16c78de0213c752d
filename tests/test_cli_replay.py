from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from synopsis.cli import main
from synopsis.cli_common import UsageError
from synopsis.replay import replay
from synopsis.report import plot_bytes, write_html

ROOT = Path(__file__).parent.parent / "examples" / "transcripts"
CODEX = ROOT / "codex-compaction-config-change.jsonl"
AIDER = ROOT / "aider-census.jsonl"


def load(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user would run it."""
    exe = shutil.which("synopsis", path=str(Path(sys.executable).parent)) or "synopsis"
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, check=False)


def test_json_png_and_html(tmp_path: Path) -> None:
    png, page = tmp_path / "x.png", tmp_path / "r.html"
    done = run(
        "replay", str(AIDER), "--model", "gpt-4o", "--window", "1500",
        "--keep", "messages:2", "--trigger", "0.8",
        "--plot", str(png), "--html", str(page), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["compactions"] >= 1
    assert report["compactions"] == sum(t["compacted"] for t in report["turns"])
    assert report["tokens_with"] < report["tokens_without"]
    assert report["tokens_saved"] == report["tokens_without"] - report["tokens_with"]
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    text = page.read_text()
    assert "<svg" in text
    summary = next(t["summary"] for t in report["turns"] if t["summary"])
    assert summary.splitlines()[1] in text
    assert "&lt;" in text
    assert text.count('<section class="compaction"') == report["compactions"]
    for turn in report["turns"]:
        if turn["compacted"]:
            n = len(turn["offloaded"])
            assert turn["recallable"] == n
            assert f"<b>{n} of {n} recallable</b>" in text


def test_text_report_and_svg(tmp_path: Path) -> None:
    svg = tmp_path / "x.svg"
    done = run("replay", str(AIDER), "--model", "gpt-4o", "--window", "1500", "--plot", str(svg))
    assert done.returncode == 0, done.stderr
    assert "20 messages replayed" in done.stdout
    assert "<svg" in svg.read_text()
    report = replay(load(AIDER), model="gpt-4o", context_window=1500)
    assert report.compactions
    title = f"{len(report.compactions)} compaction(s)"
    assert title in [line.strip() for line in done.stdout.splitlines()]
    header = ("turn", "tokens", "window", "summarized", "kept", "recallable", "reason")
    assert " ┃ ".join(header) in re.sub(r" +", " ", done.stdout)
    for turn in report.compactions:
        row = (
            f"{turn.tokens_before:,} → {turn.tokens_after:,} │ "
            f"{turn.tokens_after / report.window:.1%} │ {turn.messages_summarized} │ "
            f"{turn.messages_kept} │ {turn.recallable} of {len(turn.offloaded)} │"
        )
        assert re.sub(r" +", " ", row) in re.sub(r" +", " ", done.stdout)
    totals = (
        f"{len(report.compactions)} compaction(s), {report.summarizer_calls} summarizer call(s); "
        f"tokens sent over the session: {report.tokens_with:,} with synopsis, "
        f"{report.tokens_without:,} without ({report.tokens_saved:,} saved, "
        f"{report.saved_share:.1%})"
    )
    assert totals in " ".join(done.stdout.split())


def test_message_text_is_escaped_in_the_html(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    items = load(AIDER)
    attack = "<script>alert(1)</script> and </details></pre><synopsis-summary>"
    items[1] = {**items[1], "content": f"{attack}\n{items[1]['content']}"}
    source, page = tmp_path / "attack.jsonl", tmp_path / "r.html"
    source.write_text("".join(json.dumps(item) + "\n" for item in items))
    args = ["replay", str(source), "--model", "gpt-4o", "--window", "1500", "--html", str(page)]
    assert main(args) == 0
    assert "compaction(s)" in capsys.readouterr().out
    text = page.read_text()
    assert "<script" not in text
    first = text.index('<section class="compaction"')
    summarized = text[first : text.index("<h4>Summary</h4>", first)]
    assert html.escape(attack) in summarized


def test_unreachable_is_reported_not_failed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(CODEX), "--model", "gpt-4o", "--window", "8000"]) == 0
    assert "stopped at turn 1" in capsys.readouterr().out


def test_a_window_of_zero_is_one_line() -> None:
    done = run("replay", str(AIDER), "--window", "0")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "synopsis: error: argument --window: expected a positive number, got 0"
    ]


def one_line_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["replay", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    return err[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--plot", "x.pdf"], "must be a .png or .svg"),
        (["--html", "nowhere/r.html"], "no such directory: nowhere"),
        (["--trigger", "often"], "trigger must be"),
        (["--model", "no-such-model-9"], "unknown model 'no-such-model-9'"),
    ],
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert message in one_line_error(capsys, str(AIDER), *args)


def test_missing_file_and_not_a_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "none.jsonl"
    assert one_line_error(capsys, str(missing)) == f"synopsis: error: no such file: {missing}"
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert "not a list of messages" in one_line_error(capsys, str(body))


def test_plot_without_compactions_or_token_trigger(tmp_path: Path) -> None:
    items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    report = replay(items, trigger="messages:100")
    assert report.trigger_tokens is None
    assert plot_bytes(report, "svg").lstrip().startswith(b"<?xml")
    page = tmp_path / "r.html"
    write_html(report, page, title="empty")
    assert "<p>none</p>" in page.read_text()


def test_plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    report = replay([{"role": "user", "content": "hi"}])
    with pytest.raises(UsageError, match=r'pip install "synopsis\[report\]"'):
        plot_bytes(report, "png")
