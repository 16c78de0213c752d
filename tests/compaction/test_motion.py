"""A session in motion: one pressure, one compaction, landing where it aims.

Replays of the bundled transcripts, message by message as a live agent sends them, and
properties over generated histories: a compaction lands within the tolerance of its target
(or its event says what prevented it), the next one waits until new messages refill the room
it left (an emergency says so when one message alone was larger than that room), a tail that
does not fit is fitted rather than dropped, the tail a caller sized is kept whole outside an
emergency, and compactions that keep refilling trip the refill breaker."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import synopsis
from synopsis.compaction.telling import TOLERANCE
from synopsis.events import CompactionCompleted, Event, RefillBreakerOpened
from synopsis.messages import Message, Role, TextPart, is_summary
from synopsis.planning import Keep
from synopsis.planning.reductions import SUMMARY_MARKER
from synopsis.stores import MemoryStore
from synopsis.testing import conversation
from tests.compaction.helpers import TRANSCRIPTS, load_items
from tests.compaction.test_properties import COUNTER, agent_history, bulk

WINDOWS = (8_000, 32_000)


@dataclass
class Played:
    """One compaction of a replay: the request it came at, and its event."""

    index: int
    event: CompactionCompleted


def replay(items: list[Any], window: int, **options: Any) -> tuple[list[Played], list[Event]]:
    """Each item appended in turn and the result carried on, as a live agent does; stops
    where a history cannot fit (the system prompt alone over the window)."""
    events: list[Event] = []
    compactor = synopsis.Compactor(
        model="gpt-4o",
        context_window=window,
        store="memory",
        session_id="s",
        listeners=[events.append],
        environ={},
        **options,
    )
    played: list[Played] = []
    history: list[Any] = []
    for index, item in enumerate(items):
        history.append(item)
        try:
            result = compactor.compact(history)
        except synopsis.BudgetUnreachableError:
            break
        assert result.tokens_after <= compactor.setup.limit
        if result.compacted:
            (done,) = [e for e in result.events if isinstance(e, CompactionCompleted)]
            played.append(Played(index, done))
        history = list(result.messages)
    return played, events


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_a_replay_compacts_once_per_pressure_and_lands_where_it_aims(
    path: Any, window: int
) -> None:
    played, _ = replay(load_items(path), window)
    for before, after in itertools.pairwise(played):
        if after.index - before.index <= 2:
            # Only one message too large for the whole room the last compaction left may
            # bring the next one this soon; the event says so.
            assert after.event.emergency.startswith("one new message"), after.event.message
    for one in played:
        event = one.event
        assert event.window == window
        assert 0 < event.target_tokens <= window
        if abs(event.landed - event.target) > TOLERANCE:
            assert event.off_target, event.message


def test_the_bundled_replays_compact_and_mostly_land_within_a_few_points() -> None:
    """What makes the replay above worth its time: the transcripts do compact, and most
    compactions land close to their target, not merely with a reason why not."""
    landed = [
        abs(p.event.landed - p.event.target)
        for path in TRANSCRIPTS
        for window in WINDOWS
        for p in replay(load_items(path), window)[0]
    ]
    assert len(landed) >= 20
    assert sum(d <= TOLERANCE for d in landed) >= 0.9 * len(landed)


def big_output(call_id: str, lines: int, seed: int) -> dict[str, Any]:
    """A tool's output of ``lines`` lines, about 13 tokens each."""
    text = "\n".join(f"{seed}.{i} src/module_{i % 7}.py: value {i * seed}" for i in range(lines))
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def failures(call_id: str, lines: int, seed: int) -> dict[str, Any]:
    """A test run's output: a failure a line, each in a file of its own (a summary has much
    to keep of it)."""
    text = "\n".join(
        f"FAILED tests/unit_{seed}/test_case_{i}.py::test_parse_{i} - AssertionError: "
        f"expected {i * 7} got {i * 7 + seed} in src/parser_{seed}/rule_{i}.py"
        for i in range(lines)
    )
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def read(call_id: str, path: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "read_file", "arguments": f'{{"path": "{path}"}}'},
            }
        ],
    }


def test_a_tail_holding_one_unit_larger_than_its_room_is_fitted_in_the_same_compaction() -> None:
    # A 32k window: a tool output of about 10k tokens at the end is under the oversized
    # threshold (half the trigger) but larger than the tail's room, and the summary of the
    # thirteen reads before it fills its share. Kept whole, the compaction would land near
    # the trigger and fire again on the next request.
    history: list[Any] = [{"role": "system", "content": "You are a coding agent."}]
    history += [{"role": "user", "content": "Port the parser to the new API."}]
    for turn in range(13):
        history += [read(f"c{turn}", f"src/p{turn}.py"), failures(f"c{turn}", 60, turn)]
    history += [read("last", "src/huge.py"), big_output("last", 880, 99)]
    store = MemoryStore()
    events: list[Event] = []
    compactor = synopsis.Compactor(
        model="gpt-4o",
        context_window=32_000,
        store=store,
        session_id="s",
        listeners=[events.append],
        environ={},
    )
    result = compactor.compact(history)
    assert result.compacted
    (done,) = [e for e in events if isinstance(e, CompactionCompleted)]
    assert abs(done.landed - done.target) <= TOLERANCE, done.message
    # The large output is still there, made small, its call with it; its original is stored.
    assert result.messages[-2]["tool_calls"][0]["id"] == "last"
    assert result.messages[-1]["tool_call_id"] == "last"
    assert len(result.messages[-1]["content"]) < len(history[-1]["content"]) // 4
    stored = [m for m in store.recall("s") if m.data and '"last"' in m.data]
    assert any(m.text == history[-1]["content"] for m in stored)
    # And the next request, a short one, finds room: no compaction.
    grown = [*result.messages, {"role": "assistant", "content": "Done: the port compiles."}]
    assert not compactor.compact(grown).compacted


@pytest.mark.parametrize("asked", [400, 440, 480])
def test_a_tail_that_does_not_quite_fit_is_trimmed_to_what_fits_not_dropped(asked: int) -> None:
    # An emergency: the history is over the window, and the tail the caller asked for does
    # not fit the room. It gives way as little as it must, the same for any request beyond
    # what fits, and the event says it gave way.
    history = conversation(turns=130, result_chars=5_000)
    events: list[Event] = []
    result = synopsis.compact(
        history,
        model="claude-sonnet-4-5",
        context_window=200_000,
        keep=f"messages:{asked}",
        listeners=[events.append],
    )
    assert result.code == "emergency"
    (done,) = [e for e in events if isinstance(e, CompactionCompleted)]
    assert done.tail_gave_way
    assert "the kept tail gave way" in done.message
    assert abs(done.landed - done.target) <= TOLERANCE, done.message
    assert done.kept >= 100  # trimmed to what fits, never dropped to its minimum


def test_a_history_the_tail_holds_whole_is_not_summarized_and_says_why() -> None:
    big = "word " * 3_300
    history = [{"role": "user", "content": f"task {big}"}, {"role": "assistant", "content": big}]
    compactor = synopsis.Compactor(
        model="gpt-4o",
        context_window=8_000,
        keep="messages:6",
        min_messages=0,
        reserve_output_tokens=1_000,  # over the trigger (6,400) with room to answer
        environ={},
    )
    result = compactor.compact(history)
    assert not result.compacted
    assert result.code == "nothing-to-compact"
    assert "the tail kept as asked (the last 6 messages) holds every message" in result.reason
    assert result.messages == history


@st.composite
def held_cases(draw: st.DrawFn) -> tuple[list[Message], int, int]:
    """A history over the trigger with room left to answer, and a tail of ``k`` messages."""
    raw = draw(agent_history("tool", reasoning=False))
    history = bulk(raw, draw(st.integers(10, 30)))
    tokens = COUNTER.count_messages(history)
    window = int(tokens / draw(st.floats(0.81, 0.88)))
    return history, window, draw(st.integers(1, 8))


@given(held_cases())
@settings(deadline=None)
def test_outside_an_emergency_nothing_of_the_tail_asked_for_is_summarized(
    case: tuple[list[Message], int, int],
) -> None:
    history, window, k = case
    compactor = synopsis.Compactor(
        context_window=window,
        reserve_output_tokens=window // 20,
        keep=Keep.messages(k),
        min_messages=0,
        environ={},
    )
    result = compactor.compact(history, format="synopsis")
    assert result.code != "emergency"
    out: list[Message] = result.messages
    tail = history[-k:]
    # The whole tail asked for is there, word for word, after any summary (it may keep more:
    # a cut falls on a safe boundary at or before the one asked for).
    assert out[-len(tail) :] == tail
    assert not any(is_summary(m) for m in out[-len(tail) :])


@st.composite
def pressed(draw: st.DrawFn) -> tuple[list[Message], int]:
    raw = draw(agent_history("tool", reasoning=False))
    history = bulk(raw, draw(st.integers(10, 40)))
    tokens = COUNTER.count_messages(history)
    return history, int(tokens / draw(st.floats(0.82, 1.3)))


@given(pressed())
@settings(deadline=None)
def test_a_compaction_that_lands_on_target_leaves_room_for_the_next_request(
    case: tuple[list[Message], int],
) -> None:
    history, window = case
    events: list[Event] = []
    compactor = synopsis.Compactor(
        context_window=window,
        store="memory",
        session_id="p",
        min_messages=0,
        listeners=[events.append],
        environ={},
    )
    try:
        result = compactor.compact(history, format="synopsis")
    except synopsis.BudgetUnreachableError:
        return
    if not result.compacted:
        return
    (done,) = [e for e in events if isinstance(e, CompactionCompleted)]
    assert done.target_tokens <= compactor.setup.limit
    if abs(done.landed - done.target) > TOLERANCE:
        assert done.off_target
        return
    # One more message that fits the room it left: no second compaction.
    room = compactor.setup.limit - result.tokens_after
    words = max(1, min(room // 4, 400))
    grown = [*result.messages, Message(Role.USER, (TextPart("next " * words),))]
    again = compactor.compact(grown, format="synopsis")
    assert not again.compacted, again.reason


def test_compactions_that_keep_refilling_trip_the_refill_breaker_and_then_land_lower() -> None:
    # Each output (about 4,800 tokens) is larger than the room even a compaction that lands
    # low for the session's pace leaves in an 8,000-token window: the compactions come two
    # requests apart until the breaker lowers where they land.
    items: list[Any] = [{"role": "user", "content": "Read every module and report."}]
    for turn in range(40):
        items += [read(f"c{turn}", f"src/m{turn}.py"), big_output(f"c{turn}", 350, turn + 1)]
    played, events = replay(items, 8_000)
    opened = [e for e in events if isinstance(e, RefillBreakerOpened)]
    assert opened
    first = opened[0]
    assert (first.compactions, first.requests) == (3, 3)
    assert first.landing < 0.5
    assert "now aim no higher than" in first.message
    # After it, compactions aim lower and come further apart than before it.
    at = next(i for i, e in enumerate(events) if isinstance(e, RefillBreakerOpened))
    before = [p for p in played if events.index(p.event) < at]
    after = [p for p in played if events.index(p.event) > at]
    assert after
    assert max(p.event.target for p in after) < min(p.event.target for p in before[:1])

    def gaps(ps: list[Played]) -> float:
        steps = [b.index - a.index for a, b in itertools.pairwise(ps)]
        return sum(steps) / max(1, len(steps))

    assert gaps(after) > gaps(before[-4:])


def test_an_emergency_says_when_one_new_message_was_larger_than_the_room() -> None:
    items: list[Any] = [{"role": "user", "content": "Summarize the logs."}]
    for turn in range(12):
        items += [read(f"c{turn}", f"log/{turn}.txt"), big_output(f"c{turn}", 50, turn + 1)]
    items += [read("huge", "log/all.txt"), big_output("huge", 400, 77)]
    played, _ = replay(items, 8_000)
    last = played[-1].event
    assert last.emergency.startswith("one new message (message ")
    assert "a tool's output of" in last.emergency
    assert "larger than the" in last.emergency
    assert "of room the last compaction left" in last.emergency


def test_a_tail_well_under_its_room_takes_in_the_units_before_it_made_small() -> None:
    # Each output alone is larger than the room left beside the tail: kept whole, none would
    # fit, and the compaction would land far under its target. Made small, several do.
    history: list[Any] = [{"role": "user", "content": "Read the modules."}]
    for turn in range(30):
        history += [read(f"c{turn}", f"src/m{turn}.py"), big_output(f"c{turn}", 400, turn + 1)]
    history += [
        {"role": "assistant", "content": "Done reading."},
        {"role": "user", "content": "Now summarize."},
    ]
    store = MemoryStore()
    events: list[Event] = []
    compactor = synopsis.Compactor(
        model="gpt-4o",
        context_window=32_000,
        store=store,
        session_id="s",
        listeners=[events.append],
        environ={},
    )
    result = compactor.compact(history)
    (done,) = [e for e in events if isinstance(e, CompactionCompleted)]
    digests = [m for m in result.messages if str(m.get("content")).startswith(SUMMARY_MARKER)]
    assert len(digests) >= 3
    assert abs(done.landed - done.target) <= TOLERANCE, done.message
    # Each one made small stands for its original, which the store gives back whole.
    stored = {m.text for m in store.recall("s")}
    for digest in digests:
        (original,) = [h for h in history if h.get("tool_call_id") == digest["tool_call_id"]]
        assert original["content"] in stored
