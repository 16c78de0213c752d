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
    result = asyncio.run(callback.compact(request, "s"))
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
    # What is new is the summary, or what the repairs made of contents Gemini would reject.
    summarized = any("synopsis-summary" in (p.text or "") for c in made for p in c.parts or [])
    assert summarized == result.compacted
    assert result.compacted or result.fixes
    if not result.fixes:
        assert out[-1] is history[-1]
    # A content equal to one given is the one given: new objects only for what changed.
    assert not any(c == g for c in made for g in history)


def adk_copy(content: types.Content) -> types.Content:
    """``content`` as ADK puts it in a request: the content and each part copied, their
    fields shared."""
    if content.parts is None:
        return content.model_copy()
    return content.model_copy(update={"parts": [p.model_copy() for p in content.parts]})


@st.composite
def next_request(draw: st.DrawFn, contents: list[types.Content]) -> list[types.Content]:
    """The contents of the next request: ADK's copies or the same objects, grown by an
    exchange or not, and now and then with an earlier content changed, dropped, copied deeply
    (equal, not the same), or without its parts."""
    grown = [*contents, *draw(exchange(len(contents)))] if draw(st.booleans()) else contents
    out = [adk_copy(c) for c in grown] if draw(st.booleans()) else list(grown)
    if not out:
        return out
    k = draw(st.integers(0, len(out) - 1))
    change = draw(st.sampled_from(["none"] * 4 + ["text", "signature", "drop", "deep", "bare"]))
    parts = out[k].parts or []
    if change == "text" and parts:
        edited = parts[0].model_copy(update={"text": draw(words)})
        out[k] = out[k].model_copy(update={"parts": [edited, *parts[1:]]})
    elif change == "signature" and parts:
        edited = parts[0].model_copy(update={"thought_signature": draw(signatures)})
        out[k] = out[k].model_copy(update={"parts": [edited, *parts[1:]]})
    elif change == "drop":
        del out[k]
    elif change == "deep":
        out[k] = out[k].model_copy(deep=True)
    elif change == "bare":
        out[k] = types.Content(role=out[k].role, parts=None)
    return out


@given(data=st.data())
def test_a_request_is_read_from_where_the_last_one_ended_only_when_it_starts_the_same(
    data: st.DataObject,
) -> None:
    """The callback reads a request's contents from where the last request's ended exactly
    when its earlier contents equal them (by pydantic's ``==``), whether they are the same
    objects, ADK's shallow copies, deep copies, or contents without parts."""
    from synopsis.adapters.adk import _Covered  # noqa: PLC0415

    covered = _Covered()
    previous: list[types.Content] = []
    for _ in range(data.draw(st.integers(1, 6))):
        contents = data.draw(next_request(previous or data.draw(histories())))
        same = len(contents) >= len(previous) and contents[: len(previous)] == previous
        assert covered.cover(contents) == (len(previous) if same else 0)
        previous = contents
