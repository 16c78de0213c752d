"""Windows learnt from an upstream's refusals, earned: through the proxy on a real uvicorn, in
front of fake upstreams that refuse what is over their window in each server's own words.

A refusal teaches a window only when its figures hold together with the request that drew
it; never one below the floor, nor over a window given for the model; only for the upstream
that refused; and an answer that shows more fits takes it back.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from synopsis.proxy import create_app
from synopsis.proxy.compactors import LEARNT_FLOOR
from synopsis.testing._picky import prompt_tokens
from synopsis.testing.server import (
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    chat_completion,
)
from tests.proxy.servers import Served
from tests.proxy.test_sdks import long_history
from tests.test_overflows import WORDINGS, said

if TYPE_CHECKING:
    from collections.abc import Iterator

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
TABLE = 128_000
"""gpt-4o's window in the model table."""


@dataclass
class Sized:
    """A server of ``window`` tokens (counted as the fake server counts them), refusing what
    is over it in ``wording``'s words, and reporting its count as the usage of what it takes."""

    window: int
    wording: str = "openai"

    def __call__(self, recorded: Recorded) -> Reply:
        used = prompt_tokens(recorded.body)
        if used > self.window:
            text = said(self.wording, self.window, used, 0)
            try:
                body = json.loads(text)
            except json.JSONDecodeError:  # a server that words it in plain text
                body = {"error": {"message": text}}
            return Reply(body, status=400)
        if recorded.path.startswith(MESSAGES):
            answer = anthropic_message("ok")
            answer["usage"].update(input_tokens=used, cache_read_input_tokens=0)
        else:
            answer = chat_completion("ok")
            answer["usage"]["prompt_tokens"] = used
        return Reply(answer)


@contextlib.contextmanager
def proxied(
    openai: FakeLLMServer, anthropic: FakeLLMServer | None = None, **options: Any
) -> Iterator[tuple[Served, httpx2.Client]]:
    app = create_app(
        upstream_openai=openai.root,
        upstream_anthropic=(anthropic or openai).root,
        environ={},
        summarizer="rules",
        **options,
    )
    with Served(app) as served, httpx2.Client(base_url=served.url, timeout=20.0) as client:
        yield served, client


def chat(messages: list[Any], **fields: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": messages, **fields}


HELLO = [{"role": "user", "content": "hello"}]
"""A request of a few tokens."""
JSON_WORDINGS = sorted(name for name in WORDINGS if not name.endswith("-sdk"))
"""Every server's wording but the one only an SDK's text has."""


@pytest.mark.parametrize("wording", JSON_WORDINGS)
def test_a_genuine_refusal_in_each_servers_words_teaches_the_window_that_fits(
    wording: str,
) -> None:
    with (
        FakeLLMServer(default=Sized(1_500, wording)) as fake,
        proxied(fake) as (served, client),
    ):
        answer = client.post(CHAT, json=chat(long_history()))
        assert answer.status_code == 200
        assert answer.headers["x-synopsis-retried"] == "overflow"
        refused, accepted = fake.requests
        # The request went on whole (under the table's window), so synopsis counted what it
        # sent as the history's size; the server counted its own.
        sent = int(answer.headers["x-synopsis-tokens"].split("/")[0])
        fits = 1_500 * sent // prompt_tokens(refused.body)
        assert int(answer.headers["x-synopsis-window"]) == fits
        assert served.state.compactors.window("gpt-4o", fake.root) == fits
        assert prompt_tokens(accepted.body) <= 1_500


def test_a_refusal_naming_another_requests_size_teaches_nothing() -> None:
    # The first repro: a request of a few tokens, refused as 5,000 over a window of 1,000.
    refusal = json.loads(said("openai", 1_000, 5_000, 0))
    with FakeLLMServer(default=Sized(TABLE)) as fake, proxied(fake) as (served, client):
        fake.add(refusal, status=400)
        answer = client.post(CHAT, json=chat(HELLO))
        assert answer.status_code == 400
        assert answer.json() == refusal  # relayed as it came: nothing smaller to send
        assert "x-synopsis-window" not in answer.headers
        assert served.state.compactors.window("gpt-4o", fake.root) == TABLE
        # A long history after it is not held to a window of 1 either.
        after = client.post(CHAT, json=chat(long_history()))
        assert after.status_code == 200
        assert after.headers["x-synopsis-compacted"] == "false"
        assert fake.requests[-1].body["messages"] == long_history()


def test_an_unknown_field_named_like_an_overflow_is_relayed_and_teaches_nothing() -> None:
    # The second repro: the server names the client's own field back.
    refusal = {
        "error": {
            "message": "Unrecognized request argument supplied: context_length_exceeded",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    with FakeLLMServer(default=Sized(TABLE)) as fake, proxied(fake) as (served, client):
        fake.add(refusal, status=400)
        answer = client.post(CHAT, json=chat(long_history(), context_length_exceeded=True))
        assert answer.status_code == 400
        assert answer.json() == refusal
        assert len(fake.requests) == 1  # no overflow: not sent again
        assert "x-synopsis-retried" not in answer.headers
        assert "x-synopsis-window" not in answer.headers
        assert served.state.compactors.window("gpt-4o", fake.root) == TABLE
        retries = served.state.metrics.registry.get_sample_value(
            "synopsis_proxy_overflow_retries_total", {"route": CHAT}
        )
        assert not retries


def test_a_learnt_window_is_never_below_the_floor() -> None:
    # A genuine window of 200 tokens: learnt as the floor, and the refusal relayed after one
    # retry, rather than a window no conversation can be held to.
    with FakeLLMServer(default=Sized(200)) as fake, proxied(fake) as (served, client):
        answer = client.post(CHAT, json=chat(long_history()))
        assert answer.status_code == 400
        assert answer.headers["x-synopsis-retried"] == "overflow"
        assert answer.headers["x-synopsis-window"] == str(LEARNT_FLOOR)
        assert served.state.compactors.window("gpt-4o", fake.root) == LEARNT_FLOOR
        assert len(fake.requests) == 2


def test_a_window_given_for_the_model_always_wins() -> None:
    with (
        FakeLLMServer(default=Sized(1_500)) as fake,
        proxied(fake, windows={"gpt-4o": 100_000}) as (served, client),
    ):
        answer = client.post(CHAT, json=chat(long_history()))
        assert answer.headers["x-synopsis-retried"] == "overflow"  # still compacted harder
        assert "x-synopsis-window" not in answer.headers
        assert served.state.compactors.window("gpt-4o", fake.root) == 100_000
        assert len(fake.requests) == 2


def test_an_answer_showing_more_fits_takes_the_learnt_window_back() -> None:
    server = Sized(1_500)
    # A system prompt of about 2,000 tokens cannot be compacted into 1,500: told to, the
    # proxy forwards such a request unchanged.
    system = {"role": "system", "content": "You are a careful agent. " * 330}
    with (
        FakeLLMServer(default=server) as fake,
        proxied(fake, on_unreachable="return") as (served, client),
    ):
        first = client.post(CHAT, json=chat(long_history()))
        learnt = int(first.headers["x-synopsis-window"])
        assert learnt < TABLE
        # The server had a smaller window for a while (a replica, a reload): now it has more.
        server.window = 100_000
        taken = client.post(CHAT, json=chat([system, *HELLO]))
        assert taken.status_code == 200
        assert prompt_tokens(fake.requests[-1].body) > 1_500
        assert taken.headers["x-synopsis-window"] == str(TABLE)
        assert served.state.compactors.window("gpt-4o", fake.root) == TABLE
        # Answers within the window change nothing and say nothing.
        again = client.post(CHAT, json=chat(HELLO))
        assert "x-synopsis-window" not in again.headers


def test_one_upstreams_refusal_never_lowers_anothers_window() -> None:
    # The same model behind two upstreams: one refuses (in figures that hold together, a
    # session's history sent whole), the other takes everything.
    with (
        FakeLLMServer(default=Sized(1_500)) as small,
        FakeLLMServer(default=Sized(TABLE)) as large,
        proxied(small, large) as (served, client),
    ):
        refused = client.post(CHAT, json=chat(long_history()))
        assert int(refused.headers["x-synopsis-window"]) < 2_000
        history = long_history()
        other = client.post(
            MESSAGES,
            json={"model": "gpt-4o", "max_tokens": 64, "messages": history},
            headers={"x-synopsis-session": "another"},
        )
        assert other.status_code == 200
        assert "x-synopsis-window" not in other.headers
        assert other.headers["x-synopsis-compacted"] == "false"
        (recorded,) = large.requests
        assert recorded.body["messages"] == history
        compactors = served.state.compactors
        assert compactors.window("gpt-4o", large.root) == TABLE
        assert compactors.window("gpt-4o", small.root) < 2_000
