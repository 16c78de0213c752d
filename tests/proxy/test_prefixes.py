"""What a request shares with its session's previous one, and the lines a record keeps of its
compaction's events: the parts on their own, beside the real runs in ``test_records.py``."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from synopsis.events import (
    ChainInvalidated,
    CompactionCompleted,
    CompactionFailed,
    CompactionStarted,
    Event,
    HistoryRepaired,
    RefillBreakerOpened,
    SummarizerFellBack,
    SummaryFilledIn,
)
from synopsis.proxy import create_app
from synopsis.proxy.bodies import ROUTES
from synopsis.proxy.exchange import Exchange, counting
from synopsis.proxy.logs import Line
from synopsis.proxy.metrics import Metrics
from synopsis.proxy.prefixes import Prefixes, Seen, Shared
from synopsis.proxy.recorder import PENDING, Recorder, _Pending
from synopsis.proxy.tally import _TALLY, Tally, failed, heard
from synopsis.stores import MemoryStore
from synopsis.stores.requests import RequestRecord
from synopsis.summarizers.records import Usage

if TYPE_CHECKING:
    from starlette.requests import Request

A, B, C, D = ({"role": "user", "content": text} for text in "abcd")


def never(items: list[Any], system: object, tools: object) -> int | None:
    raise AssertionError("counted what was known")


def by_items(items: list[Any], system: object, tools: object) -> int | None:
    return 10 * len(items) + (1 if system else 0)


def test_the_first_request_of_a_session_shares_nothing_known() -> None:
    prefixes = Prefixes()
    assert prefixes.share("s", Seen(None, None, [A], 10), Seen(None, None, [A], 10), never) == (
        Shared()
    )


def test_an_appended_history_shares_the_last_one_as_it_was_counted() -> None:
    prefixes = Prefixes()
    prefixes.share("s", Seen("sys", None, [A, B], 25), Seen("sys", None, [A, B, C], 37), never)
    shared = prefixes.share(
        "s", Seen("sys", None, [A, B, C], 40), Seen("sys", None, [A, B, C, D], 50), never
    )
    assert shared == Shared(messages=2, tokens=25, client_tokens=37)


def test_a_history_changed_inside_counts_its_shared_part() -> None:
    prefixes = Prefixes()
    prefixes.share("s", Seen("sys", None, [A, B, C], 30), Seen("sys", None, [A, B, C], 30), never)
    shared = prefixes.share(
        "s", Seen("sys", None, [A, D, C], 30), Seen("sys", None, [A, B], 20), by_items
    )
    # Sent: one leading message shared, counted with the system prompt; the client's history
    # shrank, so its shared part is counted too, and never more than the whole.
    assert shared == Shared(messages=1, tokens=11, client_tokens=20)


def test_a_new_system_prompt_or_tools_shares_nothing() -> None:
    prefixes = Prefixes()
    prefixes.share("s", Seen("one", None, [A], 10), Seen("one", None, [A], 10), never)
    assert prefixes.share("s", Seen("two", None, [A], 10), Seen("two", None, [A], 10), never) == (
        Shared(0, 0, 0)
    )
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert prefixes.share(
        "s", Seen("two", tools, [A], 10), Seen("two", tools, [A], 10), never
    ) == Shared(0, 0, 0)


def test_unknown_tokens_stay_unknown() -> None:
    prefixes = Prefixes()
    prefixes.share("s", Seen(None, None, [A], None), Seen(None, None, [A], None), never)
    shared = prefixes.share(
        "s", Seen(None, None, [A, B], None), Seen(None, None, [A, B], None), lambda *_: None
    )
    assert shared == Shared(1, None, None)


def test_items_nested_deeper_than_python_compares_share_nothing_known() -> None:
    def nested() -> list[Any]:
        deep: list[Any] = []
        for _ in range(100_000):
            deep = [deep]
        return [{"role": "user", "content": deep}]

    prefixes = Prefixes()
    first, second = nested(), nested()  # equal, but each compared to its bottom
    prefixes.share("s", Seen(None, None, first, 5), Seen(None, None, first, 5), never)
    assert prefixes.share("s", Seen(None, None, second, 5), Seen(None, None, second, 5), never) == (
        Shared()
    )


def test_only_the_sessions_used_last_are_remembered() -> None:
    prefixes = Prefixes(remembered=1)
    for session in ("a", "b", "a"):
        shared = prefixes.share(session, Seen(None, None, [A], 5), Seen(None, None, [A], 5), never)
        assert shared == Shared()


def test_a_history_that_cannot_be_counted_is_counted_as_unknown() -> None:
    state = create_app(environ={}).state.proxy
    line = Line("POST", ROUTES[0].path)
    exchange = Exchange(
        state, ROUTES[0], cast("Request", None), line, time.perf_counter(), b"", {}, "gpt-4o", []
    )
    count = counting(exchange)
    assert count([{"role": "user", "content": "hello"}], None, None) == counting(exchange)(
        [{"role": "user", "content": "hello"}], None, []
    )
    assert isinstance(count([A], None, None), int)
    assert count([{"role": 5}], None, None) is None
    state.compactors.close()


def test_each_event_that_tells_of_the_compaction_is_a_line() -> None:
    usage = Usage()
    completed: dict[str, Any] = {
        "messages_before": 10, "messages_after": 4, "tokens_before": 900, "tokens_after": 300,
        "summarized": 6, "kept": 3, "desired_split": 6, "used_split": 6, "summary_chars": 80,
        "usage": usage, "record_id": "r", "duration": 0.1,
    }  # fmt: skip
    events: list[Event] = [
        CompactionStarted("s", messages=10, tokens=900, reason="triggered"),
        SummarizerFellBack("s", model="gpt-4o-mini", reason="timed out", fallback="rules"),
        HistoryRepaired("s", fixes=("message 3: dropped", "message 5: merged")),
        ChainInvalidated("s", reason="message 2 was edited"),
        RefillBreakerOpened("s", compactions=3, requests=2, landing=0.4),
        SummaryFilledIn("s", model="gpt-4o-mini", added=("path: a.py", "request: fix it")),
        CompactionFailed("s", stage="summarize", error="boom", error_type="RuntimeError"),
        CompactionCompleted("s", **completed),
        CompactionCompleted(
            "s",
            **completed,
            emergency="one output larger than the window",
            cleared=2,
            tokens_cleared=1500,
        ),
    ]
    tally = Tally()
    token = _TALLY.set(tally)
    try:
        for event in events:
            heard(event)
        failed("client_gone")
    finally:
        _TALLY.reset(token)
    assert tally.events == [
        "summarizer_fell_back: timed out → rules",
        "history_repaired: message 3: dropped; message 5: merged",
        "chain_invalidated: message 2 was edited",
        "refill_breaker_opened",
        "summary_filled_in: 2 items",
        "compaction_failed: summarize: boom",
        "emergency: one output larger than the window",
        "cleared: 2 outputs, 1500 tokens",
    ]
    assert tally.error == "client_gone"


def test_a_record_keeps_twenty_short_lines_and_outside_a_request_nothing_is_kept() -> None:
    heard(ChainInvalidated("s", reason="x"))  # no request: nowhere to go
    failed("bad_request")
    tally = Tally()
    token = _TALLY.set(tally)
    try:
        for i in range(30):
            heard(ChainInvalidated("s", reason=f"{i} " + "x" * 300))
    finally:
        _TALLY.reset(token)
    assert len(tally.events) == 20
    assert tally.events[0].startswith("chain_invalidated: 0 x")
    assert {len(line) for line in tally.events} == {200}
    assert tally.error is None


def test_a_writer_far_behind_compares_the_oldest_as_new_records_come() -> None:
    recorder = Recorder(MemoryStore(), Metrics(), queue_size=PENDING + 3)
    history: list[Any] = []
    for n in range(PENDING + 5):  # no writer runs: every record waits in the queue
        history = [*history, {"role": "user", "content": str(n)}]
        seen = Seen(None, None, history, 10 * len(history))
        record = RequestRecord(
            at=datetime.now(UTC), session_id="s", model="m", route="/r", format="openai", status=200
        )
        recorder.add(_Pending(record, seen, seen, lambda items, system, tools: None))
    queued = list(recorder.queue)
    assert len(queued) == PENDING + 3  # two dropped, the oldest
    settled = [r for r in queued if isinstance(r, RequestRecord)]
    # Beyond PENDING waiting, the oldest were compared at once, each with the one before.
    assert len(settled) == 3
    assert [r.shared_messages for r in settled] == [2, 3, 4]
    assert [r.shared_tokens for r in settled] == [20, 30, 40]
