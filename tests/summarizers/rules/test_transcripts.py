"""Every bundled real transcript: summarizing its first half keeps every file the file tools
touched and every user request, fits its budget, and carries into the second half."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import pytest

from synopsis.messages import SUMMARY_TAG, ToolCallPart, is_person_message, is_summary
from synopsis.summarizers import RuleBasedSummarizer, SummaryRecord, render, summary_message
from synopsis.summarizers.rules.files import parse_file_line
from synopsis.summarizers.scanning import looks_like_observation
from tests.summarizers.helpers import TRANSCRIPTS, load, rendered_tokens

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from synopsis.messages import Message

FILE_TOOLS = {
    "read_file", "read", "view", "cat", "open", "write_file", "write", "edit_file", "edit",
    "create_file", "create", "insert", "multiedit", "str_replace_editor",
    "str_replace_based_edit_tool",
}  # fmt: skip
PATH_KEYS = ("path", "file_path", "filename")
PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
ROOMY = RuleBasedSummarizer(max_summary_tokens=200_000)


def file_paths(messages: Sequence[Message]) -> set[str]:
    paths: set[str] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.name.lower() in FILE_TOOLS:
                args = json.loads(part.arguments_text)
                paths.update(args[k] for k in PATH_KEYS if isinstance(args.get(k), str))
            if isinstance(part, ToolCallPart) and part.name == "apply_patch":
                paths.update(PATCHED.findall(json.loads(part.arguments_text)["input"]))
    return paths


def requests(messages: Sequence[Message]) -> list[str]:
    """What people wrote: a harness's tool output sent as a user turn is no request."""
    return [
        m.text
        for m in messages
        if is_person_message(m)
        and not is_summary(m)
        and m.text.strip()
        and not looks_like_observation(m.text)
    ]


def mentions(record: SummaryRecord, path: str) -> bool:
    """Whether a file line lists ``path`` (under any action)."""
    for line in record.sections.files_and_code:
        parsed = parse_file_line(line)
        if parsed and any(entry.partition(" [")[0] == path for entry in parsed[1]):
            return True
    return False


def halves(path: Path) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    messages = load(path)
    return messages[: len(messages) // 2], messages[len(messages) // 2 :]


def test_the_transcripts_are_there() -> None:
    assert len(TRANSCRIPTS) == 10
    touched = sum(bool(file_paths(halves(p)[0])) for p in TRANSCRIPTS)
    assert touched >= 4  # the checks below are not vacuous
    assert sum(bool(file_paths(load(p))) for p in TRANSCRIPTS) >= 6


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
def test_the_first_half_keeps_its_files_and_requests(path: Path) -> None:
    first, _ = halves(path)
    record = ROOMY.summarize(first)
    assert not record.truncated
    for file in file_paths(first):
        assert mentions(record, file), file
    chars = ROOMY.user_message_chars
    kept = record.sections.user_messages
    for text in requests(first):
        assert any(item.startswith(text[:chars]) for item in kept), text[:80]
    # A tool's output in a user turn is summarized as the tool result it is, not quoted.
    observations = [
        m.text for m in first if is_person_message(m) and looks_like_observation(m.text)
    ]
    for text in observations:
        assert not any(item.startswith(text[:chars]) for item in kept), text[:80]
    assert len(kept) == len(requests(first))
    if requests(first):
        assert requests(first)[0].startswith(record.sections.primary_request[0].split("… [cut")[0])
    assert len(record.covers) == len(first)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
def test_the_second_half_carries_the_first_forward(path: Path) -> None:
    first, second = halves(path)
    earlier = ROOMY.summarize(first)
    later = ROOMY.summarize([summary_message(earlier), *second], previous=earlier)
    assert (later.depth, later.parent_id) == (1, earlier.id)
    assert later.sections.primary_request == earlier.sections.primary_request
    assert not later.truncated
    for file in file_paths(first) | file_paths(second):
        assert mentions(later, file), file
    assert render(later).startswith(SUMMARY_TAG)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("budget", [120, 500, 2_000])
def test_the_budget_holds_on_real_transcripts(path: Path, budget: int) -> None:
    first, _ = halves(path)
    record = RuleBasedSummarizer(max_summary_tokens=budget).summarize(first)
    assert rendered_tokens(record) <= budget
    assert record.tokens_out <= budget
    if rendered_tokens(ROOMY.summarize(first)) > budget:
        assert record.truncated
        assert "cut to fit its budget." in render(record)
