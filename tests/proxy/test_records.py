"""Each request's figures, recorded in the store off the request's path: through the real
proxy in front of the fake upstream, then the queue and its writer on their own."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from synopsis.errors import StoreError
from synopsis.proxy import create_app
from synopsis.proxy.logs import Line
from synopsis.proxy.metrics import Metrics
from synopsis.proxy.recorder import Recorder, noted
from synopsis.proxy.tally import Tally, tallied
from synopsis.stores import MemoryStore, SQLiteStore
from synopsis.stores.requests import RequestRecord
from synopsis.testing import ScriptedSummarizer, conversation
from synopsis.testing.server import chat_completion
from tests.proxy.test_observability import (
    CHAT,
    COMPACTING,
    HISTORY,
    eventually,
    proxied,
    scrape,
    value,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import pytest


def test_the_proxy_records_each_request_with_history_in_the_store(tmp_path: Path) -> None:
    path = tmp_path / "records.db"
    summarizer = ScriptedSummarizer()
    with proxied(summarizer=summarizer, store=str(path), **COMPACTING) as (fake, _, client):
        headers = {"x-synopsis-session": "recorded"}
        long = client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY}, headers=headers)
        short = {"model": "gpt-4o", "stream": True, "messages": conversation(turns=1)}
        fake.add(chat_completion("streamed"))
        with client.stream("POST", CHAT, json=short) as streamed:
            streamed.read()
        # Nothing is recorded for a request without a history the proxy reads.
        assert client.post(CHAT, content=b"{").status_code == 400
        assert client.get("/v1/models").status_code == 200
    # Written by the time the proxy has stopped: what was still queued was flushed.
    with SQLiteStore(path) as store:
        newest, oldest = store.requests()
    assert oldest.session_id == "recorded"
    assert streamed.headers["x-synopsis-session"] == newest.session_id != "recorded"
    for record, answer in ((oldest, long), (newest, streamed)):
        assert (record.model, record.route, record.format) == ("gpt-4o", CHAT, "openai")
        assert record.status == answer.status_code == 200
        tokens = f"{record.tokens_before}/{record.tokens_after}"
        assert tokens == answer.headers["x-synopsis-tokens"]
        assert record.compacted == (answer.headers["x-synopsis-compacted"] == "true")
        assert record.ms_total > 0
        assert datetime.now(UTC) - timedelta(minutes=1) < record.at <= datetime.now(UTC)
    assert oldest.compacted
    assert oldest.code == "triggered"
    assert oldest.messages_in == len(HISTORY)
    assert oldest.summarizer_calls == len(summarizer.calls) >= 1
    assert oldest.summarizer_seconds > 0
    assert not newest.compacted
    assert (newest.summarizer_calls, newest.summarizer_seconds) == (0, 0.0)


class Refusing(MemoryStore):
    """A store whose every write of request records fails."""

    def save_requests(self, records: Sequence[RequestRecord]) -> None:
        raise StoreError("the disk is full")


def test_a_failing_store_write_never_fails_the_request(caplog: pytest.LogCaptureFixture) -> None:
    with proxied(store=Refusing(), **COMPACTING) as (_, _served, client):
        answer = client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY})
        assert answer.status_code == 200

        def counted() -> bool:
            samples = scrape(client)
            return value(samples, "synopsis_proxy_records_dropped_total") == 1

        assert eventually(counted)
        samples = scrape(client)
    assert value(samples, "synopsis_proxy_errors_total", kind="record_failed") == 1
    assert "1 request record(s) not written: the disk is full" in caplog.text


def test_no_recorder_when_told_not_to_record_or_for_a_store_of_another_kind() -> None:
    class Foreign:
        """A store that is not one of synopsis's own: it keeps no records."""

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        def __init__(self) -> None:
            self.inner = MemoryStore()

    assert create_app(environ={}, record_requests=False).state.proxy.recorder is None
    assert create_app(environ={}, store=Foreign()).state.proxy.recorder is None
    recorder = create_app(environ={}, records_retention=7, records_max=50).state.proxy.recorder
    assert (recorder.retention, recorder.keep) == (timedelta(days=7), 50)


def record(minutes: float, session: str = "s") -> RequestRecord:
    at = datetime(2025, 6, 1, tzinfo=UTC) + timedelta(minutes=minutes)
    return RequestRecord(at, session, "gpt-4o", CHAT, "openai", 200)


def test_a_full_queue_drops_its_oldest_and_counts_them() -> None:
    store, metrics = MemoryStore(), Metrics()
    recorder = Recorder(store, metrics, queue_size=2, retention_days=10_000_000)
    for minute in range(5):
        recorder.add(record(minute))
    assert list(recorder.queue) == [record(3), record(4)]
    assert metrics.records_dropped._value.get() == 3

    async def run() -> None:
        await recorder.stop()  # before it started: nothing to stop
        recorder.start()
        recorder.add(record(5))
        await recorder.stop()

    asyncio.run(run())
    assert store.requests() == [record(5), record(4)]
    assert not recorder.queue


def test_the_writer_keeps_the_records_within_their_retention() -> None:
    store = MemoryStore()
    store.save_requests([record(-60 * 24 * 40)])
    moment = datetime.now(UTC)
    recent = [
        RequestRecord(moment + timedelta(seconds=s), "s", "m", CHAT, "openai", 200)
        for s in range(3)
    ]
    recorder = Recorder(store, Metrics(), retention_days=30, keep=2, pause=0.05)

    async def run() -> None:
        recorder.start()
        for one in recent:
            recorder.add(one)
        await recorder.stop()

    asyncio.run(run())
    # Trimmed at its first write: the record older than 30 days, and all but the newest 2.
    assert store.requests() == recent[:0:-1]


class Untrimmable(MemoryStore):
    def prune_requests(self, *args: Any, **kwargs: Any) -> int:
        raise StoreError("the table is locked")


def test_a_failed_trim_is_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    store, metrics = Untrimmable(), Metrics()
    recorder = Recorder(store, metrics, trim_every=3600)
    recorder.add(record(0))
    asyncio.run(recorder.flush())
    recorder.add(record(1))
    asyncio.run(recorder.flush())  # within the hour and under a tenth of keep: no trim
    assert store.requests() == [record(1), record(0)]
    assert metrics.errors.labels("record_failed")._value.get() == 1
    assert "request records not trimmed: the table is locked" in caplog.text


def test_a_summarizer_call_outside_a_request_is_counted_only_in_the_metrics() -> None:
    seen: list[tuple[str, float, bool]] = []
    observe = tallied(lambda *call: seen.append(call))
    observe("rules", 0.5, True)
    assert seen == [("rules", 0.5, True)]
    line = Line("POST", CHAT, session="s", model="gpt-4o", tally=Tally(2, 1.5))
    recorder = Recorder(MemoryStore(), Metrics())
    noted(recorder, line)
    noted(recorder, Line("GET", "/v1/models"))
    (queued,) = recorder.queue
    assert isinstance(queued, RequestRecord)  # never sent upstream: nothing to compare
    assert (queued.summarizer_calls, queued.summarizer_seconds) == (2, 1.5)


# -- what a record says beyond the log line ---------------------------------------------------


def leading(previous: list[Any], current: list[Any]) -> int:
    count = 0
    for old, new in zip(previous, current, strict=False):
        if old != new:
            break
        count += 1
    return count


def test_a_record_says_what_it_shared_with_the_sessions_last_request(tmp_path: Path) -> None:
    path = tmp_path / "records.db"
    headers = {"x-synopsis-session": "cached"}
    with proxied(summarizer=ScriptedSummarizer(), store=str(path), **COMPACTING) as (
        fake,
        _,
        client,
    ):
        for messages in (HISTORY[:5], HISTORY[:7], HISTORY, [*HISTORY, *HISTORY[1:3]]):
            answer = client.post(
                CHAT, json={"model": "gpt-4o", "messages": messages}, headers=headers
            )
            assert answer.status_code == 200
        sent = [r.body["messages"] for r in fake.requests]
    with SQLiteStore(path) as store:
        first, grown, compacted, after = store.requests(limit=10)[::-1]
    assert (first.shared_messages, first.shared_tokens, first.client_shared_tokens) == (
        None,
        None,
        None,
    )
    # Appended to: all of the last request is shared, as it was counted.
    assert grown.shared_messages == 5
    assert grown.shared_tokens == first.tokens_after == 500
    assert grown.client_shared_tokens == first.tokens_before
    # Compacted: what is sent shares only what came before the summary, counted afresh; the
    # client's own history was appended to.
    assert compacted.compacted
    assert compacted.shared_messages == leading(sent[1], sent[2]) < len(sent[1])
    assert compacted.shared_tokens == 100 * leading(sent[1], sent[2])
    assert compacted.client_shared_tokens == grown.tokens_before
    # The next request sends the compacted history with the new messages appended.
    assert not after.compacted
    assert after.shared_messages == len(sent[2]) == leading(sent[2], sent[3])
    assert after.shared_tokens == compacted.tokens_after
    assert compacted.tokens_before is not None
    assert after.tokens_before is not None
    assert after.client_shared_tokens == min(compacted.tokens_before, after.tokens_before)


def test_a_record_says_its_error_and_its_compactions_events(tmp_path: Path) -> None:
    path = tmp_path / "records.db"
    orphan = {"role": "tool", "tool_call_id": "gone", "content": "orphaned output"}
    repaired = [*HISTORY[:3], orphan, *HISTORY[3:]]
    with proxied(summarizer=ScriptedSummarizer(), store=str(path), timeout=0.3, **COMPACTING) as (
        fake,
        _,
        client,
    ):
        answer = client.post(
            CHAT,
            json={"model": "gpt-4o", "messages": repaired},
            headers={"x-synopsis-session": "repaired"},
        )
        assert answer.status_code == 200
        fake.add(chat_completion("too late"), delay=1.0)
        late = client.post(
            CHAT,
            json={"model": "gpt-4o", "messages": HISTORY[:3]},
            headers={"x-synopsis-session": "late"},
        )
        assert late.status_code == 504
        samples = scrape(client)
    assert value(samples, "synopsis_proxy_errors_total", kind="upstream_timeout") == 1
    with SQLiteStore(path) as store:
        (timed_out,) = store.requests("late")
        (fixed,) = store.requests("repaired")
        (errors,) = store.request_rollup("error")
    assert (timed_out.error, timed_out.status, timed_out.events) == ("upstream_timeout", 504, ())
    assert (errors.key, errors.requests) == ("upstream_timeout", 1)
    assert fixed.error is None
    assert fixed.compacted
    (line,) = (e for e in fixed.events if e.startswith("history_repaired: "))
    assert "orphaned" in line or "gone" in line
    assert all(len(e) <= 200 for e in fixed.events)
