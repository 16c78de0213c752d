"""One reading of "the request is too long": each server's wording and the figures it names,
the statuses it comes with, a client's words echoed back (never an overflow), and the check
that a refusal's figures hold together with the request synopsis counted before a window is
learnt from them."""

from __future__ import annotations

import json
from string import Template

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.overflows import STATUSES, TOLERANCE, Overflow, read
from synopsis.testing.server import Picky

# Each server's refusal, $w the window, $p the prompt's tokens, $a the answer's, $t both.
WORDINGS: dict[str, str] = {
    "openai": '{"error": {"message": "This model\'s maximum context length is $w tokens. '
    'However, your messages resulted in $p tokens. Please reduce the length of the messages.", '
    '"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
    "openai-completion": '{"error": {"message": "This model\'s maximum context length is $w '
    "tokens. However, you requested $t tokens ($p in the messages, $a in the completion). "
    'Please reduce the length of the messages or completion.", "type": '
    '"invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
    "openai-legacy": '{"error": {"message": "This model\'s maximum context length is $w tokens, '
    "however you requested $t tokens ($p in your prompt; $a for the completion). Please "
    'reduce your prompt; or completion length.", "type": "invalid_request_error"}}',
    "anthropic": '{"type":"error","error":{"type":"invalid_request_error",'
    '"message":"prompt is too long: $p tokens > $w maximum"}}',
    "anthropic-answer": '{"type":"error","error":{"type":"invalid_request_error","message":'
    '"input length and `max_tokens` exceed context limit: $p + $a > $w, decrease input length '
    'or `max_tokens` and try again"}}',
    "vllm": '{"object":"error","message":"This model\'s maximum context length is $w tokens. '
    "However, your request has $p input tokens. Please reduce the length of the input "
    'messages.","type":"BadRequestError","param":null,"code":400}',
    "vllm-answer": '{"error":{"message":"\'max_tokens\' or \'max_completion_tokens\' is too '
    "large: $a. This model's maximum context length is $w tokens and your request has $p "
    'input tokens ($a > $w - $p). None","type":"BadRequestError","param":null,"code":400}}',
    "vllm-scheduler": "Input prompt ($p tokens) is too long and exceeds limit of $w",
    "llama.cpp": '{"error":{"code":400,"message":"the request exceeds the available context '
    'size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":$p,'
    '"n_ctx":$w}}',
    "llama.cpp-sdk": "Error code: 400 - {'error': {'code': 400, 'message': 'the request "
    "exceeds the available context size, try increasing it', 'type': "
    "'exceed_context_size_error', 'n_prompt_tokens': $p, 'n_ctx': $w}}",
    "llama-cpp-python": '{"error": {"message": "Requested tokens ($p) exceed context window '
    'of $w", "type": "internal_server_error", "param": null, "code": null}}',
    "gemini": '{"error": {"code": 400, "message": "The input token count ($p) exceeds the '
    'maximum number of tokens allowed ($w).", "status": "INVALID_ARGUMENT"}}',
    "lm-studio": '{"error":"Trying to keep the first $p tokens when context the overflows. '
    "However, the model is loaded with context length of only $w tokens, which is not "
    'enough. Try to load the model with a larger context length, or provide a shorter input"}',
    "lm-studio-keep": '{"error":"The number of tokens to keep from the initial prompt is '
    "greater than the context length (n_keep: $p>= n_ctx: $w). Try to load the model with a "
    'larger context length, or provide a shorter input."}',
    "lm-studio-truncate": '{"error":"Cannot truncate prompt with n_keep ($p) >= n_ctx ($w)"}',
    "lm-studio-legacy": '{"error":"Error: Input length $p exceeds context length $w"}',
    "sglang": '{"object":"error","message":"The input ($p tokens) is longer than the '
    'model\'s context length ($w tokens).","type":"BadRequestError"}',
    "mistral": '{"object":"error","message":"Prompt contains $p tokens and 0 draft tokens, too '
    'large for model with $w maximum context length","type":"invalid_request_error"}',
}
SILENT: dict[str, str] = {
    "responses": '{"error": {"message": "Your input exceeds the context window of this model. '
    'Please adjust your input and try again.", "type": "invalid_request_error", "param": '
    '"input", "code": "context_length_exceeded"}}',
    "ollama": '{"error":"the input length exceeds the context length"}',
    "bedrock": '{"message":"Input is too long for requested model."}',
}
"""Refusals that name no figure."""


def said(name: str, window: int, prompt: int, answer: int) -> str:
    return Template(WORDINGS[name]).substitute(w=window, p=prompt, a=answer, t=prompt + answer)


def answers(name: str) -> bool:
    return "$a" in WORDINGS[name]


NO_DIGITS = st.text(st.characters(blacklist_categories=("Nd", "Cs")), max_size=30)
"""Words around a refusal (a gateway's prefix, a trailing note): no figure of their own."""


@pytest.mark.parametrize("name", sorted(WORDINGS))
@given(
    window=st.integers(1, 10**7),
    prompt=st.integers(1, 10**7),
    answer=st.integers(1, 10**5),
    before=NO_DIGITS,
    after=NO_DIGITS,
)
def test_each_servers_refusal_reads_as_the_figures_it_names(
    name: str, window: int, prompt: int, answer: int, before: str, after: str
) -> None:
    text = before + said(name, window, prompt, answer) + after
    expected = Overflow(window, prompt, answer if answers(name) else None)
    assert read(400, text) == expected
    assert read(400, text.encode()) == expected


@pytest.mark.parametrize("overflow", ["openai", "anthropic", "vllm", "llamacpp"])
@pytest.mark.parametrize("counts_answer", [False, True])
def test_the_fake_servers_refusals_read_as_they_were_made(
    overflow: str, counts_answer: bool
) -> None:
    picky = Picky(context_window=100, overflow=overflow, counts_answer=counts_answer)
    body = {"messages": [{"role": "user", "content": "x" * 600}], "max_tokens": 500}
    if counts_answer:  # only the answer brings it over
        body["messages"] = [{"role": "user", "content": "x" * 300}]
    refused = picky.refusal(body)
    assert refused is not None
    status, error = refused
    found = read(status, json.dumps(error))
    assert found is not None
    assert found.window == 100
    # llama.cpp's server names no answer (it never counts one in its window): a refusal that
    # only the answer brings over is one whose figures do not add up.
    adds_up = overflow != "llamacpp" or not counts_answer
    assert found.consistent(found.prompt) == adds_up


@pytest.mark.parametrize("name", sorted(SILENT))
def test_a_refusal_naming_no_figure_is_an_overflow_with_none(name: str) -> None:
    assert read(400, SILENT[name]) == Overflow()
    assert Overflow().fitting(5_000) is None  # nothing named: nothing learnt


@pytest.mark.parametrize("status", sorted(STATUSES))
def test_every_status_a_refusal_comes_with_is_read(status: int) -> None:
    assert read(status, said("openai", 4096, 5000, 0)) == Overflow(4096, 5000)


@pytest.mark.parametrize("status", [None, 200, 401, 404, 408, 429, 502, 503, 504])
def test_other_statuses_are_no_overflow_whatever_they_say(status: int | None) -> None:
    # A 429 says "too many tokens" per minute; a gateway's 502 may quote anything.
    assert read(status, said("openai", 4096, 5000, 0)) is None
    assert read(status, "Rate limit reached: too many tokens per minute") is None


@pytest.mark.parametrize(
    "body",
    [
        '{"error": {"message": "Invalid value for \'tool_choice\'"}}',
        '{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field '
        'required"}}',
        '{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the '
        'maximum allowed number of bytes."}}',
        '{"error": {"message": "bad request 400 > 2 things"}}',
        "",
    ],
)
def test_other_errors_are_no_overflow(body: str) -> None:
    assert read(400, body) is None
    assert read(413, body) is None


# -- a client's words, echoed ------------------------------------------------------------------


def unrecognized(field: str) -> tuple[str, str]:
    """A server refusing an unknown field of the request by its name: the error, the request."""
    error = {
        "error": {
            "message": f"Unrecognized request argument supplied: {field}",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], field: True}
    return json.dumps(error), json.dumps(request)


def test_an_unknown_field_named_like_an_overflow_is_no_overflow() -> None:
    error, request = unrecognized("context_length_exceeded")
    assert read(400, error) is not None  # without the request, the words alone deceive
    assert read(400, error, request) is None
    assert read(400, error.encode(), request.encode()) is None


@given(name=st.sampled_from(sorted(WORDINGS)), window=st.integers(1, 10**6), extra=st.text())
def test_a_refusal_of_the_clients_own_words_is_never_an_overflow(
    name: str, window: int, extra: str
) -> None:
    # Whatever the client named a field (a whole refusal, with figures, or any text), the
    # server that says it back has said nothing of its own.
    for field in (said(name, window, window * 2, 8), extra):
        error, request = unrecognized(field)
        assert read(400, error, request) is None


def test_an_echo_in_pythons_repr_is_an_echo_too() -> None:
    # llama-cpp-python's validation errors quote the request's input in Python's repr.
    request = json.dumps({"model": "m", "options": {"n_ctx": 4096}, "messages": []})
    error = "400: {'loc': ('body', 'options'), 'input': {'n_ctx': 4096}, 'msg': 'Extra inputs'}"
    assert read(400, error, request) is None


def test_the_servers_own_fields_are_read_though_the_conversation_quotes_them() -> None:
    # A coding agent's conversation about this very error: inside the request's strings the
    # quotes are escaped, so the refusal's own code field is still the server's.
    quoted = said("openai", 128_000, 130_412, 0)
    request = json.dumps({"model": "gpt-4o", "messages": [{"role": "tool", "content": quoted}]})
    fresh = said("openai", 128_000, 140_000, 0)
    assert read(400, fresh, request) == Overflow(None, 140_000)  # its window quoted before
    assert read(400, fresh) == Overflow(128_000, 140_000)


# -- the figures against the request -----------------------------------------------------------


@given(
    window=st.integers(1, 10**6),
    over=st.integers(1, 10**6),
    ratio=st.floats(1 / TOLERANCE, TOLERANCE),
)
def test_figures_that_hold_together_give_the_window_in_synopsiss_count(
    window: int, over: int, ratio: float
) -> None:
    prompt = window + over
    counted = max(1, round(prompt * ratio))
    refused = Overflow(window, prompt)
    if refused.consistent(counted):  # the rounding may take it past the tolerance
        assert refused.fitting(counted) == window * counted // prompt
    else:
        assert not prompt / TOLERANCE <= counted <= prompt * TOLERANCE


@given(
    refused=st.builds(
        Overflow,
        st.none() | st.integers(0, 10**7),
        st.none() | st.integers(0, 10**7),
        st.none() | st.integers(0, 10**5),
    ),
    counted=st.none() | st.integers(0, 10**7),
)
def test_a_window_learnt_is_never_further_than_the_tolerance_from_the_one_named(
    refused: Overflow, counted: int | None
) -> None:
    fits = refused.fitting(counted)
    if fits is None:
        return
    assert refused.window is not None
    assert counted
    assert refused.window / TOLERANCE <= fits + 1
    assert fits <= refused.window * TOLERANCE
    # The request was over the window, by the server's count or by a plausible one of ours.
    asked = (refused.prompt or 0) + (refused.answer or 0)
    assert asked > refused.window or (refused.prompt is None and counted * TOLERANCE > fits)


def test_a_refusal_of_another_request_is_not_believed() -> None:
    # A 9-token request, refused as 5,000 tokens over a 1,000-token window.
    refused = read(400, said("openai", 1000, 5000, 0))
    assert refused == Overflow(1000, 5000)
    assert refused.fitting(9) is None
    assert refused.fitting(2_600) == 1000 * 2_600 // 5000  # half of the server's count: believed


@pytest.mark.parametrize(
    ("refused", "counted"),
    [
        (Overflow(4096, 4000), 4000),  # says the prompt fits, and counts no answer
        (Overflow(4096), 9),  # a window of 4,096 for 9 tokens: not what refused it
        (Overflow(None, 5000), 5000),  # names no window
        (Overflow(4096, 5000), None),  # synopsis did not count what was sent
        (Overflow(4096, 0), 10),
    ],
    ids=["under", "no-prompt-small", "no-window", "uncounted", "zero"],
)
def test_figures_that_do_not_hold_together_teach_nothing(
    refused: Overflow, counted: int | None
) -> None:
    assert not refused.consistent(counted)
    assert refused.fitting(counted) is None


def test_an_answer_counted_in_the_window_brings_the_request_over_it() -> None:
    refused = read(400, said("anthropic-answer", 200_000, 199_759, 8_192))
    assert refused == Overflow(200_000, 199_759, 8_192)
    assert refused.fitting(190_000) == 200_000 * 190_000 // 199_759
    assert Overflow(4096).fitting(3_000) == 4096  # no count of its own: the window it names
