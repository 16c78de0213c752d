"""The providers' own items through the proxy: a Responses and an Anthropic request holding
them (compaction, custom, local shell and computer calls, MCP items, web searches, encrypted
reasoning; a compaction block, server tool and MCP uses with their results) reach the upstream
as the client sent them: the very bytes below the trigger, and above it each of them the same
JSON (keys in their order), with the compaction and all before it where they were, and the
request valid for the provider."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from synopsis.messages import SUMMARY_TAG
from synopsis.testing import ScriptedSummarizer
from synopsis.validation import validate
from tests.formats.provider_items import special

if TYPE_CHECKING:
    from synopsis.testing.server import FakeLLMServer
    from tests.proxy.conftest import ServeProxy

LOG = "\n".join(f"src/module_{n}.py:{n}: checked {n * 7} lines" for n in range(120))


def _responses_input() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing tests."}]
    for n in range(6):
        items += [
            {"arguments": '{"cmd": "pytest"}', "call_id": f"c{n}", "name": "bash"}
            | {"type": "function_call", "id": f"fc_{n}", "status": "completed"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": f"run {n}\n{LOG}"},
            {"role": "assistant", "content": f"Run {n} done."},
            {"role": "user", "content": f"Go on with step {n}."},
        ]
        if n == 1:
            items.append({"id": "cmp_1", "encrypted_content": "gAAA" * 40, "type": "compaction"})
    items[-1:-1] = [
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "p1", "name": "apply_patch"}
        | {"input": "*** Begin Patch\n*** End Patch", "status": "completed"},
        {"output": "Done!", "call_id": "p1", "type": "custom_tool_call_output"},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "s1", "status": "completed"}
        | {"action": {"type": "exec", "command": ["ls"], "env": {}}},
        {"type": "local_shell_call_output", "id": "s1", "output": '{"stdout": "a.py"}'},
        {"type": "computer_call", "id": "cu_1", "call_id": "u1", "pending_safety_checks": []}
        | {"action": {"type": "screenshot"}, "status": "completed"},
        {"type": "computer_call_output", "call_id": "u1"}
        | {"output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"}},
        {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "git", "tools": []},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "git", "name": "log"}
        | {"arguments": "{}", "output": "3 commits", "error": None, "status": "completed"},
        {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "git"}
        | {"name": "push", "arguments": "{}"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"}
        | {"action": {"type": "search", "query": "pytest"}},
        {"id": "rs_1", "summary": [], "type": "reasoning", "encrypted_content": "gAAAenc" * 9},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
        | {"content": [{"type": "output_text", "text": "Patched.", "annotations": []}]},
    ]
    return items


def _anthropic_messages() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing tests."}]
    for n in range(6):
        use = {"type": "tool_use", "id": f"toolu_{n}", "name": "bash", "input": {"cmd": "pytest"}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": LOG}
        messages += [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
            {"role": "assistant", "content": f"Run {n} done."},
            {"role": "user", "content": f"Go on with step {n}."},
        ]
    compaction = {
        "content": "Summary: runs 0 and 1 failed.",
        "signature": "EuYB",
        "type": "compaction",
    }
    messages[7]["content"] = [compaction, {"type": "text", "text": "Run 1 done."}]
    messages[11]["content"] = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}},
        {"content": [], "tool_use_id": "srvtoolu_1", "type": "web_search_tool_result"},
        {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_fetch", "input": {}},
        {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_2", "content": {}},
        {"type": "text", "text": "Run 2 done."},
    ]
    messages[-2]["content"] = [
        {"type": "server_tool_use", "id": "srvtoolu_3", "name": "code_execution", "input": {}},
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_3", "content": {}},
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "read", "server_name": "fs"}
        | {"input": {}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": "body"},
        {"type": "text", "text": "Run 5 done."},
    ]
    return messages


ROUTES = {
    "responses": ("/v1/responses", "input", {"model": "gpt-4o", "store": False}),
    "anthropic": ("/v1/messages", "messages", {"model": "claude-sonnet-4-5", "max_tokens": 512}),
}


def _specials(items: list[Any]) -> list[str]:
    found = [b for i in items for b in [i, *(i.get("content") or [])] if isinstance(b, dict)]
    return [json.dumps(b) for b in found if special(b)]


@pytest.mark.parametrize("fmt", ["responses", "anthropic"])
def test_the_providers_items_reach_the_upstream_as_sent(
    upstream: FakeLLMServer, proxy: ServeProxy, fmt: str
) -> None:
    path, key, head = ROUTES[fmt]
    items = _responses_input() if fmt == "responses" else _anthropic_messages()
    raw = json.dumps({**head, key: items}).encode()
    assert validate(items, fmt, format=fmt) == []  # type: ignore[arg-type]

    below = proxy(context_window=200_000)
    with httpx2.Client(base_url=below.url) as client:
        answer = client.post(path, content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 200
    assert answer.headers["x-synopsis-compacted"] == "false"
    assert upstream.requests[-1].raw == raw

    above = proxy(context_window=6_000, summarizer=ScriptedSummarizer(default="Earlier runs."))
    with httpx2.Client(base_url=above.url) as client:
        answer = client.post(path, content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 200
    assert answer.headers["x-synopsis-compacted"] == "true"
    sent: list[Any] = json.loads(upstream.requests[-1].raw)[key]
    assert len(sent) < len(items)
    assert validate(sent, fmt, format=fmt) == []  # type: ignore[arg-type]
    # each of the providers' items sent on is the same JSON, keys in their order
    assert set(_specials(sent)) <= set(_specials(items))
    assert set(_specials(items)) - set(_specials(sent))  # some were summarized, not all
    # the compaction and every item before it are where they were (the cheap reductions may
    # still have made an old tool output smaller), and the summary comes after it
    end = next(i for i, item in enumerate(items) if '"compaction"' in json.dumps(item)) + 1
    assert json.dumps(sent[end - 1]) == json.dumps(items[end - 1])
    assert [_shape(item) for item in sent[:end]] == [_shape(item) for item in items[:end]]
    assert SUMMARY_TAG not in json.dumps(sent[:end])
    assert SUMMARY_TAG in json.dumps(sent[end:])


def _shape(item: dict[str, Any]) -> tuple[Any, ...]:
    return item.get("type"), item.get("role"), item.get("call_id"), item.get("id")
