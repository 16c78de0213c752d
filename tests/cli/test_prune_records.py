"""``synopsis store prune`` keeps the proxy's request records within their retention (an age
and a count), and ``synopsis serve`` hands its record options to the proxy."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from synopsis.cli import build_parser, main
from synopsis.cli.serve import app_for
from synopsis.stores import SQLiteStore
from synopsis.stores.requests import RECORDS_MAX, RECORDS_RETENTION_DAYS, RequestRecord
from tests.cli.test_store_lifecycle import fill, run

if TYPE_CHECKING:
    from pathlib import Path

NOW = datetime.now(UTC)


def aged(days: int) -> RequestRecord:
    """A record an hour younger than ``days`` days: on the near side of a boundary there."""
    at = NOW - timedelta(days=days) + timedelta(hours=1)
    return RequestRecord(at, "s", "gpt-4o", "/v1/messages", "anthropic", 200)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Four sessions of the lifecycle tests, and request records 1 to 40 days old."""
    path = tmp_path / "records.db"
    with SQLiteStore(path) as store:
        fill(store)
        store.save_requests([aged(days) for days in range(1, 41)])
    return path


def ages(path: Path) -> list[int]:
    with SQLiteStore(path) as store:
        return [round((NOW - r.at) / timedelta(days=1)) for r in store.requests(limit=1000)]


def test_prune_removes_the_records_past_the_default_retention(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "store", "prune", "--older-than", "1000", "--store", str(db))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == (
        f"10 request records removed: older than {RECORDS_RETENTION_DAYS:g} day(s), "
        f"or beyond the newest {RECORDS_MAX:,}"
    )
    assert ages(db) == list(range(1, 31))


def test_prune_honours_the_retention_given(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--records-retention", "7.5", "--records-max", "5", "--json"]
    code, out, _ = run(capsys, "store", "prune", "--older-than", "35", "--store", str(db), *flags)
    assert code == 0
    report = json.loads(out)
    assert report["forgotten"] == ["ancient"]
    assert (report["records_retention_days"], report["records_max"]) == (7.5, 5)
    assert report["records_removed"] == 35
    assert ages(db) == [1, 2, 3, 4, 5]
    # Nothing is past it any more: the text says nothing of records.
    code, out, _ = run(
        capsys, "store", "prune", "--older-than", "35", "--store", str(db), *flags[:-1]
    )
    assert out == f"no session in {db} was last updated more than 35 day(s) ago\n"


@pytest.mark.parametrize("flags", [["--records-retention", "0"], ["--records-max", "0"]])
def test_prune_refuses_a_retention_of_nothing(
    flags: list[str], db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "prune", "--older-than", "1", "--store", str(db), *flags]) == 2
    assert "expected a positive number" in capsys.readouterr().err
    assert len(ages(db)) == 40


def test_serve_hands_its_record_options_to_the_proxy() -> None:
    flags = ["serve", "--records-retention", "2", "--records-max", "10"]
    app = app_for(build_parser().parse_args(flags))
    recorder = app.state.proxy.recorder
    assert (recorder.retention, recorder.keep) == (timedelta(days=2), 10)
    app.state.proxy.compactors.close()
    app = app_for(build_parser().parse_args(["serve", "--no-records"]))
    assert app.state.proxy.recorder is None
    app.state.proxy.compactors.close()
