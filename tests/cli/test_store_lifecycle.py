"""``synopsis store stats``, ``forget`` and ``prune`` on a SQLite file and on PostgreSQL, and the
reading commands given a ``postgresql://`` URL. Every error is one line and exit code 2."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from synopsis.cli import main
from synopsis.cli.lifecycle import human_size
from synopsis.messages import Message, Role, TextPart
from synopsis.stores import (
    Compaction,
    PostgresStore,
    SessionState,
    SessionStats,
    SQLiteStore,
    StoredMessage,
)
from synopsis.summarizers import SummaryRecord
from tests.cli.helpers import TAU, lines

if TYPE_CHECKING:
    from pathlib import Path

    from synopsis.stores import MemoryStore

NOW = datetime.now(UTC)
AGES = {
    "ancient": timedelta(days=400),
    "month": timedelta(days=31),
    "half-day": timedelta(hours=13),
    "hour": timedelta(hours=1),
}


def fill(store: SQLiteStore | PostgresStore | MemoryStore) -> None:
    """A session per age in :data:`AGES`, each with a record and messages of its own."""
    for n, (name, age) in enumerate(AGES.items()):
        summary = SummaryRecord(created_at=NOW, depth=0, parent_id=None, narrative=f"{name} 🙂")
        rows = [
            StoredMessage.of(
                name,
                Message(Role.USER, (TextPart(f"{name} message {i}: naïve café {'x' * 300 * n}"),)),
                position=i,
                format="openai",
                data={"role": "user", "content": f"{name} {i}"},
                compaction_id=summary.id,
            )
            for i in range(n + 1)
        ]
        state = SessionState(name, summary_id=summary.id, compactions=1, updated_at=NOW - age)
        store.save(Compaction(name, summary, rows, state))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        fill(store)
    return path


def stats_of(where: Path | str) -> list[SessionStats]:
    store = PostgresStore(where) if isinstance(where, str) else SQLiteStore(where)
    with store:
        return store.stats()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def failed(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one error line of a command that must fail."""
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    assert err.startswith("synopsis: error: ")
    assert err.count("\n") == 1, err
    return err.removeprefix("synopsis: error: ").removesuffix("\n")


# -- stats -----------------------------------------------------------------------------------


def test_stats_lists_each_session_and_the_total(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = stats_of(db)
    assert [s.session_id for s in want] == sorted(AGES)
    code, out, err = run(capsys, "store", "stats", "--store", str(db))
    assert (code, err) == (0, "")
    table = out.splitlines()
    assert table[0] == str(db)
    assert [cell.strip() for cell in table[2].split("┃")[1:-1]] == [
        "session", "messages", "summaries", "size", "last updated"
    ]  # fmt: skip
    body = [line.split("│")[1:-1] for line in table[4:-2]]
    assert [[cell.strip() for cell in row] for row in body] == [
        [
            s.session_id,
            str(s.messages),
            str(s.summaries),
            human_size(s.bytes),
            f"{s.updated_at:%Y-%m-%d %H:%M:%S} UTC",
        ]
        for s in want
    ]
    messages = sum(s.messages for s in want)
    assert table[-1] == (
        f"4 sessions: {messages} messages, 4 summary records, "
        f"{human_size(sum(s.bytes for s in want))}"
    )


def test_stats_as_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = stats_of(db)
    code, out, _ = run(capsys, "store", "stats", "--store", str(db), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["store"] == str(db)
    assert report["sessions"] == [
        {
            "session": s.session_id,
            "messages": s.messages,
            "summaries": s.summaries,
            "bytes": s.bytes,
            "updated_at": s.updated_at.isoformat() if s.updated_at else None,
        }
        for s in want
    ]
    assert report["total"] == {
        "sessions": len(want),
        "messages": sum(s.messages for s in want),
        "summaries": len(want),
        "bytes": sum(s.bytes for s in want),
    }


def test_stats_of_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.db"
    SQLiteStore(path).close()
    assert run(capsys, "store", "stats", "--store", str(path)) == (
        0,
        f"{path} holds no sessions\n",
        "",
    )
    code, out, _ = run(capsys, "store", "stats", "--store", str(path), "--json")
    assert code == 0
    assert json.loads(out)["total"] == {"sessions": 0, "messages": 0, "summaries": 0, "bytes": 0}


def test_a_session_id_is_shown_as_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "[red]odd.db"
    with SQLiteStore(path) as store:
        store.save_session(SessionState("[bold]not bold[/bold]", updated_at=NOW))
    code, out, _ = run(capsys, "store", "stats", "--store", str(path))
    assert code == 0
    assert out.splitlines()[0] == str(path)
    assert "│ [bold]not bold[/bold] │" in out


def test_a_state_saved_without_a_time_shows_none_and_is_never_pruned(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A state written by hand, without the time every save of synopsis stamps.
    with sqlite3.connect(db) as raw:
        raw.execute("INSERT INTO sessions VALUES ('timeless', '{\"offset\": 2}')")
    raw.close()
    code, out, _ = run(capsys, "store", "stats", "--store", str(db))
    assert code == 0
    row = next(line for line in out.splitlines() if "timeless" in line)
    assert row.split("│")[-2].strip() == "-"
    code, out, _ = run(capsys, "store", "stats", "--store", str(db), "--json")
    timeless = next(s for s in json.loads(out)["sessions"] if s["session"] == "timeless")
    assert timeless == {
        "session": "timeless",
        "messages": 0,
        "summaries": 0,
        "bytes": 0,
        "updated_at": None,
    }
    run(capsys, "store", "prune", "--store", str(db), "--older-than", "0.0001")
    assert [s.session_id for s in stats_of(db)] == ["timeless"]


# -- forget ----------------------------------------------------------------------------------


def test_forget_says_what_it_deleted(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (month,) = [s for s in stats_of(db) if s.session_id == "month"]
    code, out, err = run(capsys, "store", "forget", "month", "--store", str(db))
    assert (code, err) == (0, "")
    assert out == (
        f"forgot session 'month' from {db}: {month.messages} messages, 1 summary record, "
        f"{human_size(month.bytes)}\n"
    )
    assert [s.session_id for s in stats_of(db)] == ["ancient", "half-day", "hour"]
    assert failed(capsys, "recall", "--store", str(db), "--session", "month") == (
        f"no session 'month' in {db}; its sessions: 'ancient', 'half-day', 'hour'"
    )
    code, out, _ = run(capsys, "search", "--store", str(db), "--session", "hour", "message")
    assert code == 0
    assert out.startswith("1. score ")

    code, out, _ = run(capsys, "store", "forget", "hour", "--store", str(db), "--json")
    assert code == 0
    assert json.loads(out)["forgotten"]["session"] == "hour"
    assert json.loads(out)["forgotten"]["messages"] == 4


def test_forget_refuses_a_session_the_store_does_not_hold(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert failed(capsys, "store", "forget", "nobody", "--store", str(db)) == (
        f"no session 'nobody' in {db}; its sessions: 'ancient', 'half-day', 'hour', 'month'"
    )
    assert len(stats_of(db)) == 4
    empty = tmp_path / "empty.db"
    SQLiteStore(empty).close()
    assert failed(capsys, "store", "forget", "nobody", "--store", str(empty), "--json") == (
        f"no session 'nobody' in {empty}: it holds no sessions"
    )


# -- prune -----------------------------------------------------------------------------------


def test_prune_forgets_the_sessions_older_than_the_days_given(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "store", "prune", "--older-than", "30", "--store", str(db))
    assert (code, err) == (0, "")
    said = out.splitlines()
    assert said[:2] == ["forgot session 'ancient'", "forgot session 'month'"]
    assert said[2].startswith(f"2 sessions forgotten from {db}, each last updated before ")
    assert [s.session_id for s in stats_of(db)] == ["half-day", "hour"]
    # Nothing more is that old.
    assert run(capsys, "store", "prune", "--older-than", "30", "--store", str(db)) == (
        0,
        f"no session in {db} was last updated more than 30 day(s) ago\n",
        "",
    )
    # A fraction of a day: twelve hours.
    code, out, _ = run(capsys, "store", "prune", "--older-than", "0.5", "--store", str(db))
    assert code == 0
    assert out.splitlines()[0] == "forgot session 'half-day'"
    assert out.splitlines()[1].startswith("1 session forgotten")
    assert [s.session_id for s in stats_of(db)] == ["hour"]


def test_prune_as_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "store", "prune", "--older-than", "1.5", "--store", str(db), "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert report["store"] == str(db)
    assert report["older_than_days"] == 1.5
    assert report["forgotten"] == ["ancient", "month"]
    cutoff = datetime.fromisoformat(report["cutoff"])
    assert abs(cutoff - (datetime.now(UTC) - timedelta(days=1.5))) < timedelta(minutes=5)
    code, out, _ = run(
        capsys, "store", "prune", "--older-than", "1.5", "--store", str(db), "--json"
    )
    assert json.loads(out)["forgotten"] == []


@pytest.mark.parametrize(
    ("days", "expected"),
    [
        ("0", "expected a positive number of days, got 0"),
        ("-2", "expected a positive number of days, got -2"),
        ("nan", "expected a positive number of days, got nan"),
        ("inf", "expected a positive number of days, got inf"),
        ("week", "expected a number of days, got 'week'"),
        ("1e300", "--older-than 1e+300 days reaches back before the year 1"),
        ("800000", "--older-than 800000 days reaches back before the year 1"),
    ],
)
def test_prune_needs_a_positive_number_of_days(
    days: str, expected: str, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert expected in failed(capsys, "store", "prune", "--older-than", days, "--store", str(db))
    assert len(stats_of(db)) == 4


# -- errors every command shares ---------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["store", "stats"], ["store", "forget", "s"], ["store", "prune", "--older-than", "1"]],
)
def test_a_missing_store_file_is_no_store_and_stays_missing(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.db"
    assert failed(capsys, *command, "--store", str(missing)) == f"no such store: {missing}"
    assert not missing.exists()
    assert "required: --store" in failed(capsys, *command)


def test_the_group_needs_an_action(capsys: pytest.CaptureFixture[str]) -> None:
    assert "required: action" in failed(capsys, "store")
    assert "invalid choice: 'vacuum'" in failed(capsys, "store", "vacuum")


@pytest.mark.parametrize(
    "command",
    [
        ["store", "stats"],
        ["store", "forget", "s"],
        ["store", "prune", "--older-than", "1"],
        ["recall", "--session", "s"],
        ["search", "--session", "s", "word"],
        ["export", "--session", "s"],
    ],
)
def test_a_store_failing_is_one_line(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A file of synopsis's newest schema that lost its tables: it opens, then every read fails.
    path = tmp_path / "damaged.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE synopsis_schema (version INTEGER NOT NULL)")
        raw.execute("INSERT INTO synopsis_schema VALUES (2)")
    raw.close()
    said = failed(capsys, *command, "--store", str(path))
    assert said.startswith(f"the store {path} failed: no such table")


@pytest.mark.parametrize("size", [0, 1, 1023, 1024, 1536, 10**6, 5 * 2**30, 2**60, 2**70])
def test_sizes_read_as_a_person_reads_them(size: int) -> None:
    expected = {
        0: "0 B",
        1: "1 B",
        1023: "1023 B",
        1024: "1.0 KiB",
        1536: "1.5 KiB",
        10**6: "976.6 KiB",
        5 * 2**30: "5.0 GiB",
        2**60: "1024.0 PiB",
        2**70: "1048576.0 PiB",
    }
    assert human_size(size) == expected[size]


def test_the_installed_command_runs_the_group(db: Path) -> None:
    env = {**os.environ, "COLUMNS": "160"}
    done = subprocess.run(
        [sys.executable, "-m", "synopsis.cli", "store", "stats", "--store", str(db), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [s["session"] for s in json.loads(done.stdout)["sessions"]] == sorted(AGES)


# -- PostgreSQL ------------------------------------------------------------------------------


def with_password(url: str) -> str:
    """The same URL with a password in it (the test server trusts its local user, so any
    password connects): what the output must never show."""
    return url.replace("postgresql://postgres@", "postgresql://postgres:hunter2@")


def test_the_group_on_postgresql(postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = with_password(postgres_url)
    with PostgresStore(url) as store:
        fill(store)
        shown = store.url
    assert "hunter2" not in shown
    want = stats_of(postgres_url)

    code, out, err = run(capsys, "store", "stats", "--store", url, "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["store"] == shown
    assert [(s["session"], s["messages"], s["bytes"]) for s in report["sessions"]] == [
        (s.session_id, s.messages, s.bytes) for s in want
    ]
    code, out, _ = run(capsys, "store", "stats", "--store", url)
    assert code == 0
    assert out.splitlines()[0] == shown
    assert "hunter2" not in out

    assert failed(capsys, "store", "forget", "nobody", "--store", url) == (
        f"no session 'nobody' in {shown}; its sessions: 'ancient', 'half-day', 'hour', 'month'"
    )
    code, out, _ = run(capsys, "store", "forget", "hour", "--store", url)
    assert code == 0
    assert out.startswith(f"forgot session 'hour' from {shown}: 4 messages, 1 summary record")

    code, out, _ = run(capsys, "store", "prune", "--older-than", "30", "--store", url, "--json")
    assert code == 0
    assert json.loads(out)["forgotten"] == ["ancient", "month"]
    assert [s.session_id for s in stats_of(postgres_url)] == ["half-day"]


def test_compact_then_read_back_through_a_postgresql_url(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = with_password(postgres_url)
    out = tmp_path / "out.jsonl"
    code, said, err = run(
        capsys, "compact", str(TAU), "--window", "8000", "--model", "gpt-4o",
        "--out", str(out), "--store", url, "--session", "demo",
    )  # fmt: skip
    assert code == 0, err
    assert "saved to the store" in said
    with PostgresStore(postgres_url) as store:
        saved = store.recall("demo")
        shown = store.url
    assert saved

    code, said, _ = run(capsys, "recall", "--store", url, "--session", "demo", "--json")
    assert code == 0
    recalled = json.loads(said)
    assert [r["id"] for r in recalled] == [m.id for m in saved]
    assert all(r["item"] in lines(TAU) for r in recalled)
    code, said, _ = run(capsys, "search", "--store", url, "--session", "demo", "reservation")
    assert code == 0
    assert said.startswith("1. score ")
    markdown = tmp_path / "log.md"
    code, _, _ = run(capsys, "export", "--store", url, "--session", "demo", "--out", str(markdown))
    assert code == 0
    assert markdown.read_text(encoding="utf-8").startswith("# Session demo\n")
    assert failed(capsys, "recall", "--store", url, "--session", "nobody") == (
        f"no session 'nobody' in {shown}; its sessions: 'demo'"
    )


def test_an_unreachable_postgresql_store_is_one_line(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A database that is not there, on the run's server: refused when the store opens.
    gone = postgres_url.rsplit("/", 1)[0] + "/no_such_database"
    for command in (["store", "stats"], ["recall", "--session", "s"], ["compact", str(TAU)]):
        said = failed(capsys, *command, "--store", gone)
        assert "cannot reach the store" in said
        assert "no_such_database" in said
