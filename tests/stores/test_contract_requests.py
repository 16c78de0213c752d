"""Per-request records, run against every bundled store: appended in batches, read back newest
first by session and time, pruned by age and by count, and kept apart from the sessions."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest

from synopsis.errors import ConfigurationError, StoreError
from synopsis.stores.requests import RequestRecord
from tests.stores.helpers import T0, compaction, three

if TYPE_CHECKING:
    from tests.stores.conftest import Harness


def request(minutes: float, session: str = "s1", **fields: object) -> RequestRecord:
    given: dict[str, object] = {
        "at": T0 + timedelta(minutes=minutes),
        "session_id": session,
        "model": "gpt-4o",
        "route": "/v1/chat/completions",
        "format": "openai",
        "status": 200,
    }
    return RequestRecord(**{**given, **fields})  # type: ignore[arg-type]


def test_records_come_back_equal_newest_first(harness: Harness) -> None:
    full = request(
        2,
        messages_in=40,
        tokens_before=90_000,
        tokens_after=30_000,
        compacted=True,
        code="compacted",
        shared_messages=39,
        summarizer_calls=2,
        summarizer_seconds=1.25,
        ms_total=812.5,
    )
    # Written out of order, across two batches, one time given in another zone.
    east = timezone(timedelta(hours=5))
    local = replace(request(1, "s2", status=502), at=(T0 + timedelta(minutes=1)).astimezone(east))
    assert local.at.tzinfo == UTC
    harness.store.save_requests([full, request(0)])
    harness.store.save_requests([local])
    harness.store.save_requests([])
    store = harness.reader()
    assert store.requests() == [full, local, request(0)]
    assert store.requests()[1].at.tzinfo == UTC
    assert store.requests("s1") == [full, request(0)]
    assert store.requests("nobody") == []
    assert store.requests(limit=2) == [full, local]
    assert store.requests(limit=0) == []
    assert store.requests(since=T0 + timedelta(minutes=1)) == [full, local]
    assert store.requests(until=T0 + timedelta(minutes=1)) == [request(0)]
    assert store.requests("s1", since=T0, until=T0 + timedelta(minutes=2)) == [request(0)]


def test_equal_times_come_back_latest_written_first(harness: Harness) -> None:
    first, second = request(0, "a"), request(0, "b")
    harness.store.save_requests([first, second])
    assert harness.reader().requests() == [second, first]


def test_prune_by_age_then_by_count(harness: Harness) -> None:
    store = harness.store
    store.save_requests([request(m) for m in range(6)])
    assert store.prune_requests(T0 + timedelta(minutes=2)) == 2
    assert [r.at for r in store.requests()] == [T0 + timedelta(minutes=m) for m in (5, 4, 3, 2)]
    assert store.prune_requests(keep=3) == 1
    assert store.prune_requests(keep=3) == 0
    assert store.prune_requests() == 0
    assert store.prune_requests(T0 + timedelta(minutes=4), keep=1) == 2
    store = harness.reader()
    assert store.requests() == [request(5)]
    # An age counts back from now: a century keeps a record of 2025, no age at all takes it.
    assert store.prune_requests(timedelta(days=365 * 100)) == 0
    assert store.prune_requests(timedelta(0)) == 1
    assert store.requests() == []


def test_records_outlive_a_forgotten_session(harness: Harness) -> None:
    record, messages = three("s1")
    harness.store.save(compaction(record, messages))
    harness.store.save_requests([request(0)])
    assert harness.store.forget("s1") is True
    assert harness.store.prune(timedelta(0)) == []
    assert harness.reader().requests() == [request(0)]


def test_the_async_save_writes_a_batch(harness: Harness) -> None:
    asyncio.run(harness.store.asave_requests([request(0), request(1)]))
    assert harness.reader().requests() == [request(1), request(0)]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"since": datetime(2025, 1, 1)}, "since"),
        ({"until": "yesterday"}, "until"),
        ({"limit": -1}, "limit"),
        ({"limit": True}, "limit"),
    ],
)
def test_a_wrong_read_is_refused(harness: Harness, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        harness.store.requests(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("keep", [-1, 1.5, False])
def test_a_wrong_keep_is_refused(harness: Harness, keep: object) -> None:
    with pytest.raises(ConfigurationError, match="keep"):
        harness.store.prune_requests(keep=keep)  # type: ignore[arg-type]


def test_a_closed_store_refuses_records(harness: Harness) -> None:
    harness.store.close()
    for call in (
        lambda: harness.store.save_requests([request(0)]),
        harness.store.requests,
        lambda: harness.store.prune_requests(keep=1),
    ):
        with pytest.raises(StoreError):
            call()


def test_a_record_needs_an_aware_time() -> None:
    with pytest.raises(ConfigurationError, match="timezone-aware"):
        RequestRecord(
            at=datetime(2025, 1, 1),
            session_id="s",
            model="m",
            route="/r",
            format="openai",
            status=200,
        )
