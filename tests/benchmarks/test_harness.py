"""What every benchmark shares (``benchmarks._harness``) and the upstream the proxy and stores
benchmarks send to (``benchmarks._upstream``): each does what its reports rely on."""

from __future__ import annotations

import asyncio
import gc
import zlib

import httpx2
import orjson
import pytest

from benchmarks import _harness, _upstream
from synopsis.testing.server import chat_completion, stream_events


def test_quantiles_interpolate_between_neighbours() -> None:
    samples = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert _harness.quantile(samples, 0.5) == 3.0
    assert _harness.quantile(samples, 0.0) == 1.0
    assert _harness.quantile(samples, 1.0) == 5.0
    assert _harness.quantile(samples, 0.99) == pytest.approx(4.96)
    assert _harness.quantile([7.0], 0.99) == 7.0


def test_a_timed_call_gives_its_value_and_turns_the_collector_back_on() -> None:
    seconds, value = _harness.timed(lambda: sum(range(1000)))
    assert value == sum(range(1000))
    assert seconds >= 0
    assert gc.isenabled()

    async def answer() -> str:
        return "done"

    loop = asyncio.new_event_loop()
    try:
        seconds, text = _harness.timed_on(loop, answer)
    finally:
        loop.close()
    assert (text, seconds >= 0) == ("done", True)


def test_figures_and_tables_read_as_the_reports_show_them() -> None:
    assert [_harness.ms(v) for v in (0.123, 99.994, 100.4, -250.0)] == [
        "0.12",
        "99.99",
        "100",
        "-250",
    ]
    assert [_harness.figure(v) for v in (0.01234, 12.34, 1234.5)] == ["0.0123", "12.3", "1234"]
    assert _harness.table(("system", "a", "b"), [("x", "1", "2")], left=1) == [
        "| system | a | b |",
        "|---|---:|---:|",
        "| x | 1 | 2 |",
    ]
    assert _harness.table(("a",), [])[1] == "|---:|"


def test_versions_name_what_is_installed_and_leave_out_the_rest() -> None:
    found = _harness.versions("orjson", "no-such-distribution-here")
    assert list(found) == ["orjson"]
    assert _harness.listed({"a": "1", "b": "2"}) == "a 1, b 2"


def test_the_address_is_read_from_the_start_up_line_once_it_is_written() -> None:
    assert _harness.listening_at("") == ""
    assert _harness.listening_at("synopsis: warning: listening on 0.0.0.0: …\n") == ""
    said = (
        "synopsis: warning: something first\n"
        "synopsis serve: listening on http://127.0.0.1:40123 · upstreams: openai http://x\n"
    )
    assert _harness.listening_at(said) == "http://127.0.0.1:40123"


def test_the_upstream_answers_with_the_marker_and_the_crc_of_what_it_received() -> None:
    body = orjson.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "go bench-mark-t-1"}]}
    )
    with _harness.Child("benchmarks._upstream") as url:
        answer = httpx2.post(
            url + _upstream.PATH,
            content=body,
            headers={_upstream.CHECK_HEADER: "1"},
            timeout=30,
        )
        streamed = httpx2.post(
            url + _upstream.PATH,
            content=b'{"stream":true,' + body[1:],
            timeout=30,
        )
    assert _upstream.answer_text(answer.content) == f"bench-mark-t-1 crc={zlib.crc32(body):08x}"
    assert _upstream.answer_text(streamed.content) == "bench-mark-t-1"


def test_a_child_that_prints_no_url_is_reported() -> None:
    with pytest.raises(RuntimeError, match="the nothing process did not start"):
        _harness.Child("json.tool", "--help", name="nothing").__enter__()


def test_a_stream_reads_back_as_its_text() -> None:
    text = "bench-mark-s3-7 crc=0123abcd"
    events = stream_events(_upstream.PATH, chat_completion(text), {})
    data = b"".join(e.encode() for e in events)
    assert data.endswith(b"data: [DONE]\n\n")
    assert _upstream.streamed_text(data) == text
    assert _upstream.answer_text(data) == text
    assert _upstream.answer_text(orjson.dumps(chat_completion(text))) == text
