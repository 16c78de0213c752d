"""The window of a local model: an input cap given per model, and a server that says a request
is over its context window gets the summary asked again in parts that fit the window it named."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import openai
import pytest

from synopsis.errors import ConfigurationError, TransportError
from synopsis.overflows import Overflow, read
from synopsis.summarizers import LLMSummarizer, openai_chat_completion
from synopsis.summarizers.llm.asking import DIALECTS, transport_error
from synopsis.summarizers.llm.dialects import refusal
from synopsis.testing.server import Picky, chat_completion
from tests.summarizers.helpers import TRANSCRIPTS, load
from tests.summarizers.llm.test_clients import GOOD_TEXT

if TYPE_CHECKING:
    from collections.abc import Iterator

    from synopsis.summarizers.llm.completion import CompletionRequest, CompletionResponse
    from synopsis.testing.server import FakeLLMServer

LLAMA = "Requested tokens (9437) exceed context window of 8192"
OPENAI_STYLE = (
    "This model's maximum context length is 2048 tokens. However, you requested 12288 tokens "
    "(12000 in the messages, 288 in the completion). Please reduce the length of the messages "
    "or completion."
)


@pytest.fixture(autouse=True)
def forget() -> Iterator[None]:
    DIALECTS.forget()
    yield
    DIALECTS.forget()


def never(_request: CompletionRequest) -> CompletionResponse:
    raise AssertionError("not called")


def test_an_input_cap_per_model_makes_requests_fit_the_smallest() -> None:
    summarizer = LLMSummarizer(
        never, models=["gpt-4o", "my-local-model"], max_input_tokens={"my-local-model": 1_500}
    )
    assert summarizer.max_input_tokens == 1_500
    both = LLMSummarizer(never, models=["gpt-4o"], max_input_tokens={"gpt-4o": 9_000})
    assert both.max_input_tokens == 9_000
    unnamed = LLMSummarizer(never, models=["gpt-4o"], max_input_tokens={})
    assert unnamed.max_input_tokens == 128_000 - unnamed.max_summary_tokens


@pytest.mark.parametrize(
    ("caps", "match"),
    [
        ({"other": 10}, "not in models"),
        ({"gpt-4o": 0}, "max_input_tokens"),
        ({"gpt-4o": True}, "max_input_tokens"),
    ],
)
def test_a_wrong_cap_is_a_configuration_error(caps: dict[str, int], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        LLMSummarizer(never, models=["gpt-4o"], max_input_tokens=caps)


@pytest.mark.parametrize(
    ("status", "text", "window", "prompt"),
    [
        (400, OPENAI_STYLE, 2048, 12000),
        (500, LLAMA, 8192, 9437),
        (400, "context_length_exceeded: input too long", None, None),
        (
            400,
            "{'code': 400, 'message': 'the request exceeds the available context size, try "
            "increasing it', 'type': 'exceed_context_size_error', 'n_prompt_tokens': 5120, "
            "'n_ctx': 4096}",
            4096,
            5120,
        ),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", 200000, 210000),
    ],
)
def test_an_overflow_is_told_apart_and_not_retried(
    status: int, text: str, window: int | None, prompt: int | None
) -> None:
    assert refusal(status, text) == "overflow"
    found = read(status, text)
    assert found is not None
    assert (found.window, found.prompt) == (window, prompt)

    class Refused(Exception):
        status_code = status

    error = transport_error("openai", Refused(text))
    assert isinstance(error, TransportError)
    assert not error.retryable
    assert (error.context_window, error.prompt_tokens) == (window, prompt)


def local(client: openai.OpenAI, *, cache_aligned: bool = False) -> LLMSummarizer:
    """A summarizer of the model "local", whose window is not in the table."""
    return LLMSummarizer(
        openai_chat_completion(client),
        models=["local"],
        sleep=lambda _: None,
        quality_guard=False,  # the scripted answer is the same for every part
        cache_aligned=cache_aligned,
    )


def answers(server: FakeLLMServer, count: int = 60) -> None:
    """Enough scripted answers for every part of a summary asked in parts."""
    for _ in range(count):
        server.add(chat_completion(GOOD_TEXT, model="local"))


def test_an_overflowing_request_is_asked_again_in_parts_that_fit(
    llm_server: FakeLLMServer,
) -> None:
    window = 2_000
    llm_server.picky = Picky(context_window=window)
    answers(llm_server)
    messages = load(TRANSCRIPTS[0])[:60]
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        summarizer = local(client)
        assumed = summarizer.max_input_tokens
        record = summarizer.summarize(messages)
    assert record.model == "local"
    sizes = [len(json.dumps(r.body["messages"])) // 4 for r in llm_server.requests]
    assert sizes[0] > window  # the first request, at the cap assumed for an unknown model
    assert len(sizes) > 2  # then parts, and their consolidation
    assert all(size <= window for size in sizes[1:])
    assert summarizer.input_cap < assumed == summarizer.max_input_tokens
    # What was learned holds for the next summary: no request over the window again.
    llm_server.requests.clear()
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        summarizer.completion = openai_chat_completion(client)
        again = summarizer.summarize(messages)
    assert again.model == "local"
    assert all(len(json.dumps(r.body["messages"])) // 4 <= window for r in llm_server.requests)


def test_a_window_too_small_for_any_part_falls_back_once(llm_server: FakeLLMServer) -> None:
    llm_server.picky = Picky(context_window=50)
    messages = load(TRANSCRIPTS[0])[:20]
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        summarizer = local(client)
        record = summarizer.summarize(messages)
    assert record.model == "rules"
    assert len(llm_server.requests) == 1


def test_a_server_that_counts_the_answer_in_its_window_gets_a_smaller_answer_asked(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.picky = Picky(context_window=2_048, counts_answer=True)
    answers(llm_server)
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        summarizer = local(client)
        record = summarizer.summarize(load(TRANSCRIPTS[0])[:60])
    assert record.model == "local"
    first, *rest = llm_server.requests
    assert first.body["max_tokens"] == summarizer.max_summary_tokens
    assert rest
    assert all(r.body["max_tokens"] <= 1_024 for r in rest)
    assert all(len(json.dumps(r.body["messages"])) // 4 + 1_024 <= 2_048 for r in rest)


def test_an_aligned_request_over_the_window_is_sized_by_all_it_sent(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.picky = Picky(context_window=2_000)
    answers(llm_server)
    messages = load(TRANSCRIPTS[0])[:120]
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        summarizer = local(client, cache_aligned=True)
        record = summarizer.summarize(messages)
    assert record.model == "local"
    # The conversation counted, not only the instruction after it: a cap near the window's
    # share, not one so small that every part is the least a request may carry.
    assert 400 < summarizer.input_cap < 2_000
    assert len(llm_server.requests) > 2


def test_an_overflow_that_names_only_the_window_is_sized_by_our_own_count(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.error(400, "Requested tokens exceed context window of 3000")
    answers(llm_server)
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        summarizer = local(client)
        record = summarizer.summarize(load(TRANSCRIPTS[0])[:60])
    assert record.model == "local"
    answer = min(summarizer.max_summary_tokens, 3000 // 2)
    assert summarizer.input_cap == int((3000 - answer) * 0.9)


def test_a_refusal_echoing_the_transcript_is_no_overflow() -> None:
    # A validation error quoting a message of the transcript, which quotes a refusal.
    quoted = "the API said: This model's maximum context length is 1000 tokens"
    sent = json.dumps({"messages": [{"role": "user", "content": None}, {"content": quoted}]})
    text = (
        "1 validation error: {'type': 'string_type', 'loc': ('body', 'messages', 0, 'content'), "
        f"'msg': 'Input should be a valid string', 'input': None, 'context': '{quoted}'}}"
    )
    assert refusal(500, text) == "overflow"  # the words alone deceive
    assert refusal(500, text, sent) == "messages"

    class Refused(Exception):
        status_code = 500

    error = transport_error("openai", Refused(text), sent)
    assert error.context_window is None


def test_an_overflow_of_another_requests_size_does_not_shrink_the_cap(
    llm_server: FakeLLMServer,
) -> None:
    # A window named beside a prompt 200 times what was sent: not this request's refusal.
    llm_server.error(
        400,
        "This model's maximum context length is 1000 tokens. However, your messages "
        "resulted in 2000000 tokens.",
    )
    answers(llm_server)
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        summarizer = local(client)
        record = summarizer.summarize(load(TRANSCRIPTS[0])[:60])
    assert record.model == "rules"  # refused, and nothing learnt to ask again with
    assert len(llm_server.requests) == 1
    assert summarizer.input_cap == summarizer.max_input_tokens


def test_an_answer_counted_beside_the_prompt_is_carried_on_the_error() -> None:
    class Refused(Exception):
        status_code = 400

    text = "input length and `max_tokens` exceed context limit: 3000 + 2000 > 4096"
    error = transport_error("anthropic", Refused(text))
    assert (error.context_window, error.prompt_tokens, error.answer_tokens) == (4096, 3000, 2000)
    assert Overflow(4096, 3000, 2000).consistent(3100)
