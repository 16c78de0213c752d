"""The pydantic-ai adapter, part by part: how each pydantic-ai message reads as a synopsis
message (every part counted), what comes back for what synopsis made, the options, the
conversations it keeps apart, and the install hint when pydantic-ai is missing."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from pydantic_ai import PydanticAIDeprecationWarning
from pydantic_ai import messages as pm
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RequestUsage, RunUsage

import synopsis
from synopsis import (
    Compactor,
    ConfigurationError,
    MediaPart,
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.adapters.pydantic_ai import (
    SynopsisCapability,
    SynopsisRequestCapability,
    _Conversation,
    from_message,
    to_message,
)
from tests.adapters.clearing import cleared, recalled

if TYPE_CHECKING:
    from collections.abc import Coroutine

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine`` run on a loop of its own: ``asyncio.run`` would unset the loop
    ``Agent.run_sync`` keeps for the thread, leaving it to be collected unclosed."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


WHEN = datetime(2026, 1, 2, tzinfo=UTC)


def context(conversation_id: str | None = "conv-1", deps: object = None) -> RunContext[Any]:
    return RunContext(
        deps=deps,
        model=TestModel(),
        usage=RunUsage(),
        conversation_id=conversation_id,
        run_id="run-1",
    )


# -- reading pydantic-ai messages -----------------------------------------------------------


def test_a_request_is_one_user_message_with_every_part() -> None:
    request = pm.ModelRequest(
        parts=[
            pm.SystemPromptPart("Be brief."),
            pm.UserPromptPart(
                [
                    "look at these",
                    pm.TextContent("typed text"),
                    pm.ImageUrl("https://example.com/a.png"),
                    pm.BinaryContent(b"%PDF-1", media_type="application/pdf"),
                    pm.BinaryContent(b"\x00", media_type="x-unknown/thing"),
                    pm.UploadedFile("file-abc.txt", "anthropic"),
                    pm.CachePoint(),
                ]
            ),
            pm.ToolReturnPart("bash", "ok", "c1"),
            pm.ToolReturnPart("bash", "boom", "c2", outcome="failed"),
            pm.RetryFeedbackPart(
                "please answer in JSON", retry=pm.RetryInfo(cause="validation_error")
            ),
            pm.ToolAvailabilityDeltaPart(tools_added=["grep"]),
            pm.SpeechPart(speaker="user", transcript="hello"),
            pm.SpeechPart(speaker="user"),
        ]
    )
    message = to_message(request)
    assert message.role is Role.USER
    kinds = [type(p) for p in message.parts]
    assert kinds == [
        TextPart,
        TextPart,
        TextPart,
        MediaPart,
        MediaPart,
        MediaPart,
        MediaPart,
        ToolResultPart,
        ToolResultPart,
        TextPart,
        OpaquePart,
        OpaquePart,
        OpaquePart,
    ]
    system, text, typed, image, pdf, unknown, uploaded = message.parts[:7]
    assert isinstance(system, TextPart)
    assert system.text == "Be brief."
    assert system.extra == {"pydantic_ai": "system-prompt"}
    assert (text.text, typed.text) == ("look at these", "typed text")  # type: ignore[union-attr]
    assert isinstance(image, MediaPart)
    assert (image.kind, image.url) == ("image", "https://example.com/a.png")
    assert isinstance(pdf, MediaPart)
    assert (pdf.kind, pdf.media_type, pdf.data) == ("document", "application/pdf", "JVBERi0x")
    assert isinstance(unknown, MediaPart)
    assert unknown.kind == "file"
    assert isinstance(uploaded, MediaPart)
    assert (uploaded.kind, uploaded.filename) == ("file", "file-abc.txt")
    ok, failed = message.tool_results
    assert (ok.call_id, ok.content, ok.is_error, ok.name) == ("c1", "ok", False, "bash")
    assert (failed.call_id, failed.is_error) == ("c2", True)
    feedback = message.parts[9]
    assert isinstance(feedback, TextPart)
    assert "please answer in JSON" in feedback.text
    delta, speech, silent = message.parts[10:]
    assert isinstance(delta, OpaquePart)
    assert delta.kind == "tool-availability-delta"
    assert (speech.text, silent.text) == ("hello", "")  # type: ignore[union-attr]


def test_a_legacy_retry_prompt_is_an_error_result_or_text() -> None:
    # Histories stored before v2 still load into this part: the adapter reads it, the test
    # builds it, and the deprecation that building it raises is the expected one.
    with pytest.warns(PydanticAIDeprecationWarning, match="`RetryPromptPart` is deprecated"):
        retry_tool = pm.RetryPromptPart("bad args", tool_name="bash", tool_call_id="c1")
    with pytest.warns(PydanticAIDeprecationWarning, match="`RetryPromptPart` is deprecated"):
        retry_plain = pm.RetryPromptPart("try again")
    message = to_message(pm.ModelRequest(parts=[retry_tool, retry_plain]))
    result, text = message.parts
    assert isinstance(result, ToolResultPart)
    assert (result.call_id, result.is_error, result.name) == ("c1", True, "bash")
    assert "bad args" in result.text
    assert isinstance(text, TextPart)
    assert "try again" in text.text


def test_a_response_is_one_assistant_message_with_every_part() -> None:
    response = pm.ModelResponse(
        parts=[
            pm.ThinkingPart("let me think", signature="sig-1"),
            pm.TextPart("Running it."),
            pm.ToolCallPart("bash", {"cmd": "ls"}, "c1"),
            pm.FilePart(pm.BinaryContent(b"\x89PNG", media_type="image/png")),
            pm.NativeToolCallPart("web_search", {"query": "pydantic"}, "n1"),
            pm.NativeToolReturnPart("web_search", "3 results", "n1"),
            pm.CompactionPart("provider summary"),
            pm.CompactionPart(None),
            pm.SpeechPart(speaker="assistant", transcript="said"),
        ],
        model_name="claude-sonnet-4-5",
    )
    message = to_message(response)
    assert message.role is Role.ASSISTANT
    thinking, text, call, image, native_call, native_return, compaction, empty, speech = (
        message.parts
    )
    assert thinking == ReasoningPart("let me think", signature="sig-1")
    assert text == TextPart("Running it.")
    assert call == ToolCallPart("c1", "bash", '{"cmd":"ls"}')
    assert isinstance(image, MediaPart)
    assert image.kind == "image"
    assert isinstance(native_call, OpaquePart)
    assert native_call.text == 'web_search({"query":"pydantic"})'
    assert isinstance(native_return, OpaquePart)
    assert native_return.text == "3 results"
    assert compaction == OpaquePart("compaction", {"part_kind": "compaction"}, "provider summary")
    assert isinstance(empty, OpaquePart)
    assert empty.text == ""
    assert isinstance(speech, OpaquePart)
    assert speech.text == "said"


def test_every_part_is_counted() -> None:
    """What the sketch dropped (thinking, files, native tools) now weighs in the count."""
    counter = synopsis.counter_for_model("claude-sonnet-4-5")
    bare = pm.ModelResponse(parts=[pm.TextPart("ok")])
    rich = pm.ModelResponse(parts=[pm.ThinkingPart("x " * 500, signature="s"), pm.TextPart("ok")])
    assert counter.count_message(to_message(rich)) > counter.count_message(to_message(bare)) + 400


# -- making pydantic-ai messages -----------------------------------------------------------


def test_a_summary_is_a_request_with_one_user_prompt() -> None:
    made = from_message(Message(Role.USER, (TextPart('<synopsis-summary depth="0">…'),)))
    assert isinstance(made, pm.ModelRequest)
    (part,) = made.parts
    assert isinstance(part, pm.UserPromptPart)
    assert part.content == '<synopsis-summary depth="0">…'


def test_a_made_request_and_response_keep_each_kind_of_part() -> None:
    user = Message(
        Role.USER,
        (
            TextPart("sys", extra={"pydantic_ai": "system-prompt"}),
            TextPart("hello"),
            ToolResultPart("c1", "out", name="bash"),
            ToolResultPart("c2", "anon"),
            MediaPart("image", url="https://example.com/a.png"),
            ToolCallPart("c3", "ls", "{}"),
            ReasoningPart("hm"),
            OpaquePart("x", {}, "opaque"),
        ),
    )
    request = from_message(user)
    assert isinstance(request, pm.ModelRequest)
    kinds = [p.part_kind for p in request.parts]
    assert kinds == [
        "system-prompt",
        "user-prompt",
        "tool-return",
        "tool-return",
        "user-prompt",
        "user-prompt",
        "user-prompt",
        "user-prompt",
    ]
    assert request.parts[3].tool_name == ""  # type: ignore[union-attr]
    assert request.parts[4].content == "[image: https://example.com/a.png]"  # type: ignore[union-attr]
    assert request.parts[5].content == "ls({})"  # type: ignore[union-attr]
    assistant = Message(
        Role.ASSISTANT,
        (
            TextPart("t"),
            ToolCallPart("c1", "bash", {"cmd": "ls"}),
            ReasoningPart("r", signature="s"),
            MediaPart("image", filename="a.png"),
            ToolResultPart("c9", "odd"),
            OpaquePart("x", {}, "o"),
        ),
    )
    response = from_message(assistant)
    assert isinstance(response, pm.ModelResponse)
    assert [p.part_kind for p in response.parts] == [
        "text",
        "tool-call",
        "thinking",
        "text",
        "text",
        "text",
    ]
    call = response.parts[1]
    assert isinstance(call, pm.ToolCallPart)
    assert call.args_as_dict() == {"cmd": "ls"}
    thinking = response.parts[2]
    assert isinstance(thinking, pm.ThinkingPart)
    assert thinking.signature == "s"


# -- options --------------------------------------------------------------------------------


def test_options_build_a_compactor_for_anthropic_turns() -> None:
    capability = SynopsisCapability(model="claude-sonnet-4-5", context_window=5000)
    assert capability.compactor.settings.provider == "anthropic"
    assert capability.compactor.setup.window == 5000
    assert capability.compactor.remembered_sessions >= capability.conversations == 32
    assert capability.store is None
    assert capability.last_result is None
    other = SynopsisRequestCapability(provider="openai")
    assert other.compactor.settings.provider == "openai"
    assert SynopsisRequestCapability.get_serialization_name() is None


def test_a_compactor_is_used_as_given() -> None:
    compactor = Compactor(provider="anthropic", store="memory")
    capability = SynopsisRequestCapability(compactor)
    assert capability.compactor is compactor
    assert capability.store is compactor.setup.store


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"compactor": Compactor(), "context_window": 10}, "not both"),
        ({"compactor": "gpt-4o"}, "must be a synopsis.Compactor"),
        ({"conversations": 0}, "at least 1"),
        ({"conversations": True}, "whole number"),
        ({"session_id": 3}, "session_id must be"),
        ({"trigger": "nonsense"}, "trigger"),
    ],
)
def test_wrong_options_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        SynopsisCapability(**kwargs)


# -- conversations --------------------------------------------------------------------------


def history(n: int, *, size: int = 40) -> list[pm.ModelMessage]:
    out: list[pm.ModelMessage] = [pm.ModelRequest(parts=[pm.UserPromptPart("Fix the tests")])]
    for k in range(n):
        out.append(
            pm.ModelResponse(
                parts=[pm.TextPart(f"step {k}"), pm.ToolCallPart("bash", {"k": k}, f"c{k}")]
            )
        )
        out.append(pm.ModelRequest(parts=[pm.ToolReturnPart("bash", f"out {k} " * size, f"c{k}")]))
    return out


def process(capability: SynopsisCapability[Any], ctx: RunContext[Any], messages: list[Any]) -> Any:
    return run(capability.processor(ctx, messages))  # type: ignore[call-arg, arg-type]


def test_the_session_is_the_runs_conversation_or_the_option() -> None:
    capability = SynopsisCapability()
    assert capability.session_for(context("conv-9")) == "conv-9"
    fallback = capability.session_for(context(None))
    assert fallback.startswith("pydantic-ai-")
    assert capability.session_for(context(None)) == fallback
    fixed = SynopsisCapability(session_id="mine")
    assert fixed.session_for(context("conv-9")) == "mine"

    class Deps:
        thread_id = "thread-7"

    by_deps = SynopsisCapability(session_id=lambda ctx: ctx.deps.thread_id)
    assert by_deps.session_for(context("conv-9", Deps())) == "thread-7"
    none_given = SynopsisCapability(session_id=lambda ctx: None)
    assert none_given.session_for(context("conv-9")) == "conv-9"


def test_conversations_are_kept_apart_and_bounded() -> None:
    capability = SynopsisCapability(context_window=3000, conversations=2)
    a, b, c = history(30), history(30), history(4)
    out_a = process(capability, context("a"), a)
    out_b = process(capability, context("b"), b)
    assert len(out_a) < len(a)
    assert len(out_b) < len(b)
    assert capability.compactor.recall("a")
    assert capability.compactor.recall("b")
    process(capability, context("c"), c)
    conversations = capability._engine.conversations
    assert list(conversations) == ["b", "c"]
    process(capability, context("b"), out_b)
    assert list(conversations) == ["c", "b"]


def test_the_clearing_strategy_makes_old_tool_returns_placeholders() -> None:
    """``strategy=("clear",)``, passed as any option: the oldest ``ToolReturnPart``s become
    placeholders in the run's own parts (tool, call id and timestamp kept), the newest three
    stay whole, nothing is summarized, every other message is the object given, and the
    placeholder's recall gives the original back."""
    capability = SynopsisCapability(context_window=5500, strategy=("clear",))
    given = history(10, size=150)
    out = process(capability, context("a"), given)
    assert len(out) == len(given)
    returns = [
        (o, g) for o, g in zip(out, given, strict=True) if isinstance(g.parts[0], pm.ToolReturnPart)
    ]
    placeholders = [(o, g) for o, g in returns if cleared(o.parts[0].content)]
    assert placeholders == returns[: len(placeholders)]  # the oldest
    assert 0 < len(placeholders) <= len(returns) - 3
    for message, original_message in placeholders:
        (part,), (original,) = message.parts, original_message.parts
        assert isinstance(part, pm.ToolReturnPart)
        assert isinstance(original, pm.ToolReturnPart)
        assert (part.tool_name, part.tool_call_id, part.timestamp) == (
            original.tool_name,
            original.tool_call_id,
            original.timestamp,
        )
        assert json.dumps(original.content) in recalled(capability.store, "a", part.content)
    made = {id(o) for o, _ in placeholders}
    assert all(o is g for o, g in zip(out, given, strict=True) if id(o) not in made)


def test_an_untouched_history_is_the_same_list() -> None:
    capability = SynopsisCapability()
    messages = history(3)
    assert process(capability, context(), messages) is messages
    result = capability.last_result
    assert result is not None
    assert not result.compacted


def test_kept_messages_are_the_runs_own_objects() -> None:
    capability = SynopsisCapability(context_window=3000)
    messages = history(30)
    out = process(capability, context(), messages)
    assert out[0] is messages[0]
    kept = out[2:]
    assert kept
    assert all(any(m is o for o in messages) for m in kept)
    summary = out[1]
    assert isinstance(summary, pm.ModelRequest)
    assert summary.parts[0].content.startswith("<synopsis-summary")  # type: ignore[union-attr]
    assert (summary.run_id, summary.conversation_id) == ("run-1", "conv-1")


def test_a_compaction_forgets_the_calls_it_summarized() -> None:
    capability = SynopsisCapability(context_window=3000)
    messages = history(30)
    out = process(capability, context(), messages)
    (conversation,) = capability._engine.conversations.values()
    kept = {id(m) for m in out}
    assert conversation.calls
    assert all(id(message) in kept for message, _ in conversation.calls.values())
    assert len(conversation.calls) < 30


def test_a_shortened_result_keeps_its_parts_metadata() -> None:
    """An old tool result repeated verbatim is replaced by a reference: the new return part
    is the original one (its timestamp, metadata) with the shorter content."""
    same = "identical output line\n" * 30
    messages: list[pm.ModelMessage] = [pm.ModelRequest(parts=[pm.UserPromptPart("go")])]
    for k in range(30):
        messages.append(pm.ModelResponse(parts=[pm.ToolCallPart("cat", {"f": "a"}, f"c{k}")]))
        messages.append(
            pm.ModelRequest(
                parts=[pm.ToolReturnPart("cat", same, f"c{k}", metadata={"k": k}, timestamp=WHEN)]
            )
        )
    capability = SynopsisCapability(
        context_window=200_000, trigger=0.02, reset_ratio=0.015, dedupe_keep_messages=4
    )
    out = process(capability, context(), messages)
    returns = [
        p
        for m in out
        if isinstance(m, pm.ModelRequest)
        for p in m.parts
        if isinstance(p, pm.ToolReturnPart)
    ]
    shortened = [p for p in returns if p.content != same]
    assert shortened
    assert all(p.timestamp == WHEN and p.metadata is not None for p in shortened)
    assert [p.metadata for p in returns] == [{"k": k} for k in range(30)]
    result = capability.last_result
    assert result is not None
    assert result.record is None  # reduced, not summarized


def test_a_request_the_framework_grew_after_the_hook_is_read_again() -> None:
    """pydantic-ai appends delta parts to the request it sends after the hooks ran, as a new
    parts list: that request is converted again on the next call."""
    capability = SynopsisCapability(context_window=200_000)
    messages = history(2)
    process(capability, context(), messages)
    tail = messages[-1]
    tail.parts = [*tail.parts, pm.UserPromptPart("x " * 3000)]
    process(capability, context(), messages)
    result = capability.last_result
    assert result is not None
    assert result.tokens_before > 3000


def test_the_per_request_form_leaves_the_runs_history_alone() -> None:
    capability = SynopsisRequestCapability(context_window=3000)
    messages = history(30)
    ctx = context()
    ctx.messages = list(messages)

    class Request:
        def __init__(self) -> None:
            self.messages = list(messages)
            self.model_request_parameters = type("P", (), {"instruction_parts": None})()

    request = Request()
    run(capability.before_model_request(ctx, request))  # type: ignore[arg-type]
    assert len(request.messages) < len(messages)
    assert ctx.messages == messages


# -- the extra ------------------------------------------------------------------------------


def test_without_pydantic_ai_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "synopsis.adapters.pydantic_ai")
    with pytest.raises(ImportError, match=r'pip install "synopsis\[pydantic-ai\]"'):
        importlib.import_module("synopsis.adapters.pydantic_ai")


def test_importing_synopsis_does_not_import_pydantic_ai() -> None:
    code = (
        "import sys, synopsis, synopsis.adapters; "
        "assert 'pydantic_ai' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_shortened_message_is_its_original_with_the_changed_parts() -> None:
    """Built from the original message (usage, model name, each untouched part as it was);
    a changed part of a kind the reductions never change is made anew."""
    conversation = _Conversation()
    response = pm.ModelResponse(
        parts=[pm.TextPart("long " * 50), pm.ToolCallPart("write_file", {"text": "x" * 900}, "c1")],
        model_name="claude-sonnet-4-5",
        usage=RequestUsage(input_tokens=7),
    )
    request = pm.ModelRequest(
        parts=[pm.ToolReturnPart("write_file", "ok " * 300, "c1"), pm.UserPromptPart("note")]
    )
    old_response = conversation._convert(response)
    old_request = conversation._convert(request)
    new_response = Message(
        Role.ASSISTANT,
        (TextPart("short"), ToolCallPart("c1", "write_file", '{"text":"x…"}')),
    )
    made = conversation._make(new_response)
    assert isinstance(made, pm.ModelResponse)
    assert (made.model_name, made.usage.input_tokens) == ("claude-sonnet-4-5", 7)
    text, call = made.parts
    assert isinstance(text, pm.TextPart)
    assert text.content == "short"
    assert isinstance(call, pm.ToolCallPart)
    assert call.args == '{"text":"x…"}'
    new_request = Message(
        Role.USER, (ToolResultPart("c1", "ok…", name="write_file"), TextPart("n"))
    )
    made_request = conversation._make(new_request)
    assert isinstance(made_request, pm.ModelRequest)
    returned, note = made_request.parts
    assert isinstance(returned, pm.ToolReturnPart)
    assert returned.content == "ok…"
    assert returned.timestamp == request.parts[0].timestamp  # type: ignore[union-attr]
    assert isinstance(note, pm.UserPromptPart)
    assert note.content == "n"
    unchanged = conversation._make(Message(Role.USER, old_request.parts))
    assert unchanged.parts == request.parts
    assert old_response.parts[1] == ToolCallPart("c1", "write_file", '{"text":"' + "x" * 900 + '"}')


def test_a_shortened_message_that_no_longer_lines_up_is_made_anew() -> None:
    conversation = _Conversation()
    conversation.stamp = ("run-2", "conv-2")
    conversation._convert(pm.ModelRequest(parts=[pm.ToolReturnPart("a", "x", "c1")]))
    made = conversation._make(Message(Role.USER, (ToolResultPart("c1", "y"), TextPart("more"))))
    assert isinstance(made, pm.ModelRequest)
    assert [p.part_kind for p in made.parts] == ["tool-return", "user-prompt"]
    assert (made.run_id, made.conversation_id) == ("run-2", "conv-2")
    unknown = conversation._make(Message(Role.ASSISTANT, (ToolCallPart("c9", "b", "{}"),)))
    assert isinstance(unknown, pm.ModelResponse)


def test_a_piece_of_a_merged_request_is_that_request_cut() -> None:
    """The task and the summary pydantic-ai merged into one request come back apart: the
    task as the merged request (its instructions, timestamps) holding the task's parts."""
    conversation = _Conversation()
    summary = '<synopsis-summary depth="0">earlier</synopsis-summary>'
    several = pm.ModelRequest(parts=[pm.UserPromptPart(["a", "b"]), pm.UserPromptPart(summary)])
    merged = pm.ModelRequest(
        parts=[pm.UserPromptPart("the task"), pm.UserPromptPart(summary)], instructions="be kind"
    )
    conversation.items([several, merged])
    piece = conversation._make(Message(Role.USER, (TextPart("the task"),)))
    assert isinstance(piece, pm.ModelRequest)
    assert piece.parts == [merged.parts[0]]
    assert piece.parts[0] is merged.parts[0]
    assert piece.instructions == "be kind"
    # A prompt of several items is several synopsis parts: not cut, made anew.
    made = conversation._make(Message(Role.USER, (TextPart("a"), TextPart("b"))))
    assert made.parts[0] is not several.parts[0]
    assert conversation.items([]) == []
