"""Whatever an ADK history holds (calls with and without ids, thought signatures of any bytes,
text), compacting it through the callback gives ``Content`` objects that Gemini accepts, that
round-trip through google-genai's and ADK's own serializers, and that are the very objects
given wherever synopsis kept a content."""

from __future__ import annotations

import asyncio

from google.adk.events import Event
from google.adk.models.llm_request import LlmRequest
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

import synopsis
from synopsis.adapters.adk import SynopsisCallback, to_wire
from synopsis.testing import FixedCounter

words = st.text(st.characters(codec="utf-8"), max_size=40)
signatures = st.none() | st.binary(min_size=1, max_size=12)


@st.composite
def exchange(draw: st.DrawFn, n: int) -> list[types.Content]:
    """A model turn and the user turn after it: a call and its result, or text and text."""
    if draw(st.booleans()):
        call_id = f"call-{n}" if draw(st.booleans()) else None
        name = draw(st.sampled_from(["run", "read_file", "search"]))
        call = types.FunctionCall(id=call_id, name=name, args={"arg": draw(words)})
        result = types.FunctionResponse(id=call_id, name=name, response={"out": draw(words)})
        return [
            types.Content(
                role="model",
                parts=[types.Part(function_call=call, thought_signature=draw(signatures))],
            ),
            types.Content(role="user", parts=[types.Part(function_response=result)]),
        ]
    answer = types.Part(text=draw(words) or "ok", thought_signature=draw(signatures))
    question = types.Part(text=draw(words) or "go on")
    return [
        types.Content(role="model", parts=[answer]),
        types.Content(role="user", parts=[question]),
    ]


@st.composite
def histories(draw: st.DrawFn) -> list[types.Content]:
    out = [types.Content(role="user", parts=[types.Part(text=draw(words) or "start")])]
    for n in range(draw(st.integers(0, 30))):
        out += draw(exchange(n))
    return out


@given(histories())
def test_compacted_contents_are_valid_and_round_trip(history: list[types.Content]) -> None:
    callback = SynopsisCallback(
        model="gemini-2.5-flash", context_window=1500, counter=FixedCounter(per_message=100)
    )
    request = LlmRequest(contents=list(history))
    asyncio.run(callback.compact(request, "s"))
    out = request.contents
    assert all(isinstance(c, types.Content) for c in out)
    assert synopsis.validate([to_wire(c) for c in out], "gemini", format="gemini") == []
    for content in out:
        assert types.Content.model_validate_json(content.model_dump_json()) == content
        event = Event(author="coder", content=content)
        assert Event.model_validate_json(event.model_dump_json()).content == content
    made = [c for c in out if all(c is not g for g in history)]
    if len(out) == len(history) and not made:
        return  # nothing compacted: the very list of contents given
    assert any("synopsis-summary" in (p.text or "") for c in made for p in c.parts or [])
    assert out[-1] is history[-1]
    # A content equal to one given is the one given: new objects only for what changed.
    assert not any(c == g for c in made for g in history)
