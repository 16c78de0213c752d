"""Property tests over generated histories: each converter gives back equal JSON; any history
of one format, encoded into every other and decoded there, is a fixed point (a second trip
changes nothing) that keeps its texts in order; and a conversation carried into another
format keeps its texts, its tool calls each with its results, its speakers and its system
prompt. What another format cannot carry is documented loss: reasoning from another provider
(its signature cannot be verified there), placeholders for media or provider items it has no
block for, and Gemini's lack of a system role after the first message."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synopsis.errors import ConversationError
from synopsis.formats import Wire, anthropic, gemini, openai_chat, responses
from synopsis.messages import (
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from tests.formats import strategies as ws
from tests.strategies import Style, any_history, valid_history

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

STYLES: st.SearchStrategy[Style] = st.sampled_from(["tool", "user"])
# The profile (tests/conftest.py) decides how many examples; these are slow to generate.
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


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


def _encode(fmt: str, messages: Sequence[Message]) -> Wire:
    """``messages`` in ``fmt``; ``gemini-ids`` is Gemini with the call ids written out."""
    if fmt == "gemini-ids":
        return gemini.encode(messages, call_ids=True)
    return ENCODERS[fmt](messages)


def _there_and_back(fmt: str, messages: Sequence[Message]) -> tuple[Message, ...]:
    return _decode_wire(fmt.removesuffix("-ids"), _encode(fmt, messages))


TARGETS = ["openai", "responses", "anthropic", "gemini", "gemini-ids"]


def _texts(messages: Sequence[Message]) -> list[str]:
    return [p.text for m in messages for p in m.parts if isinstance(p, TextPart) and p.text]


def _in_order(texts: Sequence[str], within: Sequence[str]) -> bool:
    """Each of ``texts`` inside one of ``within``, in order (a format that joins neighbours
    may hold several in one text, and placeholders may stand between them)."""
    i, start = 0, 0
    for text in texts:
        while i < len(within):
            found = within[i].find(text, start)
            if found >= 0:
                start = found + len(text)
                break
            i, start = i + 1, 0
        else:
            return False
    return True


def _through_all(messages: Sequence[Message]) -> None:
    """Into every format and back: a second trip gives the same wire JSON (so the same
    messages too: a fixed point after one trip), and every text comes back in order."""
    for fmt in TARGETS:
        wire = _encode(fmt, messages)
        back = _decode_wire(fmt.removesuffix("-ids"), wire)
        assert _encode(fmt, back) == wire, fmt
        assert _in_order(_texts(messages), _texts(back)), fmt


def _arguments(call: ToolCallPart) -> str:
    """The call's arguments as the object Anthropic and Gemini require: text that is not a
    JSON object is wrapped under ``arguments`` (nothing the model sent is lost)."""
    value: Any = call.arguments
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            value = {"arguments": call.arguments}
        if not isinstance(value, dict):
            value = {"arguments": call.arguments}
    return json.dumps(value, sort_keys=True, default=dict)


def _pairs(messages: Sequence[Message]) -> list[tuple[Any, ...]]:
    """Each result with the call it answers (the nearest call of its id still waiting), by
    the call's name and arguments (as the object Anthropic and Gemini require); results that
    answer nothing, and calls still waiting."""
    waiting: list[ToolCallPart] = []
    out: list[tuple[Any, ...]] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                waiting.append(part)
            elif isinstance(part, ToolResultPart):
                call = next((c for c in reversed(waiting) if c.call_id == part.call_id), None)
                if call is None:
                    out.append(("orphan", part.text))
                    continue
                waiting.remove(call)
                out.append(("answered", call.name, _arguments(call), part.text))
    out += [("waiting", c.name) for c in waiting]
    return sorted(out)


def _calls(messages: Sequence[Message]) -> list[tuple[str, str, str]]:
    return [
        (p.call_id, p.name, _arguments(p))
        for m in messages
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]


def _said(message: Message) -> list[Part]:
    """What a message says: reasoning and empty text say nothing."""
    return [
        p
        for p in message.parts
        if not isinstance(p, ReasoningPart) and not (isinstance(p, TextPart) and not p.text)
    ]


def _leading(messages: Sequence[Message], fmt: str) -> int:
    """How many messages the system prompt spans: the instructions before the conversation
    starts. A message that says nothing is dropped on the way, except by Gemini, which keeps
    it (so there it starts the conversation, and an instruction after it is not lifted)."""
    for i, message in enumerate(messages):
        if message.role in (Role.SYSTEM, Role.DEVELOPER):
            continue
        if fmt.startswith("gemini") or _said(message):
            return i
    return len(messages)


def _speakers(messages: Sequence[Message], fmt: str) -> list[str]:
    """Who speaks, turn by turn: the system prompt, the person's side (tool results
    included) and the model, neighbours of one side counted once. Gemini, with no system
    role after the system prompt, gives a later instruction to the person's side."""
    out: list[str] = []
    leading = _leading(messages, fmt)
    for i, message in enumerate(messages):
        if not _said(message):
            continue
        if message.role in (Role.SYSTEM, Role.DEVELOPER):
            side = "system" if i < leading or not fmt.startswith("gemini") else "person"
        else:
            side = "model" if message.role is Role.ASSISTANT else "person"
        if not out or out[-1] != side:
            out.append(side)
    return out


def _system_prompt(messages: Sequence[Message], fmt: str) -> list[str]:
    return [
        p.text
        for m in messages[: _leading(messages, fmt)]
        if m.role in (Role.SYSTEM, Role.DEVELOPER)
        for p in m.parts
        if isinstance(p, TextPart)
    ]


def _faithful(fmt: str, messages: Sequence[Message]) -> None:
    """A conversation carried into ``fmt`` keeps its texts, its calls (ids, names,
    arguments) each with its results, who speaks when, and its system prompt."""
    back = _there_and_back(fmt, messages)
    assert _texts(back) == _texts(messages)
    assert _pairs(back) == _pairs(messages)
    if fmt != "gemini":  # without ids written out, Gemini derives its own
        assert _calls(back) == _calls(messages)
    assert _speakers(back, fmt) == _speakers(messages, fmt)
    assert _system_prompt(back, fmt) == _system_prompt(messages, fmt)


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


# ---------------------------------------------------------------- round trips and across formats
# One test per source format checks all it can on each drawn history: drawing is most of the
# cost here.


@SETTINGS
@given(ws.openai_history())
def test_openai_histories(items: list[dict[str, Any]]) -> None:
    decoded = openai_chat.decode(items)
    wire = openai_chat.encode(decoded)
    assert wire.messages == items
    assert wire.system is None
    _through_all(decoded)
    _plain_everywhere(decoded)


@SETTINGS
@given(ws.responses_history())
def test_responses_histories(items: list[dict[str, Any]]) -> None:
    decoded = responses.decode(items)
    wire = responses.encode(decoded)
    assert wire.messages == items
    assert [list(item) for item in wire.messages] == [list(item) for item in items]
    assert wire.system is None
    _through_all(decoded)
    _plain_everywhere(decoded)


@SETTINGS
@given(ws.anthropic_request())
def test_anthropic_histories(request: tuple[list[dict[str, Any]], Any]) -> None:
    items, system = request
    decoded = anthropic.decode(items, system=system)
    wire = anthropic.encode(decoded)
    assert wire.messages == items
    assert wire.system == system
    _through_all(decoded)
    _plain_everywhere(decoded)


@SETTINGS
@given(ws.gemini_request())
def test_gemini_histories(request: tuple[list[dict[str, Any]], Any]) -> None:
    items, system = request
    decoded = gemini.decode(items, system=system)
    wire = gemini.encode(decoded)
    assert wire.messages == items
    assert wire.system == system
    # Ids written out or not, a history decoded from Gemini comes back as it was.
    assert gemini.encode(decoded, call_ids=True).messages == items
    _through_all(decoded)
    _plain_everywhere(decoded)


@SETTINGS
@given(ws.gemini_dumped_request())
def test_gemini_model_dump_histories(request: tuple[list[dict[str, Any]], Any]) -> None:
    """Parts as google-genai's ``model_dump()`` writes them: every field present, unset ones
    None."""
    items, system = request
    decoded = gemini.decode(items, system=system)
    wire = gemini.encode(decoded)
    assert (wire.messages, wire.system) == (items, system)
    _through_all(decoded)
    _plain_everywhere(decoded)


@SETTINGS
@given(STYLES.flatmap(any_history))
def test_model_histories_into_every_format(messages: list[Message]) -> None:
    _through_all(messages)
    _plain_everywhere(messages)


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini-ids"])
@SETTINGS
@given(STYLES.flatmap(any_history))
def test_a_history_even_a_damaged_one_keeps_what_it_says_in_every_format(
    fmt: str, messages: list[Message]
) -> None:
    _faithful(fmt, messages)


@pytest.mark.parametrize("fmt", TARGETS)
@SETTINGS
@given(STYLES.flatmap(valid_history))
def test_a_valid_conversation_keeps_what_it_says_in_every_format(
    fmt: str, messages: list[Message]
) -> None:
    # Valid, even Gemini without call ids pairs every result with its call again.
    _faithful(fmt, messages)


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
    if fmt == "responses":  # an item's keys come back in their order
        assert [list(item) for item in wire.messages] == [list(item) for item in items]
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


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini"])
@SETTINGS
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
