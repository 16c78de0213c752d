"""Anthropic histories for the context-management tests: tool uses with long outputs, and
thinking turns."""

from __future__ import annotations

from typing import Any

from synopsis.validation import validate

BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"
OTHER_BETA = "files-api-2025-04-14"
MODEL = "claude-sonnet-4-6"
SYSTEM = "You are a careful agent."
TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": f"{name} a thing", "input_schema": {"type": "object"}}
    for name in ("bash", "grep")
]


def output(i: int) -> str:
    return "\n".join(f"src/module_{i}/file_{j}.py: line {j} of the listing" for j in range(60))


def tool_history(
    uses: int, *, thinking: bool = False, names: tuple[str, ...] = ("bash",)
) -> list[Any]:
    """A task, then ``uses`` tool uses (each its own assistant turn, tools taken from
    ``names`` in turn) with long outputs, ending on the last result: an agent mid-loop."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "List every module, then sum up."}]
    for i in range(uses):
        name = names[i % len(names)]
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": f"step {i}", "signature": f"sig{i}"})
        blocks.append(
            {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {"cmd": f"ls {i}"}}
        )
        out.append({"role": "assistant", "content": blocks})
        # One output in three as a list of text blocks, as clients send them too.
        text: Any = output(i) if i % 3 else [{"type": "text", "text": output(i)}]
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": text}
        out.append({"role": "user", "content": [result]})
    return out


def thinking_history(turns: int) -> list[Any]:
    """``turns`` finished question-and-answer turns, each answer with its thinking, then a
    tool loop under way (its thinking too)."""
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Question {i}?"})
        thought = {"type": "thinking", "thinking": f"pondering {i} " * 40, "signature": f"s{i}"}
        out.append({"role": "assistant", "content": [thought, {"type": "text", "text": "Yes."}]})
    out.append({"role": "user", "content": "Now look it up."})
    thought = {"type": "thinking", "thinking": "I will search.", "signature": "last"}
    call = {"type": "tool_use", "id": "toolu_x", "name": "grep", "input": {"q": "x"}}
    out.append({"role": "assistant", "content": [thought, call]})
    result = {"type": "tool_result", "tool_use_id": "toolu_x", "content": "found x"}
    out.append({"role": "user", "content": [result]})
    return out


def assert_valid(body: dict[str, Any]) -> None:
    """The body as the upstream got it: none of the fields the proxy consumes, and a history
    Anthropic's rules accept."""
    assert "context_management" not in body
    problems = validate(
        body["messages"], "anthropic", format="anthropic", system=body.get("system")
    )
    assert problems == []


def blocks_of(item: dict[str, Any]) -> list[Any]:
    content = item["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def result_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [
        _text(b["content"])
        for m in messages
        if m["role"] == "user"
        for b in blocks_of(m)
        if b["type"] == "tool_result"
    ]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b["text"] for b in content)
