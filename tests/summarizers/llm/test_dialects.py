"""Servers that refuse parts of a provider's protocol, as those of local models do: the client
steps down to what the server accepts (a JSON schema, then JSON mode, then the prompt alone;
strict messages), remembers it per server and model, and never sends a refused request
unchanged again. The real SDKs, against the fake server's picky modes."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import TransportError
from synopsis.messages import Message, Role, TextPart, ToolCallPart, ToolResultPart
from synopsis.summarizers.llm.asking import DIALECTS, transport_error
from synopsis.summarizers.llm.completion import CompletionRequest
from synopsis.summarizers.llm.dialects import Dialect, Dialects, refusal, strict_messages
from synopsis.summarizers.llm.summarizer import SUMMARY_SCHEMA
from synopsis.testing.server import Picky
from tests.summarizers.llm.test_clients import FLAVOURS, GOOD_TEXT, MODES, ask, request, run

if TYPE_CHECKING:
    from collections.abc import Iterator

    from synopsis.testing.server import FakeLLMServer
    from tests.summarizers.llm.test_clients import Flavour

CHAT, RESPONSES, ANTHROPIC = FLAVOURS
OPENAI = [CHAT, RESPONSES]
modes = pytest.mark.parametrize("mode", MODES)
openai_flavours = pytest.mark.parametrize("flavour", OPENAI, ids=[f.name for f in OPENAI])


@pytest.fixture(autouse=True)
def forget() -> Iterator[None]:
    DIALECTS.forget()
    yield
    DIALECTS.forget()


def structure(body: dict[str, Any]) -> str | None:
    """The response format a recorded request asked for (Chat Completions or Responses), with
    ``+schema`` when JSON mode was given the schema."""
    found = body.get("response_format") or (body.get("text") or {}).get("format")
    if not found:
        return None
    return str(found["type"]) + (
        "+schema" if "schema" in found and found["type"] == "json_object" else ""
    )


@openai_flavours
@modes
def test_a_refused_json_schema_steps_down_to_json_mode_once_per_server(
    llm_server: FakeLLMServer, flavour: Flavour, mode: str
) -> None:
    llm_server.picky = Picky(json_schema=True)
    llm_server.add(flavour.answer(GOOD_TEXT))
    llm_server.add(flavour.answer(GOOD_TEXT))
    slept: list[float] = []
    first = run(flavour, mode, llm_server, sleep=slept.append)
    second = run(flavour, mode, llm_server, sleep=slept.append)
    assert first.model == second.model == flavour.model
    assert [structure(r.body) for r in llm_server.requests] == [
        "json_schema",
        "json_object+schema",
        "json_object+schema",  # learned: the next summary asks the way that worked
    ]
    body = llm_server.requests[1].body
    asked = body.get("response_format") or body["text"]["format"]
    assert asked["schema"] == dict(SUMMARY_SCHEMA)
    assert slept == []  # a refusal is not a transport failure waited out and repeated


@openai_flavours
def test_a_server_with_no_json_mode_is_asked_by_the_prompt_alone(
    llm_server: FakeLLMServer, flavour: Flavour
) -> None:
    llm_server.picky = Picky(json_mode=True)
    llm_server.add(flavour.answer(GOOD_TEXT))
    record = run(flavour, "sync", llm_server)
    assert record.model == flavour.model
    assert [structure(r.body) for r in llm_server.requests] == [
        "json_schema",
        "json_object+schema",
        "json_object",
        None,
    ]
    # The prompt still asks for the JSON object the answer is read as.
    assert "JSON" in json.dumps(llm_server.requests[-1].body)


def test_json_mode_without_the_schema_when_the_server_takes_no_schema_there(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.picky = Picky(json_schema=True, schema_in_json_mode=True)
    llm_server.add(CHAT.answer(GOOD_TEXT))
    record = run(CHAT, "sync", llm_server)
    assert record.model == CHAT.model
    assert [structure(r.body) for r in llm_server.requests] == [
        "json_schema",
        "json_object+schema",
        "json_object",
    ]


def test_what_was_learned_is_per_server_and_model(llm_server: FakeLLMServer) -> None:
    llm_server.picky = Picky(json_schema=True)
    for _ in range(2):
        llm_server.add(CHAT.answer(GOOD_TEXT))
    run(CHAT, "sync", llm_server)
    learned = list(DIALECTS._known)
    assert learned == [("chat/completions", llm_server.base_url + "/", "gpt-test")]
    llm_server.picky = Picky()
    record = run(replace(CHAT, model="other-model"), "sync", llm_server)
    assert record.model == "gpt-test"
    assert structure(llm_server.requests[-1].body) == "json_schema"


def aligned_request(model: str) -> CompletionRequest:
    """A cache-aligned request over a conversation with a tool call and no text beside it
    (content null in OpenAI's encoding), ending on a user turn before the instruction."""
    conversation = (
        Message(Role.SYSTEM, (TextPart("You are a coding agent."),)),
        Message(Role.USER, (TextPart("Read app.py"),)),
        Message(Role.ASSISTANT, (ToolCallPart("c1", "read_file", '{"path": "app.py"}'),)),
        Message(Role.TOOL, (ToolResultPart("c1", "print('hi')"),)),
        Message(Role.ASSISTANT, (TextPart("It prints hi."),)),
        Message(Role.USER, (TextPart("Thanks."),)),
    )
    return CompletionRequest(
        model=model,
        system="",
        messages=[{"role": "user", "content": "Summarize the conversation above."}],
        conversation=conversation,
    )


@modes
def test_null_content_refused_is_sent_as_text_and_remembered(
    llm_server: FakeLLMServer, mode: str
) -> None:
    llm_server.picky = Picky(null_content=True)
    for _ in range(2):
        llm_server.add(CHAT.answer(GOOD_TEXT))
    for _ in range(2):
        assert ask(CHAT, mode, llm_server, aligned_request(CHAT.model)).text == GOOD_TEXT
    sent = [r.body["messages"] for r in llm_server.requests]
    assert len(sent) == 3
    assert any(m.get("content") is None for m in sent[0])
    for messages in sent[1:]:
        assert all(m.get("content") is not None for m in messages)
        # Only what was refused changed: the calls, ids and results are as they were.
        assert [m for m in messages if "tool_calls" in m or m["role"] == "tool"] == [
            {**m, "content": m["content"] or ""}
            for m in sent[0]
            if "tool_calls" in m or m["role"] == "tool"
        ]


@pytest.mark.parametrize("flavour", FLAVOURS, ids=[f.name for f in FLAVOURS])
def test_roles_that_must_alternate_are_joined(llm_server: FakeLLMServer, flavour: Flavour) -> None:
    llm_server.picky = Picky(alternation=True)
    llm_server.add(flavour.answer(GOOD_TEXT))
    asked = aligned_request(flavour.model)
    assert ask(flavour, "sync", llm_server, asked).text == GOOD_TEXT
    refused, accepted = (
        list(r.body.get("messages") or r.body.get("input") or []) for r in llm_server.requests
    )
    roles = [m["role"] for m in accepted if "role" in m]
    assert all(a != b for a, b in itertools.pairwise(roles))
    texts = [m["content"] for m in refused if m.get("role") == "user"]
    joined = [m["content"] for m in accepted if m.get("role") == "user"][-1]
    assert joined == "\n\n".join(t for t in texts[-2:] if isinstance(t, str))


def test_strict_from_the_start_when_told(llm_server: FakeLLMServer) -> None:
    import openai  # noqa: PLC0415

    from synopsis.summarizers import openai_chat_completion  # noqa: PLC0415

    llm_server.picky = Picky(null_content=True)
    llm_server.add(CHAT.answer(GOOD_TEXT))
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        complete = openai_chat_completion(client, strict=True)
        assert complete(aligned_request(CHAT.model)).text == GOOD_TEXT
    assert len(llm_server.requests) == 1


def test_a_refusal_for_another_reason_is_not_repeated(llm_server: FakeLLMServer) -> None:
    detail = [{"type": "missing", "loc": ["body", "model"], "msg": "Field required"}]
    llm_server.error(500, f"1 validation error: {detail!r}")
    slept: list[float] = []
    record = run(CHAT, "sync", llm_server, sleep=slept.append)
    assert record.model == "rules"
    assert len(llm_server.requests) == 1
    assert slept == []


def test_a_server_error_that_is_not_a_refusal_is_still_retried(llm_server: FakeLLMServer) -> None:
    llm_server.error(500, "the model crashed")
    llm_server.add(CHAT.answer(GOOD_TEXT))
    slept: list[float] = []
    record = run(CHAT, "sync", llm_server, sleep=slept.append)
    assert record.model == CHAT.model
    assert slept == [0.25]


def test_a_refusal_no_lesser_dialect_avoids_is_raised_at_once(llm_server: FakeLLMServer) -> None:
    # Two assistant turns in a row, one with a call: strict messages join text only, so the
    # roles still do not alternate, and there is nothing left to step down to.
    llm_server.picky = Picky(alternation=True)
    conversation = (
        Message(Role.USER, (TextPart("Read app.py"),)),
        Message(Role.ASSISTANT, (TextPart("Let me look."),)),
        Message(Role.ASSISTANT, (ToolCallPart("c1", "read_file", "{}"),)),
        Message(Role.TOOL, (ToolResultPart("c1", "print('hi')"),)),
    )
    asked = replace(aligned_request(CHAT.model), conversation=conversation)
    with pytest.raises(TransportError) as caught:
        ask(CHAT, "sync", llm_server, asked)
    assert not caught.value.retryable
    assert "HTTP 500" in str(caught.value)
    assert len(llm_server.requests) == 2  # as it was, then strict: never the same twice


# -- the rules, on their own --------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [
        (None, "connection reset", None),
        (200, "stream error event", None),
        (408, "request timeout", None),
        (429, "rate limited", None),
        (500, "internal error", None),
        (503, "overloaded", None),
        (500, "Input should be 'text' or 'json_object' ('body', 'response_format')", "structure"),
        (400, "response_format json_schema is not supported", "structure"),
        (
            500,
            "7 validation errors: {'type': 'string_type', 'loc': ('body', 'messages', 1, "
            "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a "
            "valid string', 'input': None}",
            "messages",
        ),
        (400, "Invalid value: content: null is not allowed for this role", "messages"),
        # The SDK's text is the body's repr, full of None: only a null content counts.
        (
            400,
            "{'message': 'The response was filtered due to the prompt triggering the content "
            "management policy.', 'type': None, 'param': 'prompt', 'code': 'content_filter'}",
            "invalid",
        ),
        (500, "Conversation roles must alternate user/assistant/user/assistant", "messages"),
        (400, "Conversation roles must alternate user/assistant", "messages"),
        (401, "invalid api key", "invalid"),
        (
            400,
            "{'code': 400, 'message': 'the request exceeds the available context size, try "
            "increasing it', 'type': 'exceed_context_size_error', 'n_prompt_tokens': 5120, "
            "'n_ctx': 4096}",
            "overflow",
        ),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", "overflow"),
        (404, "model not found", "invalid"),
    ],
)
def test_refusals_are_told_apart(status: int | None, text: str, expected: str | None) -> None:
    assert refusal(status, text) == expected


def test_a_lesser_dialect_exists_for_each_refusal_until_none_is_left() -> None:
    richest = Dialect()
    assert richest.after("structure") == Dialect("json_object_schema")
    assert Dialect("json_object_schema").after("structure") == Dialect("json_object")
    assert Dialect("json_object").after("structure") == Dialect("plain")
    assert Dialect("plain").after("structure") is None
    assert richest.after("messages") == Dialect(strict=True)
    assert Dialect(strict=True).after("messages") is None
    assert richest.after("invalid") is None


def test_the_memory_is_bounded() -> None:
    dialects = Dialects(size=2)
    for n in range(3):
        dialects.learn(("chat", "server", f"m{n}"), Dialect("plain"))
    assert dialects.get(("chat", "server", "m0"), Dialect()) == Dialect()
    assert dialects.get(("chat", "server", "m2"), Dialect()) == Dialect("plain")


MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "tool"])},
        optional={
            "content": st.none() | st.text(max_size=8),
            "tool_call_id": st.just("c1"),
            "name": st.just("n"),
        },
    ),
    max_size=12,
)


def _runs(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The oracle: runs of text-only messages of one role, each told as one message."""
    keyed = (
        ((m["role"], True) if set(m) == {"role", "content"} else (id(m), False), m)
        for m in ({**m, "content": ""} if m.get("content", 0) is None else m for m in messages)
    )
    out: list[dict[str, Any]] = []
    for (_, text_only), group in itertools.groupby(keyed, key=lambda pair: pair[0]):
        items = [m for _, m in group]
        if text_only and len(items) > 1:
            out.append(
                {"role": items[0]["role"], "content": "\n\n".join(m["content"] for m in items)}
            )
        else:
            out.extend(items)
    return out


@given(MESSAGES)
def test_strict_messages_have_no_null_and_no_two_texts_of_one_role_in_a_row(
    messages: list[dict[str, Any]],
) -> None:
    before = json.dumps(messages)
    out = strict_messages(messages)
    assert all(m.get("content", "") is not None for m in out)
    for a, b in itertools.pairwise(out):
        both_text = all(set(m) == {"role", "content"} for m in (a, b))
        assert not (both_text and a["role"] == b["role"])
    assert out == _runs(messages)  # nothing said is lost, and the order holds
    assert strict_messages(out) == out  # already strict: unchanged
    assert json.dumps(messages) == before  # the input is not changed


def test_the_whole_refusal_stays_on_the_cause_and_the_message_is_cut() -> None:
    long = "x" * 10_000
    error = transport_error("openai", ValueError(long))
    assert str(error).endswith("(9,700 more characters)")
    assert len(str(error)) < 400


def test_the_compactor_sends_strict_messages_when_told(llm_server: FakeLLMServer) -> None:
    from synopsis import Compactor  # noqa: PLC0415
    from tests.compaction.test_setup import CHAT as TURNS  # noqa: PLC0415
    from tests.compaction.test_setup import SUMMARY_TEXT  # noqa: PLC0415

    looked = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Clear skies over the ridge."},
    ]
    history = [TURNS[0], *looked, *TURNS[1:]]
    for strict, requests in ((True, 1), (False, 2)):
        DIALECTS.forget()
        llm_server.requests.clear()
        llm_server.picky = Picky(null_content=True)
        llm_server.add(CHAT.answer(SUMMARY_TEXT))
        compactor = Compactor(
            model="gpt-4o",
            summarizer="openai",
            base_url=llm_server.base_url,
            strict_messages=strict,
            cache_aligned=True,
            environ={},
        )
        result = compactor.compact(list(history), force=True)
        assert result.record is not None
        assert result.record.model == CHAT.model
        assert len(llm_server.requests) == requests


def test_a_cache_aligned_answer_in_prose_is_asked_again_the_usual_way(
    llm_server: FakeLLMServer,
) -> None:
    import openai  # noqa: PLC0415

    from synopsis.summarizers import LLMSummarizer, openai_chat_completion  # noqa: PLC0415

    llm_server.add(CHAT.answer("Sure! The user read app.py, which prints hi."))
    llm_server.add(CHAT.answer(GOOD_TEXT))
    conversation = [
        *aligned_request(CHAT.model).conversation,
        Message(Role.ASSISTANT, (ToolCallPart("c2", "read_file", '{"path": "log.txt"}'),)),
        Message(Role.TOOL, (ToolResultPart("c2", "line of the log\n" * 300),)),
    ]
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        summarizer = LLMSummarizer(
            openai_chat_completion(client),
            models=[CHAT.model],
            cache_aligned=True,
            quality_guard=False,
        )
        record = summarizer.summarize(conversation)
    assert record.model == CHAT.model
    aligned, usual = (r.body for r in llm_server.requests)
    assert structure(aligned) is None
    assert aligned["messages"][0]["content"] == "You are a coding agent."
    assert structure(usual) == "json_schema"


def test_told_to_be_strict_a_completion_is_whatever_was_learned(llm_server: FakeLLMServer) -> None:
    import openai  # noqa: PLC0415

    from synopsis.summarizers import openai_chat_completion  # noqa: PLC0415

    DIALECTS.learn(
        ("chat/completions", llm_server.base_url + "/", CHAT.model), Dialect("json_object")
    )
    llm_server.picky = Picky(null_content=True)
    llm_server.add(CHAT.answer(GOOD_TEXT))
    with openai.OpenAI(api_key="k", base_url=llm_server.base_url, max_retries=0) as client:
        complete = openai_chat_completion(client, strict=True)
        assert complete(aligned_request(CHAT.model)).text == GOOD_TEXT
    assert len(llm_server.requests) == 1


def test_anthropic_sends_no_response_format_so_steps_down_through_none(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.error(400, "response_format is not supported")
    with pytest.raises(TransportError):
        ask(ANTHROPIC, "sync", llm_server, request(ANTHROPIC.model, json_schema=SUMMARY_SCHEMA))
    assert len(llm_server.requests) == 2  # as it was, then strict; no structure to step down


def test_a_reason_cut_once_is_not_cut_again() -> None:
    from synopsis.errors import ERROR_CHARS, brief  # noqa: PLC0415
    from synopsis.events import SummarizerFellBack  # noqa: PLC0415

    event = SummarizerFellBack(model="m", reason="x" * 1_000, fallback="rules")
    assert replace(event, session_id="s").reason == event.reason == brief("x" * 1_000)
    assert brief(event.reason) == event.reason
    assert event.reason.endswith(f"({1_000 - ERROR_CHARS:,} more characters)")
