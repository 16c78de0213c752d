"""Request rollups and every session's state, run against every bundled store: the rollups of
any records equal a plain computation over them, in every store alike."""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConfigurationError, StoreError
from synopsis.stores import MemoryStore, PostgresStore, SessionState, SQLiteStore
from synopsis.stores.requests import RequestRecord, RequestRollup
from tests.stores.helpers import T0, compaction, three

if TYPE_CHECKING:
    from collections.abc import Iterator

    from synopsis.stores._base import StoreBase
    from tests.postgres import Server
    from tests.stores.conftest import Harness

BYS = ("session", "model", "hour", "day", "error")
FELL = "summarizer_fell_back: timeout → rules"


def record(minutes: float, session: str = "s1", **fields: Any) -> RequestRecord:
    given: dict[str, Any] = {
        "at": T0 + timedelta(minutes=minutes),
        "session_id": session,
        "model": "gpt-4o",
        "route": "/v1/chat/completions",
        "format": "openai",
        "status": 200,
    }
    return RequestRecord(**{**given, **fields})


# -- the plain computation the stores are held to ---------------------------------------------


def expected(
    records: list[RequestRecord],
    by: str,
    session_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[RequestRollup]:
    """Each group's records in the order they were saved; the newest is the latest time, the
    last saved among equal times."""
    groups: dict[str, list[RequestRecord]] = {}
    for r in records:
        if session_id is not None and r.session_id != session_id:
            continue
        if (since is not None and r.at < since) or (until is not None and r.at >= until):
            continue
        hour = r.at.replace(minute=0, second=0, microsecond=0)
        key = {
            "session": r.session_id,
            "model": r.model,
            "error": r.error,
            "hour": hour.isoformat(),
            "day": hour.replace(hour=0).isoformat(),
        }[by]
        if key is not None:
            groups.setdefault(key, []).append(r)
    out = []
    for key in sorted(groups):
        rows = groups[key]
        newest = rows[0]
        for r in rows:
            if r.at >= newest.at:
                newest = r
        out.append(
            RequestRollup(
                key=key,
                requests=len(rows),
                compacted=len([r for r in rows if r.compacted]),
                tokens_before=sum(r.tokens_before for r in rows if r.tokens_before),
                tokens_after=sum(r.tokens_after for r in rows if r.tokens_after),
                summarizer_calls=sum(r.summarizer_calls for r in rows),
                summarizer_seconds=math.fsum(r.summarizer_seconds for r in rows),
                errors=len([r for r in rows if r.error]),
                fallbacks=len(
                    [r for r in rows if any("summarizer_fell_back" in e for e in r.events)]
                ),
                first_at=min(r.at for r in rows),
                last_at=newest.at,
                model=newest.model,
                format=newest.format,
                shared_tokens=sum(r.shared_tokens for r in rows if r.shared_tokens),
                client_shared_tokens=sum(
                    r.client_shared_tokens for r in rows if r.client_shared_tokens
                ),
            )
        )
    return out


def same(got: list[RequestRollup], want: list[RequestRollup]) -> None:
    """Equal, the seconds up to the order they were summed in."""
    assert [replace(r, summarizer_seconds=0.0) for r in got] == [
        replace(r, summarizer_seconds=0.0) for r in want
    ]
    for a, b in zip(got, want, strict=True):
        assert math.isclose(a.summarizer_seconds, b.summarizer_seconds, abs_tol=1e-9)


# -- any records, in every store ----------------------------------------------------------------

NAMES = st.sampled_from(["s1", "S2", "é", "a b", "zz"])
RECORDS = st.lists(
    st.builds(
        RequestRecord,
        # Few distinct times: equal ones, and several per hour and per day.
        at=st.integers(0, 3 * 24 * 12).map(lambda k: T0 + timedelta(minutes=5 * k)),
        session_id=NAMES,
        model=st.sampled_from(["gpt-4o", "claude-sonnet-4-5", "Ω"]),
        route=st.just("/v1/chat/completions"),
        format=st.sampled_from(["openai", "anthropic", "responses"]),
        status=st.sampled_from([200, 400, 502]),
        tokens_before=st.none() | st.integers(0, 10**9),
        tokens_after=st.none() | st.integers(0, 10**9),
        compacted=st.booleans(),
        summarizer_calls=st.integers(0, 5),
        summarizer_seconds=st.floats(0, 100, allow_nan=False),
        error=st.none() | st.sampled_from(["client_gone", "upstream_timeout", "bad_request"]),
        events=st.lists(st.sampled_from([FELL, "emergency: no room", "cleared: 2 outputs"])).map(
            tuple
        ),
        shared_tokens=st.none() | st.integers(0, 10**9),
        client_shared_tokens=st.none() | st.integers(0, 10**9),
    ),
    max_size=40,
)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, server: Server) -> Iterator[list[StoreBase]]:
    url = server.create_database()
    opened: list[StoreBase] = [
        MemoryStore(),
        SQLiteStore(tmp_path_factory.mktemp("rollups") / "synopsis.db"),
        PostgresStore(url),
    ]
    yield opened
    for store in opened:
        store.close()
    server.drop_database(url)


@given(
    records=RECORDS,
    session_id=st.none() | NAMES,
    since=st.none() | st.integers(0, 3 * 24 * 60).map(lambda m: T0 + timedelta(minutes=m)),
    span=st.none() | st.integers(0, 3 * 24 * 60).map(lambda m: timedelta(minutes=m)),
)
def test_every_store_rolls_up_as_the_records_add_up(
    stores: list[StoreBase],
    records: list[RequestRecord],
    session_id: str | None,
    since: datetime | None,
    span: timedelta | None,
) -> None:
    until = None if span is None else (since or T0) + span
    for store in stores:
        store.prune_requests(keep=0)
        store.save_requests(records)
        for by in BYS:
            same(store.request_rollup(by), expected(records, by))  # type: ignore[arg-type]
            same(
                store.request_rollup(by, session_id=session_id, since=since, until=until),  # type: ignore[arg-type]
                expected(records, by, session_id, since, until),
            )


# -- the contract ---------------------------------------------------------------------------


def test_a_rollup_of_each_kind(harness: Harness) -> None:
    records = [
        record(0, "b", tokens_before=100, tokens_after=100, shared_tokens=40),
        record(30, "a", model="claude", format="anthropic", error="client_gone"),
        record(
            70,
            "b",
            compacted=True,
            tokens_before=900,
            tokens_after=300,
            summarizer_calls=2,
            summarizer_seconds=1.5,
            events=(FELL, "emergency: a tool output larger than the window"),
            client_shared_tokens=700,
        ),
        record(24 * 60 + 5, "a", error="upstream_timeout", events=("cleared: 3 outputs",)),
    ]
    harness.store.save_requests(records)
    store = harness.reader()
    sessions = store.request_rollup("session")
    assert [r.key for r in sessions] == ["a", "b"]
    b = sessions[1]
    assert (b.requests, b.compacted, b.tokens_before, b.tokens_after) == (2, 1, 1000, 400)
    assert (b.summarizer_calls, b.summarizer_seconds, b.errors, b.fallbacks) == (2, 1.5, 0, 1)
    assert (b.shared_tokens, b.client_shared_tokens) == (40, 700)
    assert (b.first_at, b.last_at) == (T0, T0 + timedelta(minutes=70))
    assert (sessions[0].model, sessions[0].format, sessions[0].errors) == ("gpt-4o", "openai", 2)
    hour, day = T0.replace(minute=0), T0.replace(hour=0, minute=0)  # T0 is 10:30
    hours = store.request_rollup("hour")
    assert [(r.key, r.requests) for r in hours] == [
        (hour.isoformat(), 1),
        ((hour + timedelta(hours=1)).isoformat(), 2),
        ((hour + timedelta(days=1)).isoformat(), 1),
    ]
    assert hours[1].model == "gpt-4o"
    assert hours[1].first_at == T0 + timedelta(minutes=30)
    days = store.request_rollup("day")
    assert [(r.key, r.requests) for r in days] == [
        (day.isoformat(), 3),
        ((day + timedelta(days=1)).isoformat(), 1),
    ]
    assert [(r.key, r.requests) for r in store.request_rollup("error")] == [
        ("client_gone", 1),
        ("upstream_timeout", 1),
    ]
    models = store.request_rollup("model", session_id="a")
    assert [(r.key, r.requests, r.model) for r in models] == [
        ("claude", 1, "claude"),
        ("gpt-4o", 1, "gpt-4o"),
    ]
    later = store.request_rollup(
        "session", since=T0 + timedelta(minutes=30), until=T0 + timedelta(hours=2)
    )
    assert [(r.key, r.requests) for r in later] == [("a", 1), ("b", 1)]
    assert store.request_rollup("session", session_id="nobody") == []
    assert asyncio.run(store.arequest_rollup("day", session_id="b")) == store.request_rollup(
        "day", session_id="b"
    )


def test_a_rollup_after_a_prune_counts_what_is_left(harness: Harness) -> None:
    harness.store.save_requests([record(m, error="client_gone") for m in range(5)])
    assert harness.store.prune_requests(T0 + timedelta(minutes=2)) == 2
    assert harness.store.prune_requests(keep=2) == 1
    (left,) = harness.reader().request_rollup("error")
    assert (left.requests, left.first_at) == (2, T0 + timedelta(minutes=3))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"by": "week"}, "by must be one of"),
        ({"by": None}, "by must be one of"),
        ({"by": "day", "since": datetime(2025, 1, 1)}, "since"),
        ({"by": "day", "until": "tomorrow"}, "until"),
    ],
)
def test_a_wrong_rollup_is_refused(harness: Harness, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        harness.store.request_rollup(**kwargs)


def test_states_are_every_session_by_id(harness: Harness) -> None:
    summary, rows = three("b")
    harness.store.save(compaction(summary, rows, session="b"))
    harness.store.save_session(SessionState("é", compactions=3, updated_at=T0))
    harness.store.save_session(SessionState("A", offset=2, updated_at=T0))
    store = harness.reader()
    states = store.states()
    assert [s.session_id for s in states] == ["A", "b", "é"]
    assert states == [store.session(s.session_id) for s in states]
    assert asyncio.run(store.astates()) == states
    assert store.forget("b") is True
    assert [s.session_id for s in store.states()] == ["A", "é"]


def test_a_closed_store_refuses_rollups(harness: Harness) -> None:
    harness.store.close()
    for call in (lambda: harness.store.request_rollup("day"), harness.store.states):
        with pytest.raises(StoreError):
            call()


# -- records of before ----------------------------------------------------------------------


def test_a_record_written_before_the_new_fields_still_reads() -> None:
    old = (
        '{"at": "2025-01-01T00:00:00+00:00", "session_id": "s", "model": "m", "route": "/r", '
        '"format": "openai", "status": 200, "messages_in": 3, "tokens_before": 10, '
        '"tokens_after": 10, "compacted": false, "code": null, "shared_messages": null, '
        '"summarizer_calls": 0, "summarizer_seconds": 0.0, "ms_total": 1.5}'
    )
    read = RequestRecord.from_json(old)
    assert (read.error, read.events, read.shared_tokens, read.client_shared_tokens) == (
        None,
        (),
        None,
        None,
    )
    assert read.at == datetime(2025, 1, 1, tzinfo=UTC)
    full = replace(read, error="client_gone", events=(FELL,), shared_tokens=4)
    assert RequestRecord.from_json(full.to_json()) == full
    assert full.fell_back
    assert not read.fell_back


def test_a_bucket_is_in_utc() -> None:
    east = timezone(timedelta(hours=5))
    store = MemoryStore()
    store.save_requests([record(0, at=datetime(2025, 1, 2, 3, 30, tzinfo=east))])
    (day,) = store.request_rollup("day")
    assert day.key == "2025-01-01T00:00:00+00:00"
    (hour,) = store.request_rollup("hour")
    assert hour.key == "2025-01-01T22:00:00+00:00"
