"""``stream=True``: the real SDKs read server-sent events from the fake server, and the adapters
put them together into the answer the non-streamed call gives, or into a TransportError."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2
import openai
import pytest

from synopsis.errors import TransportError
from synopsis.summarizers import Usage
from synopsis.summarizers.llm.clients import (
    anthropic_completion,
    openai_chat_completion,
    openai_responses_completion,
)
from synopsis.testing.server import Event, anthropic_message, chat_completion, response
from tests.summarizers.helpers import GOOD
from tests.summarizers.llm.test_clients import FLAVOURS, GOOD_TEXT, MODES, ask, request, run

if TYPE_CHECKING:
    from tests.summarizers.llm.test_clients import Factory, Flavour

CHAT, RESPONSES, ANTHROPIC = FLAVOURS
TEXT = "The guard for empty input is in; the tests pass."


STREAMED: dict[str, Factory] = {
    "chat": lambda client: openai_chat_completion(client, stream=True),
    "responses": lambda client: openai_responses_completion(client, stream=True),
    "anthropic": lambda client: anthropic_completion(client, stream=True),
}


def streamed(flavour: Flavour) -> Flavour:
    """``flavour`` with its adapter asked to stream."""
    return dataclasses.replace(flavour, adapter=STREAMED[flavour.name])


flavours = pytest.mark.parametrize("flavour", FLAVOURS, ids=[f.name for f in FLAVOURS])
modes = pytest.mark.parametrize("mode", MODES)


@flavours
@modes
def test_a_streamed_answer_is_the_answer_the_whole_call_gives(llm_server, flavour, mode):
    llm_server.add(flavour.answer(TEXT))
    llm_server.add(flavour.answer(TEXT))
    whole = ask(flavour, mode, llm_server, request(flavour.model))
    pieces = ask(streamed(flavour), mode, llm_server, request(flavour.model))
    assert pieces == whole
    assert pieces.text == TEXT
    assert pieces.usage == flavour.usage
    assert pieces.model == flavour.model
    plain, stream = (r.body for r in llm_server.requests)
    assert "stream" not in plain
    assert stream.pop("stream") is True
    if flavour is CHAT:
        assert stream.pop("stream_options") == {"include_usage": True}
    assert stream == plain


@flavours
@modes
def test_a_streamed_answer_becomes_a_record(llm_server, flavour, mode):
    llm_server.add(flavour.answer(GOOD_TEXT), chunk_delay=0.005)
    record = run(streamed(flavour), mode, llm_server)
    assert record.narrative == GOOD["narrative"]
    assert record.model == flavour.model
    assert record.usage == flavour.usage


@flavours
@modes
def test_a_connection_cut_mid_stream_is_retried(llm_server, flavour, mode):
    llm_server.add(flavour.answer(GOOD_TEXT), cut_after=2)
    llm_server.add(flavour.answer(GOOD_TEXT))
    slept: list[float] = []
    record = run(streamed(flavour), mode, llm_server, sleep=slept.append)
    assert record.model == flavour.model
    assert len(llm_server.requests) == 2
    assert slept == [0.25]


@flavours
@modes
def test_a_connection_cut_mid_stream_is_a_retryable_transport_error(llm_server, flavour, mode):
    llm_server.add(flavour.answer(TEXT), cut_after=1)
    with pytest.raises(TransportError) as caught:
        ask(streamed(flavour), mode, llm_server, request(flavour.model))
    assert caught.value.retryable is True
    # the openai SDK wraps the HTTP library's error; the anthropic SDK lets it through
    cause = caught.value.__cause__
    if flavour is ANTHROPIC:
        assert isinstance(cause, httpx2.RemoteProtocolError)
        assert "incomplete chunked read" in str(caught.value)
    else:
        assert isinstance(cause, openai.APIConnectionError)
        assert isinstance(cause.__cause__, httpx2.RemoteProtocolError)


@flavours
@modes
def test_a_stream_that_ends_before_its_last_event_is_a_retryable_transport_error(
    llm_server, flavour, mode
):
    llm_server.add(flavour.answer(TEXT), cut_after=2, cut_cleanly=True)
    last = {"chat": "a finish_reason", "responses": "response.completed"}
    with pytest.raises(TransportError, match="stream ended before") as caught:
        ask(streamed(flavour), mode, llm_server, request(flavour.model))
    assert caught.value.retryable is True
    assert str(caught.value).endswith(last.get(flavour.name, "message_stop"))


@flavours
@modes
def test_a_stream_slower_than_the_timeout_is_a_retryable_transport_error(llm_server, flavour, mode):
    llm_server.add(flavour.answer(TEXT), chunk_delay=0.5)
    with pytest.raises(TransportError, match="Timeout") as caught:
        ask(streamed(flavour), mode, llm_server, request(flavour.model), timeout=0.1)
    assert caught.value.retryable is True


@flavours
@modes
@pytest.mark.parametrize(("status", "retryable"), [(400, False), (429, True), (503, True)])
def test_an_error_status_to_a_stream_is_a_transport_error(
    llm_server, flavour, mode, status, retryable
):
    llm_server.error(status)
    with pytest.raises(TransportError, match=f"HTTP {status}") as caught:
        ask(streamed(flavour), mode, llm_server, request(flavour.model))
    assert caught.value.retryable is retryable
    assert llm_server.requests[0].body["stream"] is True


def _then(events: list[Event], error: Event) -> list[Event]:
    """The events up to the first text delta, then ``error`` (the stream ends there)."""
    first = next(i for i, e in enumerate(events) if e.delta)
    return [*events[: first + 1], error]


@modes
def test_an_anthropic_error_event_is_a_retryable_transport_error(llm_server, mode):
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    llm_server.add(anthropic_message(TEXT), rewrite=lambda e: _then(e, Event("error", error)))
    with pytest.raises(TransportError, match="Overloaded") as caught:
        ask(streamed(ANTHROPIC), mode, llm_server, request(ANTHROPIC.model))
    # the SDK raises it as a status error with the stream's status, 200
    assert caught.value.retryable is True
    assert isinstance(caught.value.__cause__, anthropic.APIStatusError)
    assert caught.value.__cause__.status_code == 200


@modes
def test_a_chat_error_chunk_is_a_retryable_transport_error(llm_server, mode):
    error = {"error": {"type": "server_error", "message": "The server had an error"}}
    llm_server.add(chat_completion(TEXT), rewrite=lambda e: _then(e, Event(None, error)))
    with pytest.raises(TransportError, match="The server had an error") as caught:
        ask(streamed(CHAT), mode, llm_server, request(CHAT.model))
    assert caught.value.retryable is True
    assert type(caught.value.__cause__) is openai.APIError


def test_a_responses_error_event_ends_the_stream_unfinished(llm_server):
    error = {"type": "error", "code": "server_error", "message": "boom", "sequence_number": 9}
    llm_server.add(response(TEXT), rewrite=lambda e: _then(e, Event("error", error)))
    with pytest.raises(TransportError, match=r"before response\.completed") as caught:
        ask(streamed(RESPONSES), "sync", llm_server, request(RESPONSES.model))
    assert caught.value.retryable is True


@pytest.mark.parametrize("flavour", [CHAT, RESPONSES], ids=["chat", "responses"])
def test_a_streamed_openai_answer_without_usage_costs_nothing(llm_server, flavour):
    llm_server.add(flavour.answer(TEXT) | {"usage": None})
    answer = ask(streamed(flavour), "sync", llm_server, request("asked"))
    assert answer.text == TEXT
    assert answer.usage == Usage()
    assert answer.model == "gpt-test"


def test_a_chat_stream_without_the_usage_chunk_costs_nothing(llm_server):
    llm_server.add(chat_completion(TEXT), rewrite=lambda events: events[:-2] + events[-1:])
    answer = ask(streamed(CHAT), "async", llm_server, request("asked"))
    assert answer.text == TEXT
    assert answer.usage == Usage()


def test_a_chat_stream_takes_the_model_from_its_chunks_or_the_request(llm_server):
    llm_server.add(chat_completion(TEXT, model="gpt-answered"))
    llm_server.add(chat_completion(TEXT, model=""))
    assert ask(streamed(CHAT), "sync", llm_server, request("asked")).model == "gpt-answered"
    assert ask(streamed(CHAT), "sync", llm_server, request("asked")).model == "asked"


def test_an_incomplete_response_stream_keeps_its_text_and_usage(llm_server):
    llm_server.add(response(TEXT) | {"status": "incomplete"})
    answer = ask(streamed(RESPONSES), "async", llm_server, request(RESPONSES.model))
    assert answer.text == TEXT
    assert answer.usage == RESPONSES.usage


def test_a_response_stream_text_comes_from_its_deltas(llm_server):
    def drop_first_delta(events: list[Event]) -> list[Event]:
        first = next(i for i, e in enumerate(events) if e.delta)
        return events[:first] + events[first + 1 :]

    llm_server.add(response("abc"), rewrite=drop_first_delta)  # deltas "a", "b", "c"
    answer = ask(streamed(RESPONSES), "sync", llm_server, request(RESPONSES.model))
    assert answer.text == "bc"


def test_an_anthropic_stream_joins_text_blocks_and_counts_cache_writes(llm_server):
    body = anthropic_message("one ")
    body["content"].append({"type": "text", "text": "two"})
    body["usage"] = {
        "input_tokens": 10,
        "output_tokens": 3,
        "cache_read_input_tokens": None,
        "cache_creation_input_tokens": 20,
    }
    llm_server.add(body)
    answer = ask(streamed(ANTHROPIC), "sync", llm_server, request("asked"))
    assert answer.text == "one two"
    assert answer.usage == Usage(prompt_tokens=30, completion_tokens=3, total_tokens=33)


def _cumulative(events: list[Event]) -> list[Event]:
    """A ``message_delta`` whose usage restates the input counts, larger than at the start (a
    server tool read more input), as the API's running totals do."""
    usage: dict[str, Any] = {"input_tokens": 850, "cache_read_input_tokens": 150}
    out: list[Event] = []
    for event in events:
        if event.name == "message_delta":
            assert isinstance(event.data, dict)
            data = event.data | {"usage": event.data["usage"] | usage}
            event = dataclasses.replace(event, data=data)  # noqa: PLW2901
        out.append(event)
    return out


@modes
def test_an_anthropic_stream_takes_input_counts_from_message_delta_when_given(llm_server, mode):
    llm_server.add(anthropic_message(TEXT), rewrite=_cumulative)
    answer = ask(streamed(ANTHROPIC), mode, llm_server, request("asked"))
    assert answer.usage == Usage(
        prompt_tokens=1000, completion_tokens=80, total_tokens=1080, cached_tokens=150
    )


def test_an_anthropic_stream_without_message_start_is_unfinished(llm_server):
    llm_server.add(
        anthropic_message(TEXT), rewrite=lambda e: [x for x in e if x.name != "message_start"]
    )
    with pytest.raises(TransportError, match="before message_stop") as caught:
        ask(streamed(ANTHROPIC), "sync", llm_server, request("asked"))
    assert caught.value.retryable is True


def test_the_anthropic_stream_model_falls_back_to_the_request(llm_server):
    llm_server.add(anthropic_message(TEXT, model=""))
    assert ask(streamed(ANTHROPIC), "async", llm_server, request("asked")).model == "asked"
