"""The stored values check what they are given and normalise what would not round-trip."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import Message, Role, TextPart, ToolCallPart, content_hash
from synopsis.stores import Compaction, SessionState, StoredMessage, wire_json
from synopsis.stores.records import LAST_SUMMARY_CHARS
from tests.stores.helpers import T0, compaction, record, stored


def test_of_derives_what_the_rest_of_synopsis_derives() -> None:
    message = Message(Role.ASSISTANT, (TextPart("Let me look."), ToolCallPart("c1", "ls", "{}")))
    item = {"role": "assistant", "content": "Let me look.", "tool_calls": ["…"]}
    got = StoredMessage.of(
        "s1", message, position=7, format="openai", data=item, compaction_id="r1"
    )
    assert got.id == f"m7-{content_hash(message)[:12]}"
    assert (got.role, got.text, got.sha256) == ("assistant", message.text, content_hash(message))
    assert got.data == '{"role":"assistant","content":"Let me look.","tool_calls":["…"]}'
    assert got.created_at.tzinfo == UTC
    assert abs(got.created_at - datetime.now(UTC)) < timedelta(minutes=1)
    with_id = StoredMessage.of(
        "s1",
        Message(Role.USER, (TextPart("hi"),), id="msg_1"),
        position=0,
        format="responses",
        data='{"id": "msg_1"}',
        compaction_id="r1",
        created_at=T0,
    )
    assert (with_id.id, with_id.data, with_id.created_at) == ("msg_1", '{"id": "msg_1"}', T0)


def test_wire_json_is_compact_and_keeps_non_ascii() -> None:
    assert wire_json({"a": ("é", 1)}) == '{"a":["é",1]}'


def test_times_become_utc_and_naive_ones_are_refused() -> None:
    oslo = timezone(timedelta(hours=2))
    message = stored(0, "x", compaction="r", session="s")
    moved = replace(message, created_at=datetime(2025, 6, 15, 12, 30, tzinfo=oslo))
    assert moved.created_at == T0
    assert moved.created_at.tzinfo == UTC
    with pytest.raises(ConfigurationError, match="timezone-aware"):
        replace(message, created_at=datetime(2025, 6, 15))
    state = SessionState("s", updated_at=datetime(2025, 6, 15, 12, 30, tzinfo=oslo))
    assert state.updated_at == T0
    assert state.updated_at is not None
    assert state.updated_at.tzinfo == UTC
    with pytest.raises(ConfigurationError, match="updated_at"):
        SessionState("s", updated_at=datetime(2025, 6, 15))


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"session_id": ""}, "session_id"),
        ({"id": ""}, "id"),
        ({"position": -1}, "position"),
        ({"position": True}, "position"),
        ({"role": "robot"}, "unknown role 'robot'"),
        ({"format": "xml"}, "unknown format 'xml'"),
        ({"data": {"role": "user"}}, "JSON text"),
    ],
)
def test_a_stored_message_refuses_bad_fields(change: dict[str, Any], error: str) -> None:
    message = stored(0, "x", compaction="r")
    with pytest.raises(ConfigurationError, match=error):
        replace(message, **change)


def test_roles_are_plain_strings_and_surrogates_leave_the_text() -> None:
    message = replace(stored(0, "x", compaction="r"), role=Role.TOOL, text="a\ud800b")
    assert type(message.role) is str
    assert message.role == "tool"
    assert message.text == "a\ufffdb"


def test_session_state_checks_and_trims() -> None:
    state = SessionState("s", governor={"turn": ("a", 1)}, last_summary="y" * 2000)
    assert dict(state.governor) == {"turn": ["a", 1]}
    assert len(state.last_summary) == LAST_SUMMARY_CHARS
    with pytest.raises(TypeError):
        state.governor["turn"] = 2  # type: ignore[index]
    for name in ("compactions", "tokens_summarized", "offset"):
        with pytest.raises(ConfigurationError, match=name):
            SessionState("s", **{name: -1})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="plain JSON"):
        SessionState("s", governor={"when": T0})
    with pytest.raises(ConfigurationError, match="session_id"):
        SessionState(None)  # type: ignore[arg-type]
    assert SessionState("").session_id == ""  # a call that names no session


def test_session_state_json_round_trips() -> None:
    state = SessionState("s", {"armed": True}, "a" * 32, 2, 900, "text", 14, T0)
    assert SessionState.from_json("s", state.to_json()) == state
    assert SessionState.from_json("s", {}) == SessionState("s")


def test_a_state_read_from_a_stores_text_equals_the_state_saved() -> None:
    state = SessionState(
        "s",
        {"armed": True, "turns": [1, {"a": None}]},
        "a" * 32,
        2,
        900,
        "text",
        14,
        T0,
        projection={"start": 1, "text": "é 🙂"},
    )
    read = SessionState.from_text("s", json.dumps(state.to_json()))
    assert read == state
    assert read.projection["text"] == "é 🙂"
    with pytest.raises(TypeError):
        read.governor["armed"] = False  # type: ignore[index]
    assert SessionState.from_text("s", "{}") == SessionState("s")


def test_a_compaction_holds_one_session_and_its_records() -> None:
    first = record()
    second = record(first, minutes=1)
    message = stored(0, "x", compaction=first.id)
    made = compaction(first, [message])
    assert (made.records, made.messages, made.record) == ((first,), (message,), first)
    both = Compaction("s1", [first, second], iter([message]), SessionState("s1"))
    assert (both.records, both.record) == ((first, second), second)
    assert Compaction("s1", (), (), SessionState("s1")).record is None
    with pytest.raises(ConfigurationError, match="the state is for session 's1', not 's2'"):
        Compaction("s2", first, (), SessionState("s1"))
    with pytest.raises(ConfigurationError, match="is for session 's1', not 's2'"):
        Compaction("s2", first, (message,), SessionState("s2"))
    with pytest.raises(ConfigurationError, match="names compaction 'other'"):
        Compaction("s1", first, (replace(message, compaction_id="other"),), SessionState("s1"))
    # A compaction that only reduced has no record: its messages name an id of its own.
    reduced = Compaction("s1", (), (message,), SessionState("s1"))
    assert reduced.record is None
    assert reduced.messages == (message,)
