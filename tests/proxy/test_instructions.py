"""Responses ``instructions`` are part of what the model reads: measured with the history and
kept whole, and forwarded as the client wrote them, never moved into the input."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synopsis.testing import ScriptedSummarizer
from tests.proxy.sdk_clients import openai_client

if TYPE_CHECKING:
    from synopsis.testing.server import FakeLLMServer
    from tests.proxy.conftest import ServeProxy

INSTRUCTIONS = "You are a careful assistant. " * 300  # about 1,800 tokens


def _input(turns: int) -> list[Any]:
    out: list[Any] = []
    for n in range(turns):
        out.append({"role": "user", "content": f"step {n}: " + "detail " * 40})
        out.append({"role": "assistant", "content": f"done {n}"})
    out.append({"role": "user", "content": "and now?"})
    return out


def test_instructions_are_measured_and_forwarded_as_they_came(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    served = proxy(context_window=20_000)
    with openai_client(served) as client:
        raw = client.responses.with_raw_response.create(
            model="gpt-4o", instructions=INSTRUCTIONS, input=_input(2)
        )
    before, after = map(int, raw.headers["x-synopsis-tokens"].split("/"))
    assert before == after > 1_800  # the instructions count
    (sent,) = upstream.requests
    assert sent.body["instructions"] == INSTRUCTIONS
    assert sent.body["input"] == _input(2)


def test_a_compaction_keeps_the_instructions_apart_and_whole(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    # About 2,200 tokens of input and 1,800 of instructions: past the trigger of 4,500.
    served = proxy(context_window=4_500, summarizer=ScriptedSummarizer(default="Earlier steps."))
    with openai_client(served) as client:
        raw = client.responses.with_raw_response.create(
            model="gpt-4o", instructions=INSTRUCTIONS, input=_input(40)
        )
    assert raw.headers["x-synopsis-compacted"] == "true"
    (sent,) = upstream.requests
    assert sent.body["instructions"] == INSTRUCTIONS
    assert all(item.get("role") != "system" for item in sent.body["input"])
    assert len(sent.body["input"]) < len(_input(40))
