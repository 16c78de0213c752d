"""What the proxy says about itself: ``GET /metrics`` after real requests, and one log line per
request (text or JSON), with no credential in it and a body only when asked.

Each test runs the proxy on a real uvicorn in front of the fake LLM server.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from synopsis.proxy import create_app
from synopsis.testing import FixedCounter, ScriptedSummarizer, conversation
from synopsis.testing.server import (
    FakeLLMServer,
    Picky,
    Recorded,
    Reply,
    anthropic_message,
    chat_completion,
    stream_events,
)
from tests.proxy.servers import Served, refusing

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

CHAT = "/v1/chat/completions"
HISTORY = conversation(turns=20)
"""81 messages: 8,100 tokens at 100 a message, over the trigger of a 10,000-token window."""
COMPACTING: dict[str, Any] = {"context_window": 10_000, "counter": FixedCounter(per_message=100)}
SECRETS = {
    "authorization": "Bearer sk-very-secret-1",
    "x-api-key": "sk-ant-very-secret-2",
    "x-synopsis-token": "proxy-very-secret-3",
}


def _answer(recorded: Recorded) -> Reply:
    if recorded.path.startswith("/v1/messages"):
        return Reply(anthropic_message("ok"))
    return Reply(chat_completion("ok"))


@contextlib.contextmanager
def proxied(
    upstream: str | None = None, **options: Any
) -> Iterator[tuple[FakeLLMServer, Served, httpx2.Client]]:
    with FakeLLMServer(default=_answer) as fake:
        root = upstream or fake.root
        app = create_app(upstream_openai=root, upstream_anthropic=root, environ={}, **options)
        with Served(app) as served, httpx2.Client(base_url=served.url, timeout=10.0) as client:
            yield fake, served, client


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: httpx2.Client) -> Samples:
    """Every sample ``GET /metrics`` gives, by name and labels, read by Prometheus's parser."""
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def eventually(check: Callable[[], bool], within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def proxy_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "synopsis.proxy"]


# -- metrics -----------------------------------------------------------------------------------


def test_the_metrics_count_what_the_requests_did() -> None:
    summarizer = ScriptedSummarizer()
    with proxied(summarizer=summarizer, **COMPACTING) as (_, _served, client):
        answers = [
            client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY}),
            client.post(CHAT, json={"model": "gpt-4o", "messages": [*HISTORY, *HISTORY[1:3]]}),
            client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY[:3]}),
        ]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert client.post(CHAT, content=b"{").status_code == 400
        assert client.get("/v1/models").status_code == 200
        samples = scrape(client)
    tokens = [tuple(map(int, a.headers["x-synopsis-tokens"].split("/"))) for a in answers]
    compacted = [a.headers["x-synopsis-compacted"] == "true" for a in answers]
    assert compacted[0]
    assert not compacted[2]
    route = {"route": CHAT}

    assert value(samples, "synopsis_proxy_requests_total", route=CHAT, status="200") == 3
    assert value(samples, "synopsis_proxy_requests_total", route=CHAT, status="400") == 1
    assert value(samples, "synopsis_proxy_requests_total", route="other", status="200") == 1
    assert value(samples, "synopsis_proxy_errors_total", kind="bad_request") == 1
    assert value(samples, "synopsis_proxy_compactions_total", **route) == sum(compacted)
    before = value(samples, "synopsis_proxy_tokens_before_total", **route)
    after = value(samples, "synopsis_proxy_tokens_after_total", **route)
    assert before == sum(b for b, _ in tokens)
    assert after == sum(a for _, a in tokens)
    assert before > after
    assert value(samples, "synopsis_proxy_compaction_seconds_count", **route) == 3
    assert value(samples, "synopsis_proxy_compaction_seconds_sum", **route) > 0
    assert value(samples, "synopsis_proxy_upstream_seconds_count", **route) == 3
    assert value(samples, "synopsis_proxy_upstream_seconds_sum", **route) > 0
    assert value(samples, "synopsis_proxy_overflow_retries_total", **route) == 0

    calls = len(summarizer.calls)
    assert calls >= 1
    (labels,) = [dict(k[1]) for k in samples if k[0] == "synopsis_proxy_summarizer_calls_total"]
    assert labels["outcome"] == "ok"
    name = labels["summarizer"]
    assert value(samples, "synopsis_proxy_summarizer_calls_total", **labels) == calls
    assert value(samples, "synopsis_proxy_summarizer_seconds_count", summarizer=name) == calls
    assert value(samples, "synopsis_proxy_summarizer_seconds_sum", summarizer=name) >= 0


def test_a_failed_summarizer_call_is_counted_as_failed() -> None:
    summarizer = ScriptedSummarizer(RuntimeError("the model is down"))
    with proxied(summarizer=summarizer, **COMPACTING) as (_, _served, client):
        answer = client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY})
        assert answer.status_code == 200
        assert answer.headers["x-synopsis-compacted"] == "true"  # by the rules instead
        samples = scrape(client)
    outcomes = {
        dict(labels)["outcome"]: count
        for (name, labels), count in samples.items()
        if name == "synopsis_proxy_summarizer_calls_total"
    }
    assert outcomes["failed"] == 1


def test_an_overflow_retry_is_counted() -> None:
    with proxied() as (fake, _served, client):
        fake.picky = Picky(context_window=3_000)  # HISTORY is 4,161 by its count
        answer = client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY})
        assert answer.status_code == 200
        assert answer.headers["x-synopsis-retried"] == "overflow"
        refused, accepted = fake.requests
        assert len(refused.body["messages"]) == len(HISTORY)
        assert len(accepted.body["messages"]) < len(HISTORY)
        samples = scrape(client)
    assert value(samples, "synopsis_proxy_overflow_retries_total", route=CHAT) == 1
    assert value(samples, "synopsis_proxy_upstream_seconds_count", route=CHAT) == 2


def test_the_usage_at_a_long_streams_end_calibrates_the_models_window() -> None:
    answer_body = chat_completion("word " * 6_000)  # 30 kB of deltas, well past the kept ends
    answer_body["usage"]["prompt_tokens"] = 5_000
    history = conversation(turns=3)  # 13 messages: 1,300 tokens as synopsis counts them
    request = {
        "model": "gpt-4o",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": history,
    }
    sent = b"".join(e.encode() for e in stream_events(CHAT, answer_body, request))
    with proxied(**COMPACTING) as (fake, served, client):
        fake.add(answer_body)
        with client.stream("POST", CHAT, json=request) as streamed:
            assert streamed.headers["x-synopsis-tokens"] == "1300/1300"
            assert streamed.read() == sent
        compactors = served.state.compactors
        assert eventually(lambda: compactors.scale("gpt-4o") == 1.5)  # 5,000 / 1,300, capped
        assert compactors.window("gpt-4o") == 6_666  # 10,000 / 1.5


# -- logs --------------------------------------------------------------------------------------


def test_one_text_line_per_request_with_what_it_did(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="synopsis.proxy")
    with proxied(summarizer=ScriptedSummarizer(), **COMPACTING) as (_, _served, client):
        headers = {"x-synopsis-session": "logged"}
        answer = client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY}, headers=headers)
        assert answer.status_code == 200
        assert client.get("/v1/models").status_code == 200
    first, second = proxy_lines(caplog)
    assert first.levelno == second.levelno == logging.INFO
    fields = dict(part.split("=", 1) for part in first.getMessage().split(" "))
    assert list(fields) == [
        "method", "path", "status", "model", "session", "messages_in", "messages_out",
        "tokens_before", "tokens_after", "compacted", "code", "ms_compaction", "ms_upstream",
        "ms_total", "usage",
    ]  # fmt: skip
    assert fields["usage"] == "900"  # what the upstream reported, read when the answer ended
    assert fields["method"] == "POST"
    assert (fields["path"], fields["status"], fields["model"]) == (CHAT, "200", "gpt-4o")
    assert (fields["session"], fields["compacted"], fields["code"]) == (
        "logged",
        "True",
        "triggered",
    )
    assert (fields["messages_in"], fields["tokens_before"]) == ("81", "8100")
    assert fields["tokens_after"] == answer.headers["x-synopsis-tokens"].split("/")[1]
    assert int(fields["messages_out"]) < 81
    assert float(fields["ms_total"]) >= float(fields["ms_compaction"]) > 0
    assert float(fields["ms_upstream"]) > 0
    assert second.getMessage().startswith("method=GET path=/v1/models status=200 ")
    assert "body" not in first.getMessage()


def test_json_lines_parse_and_carry_the_same_fields(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="synopsis.proxy")
    with proxied(log_json=True) as (_, _served, client):
        body = {"model": "gpt-4o", "stream": True, "messages": HISTORY[:3]}
        with client.stream("POST", CHAT, json=body) as streamed:
            assert streamed.status_code == 200
            streamed.read()
        assert client.post(CHAT, content=b"[").status_code == 400
    first, second = (json.loads(r.getMessage()) for r in proxy_lines(caplog))
    assert first["event"] == second["event"] == "proxy_request"
    assert {k: first[k] for k in ("method", "path", "status", "model", "stream")} == {
        "method": "POST",
        "path": CHAT,
        "status": 200,
        "model": "gpt-4o",
        "stream": True,
    }
    assert first["session"].startswith("auto:")
    assert (first["messages_in"], first["messages_out"]) == (3, 3)
    assert first["tokens_before"] == first["tokens_after"] > 0
    assert first["code"] == "under-trigger"
    assert "compacted" not in first  # only said when true
    assert {"ms_compaction", "ms_upstream", "ms_total"} <= first.keys()
    assert "body" not in first
    assert (second["status"], second["path"]) == (400, CHAT)


@pytest.mark.parametrize("log_json", [False, True])
def test_no_credential_is_ever_logged_even_with_bodies(
    caplog: pytest.LogCaptureFixture, log_json: bool
) -> None:
    caplog.set_level(logging.DEBUG)
    token = SECRETS["x-synopsis-token"]
    options: dict[str, Any] = {"log_bodies": True, "log_json": log_json, "auth_token": token}
    with proxied(**options, **COMPACTING) as (fake, _served, client):
        body = {"model": "gpt-4o", "messages": HISTORY}
        assert client.post(CHAT, json=body, headers=SECRETS).status_code == 200
        assert client.get("/v1/models", headers=SECRETS).status_code == 200
        tokenless = {"authorization": SECRETS["authorization"]}
        assert client.post(CHAT, json=body, headers=tokenless).status_code == 401
        forwarded = fake.requests[0].raw.decode()
    lines = proxy_lines(caplog)
    assert len(lines) == 3
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for secret in SECRETS.values():
        assert secret not in logged
    assert "sk-very-secret" not in caplog.text
    # The body is there, as forwarded (compacted).
    if log_json:
        assert json.loads(lines[0].getMessage())["body"] == forwarded
    else:
        assert lines[0].getMessage().split("\nbody: ", 1)[1] == forwarded


def test_a_response_the_proxy_could_not_get_is_logged_as_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="synopsis.proxy")
    with refusing() as dead, proxied(dead) as (_, _served, client):
        body = {"model": "gpt-4o", "messages": HISTORY[:3]}
        assert client.post(CHAT, json=body).status_code == 502
        assert client.get("/v1/models").status_code == 502
    (line, other) = proxy_lines(caplog)
    assert line.levelno == other.levelno == logging.WARNING
    assert "status=502" in line.getMessage()
    assert 'error="upstream unreachable' in line.getMessage()


def test_nothing_is_logged_when_info_is_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="synopsis.proxy")
    with proxied() as (_, _served, client):
        answer = client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY[:3]})
        assert answer.status_code == 200
    assert proxy_lines(caplog) == []


def test_an_unknown_model_is_said_once_on_the_log_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A local 8k model named by a client would be sized as 200k with nothing said: now one
    # warning line at first sight (Python's warnings are errors in this suite, so none is
    # raised from inside the request either) and a metric.
    caplog.set_level(logging.WARNING, logger="synopsis.proxy")
    with proxied() as (fake, _served, client):
        for model in ("zz-local-8k", "zz-local-8k", "zz-other\nmodel=forged", "gpt-4o"):
            body = {"model": model, "messages": HISTORY[:3]}
            assert client.post(CHAT, json=body).status_code == 200
        samples = scrape(client)
    assert len(fake.requests) == 4
    said = [r.getMessage() for r in caplog.records if "unknown model" in r.getMessage()]
    assert len(said) == 2
    assert said[0].startswith("unknown model 'zz-local-8k': synopsis assumes a context window")
    assert "--model-window zz-local-8k=TOKENS" in said[0]
    assert "\n" not in said[1]  # the name is written escaped
    assert value(samples, "synopsis_unknown_model_total") == 2


def test_a_window_given_for_a_model_or_all_says_nothing() -> None:
    for options in ({"windows": {"zz-local-8k": 8000}}, {"context_window": 8000}):
        with proxied(**options) as (_fake, served, client):
            body = {"model": "zz-local-8k", "messages": HISTORY[:3]}
            assert client.post(CHAT, json=body).status_code == 200
            assert value(scrape(client), "synopsis_unknown_model_total") == 0
            assert served.app.state.proxy.compactors.window("zz-local-8k") == 8000
