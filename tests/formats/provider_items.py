"""Valid histories in the Responses and Anthropic wire formats that hold the providers' own
items beside ordinary tool calls: Responses ``compaction`` items, custom (``apply_patch``),
local shell and computer calls with their outputs, MCP items, web searches and encrypted
reasoning; Anthropic ``compaction`` blocks and server tool and MCP uses with their results.

An episode is what one model turn would add, valid where it is put: Responses items go in
before a person's message, Anthropic blocks open an assistant answer (a compaction block
first, as the API writes it). Every one of them carries ids of its own (``k``, its place),
and its keys are in any order (SDKs write them each their own way).

    with_responses_items(items)    -> the items with episodes put in
    with_anthropic_items(messages) -> the messages with episodes put in
    special(value)                 -> whether an item or block is one of these
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

Json = Any
Draw = st.DrawFn

SPECIAL_ITEMS = frozenset(
    {
        "compaction",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "computer_call",
        "computer_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "web_search_call",
        "reasoning",
    }
)
SPECIAL_BLOCKS = frozenset(
    {
        "compaction",
        "server_tool_use",
        "mcp_tool_use",
        "mcp_tool_result",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
    }
)
WORDS = st.text(alphabet="abcdefgh xyz.", min_size=1, max_size=40).filter(lambda s: s.strip())
PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-old\n+new\n*** End Patch"


def special(value: Json) -> bool:
    """Whether ``value`` (an item or a block) is one of the providers' own."""
    return isinstance(value, dict) and value.get("type") in SPECIAL_ITEMS | SPECIAL_BLOCKS


@st.composite
def shuffled(draw: Draw, value: dict[str, Json]) -> dict[str, Json]:
    """``value`` with its keys in the order drawn."""
    return {k: value[k] for k in draw(st.permutations(list(value)))}


@st.composite
def responses_episode(draw: Draw, k: int) -> list[dict[str, Json]]:
    call = f"call_p{k}"
    kind = draw(
        st.sampled_from(
            ["compaction", "custom", "shell", "computer", "mcp", "approval", "search", "reason"]
        )
    )
    text = draw(WORDS)
    items: list[dict[str, Json]]
    if kind == "compaction":
        items = [{"type": "compaction", "id": f"cmp_{k}", "encrypted_content": f"gAAA{k}" * 8}]
    elif kind == "custom":
        items = [
            {"type": "custom_tool_call", "id": f"ctc_{k}", "call_id": call}
            | {"name": "apply_patch", "input": PATCH, "status": "completed"},
            {"type": "custom_tool_call_output", "call_id": call, "output": f"Done! {text}"},
        ]
    elif kind == "shell":
        action = {"type": "exec", "command": ["ls", "-la"], "env": {}, "timeout_ms": 1000}
        items = [
            {"type": "local_shell_call", "id": f"lsh_{k}", "call_id": call, "action": action}
            | {"status": "completed"},
            {"type": "local_shell_call_output", "id": call, "output": json.dumps({"out": text})},
        ]
    elif kind == "computer":
        shot = {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="}
        items = [
            {"type": "computer_call", "id": f"cu_{k}", "call_id": call}
            | {"action": {"type": "click", "x": 1, "y": 2}, "pending_safety_checks": []}
            | {"status": "completed"},
            {"type": "computer_call_output", "call_id": call, "output": shot},
        ]
    elif kind == "mcp":
        items = [
            {"type": "mcp_list_tools", "id": f"mcpl_{k}", "server_label": "git", "tools": []},
            {"type": "mcp_call", "id": f"mcp_{k}", "server_label": "git", "name": "log"}
            | {"arguments": "{}", "output": text, "error": None, "status": "completed"},
        ]
    elif kind == "approval":
        items = [
            {"type": "mcp_approval_request", "id": f"mcpr_{k}", "server_label": "git"}
            | {"name": "push", "arguments": "{}"},
            {"type": "mcp_approval_response", "approval_request_id": f"mcpr_{k}", "approve": True},
        ]
    elif kind == "search":
        items = [
            {"type": "web_search_call", "id": f"ws_{k}", "status": "completed"}
            | {"action": {"type": "search", "query": text}},
        ]
    else:
        answer = [{"type": "output_text", "text": text, "annotations": []}]
        items = [
            {"type": "reasoning", "id": f"rs_{k}", "summary": []}
            | {"encrypted_content": f"gAAAenc{k}" * 8},
            {"type": "message", "id": f"msg_{k}", "role": "assistant", "content": answer}
            | {"status": "completed"},
        ]
    return [draw(shuffled(item)) for item in items]


def _opens_turn(item: Json) -> bool:
    return isinstance(item, dict) and item.get("role") == "user" and "type" not in item


@st.composite
def with_responses_items(draw: Draw, items: list[dict[str, Json]]) -> list[dict[str, Json]]:
    """``items`` with one to four episodes, each put in before a person's message."""
    places = [i for i, item in enumerate(items) if i and _opens_turn(item)]
    if not places:
        return items
    chosen = draw(st.lists(st.sampled_from(places), min_size=1, max_size=4))
    out: list[dict[str, Json]] = []
    for i, item in enumerate(items):
        for _ in range(chosen.count(i)):
            out.extend(draw(responses_episode(len(out))))
        out.append(item)
    return out


@st.composite
def anthropic_episode(draw: Draw, k: int) -> list[dict[str, Json]]:
    use = f"srvtoolu_{k}"
    kind = draw(st.sampled_from(["compaction", "search", "fetch", "code", "mcp"]))
    text = draw(WORDS)
    pair: list[dict[str, Json]]
    if kind == "compaction":
        block: dict[str, Json] = {"type": "compaction", "content": f"Summary so far: {text}"}
        if draw(st.booleans()):
            block |= {"signature": f"EuYB{k}", "encrypted_content": None}
        return [draw(shuffled(block))]
    if kind == "mcp":
        pair = [
            {"type": "mcp_tool_use", "id": f"mcptoolu_{k}", "name": "read"}
            | {"server_name": "files", "input": {"path": "src/app.py"}},
            {"type": "mcp_tool_result", "tool_use_id": f"mcptoolu_{k}", "is_error": False}
            | {"content": [{"type": "text", "text": text}]},
        ]
    else:
        found: dict[str, tuple[str, str, Json]] = {
            "search": (
                "web_search",
                "web_search_tool_result",
                [{"type": "web_search_result", "url": "https://x.test", "title": text}],
            ),
            "fetch": (
                "web_fetch",
                "web_fetch_tool_result",
                {"type": "web_fetch_result", "url": "https://x.test", "content": {}},
            ),
            "code": (
                "code_execution",
                "code_execution_tool_result",
                {"type": "code_execution_result", "stdout": text, "stderr": "", "return_code": 0},
            ),
        }
        name, result, content = found[kind]
        pair = [
            {"type": "server_tool_use", "id": use, "name": name, "input": {"query": text}},
            {"type": result, "tool_use_id": use, "content": content},
        ]
    return [draw(shuffled(block)) for block in pair]


def _answer(message: Json) -> bool:
    """An assistant message of text alone: a turn's answer, where episodes go."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return False
    content: Json = message.get("content")
    return isinstance(content, str) or all(b.get("type") == "text" for b in content)


@st.composite
def with_anthropic_items(draw: Draw, messages: list[dict[str, Json]]) -> list[dict[str, Json]]:
    """``messages`` with one to four answers opened by episodes (a compaction block first)."""
    places = [i for i, m in enumerate(messages) if _answer(m)]
    if not places:
        return messages
    out = list(messages)
    for i in sorted(set(draw(st.lists(st.sampled_from(places), min_size=1, max_size=4)))):
        content = out[i]["content"]
        said = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = draw(anthropic_episode(i))
        blocks.sort(key=lambda b: b["type"] != "compaction")
        out[i] = {**out[i], "content": [*blocks, *said]}
    return out
