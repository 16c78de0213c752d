"""``synopsis serve`` in front of the real model server (``make live``): the proxy on uvicorn
at 127.0.0.1, the real openai SDK as the client, llama-cpp-python's server as the upstream.

The server refuses a prompt past its 2,048 tokens with a 400 naming its window; its tokenizer
is SmolLM2's, not the one synopsis counts with, so a request synopsis counts as fitting may
not: the proxy must learn the window from the refusal (it names the window and the tokens
asked for), compact harder and send again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import openai
import pytest

from synopsis.proxy import create_app
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from collections.abc import Callable


def _proxy(base_url: str, model: str, window: int, *, given: bool = True) -> Any:
    """The proxy in front of the server: ``window`` given for the model (never replaced by
    one learnt), or, not ``given``, for every model (``--window``, which a refusal refines)."""
    root = base_url.removesuffix("/v1")
    sized: dict[str, Any] = {"windows": {model: window}} if given else {"context_window": window}
    return create_app(upstream_openai=root, environ={}, summarizer="rules", **sized)


def _turn(n: int) -> dict[str, str]:
    facts = " ".join(
        f"fact {n}.{k}: the value of register r{k} is {n * 31 + k}." for k in range(16)
    )
    return {"role": "user", "content": f"Turn {n}. {facts} Reply with one word."}


TURNS = 12
"""About 300 tokens a turn: past the 2,048-token window by the seventh."""


# A 135M model on two cores answers in a few seconds a request; twelve of them, and their
# compactions, take longer than the suite's default limit.
@pytest.mark.timeout(300)
def test_a_growing_conversation_through_the_proxy_never_overflows(
    base_url: str, model: str, live_report: Callable[[str], None]
) -> None:
    with Served(_proxy(base_url, model, 2048)) as proxy:
        history: list[Any] = [{"role": "system", "content": "You answer in one word."}]
        compactions = statuses = 0
        with openai.OpenAI(api_key="sk-live", base_url=f"{proxy.url}/v1", max_retries=0) as c:
            for n in range(TURNS):
                history.append(_turn(n))
                raw = c.chat.completions.with_raw_response.create(
                    model=model, messages=history, max_tokens=8
                )
                answer = raw.parse()
                statuses += raw.status_code == 200
                compactions += raw.headers.get("x-synopsis-compacted") == "true"
                history.append(
                    {"role": "assistant", "content": answer.choices[0].message.content or ""}
                )
    live_report(f"{statuses} of {TURNS} answered, {compactions} compacted by the proxy")
    assert statuses == TURNS
    assert compactions >= 1


def test_the_servers_own_overflow_teaches_the_proxy_its_window(
    base_url: str, model: str, live_report: Callable[[str], None]
) -> None:
    # The proxy believes in 16,000 tokens; the server has 2,048.
    with Served(_proxy(base_url, model, 16_000, given=False)) as proxy:
        history: list[Any] = [{"role": "system", "content": "You answer in one word."}]
        history += [
            m for n in range(14) for m in (_turn(n), {"role": "assistant", "content": "ok"})
        ]
        history.append(_turn(99))
        with openai.OpenAI(api_key="sk-live", base_url=f"{proxy.url}/v1", max_retries=0) as c:
            raw = c.chat.completions.with_raw_response.create(
                model=model, messages=history, max_tokens=8
            )
            learnt = proxy.state.compactors.window(model, proxy.state.upstreams["openai"])
    live_report(f"retried: {raw.headers.get('x-synopsis-retried')}, window learnt {learnt}")
    assert raw.status_code == 200
    assert raw.headers.get("x-synopsis-retried") == "overflow"
    # The window it names, in synopsis's own count of tokens (SmolLM2's tokenizer counts more).
    assert learnt <= 2048


def test_a_stream_through_the_proxy_arrives_in_pieces(
    base_url: str, model: str, live_report: Callable[[str], None]
) -> None:
    with (
        Served(_proxy(base_url, model, 2048)) as proxy,
        openai.OpenAI(api_key="sk-live", base_url=f"{proxy.url}/v1", max_retries=0) as c,
    ):
        start = time.monotonic()
        stream = c.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "Count from one to ten in words."}],
            max_tokens=40,
            stream=True,
        )
        times = [
            time.monotonic() - start
            for chunk in stream
            if chunk.choices and chunk.choices[0].delta.content
        ]
    live_report(f"{len(times)} chunks, first at {times[0]:.2f} s, last at {times[-1]:.2f} s")
    assert len(times) >= 3
    assert times[-1] > times[0]
