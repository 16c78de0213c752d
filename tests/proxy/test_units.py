"""The proxy's pure parts, one function at a time: error bodies, session keys, the usage a
response reports, which headers cross, and the compactor of each model (windows given, learnt
and calibrated; summarizer calls timed)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import Headers

import synopsis
import synopsis.proxy
from synopsis.proxy import create_app
from synopsis.proxy.compactors import LEARNT_FLOOR, Compactors, Timed
from synopsis.proxy.errors import error_body
from synopsis.proxy.relay import (
    ClientGone,
    Departure,
    forwarded_headers,
    returned_headers,
    usage,
)
from synopsis.proxy.sessions import session_key
from synopsis.stores import MemoryStore
from synopsis.summarizers import RuleBasedSummarizer
from synopsis.testing import ScriptedSummarizer, conversation
from synopsis.testing.server import (
    anthropic_message,
    chat_completion,
    response,
    stream_events,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from starlette.types import Message as Message_

    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord


def encoded(value: object) -> bytes:
    return json.dumps(value).encode()


# -- error bodies ------------------------------------------------------------------------------

STATUSES = st.integers(min_value=400, max_value=599)
MESSAGES = st.text(max_size=40)


@given(status=STATUSES, message=MESSAGES, code=st.none() | st.text(max_size=10))
def test_an_openai_error_has_exactly_the_four_fields_the_sdk_reads(
    status: int, message: str, code: str | None
) -> None:
    body = error_body("openai", status, message, code)
    error: Any = body["error"]
    assert body == {
        "error": {"message": message, "type": error["type"], "param": None, "code": code}
    }
    assert isinstance(error["type"], str)


@given(status=STATUSES, message=MESSAGES)
def test_an_anthropic_error_is_typed_error_with_a_typed_inner_error(
    status: int, message: str
) -> None:
    body = error_body("anthropic", status, message)
    kind = body["error"]["type"]  # type: ignore[index]
    assert body == {"type": "error", "error": {"type": kind, "message": message}}
    assert isinstance(kind, str)


@pytest.mark.parametrize(
    ("status", "openai", "anthropic"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "invalid_request_error", "authentication_error"),
        (404, "invalid_request_error", "not_found_error"),
        (413, "invalid_request_error", "request_too_large"),
        (500, "server_error", "api_error"),
        (502, "upstream_error", "api_error"),
        (504, "timeout", "timeout_error"),
    ],
)
def test_each_status_has_the_error_type_its_provider_uses(
    status: int, openai: str, anthropic: str
) -> None:
    assert error_body("openai", status, "m")["error"]["type"] == openai  # type: ignore[index]
    assert error_body("anthropic", status, "m")["error"]["type"] == anthropic  # type: ignore[index]


# -- session keys ------------------------------------------------------------------------------

SYSTEM = {"role": "system", "content": "You are a coding agent."}
FIRST = {"role": "user", "content": "Fix the parser."}
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


def key(
    items: Sequence[Any] = (SYSTEM, FIRST),
    system: object = None,
    tools: object = TOOLS,
    **headers: str,
) -> str:
    return session_key({k.replace("_", "-"): v for k, v in headers.items()}, items, system, tools)


def test_the_session_header_wins_and_is_taken_verbatim() -> None:
    assert key(x_synopsis_session="team/run 7", authorization="Bearer a") == "team/run 7"
    assert key([FIRST], x_synopsis_session="team/run 7", x_claude_code_session_id="c") == (
        "team/run 7"
    )
    assert key(x_synopsis_session="s" * 300) == "s" * 200
    assert key(x_synopsis_session="  ").startswith("auto:")


def test_a_claude_code_session_is_its_id_and_the_opening() -> None:
    one = key(x_claude_code_session_id="abc-123")
    assert one.startswith("claude-code:abc-123:")
    assert one.removeprefix("claude-code:abc-123:") == key().removeprefix("auto:")
    # A sub-agent sends the same id with a conversation of its own.
    explore = [SYSTEM, {"role": "user", "content": "Explore"}]
    assert key(explore, x_claude_code_session_id="abc-123") != one
    assert key(x_claude_code_session_id="i" * 300).startswith(f"claude-code:{'i' * 100}:")


@pytest.mark.parametrize("header", ["authorization", "x-api-key", "api-key", "x-goog-api-key"])
def test_the_same_opening_with_other_credentials_is_another_session(header: str) -> None:
    mine = session_key({header: "Bearer one"}, [SYSTEM, FIRST], None, TOOLS)
    theirs = session_key({header: "Bearer two"}, [SYSTEM, FIRST], None, TOOLS)
    assert mine != theirs
    assert "one" not in mine
    assert mine == session_key({header: "Bearer one"}, [SYSTEM, FIRST], None, TOOLS)


def test_each_part_of_the_opening_names_the_session() -> None:
    base = key()
    assert key([{"role": "system", "content": "Other."}, FIRST]) != base
    assert key([SYSTEM, {"role": "developer", "content": "More."}, FIRST]) != base
    assert key(system="A top-level system prompt.") != base
    assert key([SYSTEM, {"role": "user", "content": "Fix the lexer."}]) != base
    assert key(tools=[{"type": "function", "function": {"name": "bash"}}]) != base
    assert key(tools=[{"name": "read_file", "input_schema": {}}]) == base  # only names count
    assert key(tools=None) == key(tools=[]) != base


TURNS = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "tool"]), "content": st.text()}
    ),
    max_size=6,
)


@given(later=TURNS)
def test_what_comes_after_the_first_user_message_does_not_change_the_session(
    later: list[dict[str, Any]],
) -> None:
    assert key([SYSTEM, FIRST, *later]) == key()


def test_what_comes_before_the_first_user_message_other_than_systems_does_not_count() -> None:
    hello = {"role": "assistant", "content": "Hello!"}
    assert key([SYSTEM, hello, FIRST]) == key()
    assert key(["not a message", SYSTEM, FIRST]) != key()  # a system no longer leads


# -- usage -------------------------------------------------------------------------------------


def streamed(path: str, body: dict[str, Any], request: dict[str, Any]) -> bytes:
    return b"".join(event.encode() for event in stream_events(path, body, request))


def test_usage_of_a_chat_completion_and_of_its_stream() -> None:
    whole = encoded(chat_completion("hi"))
    assert usage(whole, anthropic=False) == 900
    with_usage = {"stream_options": {"include_usage": True}}
    chat = chat_completion("hi")
    assert usage(streamed("/v1/chat/completions", chat, with_usage), anthropic=False) == 900
    assert usage(streamed("/v1/chat/completions", chat, {}), anthropic=False) is None


def test_usage_of_a_response_and_of_its_stream() -> None:
    assert usage(encoded(response("hi")), anthropic=False) == 900
    assert usage(streamed("/v1/responses", response("hi"), {}), anthropic=False) == 900


def test_usage_of_an_anthropic_message_adds_cache_reads_and_writes() -> None:
    body = anthropic_message("hi")
    assert usage(encoded(body), anthropic=True) == 900  # 800 + 100 read, writes null
    assert usage(streamed("/v1/messages", body, {}), anthropic=True) == 900
    body["usage"] = {
        "input_tokens": 10,
        "cache_read_input_tokens": 20,
        "cache_creation_input_tokens": 30,
        "output_tokens": 5,
    }
    assert usage(encoded(body), anthropic=True) == 60
    assert usage(b'{"content": []}', anthropic=True) is None


def test_usage_takes_the_largest_count_of_a_stream() -> None:
    # Anthropic's message_delta repeats the input count; a server may send a running total.
    data = b'{"input_tokens": 5}\n{"input_tokens": 120}\n{"input_tokens": 7}'
    assert usage(data, anthropic=True) == 120
    assert usage(data, anthropic=False) == 120


# -- headers -----------------------------------------------------------------------------------


def test_forwarded_headers_drop_this_hop_and_the_proxys_own() -> None:
    inbound = Headers(
        raw=[
            (b"host", b"127.0.0.1:8787"),
            (b"connection", b"keep-alive"),
            (b"keep-alive", b"timeout=5"),
            (b"content-length", b"42"),
            (b"transfer-encoding", b"chunked"),
            (b"te", b"trailers"),
            (b"upgrade", b"h2c"),
            (b"proxy-authorization", b"Basic cHJveHk="),
            (b"accept-encoding", b"gzip, br"),
            (b"x-synopsis-token", b"s3cret"),
            (b"x-synopsis-session", b"mine"),
            (b"authorization", b"Bearer sk-client"),
            (b"x-api-key", b"sk-ant"),
            (b"anthropic-version", b"2023-06-01"),
            (b"content-type", b"application/json"),
        ]
    )
    assert forwarded_headers(inbound.raw) == [
        (b"authorization", b"Bearer sk-client"),
        (b"x-api-key", b"sk-ant"),
        (b"anthropic-version", b"2023-06-01"),
        (b"content-type", b"application/json"),
        (b"accept-encoding", b"identity"),
    ]


def test_forwarded_headers_are_matched_whatever_their_case() -> None:
    out = forwarded_headers(
        [(b"X-Synopsis-Token", b"t"), (b"Connection", b"close"), (b"X-Tag", b"a")]
    )
    assert out == [(b"X-Tag", b"a"), (b"accept-encoding", b"identity")]


def test_a_header_outside_ascii_is_forwarded_as_the_bytes_that_came() -> None:
    inbound = Headers(raw=[(b"x-note", "caf\u00e9 \u2603".encode()), (b"x-latin", b"\xff\xfe")])
    out = forwarded_headers(inbound.raw)
    assert out[:2] == [(b"x-note", "caf\u00e9 \u2603".encode()), (b"x-latin", b"\xff\xfe")]
    sent = httpx2.Request("POST", "http://upstream/v1/x", headers=out)
    assert [h for h in sent.headers.raw if h[0].startswith(b"x-")] == out[:2]


def test_a_repeated_request_header_is_forwarded_as_often_as_it_came() -> None:
    inbound = Headers(raw=[(b"anthropic-beta", b"a-2025"), (b"anthropic-beta", b"b-2025")])
    out = httpx2.Headers(forwarded_headers(inbound.raw))
    assert out.get_list("anthropic-beta") == ["a-2025", "b-2025"]


def test_returned_headers_drop_framing_server_and_date_and_keep_repeats() -> None:
    upstream = httpx2.Headers(
        [
            ("server", "cloudflare"),
            ("date", "Mon, 01 Jan 2024 00:00:00 GMT"),
            ("content-length", "120"),
            ("transfer-encoding", "chunked"),
            ("connection", "keep-alive"),
            ("content-type", "application/json"),
            ("set-cookie", "a=1; Path=/"),
            ("set-cookie", "b=2; Path=/"),
            ("x-request-id", "req_1"),
            ("anthropic-ratelimit-requests-remaining", "49"),
        ]
    )
    assert returned_headers(upstream) == [
        (b"content-type", b"application/json"),
        (b"set-cookie", b"a=1; Path=/"),
        (b"set-cookie", b"b=2; Path=/"),
        (b"x-request-id", b"req_1"),
        (b"anthropic-ratelimit-requests-remaining", b"49"),
    ]


# -- the compactor of each model ---------------------------------------------------------------


@pytest.fixture
def compactors() -> Iterator[Compactors]:
    made = Compactors(environ={}, windows={"pinned": 50_000})
    yield made
    made.close()


def test_one_compactor_per_model_all_sharing_one_store(compactors: Compactors) -> None:
    gpt = compactors.for_model("gpt-4o")
    assert compactors.for_model("gpt-4o") is gpt
    claude = compactors.for_model("claude-sonnet-4-5")
    assert claude is not gpt
    assert gpt.setup.store is claude.setup.store is compactors.store
    assert compactors.store is not None


def test_a_store_given_is_the_one_every_model_shares() -> None:
    store = MemoryStore()
    made = Compactors(environ={}, store=store)
    assert made.for_model("gpt-4o").setup.store is store
    assert made.for_model("claude-sonnet-4-5").setup.store is store
    made.close()


def test_a_window_given_for_a_model_overrides_the_table(compactors: Compactors) -> None:
    assert compactors.window("pinned") == 50_000
    assert compactors.window("gpt-4o") == 128_000
    assert compactors.window("claude-sonnet-4-5") == 200_000


def test_a_learnt_window_rebuilds_the_models_compactor(compactors: Compactors) -> None:
    old = compactors.for_model("gpt-4o")
    compactors.learn_window("gpt-4o", 32_000)
    assert compactors.window("gpt-4o") == 32_000
    new = compactors.for_model("gpt-4o")
    assert new is not old
    assert new.setup.store is old.setup.store
    assert not compactors.learn_window("gpt-4o", 32_000)
    assert compactors.for_model("gpt-4o") is new  # nothing new learnt
    assert not compactors.learn_window("gpt-4o", 64_000)  # a larger one is not taken
    assert compactors.window("gpt-4o") == 32_000


def test_a_window_given_for_the_model_is_never_replaced_by_one_learnt(
    compactors: Compactors,
) -> None:
    pinned = compactors.for_model("pinned")
    assert not compactors.learn_window("pinned", 8_000, upstream="http://a", limit=8_000)
    assert compactors.window("pinned", "http://a") == 50_000
    assert compactors.for_model("pinned", "http://a") is pinned


def test_a_learnt_window_is_never_below_the_floor(compactors: Compactors) -> None:
    assert compactors.learn_window("gpt-4o", 7, limit=1)
    assert compactors.window("gpt-4o") == LEARNT_FLOOR
    assert not compactors.learn_window("gpt-4o", 500)  # the floor again: nothing changes


def test_a_window_is_learnt_for_the_upstream_that_refused(compactors: Compactors) -> None:
    usual = compactors.for_model("gpt-4o")
    assert compactors.learn_window("gpt-4o", 32_000, upstream="http://a", limit=30_000)
    assert compactors.window("gpt-4o", "http://a") == 32_000
    assert compactors.for_model("gpt-4o", "http://b") is usual
    assert compactors.for_model("gpt-4o") is usual
    assert compactors.window("gpt-4o", "http://b") == 128_000


@pytest.mark.parametrize(
    ("reported", "estimated"),
    [(30_001, None), (20_000, 32_001)],
    ids=["more-than-it-named", "more-than-learnt"],
)
def test_an_answer_showing_more_fits_forgets_the_learnt_window(
    compactors: Compactors, reported: int, estimated: int | None
) -> None:
    compactors.learn_window("gpt-4o", 32_000, upstream="http://a", limit=30_000)
    # Another upstream's answers say nothing of this one's window.
    assert not compactors.calibrate("gpt-4o", reported, estimated, upstream="http://b")
    assert compactors.window("gpt-4o", "http://a") == 32_000
    # Answers within it leave it.
    assert not compactors.calibrate("gpt-4o", 30_000, 32_000, upstream="http://a")
    assert compactors.window("gpt-4o", "http://a") == 32_000
    assert compactors.calibrate("gpt-4o", reported, estimated, upstream="http://a")
    assert compactors.window("gpt-4o", "http://a") == 128_000
    assert compactors.for_model("gpt-4o", "http://a") is compactors.for_model("gpt-4o")


def test_a_report_of_more_tokens_than_counted_scales_the_window_down(
    compactors: Compactors,
) -> None:
    compactors.calibrate("gpt-4o", reported=1_200, estimated=1_000)
    assert compactors.scale("gpt-4o") == pytest.approx(1.2)
    assert compactors.window("gpt-4o") == 106_666  # 128,000 / 1.2


@pytest.mark.parametrize(
    ("reported", "estimated"),
    [(1_050, 1_000), (1_000, 1_000), (800, 1_000), (2_000, 999)],
    ids=["5%-over", "equal", "under", "too-small"],
)
def test_a_small_or_low_report_leaves_the_window(
    compactors: Compactors, reported: int, estimated: int
) -> None:
    compactor = compactors.for_model("gpt-4o")
    compactors.calibrate("gpt-4o", reported, estimated)
    assert compactors.for_model("gpt-4o") is compactor
    assert compactors.window("gpt-4o") == 128_000


def test_a_report_scales_the_window_by_at_most_half(compactors: Compactors) -> None:
    compactors.calibrate("gpt-4o", reported=10_000, estimated=1_000)
    assert compactors.window("gpt-4o") == 85_333  # 128,000 / 1.5


def test_reports_are_smoothed_and_a_given_window_is_not_calibrated(
    compactors: Compactors,
) -> None:
    compactors.calibrate("gpt-4o", reported=1_200, estimated=1_000)
    compactors.calibrate("gpt-4o", reported=1_000, estimated=1_000)
    assert compactors.scale("gpt-4o") == pytest.approx(1.2 + 0.3 * (1.0 - 1.2))
    compactors.calibrate("pinned", reported=1_500, estimated=1_000)
    assert compactors.scale("pinned") == 1.0
    assert compactors.window("pinned") == 50_000


def test_a_learnt_window_is_not_scaled_again(compactors: Compactors) -> None:
    # A refusal's window is turned into synopsis's own count when it is learnt.
    compactors.calibrate("gpt-4o", reported=1_250, estimated=1_000)
    assert compactors.learn_window("gpt-4o", 90_000)
    assert compactors.window("gpt-4o") == 90_000


def test_a_report_under_the_threshold_does_not_shrink_a_learnt_window(
    compactors: Compactors,
) -> None:
    compactors.calibrate("gpt-4o", reported=1_030, estimated=1_000)
    compactors.learn_window("gpt-4o", 100_000)
    assert compactors.window("gpt-4o") == 100_000


def test_a_window_scaled_down_comes_back_when_reports_agree_again(
    compactors: Compactors,
) -> None:
    compactors.calibrate("gpt-4o", reported=1_200, estimated=1_000)
    assert compactors.window("gpt-4o") < 128_000
    for _ in range(20):
        compactors.calibrate("gpt-4o", reported=1_000, estimated=1_000)
    assert compactors.window("gpt-4o") == 128_000


# -- summarizer calls, timed -------------------------------------------------------------------

HISTORY = synopsis.decode(conversation(turns=2), "openai").messages


class Observed:
    def __init__(self) -> None:
        self.calls: list[tuple[str, float, bool]] = []

    def __call__(self, name: str, seconds: float, ok: bool) -> None:
        self.calls.append((name, seconds, ok))


class BlockingOnly:
    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        return RuleBasedSummarizer().summarize(messages, previous=previous)


class AsyncOnly:
    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        return RuleBasedSummarizer().summarize(messages, previous=previous)


def test_a_timed_call_reports_its_name_seconds_and_success() -> None:
    observed = Observed()
    inner = ScriptedSummarizer("The user asked about two parsers.")
    record = Timed(inner, "scripted", observed).summarize(HISTORY, max_tokens=300)
    assert record.narrative == "The user asked about two parsers."
    assert inner.calls[0].max_tokens == 300
    ((name, seconds, ok),) = observed.calls
    assert (name, ok) == ("scripted", True)
    assert 0 <= seconds < 5


def test_a_timed_call_that_fails_reports_a_failure_and_raises() -> None:
    observed = Observed()
    inner = ScriptedSummarizer(RuntimeError("the model is down"))
    with pytest.raises(RuntimeError, match="the model is down"):
        Timed(inner, "scripted", observed).summarize(HISTORY)
    assert [(n, ok) for n, _, ok in observed.calls] == [("scripted", False)]


@pytest.mark.parametrize("inner", [ScriptedSummarizer("A summary."), BlockingOnly(), AsyncOnly()])
def test_an_awaited_timed_call_reports_whichever_way_the_summarizer_works(
    inner: ScriptedSummarizer | BlockingOnly | AsyncOnly,
) -> None:
    observed = Observed()
    record = asyncio.run(Timed(inner, "any", observed).asummarize(HISTORY, instructions="brief"))
    assert record.covers
    assert [(n, ok) for n, _, ok in observed.calls] == [("any", True)]
    if isinstance(inner, ScriptedSummarizer):
        assert inner.calls[0].asynchronous
        assert inner.calls[0].instructions == "brief"


def test_an_awaited_timed_call_that_fails_reports_a_failure() -> None:
    observed = Observed()
    timed = Timed(ScriptedSummarizer(ValueError("bad answer")), "scripted", observed)
    with pytest.raises(ValueError, match="bad answer"):
        asyncio.run(timed.asummarize(HISTORY))
    assert [(n, ok) for n, _, ok in observed.calls] == [("scripted", False)]


def test_a_blocking_call_of_an_async_only_summarizer_is_refused() -> None:
    observed = Observed()
    with pytest.raises(TypeError, match="AsyncOnly has no blocking summarize"):
        Timed(AsyncOnly(), "async", observed).summarize(HISTORY)
    assert observed.calls == []


# -- the client's departure --------------------------------------------------------------------


class Channel:
    """An ASGI ``receive`` as a server gives it once the body is read: the messages put in it,
    in order, waiting while there are none."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Message_] = asyncio.Queue()

    async def __call__(self) -> Message_:
        return await self.queue.get()


async def _race_with(messages: Sequence[Message_], work_seconds: float) -> tuple[str, bool]:
    channel = Channel()
    for message in messages:
        channel.queue.put_nowait(message)
    departure = Departure(channel)
    cancelled = False

    async def work() -> str:
        nonlocal cancelled
        try:
            await asyncio.sleep(work_seconds)
        except asyncio.CancelledError:
            cancelled = True
            raise
        return "done"

    try:
        return await departure.race(work()), cancelled
    except ClientGone:
        return "gone", cancelled
    finally:
        await departure.stop()


def test_work_that_ends_first_gives_its_value() -> None:
    assert asyncio.run(_race_with([], 0)) == ("done", False)


def test_a_departure_cancels_the_work() -> None:
    assert asyncio.run(_race_with([{"type": "http.disconnect"}], 10)) == ("gone", True)


def test_only_a_disconnect_is_a_departure() -> None:
    stray = {"type": "http.request", "body": b"", "more_body": False}
    assert asyncio.run(_race_with([stray], 0.05)) == ("done", False)
    assert asyncio.run(_race_with([stray, {"type": "http.disconnect"}], 10)) == ("gone", True)


# -- the package -------------------------------------------------------------------------------


def test_the_package_names_only_what_it_has() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'serve'"):
        _ = synopsis.proxy.serve


def test_without_the_extra_the_package_says_which() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "prometheus_client", None)  # as if it were not installed
        with pytest.raises(ImportError, match=r'"proxy" extra \(prometheus_client is missing\)'):
            _ = synopsis.proxy.create_app
    assert synopsis.proxy.create_app is create_app


def test_work_after_the_client_left_is_not_started() -> None:
    async def run() -> tuple[bool, bool]:
        channel = Channel()
        channel.queue.put_nowait({"type": "http.disconnect"})
        departure = Departure(channel)
        started = False

        async def work() -> str:
            nonlocal started
            started = True
            return "done"

        for _ in range(3):  # the watch reads the departure while nothing is guarded
            await asyncio.sleep(0)
        try:
            await departure.race(work())
        except ClientGone:
            return departure.gone, started
        finally:
            await departure.stop()
        raise AssertionError("no ClientGone")

    assert asyncio.run(run()) == (True, False)


def test_a_cancellation_that_is_not_the_clients_goes_on() -> None:
    async def run() -> None:
        departure = Departure(Channel())
        try:
            await departure.race(asyncio.sleep(10))
        finally:
            await departure.stop()

    async def main() -> None:
        task = asyncio.ensure_future(run())
        await asyncio.sleep(0.01)
        task.cancel()  # a server shutting down, say
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
