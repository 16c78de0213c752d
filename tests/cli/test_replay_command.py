"""``synopsis replay``: the report as text or JSON, the plot and the HTML page it writes, and its
errors, each one line as every other subcommand's."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from synopsis.cli import main
from synopsis.cli.figures import dollars
from synopsis.cli.replay import replay
from tests.cli.helpers import AIDER, CODEX, lines


def replayed(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """What ``synopsis replay ARGS`` prints, once it has succeeded."""
    code = main(["replay", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_json_png_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png, page = tmp_path / "x.png", tmp_path / "r.html"
    out = replayed(
        capsys, str(AIDER), "--model", "gpt-4o", "--window", "1500",
        "--keep", "messages:2", "--trigger", "0.8",
        "--plot", str(png), "--html", str(page), "--json",
    )  # fmt: skip
    report = json.loads(out)
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


def test_text_report_and_svg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "x.svg"
    out = replayed(capsys, str(AIDER), "--model", "gpt-4o", "--window", "1500", "--plot", str(svg))
    assert "20 messages replayed" in out
    assert "<svg" in svg.read_text()
    report = replay(lines(AIDER), model="gpt-4o", context_window=1500)
    assert report.compactions
    # The plot's title names the file and the tokens saved (the SVG keeps each text in a comment).
    said = f"aider-census.jsonl — gpt-4o, 1,500-token window: {report.saved_share:.1%} of tokens"
    assert said in svg.read_text()
    title = f"{len(report.compactions)} compaction(s), {len(report.bursts)} within two requests"
    assert any(line.strip().startswith(title) for line in out.splitlines())
    header = ("turn", "since", "tokens", "landed", "target", "summ/kept", "code")
    assert " ".join(header) in re.sub(r" +", " ", out)
    for turn in report.compactions:
        row = (
            f"{turn.index} ",
            f"{turn.tokens_before:,} → {turn.tokens_after:,} "
            f"{turn.tokens_after / report.window:.1%} "
            f"{'-' if turn.target is None else f'{turn.target:.1%}'} "
            f"{turn.messages_summarized}/{turn.messages_kept} {turn.code}",
        )
        assert any(
            re.sub(r" +", " ", line).strip().startswith(row[0])
            and row[1] in re.sub(r" +", " ", line)
            for line in out.splitlines()
        ), row
    said = " ".join(out.split())
    assert (
        f"{len(report.compactions)} compaction(s), {len(report.bursts)} within two requests of "
        f"the one before; {report.summarizer_calls} summarizer call(s)"
    ) in said
    assert (
        f"tokens sent: {report.tokens_with:,} with synopsis, {report.tokens_without:,} without "
        f"({report.saved_share:.1%} saved)"
    ) in said
    with_, without, saved = dollars(
        report.cost_with, report.cost_without, report.cost_without - report.cost_with
    )
    assert (
        f"input cost with a prefix cache: {with_} with synopsis, {without} without ({saved} saved)"
    ) in said
    assert "prices openai: $1.25/M input, $0.125/M cached" in said
    hits = sum(1 for t in report.turns if t.cached_tokens)
    cached = sum(t.cached_tokens for t in report.turns)
    assert f"{hits} of {len(report.turns)} requests read a cached prefix, {cached:,} tokens" in said


def test_the_demo_reads_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What make demo prints: each compaction on one line of at most 80 characters."""
    monkeypatch.setenv("COLUMNS", "80")
    out = replayed(capsys, str(CODEX), "--model", "gpt-5", "--window", "32000")
    report = replay(lines(CODEX), model="gpt-5", context_window=32000)
    assert max(map(len, out.splitlines())) <= 80
    rows = [re.sub(r" +", " ", line).strip() for line in out.splitlines()]
    for turn in report.compactions:
        assert any(
            row.startswith(f"{turn.index} ") and row.endswith(f" {turn.code}") for row in rows
        ), turn.index
    # docs/cli.md shows this output: every line it shows is a line of it.
    page = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    shown = page.split("### What a replayed session cost", 1)[1].split("```text\n", 1)[1]
    printed = {line.rstrip() for line in out.splitlines()}
    for line in shown.split("```", 1)[0].splitlines():
        assert line == "…" or line in printed, f"docs/cli.md: paste make demo's output: {line!r}"


def costs(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    out = replayed(capsys, str(AIDER), "--window", "1500", "--json", *args)
    report: dict[str, Any] = json.loads(out)
    return report


def test_prices_are_options_with_a_preset_for_each_provider(
    capsys: pytest.CaptureFixture[str],
) -> None:
    openai = costs(capsys)
    assert openai["prices"] == {
        "name": "openai",
        "input": 1.25,
        "cached": 0.125,
        "write_premium": 0.0,
    }
    claude = costs(capsys, "--model", "claude-sonnet-4-5")
    assert claude["prices"]["name"] == "anthropic"
    assert (
        costs(capsys, "--model", "claude-sonnet-4-5", "--prices", "openai")["prices"]
        == (openai["prices"])
    )
    given = costs(capsys, "--prices", "anthropic", "--input-price", "5", "--cached-price", "0.5")
    assert given["prices"] == {
        "name": "anthropic, as given", "input": 5.0, "cached": 0.5, "write_premium": 0.75
    }  # fmt: skip
    # The same requests: what each one reads from the cache does not depend on the prices.
    assert [t["cached_tokens"] for t in given["turns"]] == [
        t["cached_tokens"] for t in openai["turns"]
    ]
    for turn in given["turns"]:
        written = turn["tokens_after"] - turn["cached_tokens"]
        expected = (turn["cached_tokens"] * 0.5 + written * 5.75) / 1e6
        assert turn["cost"] == pytest.approx(expected)
    assert given["cost_with"] == pytest.approx(sum(t["cost"] for t in given["turns"]), abs=1e-6)
    free = costs(capsys, "--input-price", "0", "--cached-price", "0")
    assert free["cost_with"] == free["cost_without"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prices", "gemini"], "argument --prices: invalid choice: 'gemini'"),
        (["--input-price", "cheap"], "argument --input-price: expected dollars, got 'cheap'"),
        (["--write-premium", "-1"], "argument --write-premium: expected dollars, 0 or more"),
        (["--cached-price", "nan"], "argument --cached-price: expected dollars, 0 or more"),
    ],
)
def test_a_bad_price_is_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert message in one_line_error(capsys, str(AIDER), *args)


def test_message_text_is_escaped_in_the_html(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    items = lines(AIDER)
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


def test_unreachable_is_reported_not_failed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Arguments that are not JSON cannot be cut: the newest turn cannot fit, yet the turns
    # before it did, and the report says how far the replay got.
    function = {"name": "read_file", "arguments": "x" * 40000}
    tool_calls = [{"id": "c1", "type": "function", "function": function}]
    history = tmp_path / "huge.json"
    history.write_text(json.dumps([*lines(AIDER), {"role": "assistant", "tool_calls": tool_calls}]))
    assert main(["replay", str(history), "--window", "4000"]) == 0
    out, err = capsys.readouterr()
    said = " ".join(out.split())  # the console wraps long lines
    assert "stopped at turn 20: " in said
    assert "the messages that must be kept" in said
    assert err == ""


@pytest.mark.parametrize(("window", "turns"), [("3000", 1), ("8000", 2)])
def test_a_system_prompt_over_the_window_fails_as_compact_does(
    tmp_path: Path, window: str, turns: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # The Codex session's system prompt alone takes 4,379 tokens, 10,261 from its second
    # item on: the replay stops at the turn where it no longer fits, so compact on the
    # history as it was then must say the very same line.
    assert main(["replay", str(CODEX), "--window", window, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert "the system prompt alone takes" in err
    then = tmp_path / "then.json"
    then.write_text(json.dumps(lines(CODEX)[:turns]))
    assert main(["compact", str(then), "--window", window]) == 2
    assert err == capsys.readouterr().err


def test_a_window_of_zero_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(AIDER), "--window", "0"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
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


def test_missing_file_and_not_a_history(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "none.jsonl"
    assert one_line_error(capsys, str(missing)) == f"synopsis: error: no such file: {missing}"
    # What inspect refuses, replay refuses in the same words.
    for content in ({"model": "gpt-4o"}, "hello", [1, 2]):
        data = tmp_path / "data.json"
        data.write_text(json.dumps(content))
        assert main(["inspect", str(data)]) == 2
        refused = capsys.readouterr().err
        assert one_line_error(capsys, str(data)) == refused.strip()


INSTRUCTION = {"parts": [{"text": "be brief"}]}


def _gemini(item: dict[str, Any]) -> dict[str, Any]:
    role = "model" if item["role"] == "assistant" else "user"
    return {"role": role, "parts": [{"text": item["content"]}]}


@pytest.mark.parametrize(
    "body",
    [
        {"messages": lines(AIDER)},
        {"system": "be brief", "messages": lines(AIDER)},
        {"systemInstruction": INSTRUCTION, "contents": [_gemini(i) for i in lines(AIDER)]},
        {"input": lines(AIDER)},
        {"input": "hello"},
    ],
    ids=["openai", "anthropic", "gemini", "responses", "responses-text"],
)  # fmt: skip
def test_replay_reads_every_request_body_that_inspect_and_compact_read(
    body: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    assert main(["inspect", str(path), "--json"]) == 0
    inspected = json.loads(capsys.readouterr().out)
    assert main(["compact", str(path), "--json"]) == 0
    compacted = json.loads(capsys.readouterr().out)
    assert main(["replay", str(path), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    # The last turn sends the whole history, its system prompt included, as the others read it.
    last = replayed["turns"][-1]
    assert last["tokens_without"] == inspected["total_tokens"] == compacted["tokens_before"]
    assert replayed["completed"]
