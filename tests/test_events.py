from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry import trace

from synopsis.events import (
    CompactionCompleted,
    CompactionFailed,
    CompactionSkipped,
    CompactionStarted,
    Event,
    RefillBreakerOpened,
    SummarizerFellBack,
    SummaryFilledIn,
    current_listeners,
    emit,
    listening,
    notify,
    span,
)
from synopsis.summarizers import Usage

if TYPE_CHECKING:
    from collections.abc import Mapping

    from opentelemetry.util import types as otel_types

AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def completed(**changes: Any) -> CompactionCompleted:
    fields: dict[str, Any] = {
        "session_id": "s1",
        "at": AT,
        "messages_before": 40,
        "messages_after": 9,
        "tokens_before": 163_000,
        "tokens_after": 41_250,
        "summarized": 31,
        "kept": 6,
        "desired_split": 34,
        "used_split": 34,
        "summary_chars": 2_400,
        "usage": Usage(prompt_tokens=120, completion_tokens=30, total_tokens=150),
        "record_id": "a" * 32,
        "duration": 1.234,
    }
    fields.update(changes)
    return CompactionCompleted(**fields)


def every_event() -> list[Event]:
    return [
        CompactionStarted(session_id="s1", messages=40, tokens=163_000, reason="triggered"),
        CompactionSkipped(
            session_id=None,
            reason="cooldown",
            detail="2 of 4 new messages since the last compaction",
            messages=42,
            tokens=120_000,
        ),
        completed(),
        CompactionFailed(
            session_id="s1", stage="summarize", error="connection refused", error_type="Transport"
        ),
        SummarizerFellBack(model="gpt-4o-mini", reason="timed out", fallback="rules"),
    ]


class Recorder:
    def __init__(self, name: str, log: list[tuple[str, Event]]) -> None:
        self.name = name
        self.log = log

    def __call__(self, event: Event) -> None:
        self.log.append((self.name, event))


def broken(event: Event) -> None:
    raise RuntimeError(f"listener bug on {event.kind}")


# -- emit ---------------------------------------------------------------------------------


def test_listeners_are_called_in_the_order_given() -> None:
    log: list[tuple[str, Event]] = []
    event = every_event()[0]
    emit(event, [Recorder("a", log), Recorder("b", log), Recorder("c", log)])
    assert log == [("a", event), ("b", event), ("c", event)]


def test_a_raising_listener_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[tuple[str, Event]] = []
    event = every_event()[2]
    with caplog.at_level(logging.INFO, logger="synopsis.events"):
        emit(event, [Recorder("a", log), broken, Recorder("b", log)])
    assert [name for name, _ in log] == ["a", "b"]
    failures = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failures) == 1
    assert failures[0].exc_info is not None
    assert "listener bug on compaction_completed" in str(failures[0].exc_info[1])
    assert "compaction_completed" in failures[0].getMessage()


@pytest.mark.parametrize(
    ("event", "level"),
    list(
        zip(
            every_event(),
            [logging.INFO, logging.INFO, logging.INFO, logging.WARNING, logging.WARNING],
            strict=True,
        )
    ),
    ids=lambda v: getattr(v, "kind", str(v)),
)
def test_each_event_is_logged_once_at_its_level_with_the_event_attached(
    caplog: pytest.LogCaptureFixture, event: Event, level: int
) -> None:
    with caplog.at_level(logging.DEBUG, logger="synopsis.events"):
        emit(event, [])
    (record,) = caplog.records
    assert record.name == "synopsis.events"
    assert record.levelno == level
    assert record.getMessage() == event.message
    assert "\n" not in record.getMessage()
    assert record.synopsis_event is event  # type: ignore[attr-defined]


def test_emit_without_listeners_only_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="synopsis.events"):
        emit(every_event()[0], ())
    assert len(caplog.records) == 1


# -- the events themselves -----------------------------------------------------------------


@pytest.mark.parametrize("event", every_event(), ids=lambda e: e.kind)
def test_to_dict_is_json_ready_and_holds_every_field(event: Event) -> None:
    data = event.to_dict()
    again = json.loads(json.dumps(data))
    assert again == data
    assert data["event"] == event.kind
    assert data["session_id"] == event.session_id
    assert datetime.fromisoformat(data["at"]) == event.at
    assert set(data) == {"event", *(f.name for f in dataclasses.fields(event))}


def test_completed_to_dict_spells_out_the_usage() -> None:
    data = completed().to_dict()
    assert data["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "cached_tokens": 0,
        "reasoning_tokens": 0,
    }
    assert data["at"] == "2025-01-02T03:04:05+00:00"
    assert data["record_id"] == "a" * 32


def test_events_are_stamped_now_in_utc_by_default() -> None:
    before = datetime.now(UTC)
    event = CompactionStarted(session_id=None, messages=1, tokens=2, reason="forced")
    after = datetime.now(UTC)
    assert before <= event.at <= after
    assert event.at.utcoffset() == timedelta(0)


def test_the_session_may_be_given_first_by_position_and_the_rest_only_by_keyword() -> None:
    event = CompactionFailed("s9", stage="store", error="disk full", error_type="StoreError")
    assert event.session_id == "s9"
    with pytest.raises(TypeError):
        CompactionFailed("s9", "store", "disk full", "StoreError")  # type: ignore[call-arg, arg-type]
    assert SummarizerFellBack(model="m", reason="r", fallback="rules").session_id is None


def test_events_are_frozen() -> None:
    event = every_event()[0]
    with pytest.raises(AttributeError):
        event.tokens = 5  # type: ignore[misc, union-attr]


def test_messages_are_one_readable_sentence_each() -> None:
    started, skipped, done, failed, fell_back = every_event()
    assert started.message == "session s1: compacting 40 messages (163,000 tokens): triggered"
    assert skipped.message == (
        "compaction skipped (cooldown) at 42 messages, 120,000 tokens: "
        "2 of 4 new messages since the last compaction"
    )
    assert done.message == (
        "session s1: compacted 40 -> 9 messages, 163,000 -> 41,250 tokens "
        "(31 summarized, 6 kept) in 1.23s"
    )
    assert failed.message == (
        "session s1: compaction failed at summarize: Transport: connection refused"
    )
    assert fell_back.message == (
        "summarizer model gpt-4o-mini failed (timed out); fell back to rules"
    )


def test_where_a_compaction_landed_against_its_aim_is_told() -> None:
    done = completed(window=200_000, target_tokens=100_000, tokens_after=41_250)
    assert done.landed == pytest.approx(0.20625)
    assert done.target == pytest.approx(0.5)
    assert completed().landed == completed().target == 0.0
    off = completed(off_target="the protected head alone takes 60% of the window")
    assert off.message.endswith(
        "; off its target: the protected head alone takes 60% of the window) in 1.23s"
    )
    urgent = completed(emergency="message 40 alone is larger than the room left")
    assert "; an emergency: message 40 alone is larger than the room left" in urgent.message


def test_the_refill_breaker_says_where_the_session_now_lands() -> None:
    opened = RefillBreakerOpened("s1", compactions=3, requests=3, landing=0.35)
    assert opened.message == (
        "session s1: 3 compactions in a row, each within 3 requests of the last: "
        "compactions of this session now aim no higher than 35% of the window"
    )
    assert opened.level == logging.WARNING
    assert opened.to_dict()["event"] == "refill_breaker_opened"


def test_a_filled_in_summary_says_what_was_added_by_kind() -> None:
    filled = SummaryFilledIn(
        "s1",
        model="smollm2",
        added=("first request: Hi, I need to downgrade", "identifier: S61CZX", "identifier: H8"),
    )
    assert filled.message == (
        "session s1: the summary by smollm2 left out facts; added verbatim: "
        "1 first request, 2 identifiers"
    )
    assert filled.level == logging.INFO
    data = json.loads(json.dumps(filled.to_dict()))
    assert data["event"] == "summary_filled_in"
    assert data["added"] == list(filled.added)
    squeezed = SummaryFilledIn(model="m", added=("path: a.py",), left_out=("identifier: x_y",))
    assert squeezed.message.endswith("added verbatim: 1 path; 1 more did not fit its budget")


def test_a_moved_split_is_mentioned() -> None:
    moved = completed(desired_split=34, used_split=30)
    assert "split at 30 instead of 34" in moved.message
    assert "split at" not in completed().message


# -- notify and listening ------------------------------------------------------------------


def test_notify_outside_listening_does_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="synopsis.events"):
        notify(SummarizerFellBack(model="m", reason="r", fallback="rules"))
    assert caplog.records == []


def test_notify_inside_listening_reaches_the_listeners_with_the_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[tuple[str, Event]] = []
    with (
        caplog.at_level(logging.INFO, logger="synopsis.events"),
        listening([Recorder("a", log), Recorder("b", log)], "sess-7"),
    ):
        notify(SummarizerFellBack(model="m", reason="r", fallback="rules"))
    assert [(name, e.session_id) for name, e in log] == [("a", "sess-7"), ("b", "sess-7")]
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert caplog.records[0].getMessage().startswith("session sess-7: ")


def test_an_event_naming_its_own_session_keeps_it() -> None:
    log: list[tuple[str, Event]] = []
    with listening([Recorder("a", log)], "outer"):
        notify(SummarizerFellBack(session_id="own", model="m", reason="r", fallback="rules"))
    assert log[0][1].session_id == "own"


def test_listening_without_a_session_leaves_the_event_as_it_is() -> None:
    log: list[tuple[str, Event]] = []
    event = SummarizerFellBack(model="m", reason="r", fallback="rules")
    with listening([Recorder("a", log)]):
        notify(event)
    assert log == [("a", event)]


def test_listening_with_no_listeners_still_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="synopsis.events"), listening([], "s"):
        notify(SummarizerFellBack(model="m", reason="r", fallback="rules"))
    assert len(caplog.records) == 1


def test_listening_nests_and_restores_on_exit_even_after_an_error() -> None:
    log: list[tuple[str, Event]] = []
    event = SummarizerFellBack(model="m", reason="r", fallback="rules")

    def inner() -> None:
        with listening([Recorder("inner", log)], "i"):
            notify(event)
            raise KeyError("boom")

    with listening([Recorder("outer", log)], "o"):
        with pytest.raises(KeyError):
            inner()
        notify(event)
    notify(event)
    assert [(name, e.session_id) for name, e in log] == [("inner", "i"), ("outer", "o")]
    assert current_listeners.get() == ()


def test_listeners_set_directly_on_the_context_variable_are_reached() -> None:
    log: list[tuple[str, Event]] = []
    token = current_listeners.set((Recorder("a", log),))
    try:
        notify(SummarizerFellBack(model="m", reason="r", fallback="rules"))
    finally:
        current_listeners.reset(token)
    assert len(log) == 1
    assert log[0][1].session_id is None


def test_listeners_follow_into_threads_and_tasks() -> None:
    log: list[tuple[str, Event]] = []
    event = SummarizerFellBack(model="m", reason="r", fallback="rules")

    async def main() -> None:
        with listening([Recorder("a", log)], "async"):
            await asyncio.to_thread(notify, event)
            await asyncio.create_task(asyncio.to_thread(notify, event))

    asyncio.run(main())
    assert [e.session_id for _, e in log] == ["async", "async"]


def test_a_raising_listener_does_not_escape_notify() -> None:
    log: list[tuple[str, Event]] = []
    with listening([broken, Recorder("a", log)], "s"):
        notify(SummarizerFellBack(model="m", reason="r", fallback="rules"))
    assert len(log) == 1


# -- span ------------------------------------------------------------------------------------


def test_span_is_a_no_op_without_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with span("synopsis.compact", messages=3, model=None) as handle:
        handle.set(tokens_after=10)
        assert not handle.recording
    with pytest.raises(ValueError, match="inside"), span("synopsis.compact"):
        raise ValueError("raised inside")


class RecordedSpan(trace.NonRecordingSpan):
    def __init__(self, name: str, attributes: otel_types.Attributes) -> None:
        super().__init__(trace.INVALID_SPAN_CONTEXT)
        self.name = name
        self.attributes: dict[str, Any] = dict(attributes or {})
        self.ended = False
        self.exceptions: list[BaseException] = []

    def set_attributes(self, attributes: Mapping[str, otel_types.AnyValue]) -> None:
        self.attributes.update(attributes)

    def end(self, end_time: int | None = None) -> None:
        self.ended = True

    def is_recording(self) -> bool:
        return True

    def set_status(self, status: Any, description: str | None = None) -> None:
        self.status = status

    def record_exception(
        self,
        exception: BaseException,
        attributes: otel_types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        self.exceptions.append(exception)


class RecordingTracer(trace.NoOpTracer):
    def __init__(self) -> None:
        self.spans: list[RecordedSpan] = []

    def start_span(
        self,
        name: str,
        context: Any = None,
        kind: trace.SpanKind = trace.SpanKind.INTERNAL,
        attributes: otel_types.Attributes = None,
        links: Any = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> trace.Span:
        recorded = RecordedSpan(name, attributes)
        self.spans.append(recorded)
        return recorded


class RecordingProvider(trace.NoOpTracerProvider):
    def __init__(self) -> None:
        self.tracer = RecordingTracer()
        self.asked: list[str] = []

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: otel_types.Attributes | None = None,
    ) -> trace.Tracer:
        self.asked.append(instrumenting_module_name)
        return self.tracer


PROVIDER = RecordingProvider()


@pytest.fixture
def tracer() -> RecordingTracer:
    # OpenTelemetry takes one global provider per process; this module's is set once.
    if trace.get_tracer_provider() is not PROVIDER:
        trace.set_tracer_provider(PROVIDER)
    assert trace.get_tracer_provider() is PROVIDER, "another global tracer provider was set"
    PROVIDER.tracer.spans.clear()
    return PROVIDER.tracer


def test_span_with_opentelemetry_records_name_attributes_and_errors(
    tracer: RecordingTracer,
) -> None:
    with span(
        "synopsis.compact",
        messages=3,
        model=None,
        ratio=0.5,
        forced=False,
        ids=["a", 2],
        where=AT,
    ) as handle:
        assert handle.recording
        assert trace.get_current_span() is tracer.spans[0]
        handle.set(tokens_after=10, skipped=None)
    (recorded,) = tracer.spans
    assert "synopsis" in PROVIDER.asked
    assert recorded.name == "synopsis.compact"
    assert recorded.attributes == {
        "messages": 3,
        "ratio": 0.5,
        "forced": False,
        "ids": ("a", 2),
        "where": str(AT),
        "tokens_after": 10,
    }
    assert recorded.ended

    with pytest.raises(ValueError, match="boom"), span("synopsis.summarize"):
        raise ValueError("boom")
    failed = tracer.spans[1]
    assert [str(e) for e in failed.exceptions] == ["boom"]
    assert failed.status.status_code is trace.StatusCode.ERROR
    assert failed.ended


def test_without_a_tracer_provider_no_span_is_made() -> None:
    """A process that set no provider gets no span (it would record nothing) and the
    handle says so; a provider set later is used from then on. Run apart: OpenTelemetry
    takes one global provider per process, and this module sets one."""
    script = """
from opentelemetry import trace
from synopsis.events import span

with span("synopsis.compact", messages=3) as handle:
    assert not handle.recording
    assert not trace.get_current_span().get_span_context().is_valid

class Provider(trace.NoOpTracerProvider):
    pass

trace.set_tracer_provider(Provider())
with span("synopsis.compact") as handle:
    assert handle.recording
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
