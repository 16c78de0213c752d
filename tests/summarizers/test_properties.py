"""Any history, however broken, gives a record that covers it and fits its budget."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from synopsis.messages import (
    MediaPart,
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    content_hash,
    message_id,
)
from synopsis.summarizers import RuleBasedSummarizer, render
from tests.strategies import any_history, valid_history
from tests.summarizers.helpers import rendered_tokens

TOOL_NAMES = st.sampled_from(
    ["read_file", "Read", "bash", "exec_command", "grep", "Glob", "write_file", "apply_patch",
     "str_replace_editor", "web_fetch", "update_plan", "mcp__x__read_file", "weird tool", ""]
)  # fmt: skip
KEYS = st.sampled_from(
    ["path", "file_path", "command", "cmd", "pattern", "url", "content", "old_string",
     "new_string", "input", "plan", "todos", "x"]
)  # fmt: skip
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
ARGUMENTS = st.one_of(
    st.dictionaries(KEYS, JSON_VALUES, max_size=4).map(json.dumps),
    st.dictionaries(KEYS, JSON_VALUES, max_size=4),
    st.text(max_size=60),
)
OUTPUT = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        ["Process exited with code 1\nerror: boom", "exit code: 0", "ERROR:\n", "a.py:3:x\n",
         "<title>t</title> HTTP/1.1 404", "Traceback (most recent call last):"]
    ),
)  # fmt: skip
BUDGETS = st.integers(min_value=150, max_value=2_000)


@st.composite
def tool_history(draw: st.DrawFn) -> list[Message]:
    """Tool calls with any name, any arguments (JSON text, mapping, garbage) and any output,
    some unanswered, some results answering nothing; user text with media and summaries."""
    out: list[Message] = []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "say", "tool", "orphan", "media", "reasoning"]))
        if kind == "user":
            out.append(Message(Role.USER, (TextPart(draw(st.text(max_size=300))),)))
        elif kind == "say":
            out.append(Message(Role.ASSISTANT, (TextPart(draw(st.text(max_size=300))),)))
        elif kind == "tool":
            call = ToolCallPart(f"c{i}", draw(TOOL_NAMES), draw(ARGUMENTS))
            out.append(Message(Role.ASSISTANT, (call,)))
            if draw(st.booleans()):
                res = ToolResultPart(f"c{i}", draw(OUTPUT), is_error=draw(st.booleans()))
                out.append(Message(Role.TOOL, (res,)))
        elif kind == "orphan":
            res = ToolResultPart("nowhere", draw(OUTPUT), name=draw(st.none() | TOOL_NAMES))
            out.append(Message(draw(st.sampled_from([Role.TOOL, Role.USER])), (res,)))
        elif kind == "media":
            out.append(Message(Role.USER, (MediaPart("image", "image/png"),)))
        else:
            out.append(Message(Role.ASSISTANT, (ReasoningPart(draw(st.text(max_size=50))),)))
    return out


HISTORIES = st.one_of(any_history(), any_history("user"), valid_history(), tool_history())


def check(summarizer: RuleBasedSummarizer, history: list[Message], budget: int) -> None:
    record = summarizer.summarize(history)
    assert rendered_tokens(record) <= budget
    assert [(c.id, c.sha256) for c in record.covers] == [
        (message_id(m, i), content_hash(m)) for i, m in enumerate(history)
    ]
    assert render(record).startswith("<synopsis-summary")


@given(HISTORIES, BUDGETS)
def test_any_history_fits_its_budget(history: list[Message], budget: int) -> None:
    check(RuleBasedSummarizer(max_summary_tokens=budget), history, budget)


@given(HISTORIES, st.integers(min_value=1_500, max_value=20_000), st.integers(50, 3_000))
def test_the_window_share_and_short_bounds_hold(
    history: list[Message], window: int, chars: int
) -> None:
    summarizer = RuleBasedSummarizer(remaining_window=window, user_message_chars=chars)
    check(summarizer, history, summarizer.budget())


@given(HISTORIES, HISTORIES, BUDGETS)
def test_chains_fit_and_link(first: list[Message], second: list[Message], budget: int) -> None:
    summarizer = RuleBasedSummarizer(max_summary_tokens=budget)
    earlier = summarizer.summarize(first)
    later = summarizer.summarize(second, previous=earlier)
    assert (later.depth, later.parent_id) == (1, earlier.id)
    assert rendered_tokens(later) <= budget
    if not earlier.truncated and not later.truncated:
        assert later.sections.primary_request == (
            earlier.sections.primary_request or later.sections.primary_request
        )


@given(HISTORIES)
def test_the_same_history_gives_the_same_record(history: list[Message]) -> None:
    summarizer = RuleBasedSummarizer(max_summary_tokens=300)

    def content(messages: list[Message]) -> dict[str, Any]:
        return summarizer.summarize(messages).model_dump(exclude={"id", "created_at"})

    assert content(history) == content(list(history))
