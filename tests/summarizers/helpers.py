"""Builders for summarizer tests: messages in the model, tool exchanges, the budget check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synopsis.formats import decode
from synopsis.messages import Message, Role, TextPart, ToolCallPart, ToolResultPart
from synopsis.summarizers import render
from synopsis.tokens import counter_for_model

if TYPE_CHECKING:
    from synopsis.summarizers import SummaryRecord

TRANSCRIPTS = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "transcripts").glob("*.jsonl")
)


def user(text: str) -> Message:
    return Message(Role.USER, (TextPart(text),))


def say(text: str) -> Message:
    return Message(Role.ASSISTANT, (TextPart(text),))


def call(call_id: str, name: str, args: dict[str, Any] | str, *, text: str = "") -> Message:
    arguments = args if isinstance(args, str) else json.dumps(args)
    parts: list[TextPart | ToolCallPart] = [TextPart(text)] if text else []
    parts.append(ToolCallPart(call_id, name, arguments))
    return Message(Role.ASSISTANT, tuple(parts))


def result(call_id: str, content: str, *, is_error: bool = False) -> Message:
    return Message(Role.TOOL, (ToolResultPart(call_id, content, is_error=is_error),))


def exchange(
    call_id: str, name: str, args: dict[str, Any] | str, output: str, *, is_error: bool = False
) -> list[Message]:
    return [call(call_id, name, args), result(call_id, output, is_error=is_error)]


def rendered_tokens(record: SummaryRecord, model: str | None = None) -> int:
    counter = counter_for_model(model)
    return max(counter.count_text(render(record, style=s)) for s in ("sections", "snapshot"))


def load(path: Path) -> tuple[Message, ...]:
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return decode(items, "openai").messages


def coding_session() -> list[Message]:
    """A short agent session touching every default extractor."""
    return [
        Message(Role.SYSTEM, (TextPart("You are a coding agent."),)),
        user("Add a `retry` option to FlexibleTokenizer in src/tok/core.py; keep Python 3.11."),
        *exchange(
            "c1",
            "read_file",
            {"path": "src/tok/core.py"},
            "class FlexibleTokenizer:\n    pass\n\ndef tokenize(text):\n    return text.split()\n",
        ),
        *exchange(
            "c2",
            "grep",
            {"pattern": "retry", "path": "src"},
            "src/tok/net.py:12:    retry = 3\nsrc/tok/net.py:40:    if retry:\n",
        ),
        say("I'll use exponential backoff instead of a fixed delay."),
        *exchange(
            "c3",
            "bash",
            {"command": "pytest -q tests/test_core.py"},
            "F.\nE   AssertionError: expected 3 retries\n1 failed, 1 passed\nexit code: 1",
        ),
        *exchange(
            "c4",
            "edit_file",
            {"path": "src/tok/core.py", "old_string": "pass", "new_string": "retry = 3\nx = 1"},
            "File edited.",
        ),
        *exchange("c5", "bash", {"command": "pytest -q tests/test_core.py"}, "..\nexit code: 0"),
        *exchange(
            "c6",
            "web_fetch",
            {"url": "https://docs.python.org/3/library/asyncio.html"},
            "HTTP/1.1 200 OK\n<title>asyncio — Asynchronous I/O</title>",
        ),
        user("Great. Now document it in README.md."),
        say("Next, I will update README.md with the retry option.\n- [ ] document retry"),
    ]


def history() -> list[Message]:
    """A short session an LLM summary is asked for in the LLM and client tests."""
    return [
        user("Fix the failing test in src/app/core.py please; parse_config breaks on empty files."),
        call("call_1", "read_file", {"path": "src/app/core.py"}),
        result("call_1", "def parse_config(text):\n" + "    value = compute(text)\n" * 300),
        say("parse_config in src/app/core.py needs a guard.\nTODO: add a guard for empty input"),
    ]


GOOD: dict[str, Any] = {
    "narrative": "Fixing parse_config in src/app/core.py for empty files.",
    "key_points": ["Read src/app/core.py (call_1)"],
    "sections": {
        "primary_request": ["Fix the failing test in src/app/core.py please"],
        "pending_tasks": ["add a guard for empty input"],
        "next_step": "Add the guard",
    },
    "facets": {
        "decisions": ["Guard empty input"],
        "action_items": [{"owner": "assistant", "task": "add a guard for empty input"}],
        "entities": {"files": ["src/app/core.py"], "symbols": ["parse_config"]},
    },
}
