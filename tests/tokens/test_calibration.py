"""Calibrated: the reported count for a known prefix plus an estimate of the rest."""

from __future__ import annotations

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import Message, Role, TextPart
from synopsis.tokens import Calibrated, TiktokenCounter

from .helpers import text_message

TOOL = {"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}


def _history(n: int) -> list[Message]:
    return [
        text_message(f"turn {i}", Role.USER if i % 2 == 0 else Role.ASSISTANT) for i in range(n)
    ]


def _copy(message: Message) -> Message:
    return Message(message.role, tuple(TextPart(p.text) for p in message.parts))  # type: ignore[union-attr]


def test_extension_is_reported_plus_suffix() -> None:
    counter = TiktokenCounter()
    calibrated = Calibrated(counter)
    history = _history(4)
    estimate = calibrated.count_messages(history)
    calibration = calibrated.calibrate(history, 500)
    assert calibration.prefix_length == 4
    assert calibration.estimated == estimate
    assert calibration.ratio == pytest.approx(500 / estimate)
    assert calibrated.calibration is calibration
    assert calibrated.count_messages(history) == 500
    longer = [*history, text_message("new question")]
    assert calibrated.count_messages(longer) == 500 + counter.count_message(longer[-1])


def test_equal_copies_resolve_by_content_hash() -> None:
    counter = TiktokenCounter()
    calibrated = Calibrated(counter)
    history = _history(3)
    calibrated.count_messages(history)
    copies = [_copy(m) for m in history]  # e.g. decoded again from the request body
    assert all(a == b and a is not b for a, b in zip(copies, history, strict=True))
    calibrated.calibrate(copies[:2], 100)
    grown = [*history, text_message("more")]
    expected = 100 + counter.count_message(history[2]) + counter.count_message(grown[-1])
    assert calibrated.count_messages(grown) == expected


def test_copies_that_differ_stay_their_own_anchor() -> None:
    counter = TiktokenCounter()
    calibrated = Calibrated(counter)
    history = _history(3)
    calibrated.count_messages(history)
    other = [text_message("something else"), history[1]]
    calibrated.calibrate(other, 100)
    assert calibrated.count_messages(history) == counter.count_messages(history)
    assert calibrated.count_messages([*other, history[2]]) == 100 + counter.count_message(
        history[2]
    )


def test_prefix_longer_than_last_history() -> None:
    counter = TiktokenCounter()
    calibrated = Calibrated(counter)
    history = _history(3)
    calibrated.count_messages(history[:1])
    calibrated.calibrate(history, 70)
    assert calibrated.count_messages(history) == 70


def test_compaction_falls_back_to_estimate() -> None:
    counter = TiktokenCounter()
    calibrated = Calibrated(counter)
    history = _history(6)
    calibrated.calibrate(history, 999)
    compacted = [text_message("summary of turns 0-3"), *history[4:]]
    assert calibrated.count_messages(compacted) == counter.count_messages(compacted)
    assert calibrated.count_messages(history[:3]) == counter.count_messages(history[:3])
    calibrated.reset()
    assert calibrated.calibration is None
    assert calibrated.count_messages(history) == counter.count_messages(history)


def test_tools_are_a_delta() -> None:
    counter = TiktokenCounter(provider="anthropic")
    calibrated = Calibrated(counter)
    history = _history(2)
    calibrated.calibrate(history, 800, tools=[TOOL])
    assert calibrated.calibration is not None
    assert calibrated.calibration.tools_tokens == counter.count_tools([TOOL])
    assert calibrated.count_messages(history, tools=[TOOL]) == 800
    assert calibrated.count_messages(history) == 800 - counter.count_tools([TOOL])
    two = calibrated.count_messages(history, tools=[TOOL, TOOL])
    assert two == 800 + counter.count_tools([TOOL, TOOL]) - counter.count_tools([TOOL])


def test_delegation_and_ratio_edge() -> None:
    counter = TiktokenCounter(provider="gemini")
    calibrated = Calibrated(counter)
    message = text_message("hello world")
    assert calibrated.count_text("hello world") == 2
    assert calibrated.count_message(message) == counter.count_message(message)
    calibration = calibrated.calibrate([], 5)
    assert calibration.estimated == 0
    assert calibration.ratio == 1.0
    assert calibrated.count_messages([message]) == 5 + counter.count_message(message)
    assert "Calibrated(TiktokenCounter" in repr(calibrated)


@pytest.mark.parametrize("reported", [-1, True, 1.5, "10"])
def test_bad_reported(reported: object) -> None:
    with pytest.raises(ConfigurationError):
        Calibrated(TiktokenCounter()).calibrate([], reported)  # type: ignore[arg-type]


def test_needs_a_counter() -> None:
    with pytest.raises(ConfigurationError):
        Calibrated(object())  # type: ignore[arg-type]
