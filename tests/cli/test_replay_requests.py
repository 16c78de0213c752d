"""The requests a replay sends, as a prefix cache prices them: the shortcuts taken for turns that
only append agree with decoding and comparing every request whole."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import pytest

from synopsis.cli.replay import _told, replay
from synopsis.cli.replay_requests import Sent, Uncompacted
from synopsis.compaction import Compactor
from synopsis.events import (
    CompactionCompleted,
    CompactionSkipped,
    RefillBreakerOpened,
)
from synopsis.formats import decode, encode
from synopsis.messages import content_hash
from synopsis.pricing import ANTHROPIC, OPENAI, session_cost
from synopsis.summarizers import Usage
from tests.cli.helpers import DANGLING, TAU, lines

if TYPE_CHECKING:
    from synopsis.formats import FormatName
    from synopsis.pricing import RequestCost

WINDOW = 6000


def wire(fmt: FormatName) -> tuple[list[Any], object]:
    """A real session in ``fmt``: its items and the system prompt given apart."""
    encoded = encode(decode(lines(DANGLING), "openai").messages, fmt)
    return list(encoded.messages), encoded.system


def sent(fmt: FormatName, *, whole: bool) -> list[RequestCost]:
    """Each turn's request with synopsis priced, through :meth:`Sent.send` (which appends where
    it can), or with ``whole`` through :meth:`Sent.resend` (which compares every request)."""
    items, system = wire(fmt)
    compactor = Compactor(
        model="gpt-4o", context_window=WINDOW, store="memory", session_id="s", environ={}
    )
    setup = compactor.setup
    uncompacted = Uncompacted(setup, items, fmt, system, ANTHROPIC)
    tracker = Sent(setup, fmt, ANTHROPIC, uncompacted)
    history: list[Any] = []
    out = []
    for index, item in enumerate(items):
        history.append(item)
        uncompacted.send(index + 1)
        result = compactor.compact(history, system=system, format=fmt)  # type: ignore[arg-type]
        after = result.system if result.system is not None else system
        send = tracker.resend if whole else (lambda r, s, i=index: tracker.send(i, r, s))
        out.append(send(result, after))
        history, system = list(result.messages), after
    return out


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses", "gemini"])
def test_appending_prices_each_request_as_comparing_it_whole(fmt: FormatName) -> None:
    appended = sent(fmt, whole=False)
    assert appended == sent(fmt, whole=True)
    # The session compacted, each compaction rewrote the start of the history, and still the
    # system prompt before its summary was read from the cache.
    broken = [
        (before, after)
        for before, after in itertools.pairwise(appended)
        if after.shared < before.tokens - 50
    ]
    assert broken
    assert all(after.shared > 0 for _, after in broken)


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "responses", "gemini"])
def test_the_uncompacted_requests_are_priced_as_every_prefix_decoded(fmt: FormatName) -> None:
    items, system = wire(fmt)
    setup = Compactor(model="gpt-4o", environ={}).setup
    running = Uncompacted(setup, items[:30], fmt, system, OPENAI)
    got = [running.send(n)[1] for n in range(1, 31)]
    requests = []
    for n in range(1, 31):
        prefix = decode(items[:n], fmt, system=system).messages
        requests.append([(content_hash(m), setup.counter.count_message(m)) for m in prefix])
    expected = session_cost(requests, OPENAI).requests
    assert [r.shared for r in got] == [r.shared for r in expected]
    # The counter's total also holds the reply's priming, which is written, never read.
    priming = setup.counter.count_messages([])
    for request, counted in zip(got, requests, strict=True):
        assert request.tokens == sum(tokens for _, tokens in counted) + priming


def test_a_replay_costs_each_request_at_its_prices() -> None:
    report = replay(lines(TAU), model="gpt-4o", context_window=WINDOW, prices=ANTHROPIC)
    assert report.prices is ANTHROPIC
    assert report.compactions
    for turn in report.turns:
        written = turn.tokens_after - turn.cached_tokens
        assert turn.cost == pytest.approx(ANTHROPIC.cost(read=turn.cached_tokens, written=written))
    # The first request reads nothing; every later one at least its system prompt.
    assert report.turns[0].cached_tokens == 0
    assert report.cache_hits == len(report.turns) - 1
    assert report.cost_with < report.cost_without


def completed(**fields: Any) -> CompactionCompleted:
    base: dict[str, Any] = {
        "messages_before": 10,
        "messages_after": 4,
        "tokens_before": 900,
        "tokens_after": 450,
        "summarized": 6,
        "kept": 3,
        "desired_split": 6,
        "used_split": 6,
        "summary_chars": 100,
        "usage": Usage(),
        "record_id": "r",
        "duration": 0.1,
    }
    return CompactionCompleted("s", **(base | fields))


def test_a_turn_is_told_what_its_events_say() -> None:
    skipped = CompactionSkipped("s", reason="under-trigger", detail="", messages=1, tokens=1)
    assert _told([skipped]) == {}
    # Until the pipeline fills them in, a compaction's window and target are 0: no share.
    assert _told([completed()]) == {"off_target": "", "emergency": ""}
    aimed = completed(window=1000, target_tokens=500, off_target="a protected head")
    assert _told([aimed]) == {"off_target": "a protected head", "emergency": "", "target": 0.5}
    breaker = RefillBreakerOpened("s", compactions=3, requests=3, landing=0.35)
    told = _told([completed(window=1000, emergency="one message larger than the room"), breaker])
    assert told == {
        "off_target": "",
        "emergency": "one message larger than the room",
        "breaker": 0.35,
    }
