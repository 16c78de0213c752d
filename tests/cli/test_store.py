"""``synopsis compact``, ``recall``, ``search`` and ``export`` on the bundled transcripts, and
their error paths (each ends in one line, exit code 2)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from typing import TYPE_CHECKING

import pytest

import synopsis
from synopsis.cli import main
from synopsis.cli.store import _emphasis, _print_compact
from synopsis.stores import SessionState
from synopsis.testing.server import FakeLLMServer
from tests.cli.helpers import AIDER, CODEX, TAU, lines

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """TAU compacted into an 8,000-token window, its originals saved in a SQLite store."""
    tmp = tmp_path_factory.mktemp("compact")
    out, db = tmp / "out.jsonl", tmp / "s.db"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(
            [
                "compact", str(TAU), "--window", "8000", "--model", "gpt-4o", "--out", str(out),
                "--store", str(db), "--session", "demo",
            ]
        )  # fmt: skip
    assert code == 0, stderr.getvalue()
    assert stderr.getvalue() == ""
    for text in ("Before and after", "summarized", "saved to the store", "Summary", "valid for"):
        assert text in stdout.getvalue()
    assert "<synopsis-summary" in stdout.getvalue()
    return out, db


def test_compact_writes_a_smaller_valid_history_in_the_same_format(
    compacted: tuple[Path, Path],
) -> None:
    out, _ = compacted
    before, after = lines(TAU), lines(out)
    assert synopsis.detect(after) == "openai"
    assert synopsis.validate(after, "openai") == []
    assert synopsis.count_tokens(after, model="gpt-4o") < synopsis.count_tokens(before, "gpt-4o")
    assert len(after) < len(before)
    assert after[0] == before[0]  # the system prompt is kept


def test_recall_and_search_give_the_offloaded_messages(
    compacted: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = compacted
    items = lines(TAU)
    code = main(["recall", "--store", str(db), "--session", "demo", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    recalled = json.loads(out)
    assert recalled
    assert all(r["item"] in items for r in recalled)
    assert [r["position"] for r in recalled] == sorted(r["position"] for r in recalled)

    main(["search", "--store", str(db), "--session", "demo", "reservation", "--json"])
    hits = json.loads(capsys.readouterr().out)
    assert hits
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert {h["id"] for h in hits} <= {r["id"] for r in recalled}


def test_in_process_reads_of_the_store(
    compacted: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = compacted
    store = synopsis.SQLiteStore(db)
    recalled = store.recall("demo")
    store.close()
    ids = ",".join(m.id for m in recalled[:2])
    assert main(["recall", "--store", str(db), "--session", "demo", "--ids", ids]) == 0
    printed = capsys.readouterr().out.splitlines()
    first = recalled[0]
    assert printed[0] == f"#{first.position} {first.role} {first.id}"
    assert json.loads(printed[1]) == json.loads(first.data)
    assert len(printed) == 4

    assert (
        main(["search", "--store", str(db), "--session", "demo", "reservation", "--limit", "2"])
        == 0
    )
    out = capsys.readouterr().out
    assert [line[:3] for line in out.splitlines()] == ["1. ", "2. "]
    assert "reservation" in out.lower()
    assert "**" not in out  # the marks are for programs; a pipe gets the words alone

    markdown = tmp_path / "log.md"
    assert main(["export", "--store", str(db), "--session", "demo", "--out", str(markdown)]) == 0
    text = markdown.read_text(encoding="utf-8")
    assert text.startswith("# Session demo\n")
    assert "## Summarized at" in text
    assert text.count("\n[") >= len(recalled)


def test_in_process_reads_without_hits(
    compacted: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = compacted
    assert main(["export", "--store", str(db), "--session", "demo"]) == 0
    assert capsys.readouterr().out.startswith("# Session demo")
    assert main(["recall", "--store", str(db), "--session", "demo", "--start", "0"]) == 0
    capsys.readouterr()
    assert main(["recall", "--store", str(db), "--session", "demo", "--start", "100000"]) == 0
    assert capsys.readouterr().err == "no stored messages for session demo\n"
    assert main(["search", "--store", str(db), "--session", "demo", "zzqqxx"]) == 0
    assert capsys.readouterr().err == "no match for 'zzqqxx'\n"


@pytest.mark.parametrize(
    "command",
    [["recall"], ["recall", "--json"], ["export"], ["export", "--out", "{out}"], ["search", "x"]],
)
def test_a_session_the_store_does_not_hold_is_an_error(
    command: list[str],
    compacted: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, db = compacted
    out = tmp_path / "log.md"
    args = [a.format(out=out) for a in command]
    assert main([*args, "--store", str(db), "--session", "nobody"]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err == f"synopsis: error: no session 'nobody' in {db}; its sessions: 'demo'\n"
    assert not out.exists()


def test_the_missing_session_error_lists_a_few_of_the_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    store = synopsis.SQLiteStore(db)
    store.close()
    assert main(["export", "--store", str(db), "--session", "s1"]) == 2
    assert capsys.readouterr().err.endswith(f"no session 's1' in {db}: it holds no sessions\n")
    store = synopsis.SQLiteStore(db)
    for n in range(7):
        store.save_session(SessionState(f"s{n}"))
    store.close()
    assert main(["recall", "--store", str(db), "--session", "s9"]) == 2
    assert capsys.readouterr().err.endswith(
        "its sessions: 's0', 's1', 's2', 's3', 's4' and 2 more\n"
    )
    assert main(["recall", "--store", str(db), "--session", "s6"]) == 0


def test_an_unknown_model_needs_its_window_and_the_json_report_parses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compact", str(AIDER), "--model", "no-such-model-9", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "synopsis: error: unknown model 'no-such-model-9': give its context window with --window N"
    ]
    code = main(
        ["compact", str(AIDER), "--model", "no-such-model-9", "--window", "100000", "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["compacted"] is False
    assert report["code"] == "under-trigger"
    assert report["tokens_before"] == report["tokens_after"]
    assert report["messages_before"] == report["messages_after"] == len(lines(AIDER))
    assert report["summary"] is None
    assert report["problems"] == []
    assert report["out"] is None


def test_anthropic_system_comes_back_as_a_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "first " * 1500},
            {"role": "assistant", "content": "answer " * 1500},
            {"role": "user", "content": "go on"},
        ],
    }
    src, out = tmp_path / "body.json", tmp_path / "out.json"
    src.write_text(json.dumps(body))
    code = main(
        [
            "compact", str(src), "--window", "8000", "--keep", "messages:1", "--force",
            "--out", str(out),
        ]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "history compacted" in printed.out
    written = json.loads(out.read_text())
    assert written["system"] == "be brief"
    assert synopsis.validate(written["messages"], "anthropic", system=written["system"]) == []


def test_in_process_output_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A JSON list stays a list; a JSONL input written to a .json path becomes a list too.
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    src = tmp_path / "h.json"
    src.write_text(json.dumps(history))
    assert main(["compact", str(src), "--out", str(tmp_path / "a.txt")]) == 0
    assert json.loads((tmp_path / "a.txt").read_text()) == history
    assert main(["compact", str(AIDER), "--out", str(tmp_path / "b.json")]) == 0
    assert json.loads((tmp_path / "b.json").read_text()) == lines(AIDER)
    # An Anthropic history without a system prompt is written as a plain list.
    assert main(["compact", str(src), "--format", "anthropic", "--out", str(tmp_path / "c")]) == 0
    assert json.loads((tmp_path / "c").read_text()) == history
    # A stricter provider profile is applied and checked.
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps([history[0], {"role": "system", "content": "x"}, history[1]]))
    capsys.readouterr()
    assert main(["compact", str(strict), "--provider", "openai-strict", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["provider"] == "openai-strict"
    assert report["problems"] == []


def test_the_report_lists_problems(capsys: pytest.CaptureFixture[str]) -> None:
    _print_compact(
        {
            "file": "h.json", "format": "openai", "compacted": False, "code": "under-trigger",
            "reason": "small", "tokens_before": 10, "tokens_after": 10, "messages_before": 2,
            "messages_after": 2, "summarized": 0, "kept": 2, "summary": None, "offloaded": [],
            "session": None, "provider": "openai-strict", "out": None, "fixes": [],
            "problems": [{"index": 1, "message": "System message must be first.", "rule": "r"}],
        }
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "left as it was: small [under-trigger]" in out
    assert "1 problem(s) for openai-strict" in out
    assert "1: System message must be first. [r]" in out


def test_the_reason_shows_a_combined_trigger_in_one_pair_of_parentheses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compact", str(AIDER), "--trigger", "0.8|messages:200"]) == 0
    said = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert (
        "openai history left as it was: 2,232 of 128,000 tokens (2%) is under the trigger "
        "(80% of the window or 200 messages) [under-trigger]"
    ) in said
    assert "((" not in said
    assert "))" not in said


def test_errors_are_one_line_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (
        ["compact", str(tmp_path / "missing.jsonl")],
        ["recall", "--store", str(tmp_path / "none.db"), "--session", "demo"],
    ):
        assert main(args) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert len(err.splitlines()) == 1, err
        assert err.startswith("synopsis: error: ")
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["compact", "{src}", "--keep", "messages:-3"], "keep must be"),
        (["compact", "{src}", "--window", "0"], "expected a positive number, got 0"),
        (["compact", "{bad}"], "is not JSON or JSONL"),
        (["compact", str(CODEX), "--window", "8000"], "compaction cannot fix that"),
        (["compact", "{src}", "--store", "{bad}"], "not a synopsis database"),
        (["compact", "{src}", "--out", "{tmp}"], "cannot write"),
        (["recall", "--store", "{bad}", "--session", "s"], "not a synopsis database"),
        (["recall", "--store", "{db}", "--session", "s", "--start", "x"], "whole number"),
        (["recall", "--store", "{db}", "--session", "s", "--stop", "-1"], "at least 0"),
        (["recall", "--store", "{db}", "--session", "s", "--ids", "a", "--start", "1"], "ids"),
        (["search", "--store", "{db}", "s"], "required: --session"),
        (["export", "--store", "{db}", "--session", "s", "--out", "{tmp}"], "cannot write"),
    ],
)
def test_bad_arguments(
    args: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, bad, db = tmp_path / "h.json", tmp_path / "bad.txt", tmp_path / "s.db"
    src.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    bad.write_text("this is not json, nor a database, at all\n")
    store = synopsis.SQLiteStore(db)
    store.save_session(SessionState("s"))
    store.close()
    paths = {"src": src, "bad": bad, "db": db, "tmp": tmp_path}
    assert main([a.format(**paths) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("synopsis: error: ")
    assert expected in err
    assert err.count("\n") == 1


def test_library_warnings_are_one_line_each(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An LLM summarizer that cannot be reached falls back to the rules and says so.
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    code = main(
        [
            "compact",
            str(AIDER),
            "--model",
            "gpt-4o",
            "--force",
            "--summarizer",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ]
    )
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    assert err
    assert all(line.startswith("synopsis: warning: ") for line in err)
    assert any("fell back to rules" in line for line in err)


def test_a_repaired_history_says_so_in_the_report_and_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "orphan.json"
    src.write_text(
        json.dumps(
            [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "gone", "content": "orphaned output"},
                {"role": "user", "content": [{"type": "text", "text": "again"}]},
                {"role": "assistant", "content": "hello"},
            ]
        )
    )
    assert main(["compact", str(src)]) == 0
    said = capsys.readouterr().out
    assert "repaired first (1 fix(es)):" in said
    assert "message 1: dropped orphaned result: no earlier call" in said
    assert main(["compact", str(src), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["messages_before"] == 4
    assert report["messages_after"] == 3
    assert report["fixes"] == [
        {"index": 1, "action": "dropped orphaned result", "detail": "no earlier call"}
    ]


def test_search_shows_matches_in_bold_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert _emphasis("the **reservation** is at **noon**") == (
        "the \033[1mreservation\033[0m is at \033[1mnoon\033[0m"
    )
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert _emphasis("the **reservation** is at noon") == "the reservation is at noon"


@pytest.mark.parametrize(
    ("fmt", "body"),
    [
        ("openai", {"model": "gpt-4o", "temperature": 0.2, "messages": "{items}"}),
        (
            "anthropic",
            {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "Be brief.",
             "messages": "{items}", "metadata": {"user_id": "u1"}},
        ),
        (
            "responses",
            {"model": "gpt-5", "instructions": "Be brief.", "input": "{items}",
             "reasoning": {"effort": "low"}},
        ),
        (
            "gemini",
            {"systemInstruction": {"parts": [{"text": "Be brief."}]}, "contents": "{items}",
             "generationConfig": {"temperature": 0}},
        ),
    ],
)  # fmt: skip
def test_a_request_body_is_written_back_whole(
    tmp_path: Path, fmt: str, body: dict[str, object]
) -> None:
    # cli.md: the output is in the input's own format, so a body keeps model, max_tokens, …
    decoded = synopsis.formats.decode(lines(TAU), "openai")
    # The transcript's own system message is the body's system prompt here: only the rest.
    items = synopsis.formats.encode(decoded.messages[1:], fmt).messages  # type: ignore[arg-type]
    key = next(k for k, v in body.items() if v == "{items}")
    given = {**body, key: items}
    src, out = tmp_path / "body.json", tmp_path / "out.json"
    src.write_text(json.dumps(given))
    command = ["compact", str(src), "--format", fmt, "--window", "8000", "--model", "gpt-4o"]
    assert main([*command, "--out", str(out), "--json"]) == 0
    written = json.loads(out.read_text())
    assert set(written) == set(given)
    for name in given.keys() - {key}:
        assert written[name] == given[name], name
    assert 0 < len(written[key]) < len(items)


def test_the_summarizer_model_has_a_flag_of_its_own(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The error for an LLM summarizer without a model named options compact had no flag for.
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with FakeLLMServer() as server:  # it answers nothing: the rules take over, as warned
        args = ["compact", str(AIDER), "--force", "--window", "8000", "--summarizer", "openai"]
        assert main([*args, "--base-url", server.base_url]) == 2
        assert "--summarizer-model or --model" in capsys.readouterr().err
        flagged = [*args, "--summarizer-model", "gpt-4o-mini", "--base-url", server.base_url]
        assert main(flagged) == 0
    assert server.requests
    assert {r.body["model"] for r in server.requests} == {"gpt-4o-mini"}


def test_compact_clears_old_outputs_with_the_clear_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    flags = ["--window", "32000", "--model", "gpt-5", "--out", str(out)]
    assert main(["compact", str(CODEX), *flags, "--strategy", "clear"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "old tool output(s) cleared" in said
    written = out.read_text(encoding="utf-8")
    assert "[synopsis: cleared the output of" in written
    assert main(["compact", str(CODEX), *flags, "--strategy", "forget"]) == 2
    err = capsys.readouterr().err
    assert "strategy must be 'clear', 'summarize' or both" in err
