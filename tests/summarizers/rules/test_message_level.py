from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import (
    MediaPart,
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.planning.reductions import SUMMARY_MARKER
from synopsis.summarizers import RuleBasedSummarizer, SummaryRecord, summarize_part

if TYPE_CHECKING:
    from collections.abc import Sequence

LOG = "\n".join(f"line {i}: compiling module_{i}" for i in range(3000)) + "\nerror: linker failed"


@dataclass
class Recording:
    """A summarizer that remembers what it was given (a fake, not a mock: it summarizes)."""

    inner: RuleBasedSummarizer = field(default_factory=RuleBasedSummarizer)
    calls: list[tuple[list[Message], str | None, int | None]] = field(default_factory=list)

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        self.calls.append((list(messages), instructions, max_tokens))
        return self.inner.summarize(messages, previous=previous, max_tokens=max_tokens)


def tool_message() -> Message:
    result = ToolResultPart("call_7", LOG, is_error=True, name="bash", extra={"cache": "x"})
    return Message(Role.TOOL, (result,), name="bash", extra={"k": 1})


def test_a_tool_result_is_replaced_by_its_summary_and_stays_paired() -> None:
    call = ToolCallPart("call_7", "bash", '{"command": "make all"}')
    message = tool_message()
    out = summarize_part(message, 0, summarizer=RuleBasedSummarizer(), call=call)
    (part,) = out.parts
    assert isinstance(part, ToolResultPart)
    assert isinstance(part.content, str)
    assert part.content.startswith(f"{SUMMARY_MARKER} ")
    assert "[❌ bash: Command: make all" in part.content
    assert "error: linker failed" in part.content
    assert (part.call_id, part.is_error, part.name, dict(part.extra)) == (
        "call_7",
        True,
        "bash",
        {"cache": "x"},
    )
    assert (out.role, out.name, dict(out.extra)) == (Role.TOOL, "bash", {"k": 1})
    assert len(part.content) < len(LOG) // 10


def test_without_the_call_the_result_is_still_summarized() -> None:
    out = summarize_part(tool_message(), 0, summarizer=RuleBasedSummarizer())
    part = out.parts[0]
    assert isinstance(part, ToolResultPart)
    assert part.text.startswith(SUMMARY_MARKER)
    assert "[❌ bash:" in part.text


def test_summarizing_twice_changes_nothing() -> None:
    summarizer = Recording()
    once = summarize_part(tool_message(), 0, summarizer=summarizer)
    twice = summarize_part(once, 0, summarizer=summarizer)
    assert twice is once
    assert len(summarizer.calls) == 1


def test_a_text_part_keeps_its_place_among_other_parts() -> None:
    long_text = "Here is my analysis of FooService.\n" + "reasoning " * 3000
    message = Message(
        Role.ASSISTANT,
        (
            ReasoningPart("thinking", signature="sig"),
            TextPart(long_text, extra={"annotations": []}),
            ToolCallPart("c1", "bash", "{}"),
        ),
    )
    summarizer = Recording()
    out = summarize_part(
        message, -2, summarizer=summarizer, instructions="keep service names", max_tokens=300
    )
    assert out.parts[0] == message.parts[0]
    assert out.parts[2] == message.parts[2]
    text = out.parts[1]
    assert isinstance(text, TextPart)
    assert text.text.startswith(f"{SUMMARY_MARKER} ")
    assert "FooService" in text.text
    assert dict(text.extra) == {"annotations": ()}
    ((given, instructions, max_tokens),) = summarizer.calls
    assert [m.role for m in given] == [Role.ASSISTANT]
    assert (instructions, max_tokens) == ("keep service names", 300)


def test_a_user_text_part_is_said_once() -> None:
    message = Message(Role.USER, (TextPart("Please port the parser. " + "spec " * 2000),))
    out = summarize_part(message, 0, summarizer=RuleBasedSummarizer())
    assert out.parts[0].text.count("Please port the parser.") == 1  # type: ignore[union-attr]


def test_a_result_holding_media_becomes_text() -> None:
    content = (TextPart("screenshot taken " * 500), MediaPart("image", "image/png"))
    message = Message(Role.TOOL, (ToolResultPart("s", content),))
    out = summarize_part(message, 0, summarizer=RuleBasedSummarizer())
    part = out.parts[0]
    assert isinstance(part, ToolResultPart)
    assert isinstance(part.content, str)
    assert part.content.startswith(SUMMARY_MARKER)


@pytest.mark.parametrize("index", [1, -2, 5])
def test_an_index_out_of_range_is_a_configuration_error(index: int) -> None:
    with pytest.raises(ConfigurationError, match="out of range"):
        summarize_part(tool_message(), index, summarizer=RuleBasedSummarizer())


@pytest.mark.parametrize("index", ["0", True, 1.0])
def test_an_index_that_is_not_an_int_is_a_configuration_error(index: object) -> None:
    with pytest.raises(ConfigurationError, match="must be an int"):
        summarize_part(tool_message(), index, summarizer=RuleBasedSummarizer())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "part",
    [ToolCallPart("c", "bash", "{}"), ReasoningPart("x"), MediaPart("image")],
    ids=["call", "reasoning", "media"],
)
def test_only_text_and_result_parts_are_summarized(part: object) -> None:
    message = Message(Role.ASSISTANT, (part,))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="only text and tool-result parts"):
        summarize_part(message, 0, summarizer=RuleBasedSummarizer())
