"""Property tests over generated wire histories: each converter gives back equal JSON, and any
history of one format can be encoded into every other (and decoded there again)."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synopsis.errors import ConversationError
from synopsis.formats import Wire, anthropic, gemini, openai_chat, responses
from synopsis.messages import Message, ToolCallPart, ToolResultPart
from tests.formats import strategies as ws
from tests.strategies import Style, any_history, valid_history

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

STYLES: st.SearchStrategy[Style] = st.sampled_from(["tool", "user"])
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _decode_wire(fmt: str, wire: Wire) -> tuple[Message, ...]:
    if fmt == "openai":
        return openai_chat.decode(wire.messages)
    if fmt == "responses":
        return responses.decode(wire.messages)
    if fmt == "anthropic":
        return anthropic.decode(wire.messages, system=wire.system)
    return gemini.decode(wire.messages, system=wire.system)


ENCODERS: dict[str, Callable[[Sequence[Message]], Wire]] = {
    "openai": openai_chat.encode,
    "responses": responses.encode,
    "anthropic": anthropic.encode,
    "gemini": gemini.encode,
}


def _through_all(messages: Sequence[Message]) -> None:
    """Encoding into every format must not raise, and must decode there again."""
    for fmt, encode in ENCODERS.items():
        wire = encode(messages)
        again = _decode_wire(fmt, wire)
        assert all(isinstance(m, Message) for m in again)
    _decode_wire("gemini", gemini.encode(messages, call_ids=True))


# ---------------------------------------------------------------- round trips


@SETTINGS
@given(ws.openai_history())
def test_openai_round_trip(items: list[dict[str, Any]]) -> None:
    wire = openai_chat.encode(openai_chat.decode(items))
    assert wire.messages == items
    assert wire.system is None


@SETTINGS
@given(ws.responses_history())
def test_responses_round_trip(items: list[dict[str, Any]]) -> None:
    wire = responses.encode(responses.decode(items))
    assert wire.messages == items
    assert wire.system is None


@SETTINGS
@given(ws.anthropic_request())
def test_anthropic_round_trip(request: tuple[list[dict[str, Any]], Any]) -> None:
    items, system = request
    wire = anthropic.encode(anthropic.decode(items, system=system))
    assert wire.messages == items
    assert wire.system == system


@SETTINGS
@given(ws.gemini_request())
def test_gemini_round_trip(request: tuple[list[dict[str, Any]], Any]) -> None:
    items, system = request
    wire = gemini.encode(gemini.decode(items, system=system))
    assert wire.messages == items
    assert wire.system == system


@SETTINGS
@given(ws.gemini_dumped_request())
def test_gemini_model_dump_round_trip(request: tuple[list[dict[str, Any]], Any]) -> None:
    """Parts as google-genai's ``model_dump()`` writes them: every field present, unset ones
    None."""
    items, system = request
    decoded = gemini.decode(items, system=system)
    wire = gemini.encode(decoded)
    assert (wire.messages, wire.system) == (items, system)
    _through_all(decoded)


@SETTINGS
@given(ws.gemini_request())
def test_gemini_round_trip_is_independent_of_call_ids_flag(request: tuple[Any, Any]) -> None:
    items, system = request
    wire = gemini.encode(gemini.decode(items, system=system), call_ids=True)
    assert wire.messages == items


@SETTINGS
@given(ws.openai_history())
def test_encoding_twice_is_stable(items: list[dict[str, Any]]) -> None:
    """Decoding what an encoder wrote and encoding it again changes nothing."""
    for fmt, encode in ENCODERS.items():
        first = encode(openai_chat.decode(items))
        second = encode(_decode_wire(fmt, first))
        assert second == first, fmt


# ---------------------------------------------------------------- across formats


@SETTINGS
@given(ws.openai_history())
def test_openai_into_every_format(items: list[dict[str, Any]]) -> None:
    _through_all(openai_chat.decode(items))


@SETTINGS
@given(ws.responses_history())
def test_responses_into_every_format(items: list[dict[str, Any]]) -> None:
    _through_all(responses.decode(items))


@SETTINGS
@given(ws.anthropic_request())
def test_anthropic_into_every_format(request: tuple[list[dict[str, Any]], Any]) -> None:
    items, system = request
    _through_all(anthropic.decode(items, system=system))


@SETTINGS
@given(ws.gemini_request())
def test_gemini_into_every_format(request: tuple[list[dict[str, Any]], Any]) -> None:
    items, system = request
    _through_all(gemini.decode(items, system=system))


@SETTINGS
@given(STYLES.flatmap(any_history))
def test_model_histories_into_every_format(messages: list[Message]) -> None:
    _through_all(messages)


def _calls(messages: Sequence[Message]) -> list[tuple[str, str, Any]]:
    out = []
    for m in messages:
        for part in m.parts:
            if isinstance(part, ToolCallPart):
                out.append((part.call_id, part.name, json.loads(part.arguments_text)))
    return out


def _results(messages: Sequence[Message]) -> list[tuple[str, str]]:
    return [(p.call_id, p.text) for m in messages for p in m.parts if isinstance(p, ToolResultPart)]


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini"])
@SETTINGS
@given(STYLES.flatmap(valid_history))
def test_tool_exchanges_survive_every_format(fmt: str, messages: list[Message]) -> None:
    encode = ENCODERS[fmt]
    wire = gemini.encode(messages, call_ids=True) if fmt == "gemini" else encode(messages)
    back = _decode_wire(fmt, wire)
    assert _calls(back) == _calls(messages)
    assert sorted(_results(back)) == sorted(_results(messages))


# ---------------------------------------------------------------- corrupted input


def _accepted_round_trips(fmt: str, items: Any, system: Any = None) -> None:
    """Corrupted input either raises ConversationError (never KeyError, TypeError ...) or, when
    still acceptable, comes back equal and converts to every format."""
    try:
        decoded = _decode_wire(fmt, Wire(items, system))
    except ConversationError:
        return
    wire = ENCODERS[fmt](decoded)
    assert (wire.messages, wire.system) == (items, system)
    _through_all(decoded)


@SETTINGS
@given(ws.corrupted(ws.openai_history()))
def test_corrupted_openai(items: Any) -> None:
    _accepted_round_trips("openai", items)


@SETTINGS
@given(ws.corrupted(ws.responses_history()))
def test_corrupted_responses(items: Any) -> None:
    _accepted_round_trips("responses", items)


@SETTINGS
@given(ws.corrupted(ws.anthropic_request().map(list)))
def test_corrupted_anthropic(request: Any) -> None:
    items, system = request if len(request) == 2 else (request, None)
    _accepted_round_trips("anthropic", items, system)


@SETTINGS
@given(ws.corrupted(ws.gemini_request().map(list)))
def test_corrupted_gemini(request: Any) -> None:
    items, system = request if len(request) == 2 else (request, None)
    _accepted_round_trips("gemini", items, system)


RETYPED = settings(SETTINGS, max_examples=200)


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini"])
@RETYPED
@given(data=st.data())
def test_retyped_nested_values(fmt: str, data: st.DataObject) -> None:
    """Any nested object or list of a valid history given another type (or a known key) is
    rejected with ConversationError, or comes back equal."""
    base = {
        "openai": ws.openai_history().map(lambda items: (items, None)),
        "responses": ws.responses_history().map(lambda items: (items, None)),
        "anthropic": ws.anthropic_request(),
        "gemini": ws.gemini_request() | ws.gemini_dumped_request(),
    }[fmt]
    items, system = data.draw(base)
    for variant in ws.retypings([items, system], data.draw):
        _accepted_round_trips(fmt, *variant)


# ---------------------------------------------------------------- plain JSON out


def _frozen_anywhere(value: object) -> bool:
    if isinstance(value, MappingProxyType | tuple):
        return True
    if isinstance(value, dict):
        return any(_frozen_anywhere(v) for v in value.values())
    if isinstance(value, list):
        return any(_frozen_anywhere(v) for v in value)
    return False


def _plain_everywhere(messages: Sequence[Message]) -> None:
    """Each encoder writes plain JSON: no read-only mapping or tuple of the model leaks out, and
    the result serialises."""
    wires = [encode(messages) for encode in ENCODERS.values()]
    wires.append(gemini.encode(messages, call_ids=True))
    for wire in wires:
        assert not _frozen_anywhere(wire.messages)
        assert not _frozen_anywhere(wire.system)
        json.dumps([wire.messages, wire.system])


@SETTINGS
@given(ws.openai_history())
def test_plain_json_from_openai(items: list[dict[str, Any]]) -> None:
    _plain_everywhere(openai_chat.decode(items))


@SETTINGS
@given(ws.responses_history())
def test_plain_json_from_responses(items: list[dict[str, Any]]) -> None:
    _plain_everywhere(responses.decode(items))


@SETTINGS
@given(ws.anthropic_request())
def test_plain_json_from_anthropic(request: tuple[list[dict[str, Any]], Any]) -> None:
    items, system = request
    _plain_everywhere(anthropic.decode(items, system=system))


@SETTINGS
@given(ws.gemini_request() | ws.gemini_dumped_request())
def test_plain_json_from_gemini(request: tuple[list[dict[str, Any]], Any]) -> None:
    items, system = request
    _plain_everywhere(gemini.decode(items, system=system))


@SETTINGS
@given(STYLES.flatmap(any_history))
def test_plain_json_from_model_histories(messages: list[Message]) -> None:
    _plain_everywhere(messages)
