"""Cache-aligned requests through the real SDKs: the conversation goes first, unchanged, in the
provider's own format (as :func:`synopsis.formats.encode` gives it), with the agent's tools, so
that every request that summarizes it starts with the same bytes as the agent's own."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from synopsis.formats import decode, encode
from synopsis.messages import Message, Role, TextPart, ToolCallPart, ToolResultPart
from synopsis.summarizers.llm.completion import CompletionRequest
from tests.summarizers.llm.test_clients import FLAVOURS, MODES, ask
from tests.summarizers.llm.test_streaming import streamed

if TYPE_CHECKING:
    from synopsis.formats import FormatName
    from synopsis.testing.server import FakeLLMServer, Recorded
    from tests.summarizers.llm.test_clients import Flavour

CHAT, RESPONSES, ANTHROPIC = FLAVOURS
AGENT_SYSTEM = "You are a coding agent working in a Python repository."
SUMMARIZE = "Summarize the conversation above for a handover."

PARAMETERS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOLS: dict[str, list[dict[str, Any]]] = {
    "chat": [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": PARAMETERS,
            },
        }
    ],
    "responses": [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file",
            "parameters": PARAMETERS,
            "strict": False,
        }
    ],
    "anthropic": [
        {
            "name": "read_file",
            "description": "Read a file",
            "input_schema": PARAMETERS,
            "cache_control": {"type": "ephemeral"},
        }
    ],
}
FORMAT: dict[str, FormatName] = {
    "chat": "openai",
    "responses": "responses",
    "anthropic": "anthropic",
}
LIST_KEY = {"chat": "messages", "responses": "input", "anthropic": "messages"}


def conversation() -> list[Message]:
    """A system prompt, a request, two tool exchanges (one failing) and an answer."""
    return [
        Message(Role.SYSTEM, (TextPart(AGENT_SYSTEM),)),
        Message(Role.USER, (TextPart("Fix the failing test for parse_config in src/app/core.py"),)),
        Message(
            Role.ASSISTANT,
            (
                TextPart("Reading the module first."),
                ToolCallPart("call_1", "read_file", '{"path": "src/app/core.py"}'),
            ),
        ),
        Message(Role.TOOL, (ToolResultPart("call_1", "def parse_config(text):\n    ..."),)),
        Message(Role.ASSISTANT, (ToolCallPart("call_2", "read_file", {"path": "tests/t.py"}),)),
        Message(Role.TOOL, (ToolResultPart("call_2", "no such file", is_error=True),)),
        Message(Role.ASSISTANT, (TextPart("parse_config needs a guard for empty input."),)),
    ]


def aligned(
    flavour: Flavour, instruction: str = SUMMARIZE, *, system: str = "", **fields: Any
) -> CompletionRequest:
    return CompletionRequest(
        model=flavour.model,
        system=system,
        messages=[{"role": "user", "content": instruction}],
        conversation=fields.pop("conversation", conversation()),
        tools=TOOLS[flavour.name],
        **fields,
    )


def encoded(flavour: Flavour, messages: list[Message]) -> tuple[list[Any], Any]:
    """What :func:`encode` gives for ``messages``, as JSON (the form the server records)."""
    wire = encode(messages, FORMAT[flavour.name])
    plain: tuple[list[Any], Any] = json.loads(json.dumps([wire.messages, wire.system]))
    return plain


def split(flavour: Flavour, recorded: Recorded) -> tuple[dict[str, Any], dict[str, Any]]:
    """A request body as its prefix (everything but the last message) and that last message."""
    body = dict(recorded.body)
    items = list(body.pop(LIST_KEY[flavour.name]))
    return body | {"prefix": items[:-1]}, items[-1]


flavours = pytest.mark.parametrize("flavour", FLAVOURS, ids=[f.name for f in FLAVOURS])
modes = pytest.mark.parametrize("mode", MODES)


@flavours
@modes
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_conversation_goes_first_unchanged_with_the_tools(llm_server, flavour, mode, stream):
    llm_server.add(flavour.answer("summary"))
    answer = ask(streamed(flavour) if stream else flavour, mode, llm_server, aligned(flavour))
    assert answer.text == "summary"
    items, system = encoded(flavour, conversation())
    body, last = split(flavour, llm_server.requests[0])
    assert body["prefix"] == items
    assert last == {"role": "user", "content": SUMMARIZE}
    assert body["tools"] == TOOLS[flavour.name]
    for absent in ("tool_choice", "response_format", "text", "instructions"):
        assert absent not in body
    if flavour is ANTHROPIC:
        # the encoding lifts the system prompt out of the list, into ``system``
        assert system == AGENT_SYSTEM
        assert body["system"] == AGENT_SYSTEM
    else:
        assert system is None
        assert "system" not in body
        assert items[0] == {"role": "system", "content": AGENT_SYSTEM}


@flavours
@modes
def test_two_summaries_of_one_conversation_share_the_prefix(llm_server, flavour, mode):
    llm_server.add(flavour.answer("first"))
    llm_server.add(flavour.answer("second"))
    ask(flavour, mode, llm_server, aligned(flavour, SUMMARIZE))
    ask(flavour, mode, llm_server, aligned(flavour, "Now list the open tasks only."))
    (first, first_last), (second, second_last) = (split(flavour, r) for r in llm_server.requests)
    assert json.dumps(first) == json.dumps(second)  # same keys, same order, same values
    assert first_last != second_last
    assert second_last == {"role": "user", "content": "Now list the open tasks only."}


def _chat_history() -> tuple[list[dict[str, Any]], Any]:
    call = {"name": "read_file", "arguments": '{"path": "src/app/core.py"}'}
    return [
        {"role": "system", "content": AGENT_SYSTEM},
        {"role": "user", "content": "Fix the failing test in src/app/core.py"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "def parse_config(text): ..."},
        {"role": "assistant", "content": "parse_config needs a guard."},
    ], None


def _responses_history() -> tuple[list[dict[str, Any]], Any]:
    return [
        {"role": "developer", "content": AGENT_SYSTEM},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Fix the failing test"}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read_file",
            "arguments": '{"path": "src/app/core.py"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "def parse_config(text)"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "parse_config needs a guard."}],
        },
    ], None


def _anthropic_history() -> tuple[list[dict[str, Any]], Any]:
    system = [{"type": "text", "text": AGENT_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    use = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}
    return [
        {"role": "user", "content": "Fix the failing test"},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading it."}, use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "..."}],
        },
        {"role": "assistant", "content": "parse_config needs a guard."},
    ], system


HISTORIES = {
    "chat": _chat_history,
    "responses": _responses_history,
    "anthropic": _anthropic_history,
}


@flavours
@modes
def test_an_agents_own_history_goes_back_as_the_agent_sent_it(llm_server, flavour, mode):
    items, system = HISTORIES[flavour.name]()
    decoded = decode(items, FORMAT[flavour.name], system=system).messages
    llm_server.add(flavour.answer("summary"))
    ask(flavour, mode, llm_server, aligned(flavour, conversation=decoded))
    body, _ = split(flavour, llm_server.requests[0])
    assert body["prefix"] == items
    assert body.get("system") == system


@flavours
def test_a_system_prompt_of_the_request_goes_before_the_conversation(llm_server, flavour):
    llm_server.add(flavour.answer("summary"))
    ask(flavour, "sync", llm_server, aligned(flavour, system="Be brief."))
    items, _ = encoded(flavour, conversation())
    body, _ = split(flavour, llm_server.requests[0])
    if flavour is CHAT:
        assert body["prefix"] == [{"role": "system", "content": "Be brief."}, *items]
    elif flavour is RESPONSES:
        assert body["instructions"] == "Be brief."
        assert body["prefix"] == items
    else:
        own, agents = ({"type": "text", "text": t} for t in ("Be brief.", AGENT_SYSTEM))
        assert body["system"] == [own, agents]
        assert body["prefix"] == items


def test_a_system_prompt_goes_before_anthropic_system_blocks(llm_server):
    items, system = _anthropic_history()
    decoded = decode(items, "anthropic", system=system).messages
    llm_server.add(ANTHROPIC.answer("summary"))
    request = aligned(ANTHROPIC, system="Be brief.", conversation=decoded)
    ask(ANTHROPIC, "async", llm_server, request)
    assert llm_server.requests[0].body["system"] == [{"type": "text", "text": "Be brief."}, *system]


@flavours
def test_an_empty_system_prompt_adds_nothing(llm_server, flavour):
    llm_server.add(flavour.answer("summary"))
    ask(flavour, "sync", llm_server, aligned(flavour, conversation=()))
    body = llm_server.requests[0].body
    assert body[LIST_KEY[flavour.name]] == [{"role": "user", "content": SUMMARIZE}]
    assert "system" not in body
    assert "instructions" not in body


def test_tools_go_as_given_even_without_a_conversation(llm_server: FakeLLMServer):
    llm_server.add(CHAT.answer("summary"))
    ask(CHAT, "sync", llm_server, aligned(CHAT, system="Be brief.", conversation=()))
    body = llm_server.requests[0].body
    assert body["tools"] == TOOLS["chat"]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
